"""A small OpenAI-compatible streaming endpoint for the load-generator tests and bench.

``/v1/completions`` and ``/v1/chat/completions`` answer ``stream: true`` requests with
server-sent events shaped as vLLM's (one ``data: {json}`` event per token, a chat stream
opening with an empty ``{"role": "assistant", "content": ""}`` delta, the last token with
``finish_reason: "length"``, a ``usage`` chunk with empty ``choices`` when
``stream_options.include_usage`` is true, then ``data: [DONE]``). Each token is
:attr:`SseConfig.token_text`; a response has ``max_tokens`` tokens unless
:attr:`SseConfig.tokens` fixes the count. ``/health`` answers 200; ``/stats`` the requests
seen, the most in flight at once, the recorded request bodies and their ``Authorization``
headers (``""`` when none), and ``any_requests``: every HTTP request but ``/stats``,
whatever its path.

:class:`SseServer` runs it on 127.0.0.1 on a free port, in a thread of this process or
(``process=True``) in child processes (``python -m tests.support.sse_server``; ``workers``
of them share the port through ``SO_REUSEPORT``), so a benchmarked client has its core to
itself and the server is not what limits it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import urllib.request
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.support.paths import ROOT


@dataclass(frozen=True)
class SseConfig:
    """How the endpoint answers: ``tokens`` per response (``None``: the request's
    ``max_tokens``), ``delay_s`` before each token (0: at once), ``token_text`` of each
    token, ``usage`` (send the usage chunk when asked), ``fail_every`` (every k-th request
    answers 500; 0 never), ``error_after`` (after that many tokens an error event ends
    the stream; -1 never), ``split_bytes`` (write each event in pieces of that many bytes
    with a short pause between them, so the client reads events split across reads; 0
    whole), ``crlf`` (end lines with CR LF), ``send_done`` (end with ``data: [DONE]``),
    ``finish_reason`` (the last token carries ``finish_reason: "length"``; else null),
    ``drop_after`` (after that many tokens close the connection mid-stream; -1 never),
    ``usage_tokens`` (the ``completion_tokens`` the usage chunk claims; ``None``: the
    tokens sent).
    """

    tokens: int | None = None
    delay_s: float = 0.0
    token_text: str = " the"
    usage: bool = True
    fail_every: int = 0
    error_after: int = -1
    split_bytes: int = 0
    crlf: bool = False
    send_done: bool = True
    finish_reason: bool = True
    drop_after: int = -1
    usage_tokens: int | None = None


class _App:
    """The handlers, their counters and the recorded request bodies (at most 10,000)."""

    def __init__(self, config: SseConfig) -> None:
        self.config = config
        self.eol = b"\r\n" if config.crlf else b"\n"
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.any_requests = 0

    @web.middleware
    async def count_all(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Count every HTTP request but ``/stats``, whatever its path (a 404 too)."""
        if request.path != "/stats":
            self.any_requests += 1
        response: web.StreamResponse = await handler(request)
        return response

    def event(self, obj: Any) -> bytes:
        """``obj`` (JSON, or raw bytes) as one SSE event."""
        payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return b"data: " + payload + self.eol + self.eol

    async def send(self, resp: web.StreamResponse, data: bytes) -> None:
        """Write ``data`` whole, or in ``split_bytes`` pieces with a pause between."""
        step = self.config.split_bytes
        if not step:
            await resp.write(data)
            return
        for i in range(0, len(data), step):
            await resp.write(data[i:i + step])
            await asyncio.sleep(0.001)

    async def stream(self, request: web.Request, chat: bool) -> web.StreamResponse:
        """Count the request, fail it when injected, else stream the answer."""
        self.requests += 1
        number = self.requests
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            body = await request.json()
            if len(self.bodies) < 10_000:
                self.bodies.append(body)
                self.auth.append(request.headers.get("Authorization", ""))
            if self.config.fail_every and number % self.config.fail_every == 0:
                return web.json_response({"object": "error", "message": "injected failure",
                                          "type": "InternalServerError", "code": 500},
                                         status=500)
            return await self.respond(request, body, chat)
        finally:
            self.in_flight -= 1

    async def respond(self, request: web.Request, body: dict[str, Any],
                      chat: bool) -> web.StreamResponse:
        """The event stream of one request."""
        config = self.config
        model = str(body.get("model", ""))
        count = config.tokens if config.tokens is not None else int(body.get("max_tokens", 16))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        if chat:
            await self.send(resp, self.event(_chunk(True, model, "", None, role=True)))
        # The same bytes for every token but the last (built once: the server stays cheap).
        token_event = self.event(_chunk(chat, model, config.token_text, None))
        for i in range(count):
            # A pause, or at least a turn for the other requests, as a batching server
            # interleaves its streams.
            await asyncio.sleep(config.delay_s)
            if i == config.error_after:
                await self.send(resp, self.event({"error": {
                    "message": "injected stream error", "type": "InternalServerError",
                    "code": 500}}))
                return resp
            if i == config.drop_after:
                if request.transport is not None:
                    request.transport.close()
                return resp
            await self.send(resp, token_event if i < count - 1 else self.event(
                _chunk(chat, model, config.token_text,
                       "length" if config.finish_reason else None)))
        if config.usage and (body.get("stream_options") or {}).get("include_usage"):
            prompt = body["messages"][-1]["content"] if chat else body.get("prompt")
            used = len(str(prompt).split())
            claimed = count if config.usage_tokens is None else config.usage_tokens
            await self.send(resp, self.event({
                "id": "x", "object": "chunk", "created": 0, "model": model, "choices": [],
                "usage": {"prompt_tokens": used, "completion_tokens": claimed,
                          "total_tokens": used + claimed}}))
        if config.send_done:
            await self.send(resp, self.event(b"[DONE]"))
        await resp.write_eof()
        return resp

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/completions``."""
        return await self.stream(request, False)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/chat/completions``."""
        return await self.stream(request, True)

    async def health(self, _request: web.Request) -> web.Response:
        """``GET /health``."""
        return web.Response(text="ok")

    async def stats(self, _request: web.Request) -> web.Response:
        """``GET /stats``."""
        return web.json_response({"requests": self.requests, "in_flight": self.in_flight,
                                  "max_in_flight": self.max_in_flight,
                                  "bodies": self.bodies, "auth": self.auth,
                                  "any_requests": self.any_requests})


def _chunk(chat: bool, model: str, text: str, finish: str | None,
           role: bool = False) -> dict[str, Any]:
    """One streamed chunk object."""
    if chat:
        delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else {
            "content": text}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None,
                                  "finish_reason": finish}
        return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                "model": model, "choices": [choice]}
    return {"id": "cmpl-test", "object": "text_completion", "created": 0, "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": None,
                         "finish_reason": finish}]}


def make_app(config: SseConfig) -> web.Application:
    """The aiohttp application serving ``config``."""
    handlers = _App(config)
    app = web.Application(middlewares=[handlers.count_all])
    app.router.add_post("/v1/completions", handlers.completions)
    app.router.add_post("/v1/chat/completions", handlers.chat)
    app.router.add_get("/health", handlers.health)
    app.router.add_get("/stats", handlers.stats)
    return app


async def _start(config: SseConfig, port: int,
                 reuse_port: bool = False) -> tuple[web.AppRunner, int]:
    """Start the app on 127.0.0.1:``port`` (0: a free one); return the runner and port."""
    runner = web.AppRunner(make_app(config), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, reuse_port=reuse_port or None)
    await site.start()
    return runner, int(runner.addresses[0][1])


class SseServer:
    """The endpoint on a free port while the ``with`` block runs; :attr:`url` is its
    ``http://127.0.0.1:PORT/v1``. ``process=True`` runs it in ``workers`` child processes
    sharing the port (:meth:`stats` then reads whichever worker answers), on ``cpus``
    when given.
    """

    def __init__(self, config: SseConfig | None = None, *, process: bool = False,
                 workers: int = 1, cpus: set[int] | None = None) -> None:
        self.config = config or SseConfig()
        self.cpus = cpus
        self.process = process
        self.workers = workers
        self.port = 0
        self._procs: list[subprocess.Popen[str]] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        """The base URL the client appends ``/completions`` to."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> SseServer:
        if self.process:
            for _ in range(self.workers):
                argv = [sys.executable, "-m", "tests.support.sse_server", "--config",
                        json.dumps(asdict(self.config)), "--port", str(self.port)]
                if self.workers > 1:
                    argv.append("--reuse-port")
                if self.cpus:
                    argv += ["--cpus", ",".join(map(str, sorted(self.cpus)))]
                proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
                self._procs.append(proc)
                assert proc.stdout is not None
                line = proc.stdout.readline()
                if not line.strip().isdigit():
                    self.__exit__(None, None, None)
                    raise RuntimeError(f"sse_server did not start: {line!r}")
                self.port = int(line)
        else:
            ready = threading.Event()
            self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
            self._thread.start()
            if not ready.wait(30) or not self.port:
                raise RuntimeError("sse_server thread did not start")
        return self

    def _serve(self, ready: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            runner, self.port = await _start(self.config, 0)
            ready.set()
            try:
                await self._stop.wait()
            finally:
                await runner.cleanup()
        asyncio.run(main())

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for proc in self._procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs = []
        if self._thread is not None and self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(30)

    def stats(self) -> dict[str, Any]:
        """``/stats``: ``requests``, ``in_flight``, ``max_in_flight``, ``bodies``, ``auth``,
        ``any_requests``.
        """
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=30) as r:
            data: dict[str, Any] = json.loads(r.read())
        return data


def main() -> None:
    """``python -m tests.support.sse_server [--config JSON] [--port N] [--reuse-port] [--cpus 0,1]``: serve until
    killed; print the port on the first line of stdout.
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="{}")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reuse-port", action="store_true")
    parser.add_argument("--cpus", default="")
    args = parser.parse_args()
    if args.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    config = SseConfig(**json.loads(args.config))

    async def serve() -> None:
        _runner, port = await _start(config, args.port, args.reuse_port)
        print(port, flush=True)
        while True:
            await asyncio.sleep(3600)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
