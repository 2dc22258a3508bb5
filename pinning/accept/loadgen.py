"""pin's load generator: streamed requests to an OpenAI-compatible endpoint, timed.

One run (:func:`run_load`, or :func:`run_point` from synchronous code) sends the prompts
to ``{endpoint}/completions`` (``prompt``) or ``{endpoint}/chat/completions`` (``messages``)
with ``stream: true``, ``stream_options: {"include_usage": true}`` and ``max_tokens``, as
vLLM's benchmark client does (vllm-project/vllm@
3aee4a4f4c4d1a2a7af3ebdb88c768e459e6c602:vllm/benchmarks/lib/endpoint_request_func.py, an
aiohttp client reading ``data:`` events; date not recorded), and ``temperature: 0`` (greedy,
so runs repeat), which that client does not send: it leaves sampling to the server's
defaults. For chat pin sends ``max_tokens`` where that client sends
``max_completion_tokens`` (vLLM 0.32.0 honours both; tried here). What each request
records, and when it succeeds, :mod:`pinning.accept.sse` says.

Requests start at once (``request_rate=None``) or at Poisson arrivals: exponential gaps
from ``random.Random(seed).expovariate(rate)``, the first request at 0. vLLM's
``get_request`` (vllm-project/vllm@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
vllm/benchmarks/serve.py, commit date not recorded) draws gamma gaps
(``burstiness`` 1 is the exponential) with numpy, delays the first request too and
rescales the gaps so the last request lands at ``requests / rate``; pin does not rescale,
since ``min_duration_s`` leaves the number of requests open. ``concurrency`` caps requests
in flight either way. ``warmup`` requests go first
and are not recorded. With ``min_duration_s`` the prompt list repeats until both every
prompt was sent and that much time has passed. A refused connection or an unknown host
before any response raises ``UsageError`` (the server is not there) instead of counting
every request as failed; so does an endpoint that is not a valid URL, or (with
``stop_on_404``) one whose first answer is HTTP 404, and this process running out of file
descriptors (``EMFILE``/``ENFILE``). At most ``min(concurrency, requests)`` requests are in
flight at once (``requests`` when no ``concurrency`` is set; ``concurrency`` itself under
``min_duration_s``).

Credentials in the endpoint (``http://user:password@host/v1``) are sent as HTTP basic auth
and never recorded: :func:`~pinning.accept.endpoint.redact_endpoint` gives the form stored
and printed.
"""

from __future__ import annotations

import asyncio
import errno
import json
import random
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import yarl

from pinning.accept.endpoint import redact_endpoint, split_endpoint
from pinning.accept.loadrun import Api, LoadRun, RequestRecord
from pinning.accept.sse import BODY_HEAD, Stream, fill_record
from pinning.accept.workload import Prompt
from pinning.errors import UsageError

__all__ = ["poisson_schedule", "run_load", "run_point"]

_FD_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})


def poisson_schedule(rate: float, seed: int, count: int) -> list[float]:
    """The send times (seconds after the start) of the first ``count`` requests at
    ``rate`` requests/s: 0, then cumulative ``random.Random(seed).expovariate(rate)`` gaps
    (what :func:`run_load` waits for, before any concurrency limit).
    """
    rng = random.Random(seed)
    out, t = [], 0.0
    for _ in range(count):
        out.append(t)
        t += rng.expovariate(rate)
    return out


class _Runner:
    """One run's shared state: the session, the payload template, the fatal error."""

    def __init__(self, endpoint: str, model: str, api: Api, *, timeout_s: float,
                 ignore_eos: bool, count_tokens: Callable[[str], int] | None,
                 api_key: str | None, stop_on_404: bool) -> None:
        url, basic = split_endpoint(endpoint)
        self.endpoint = redact_endpoint(endpoint)
        path = url.path.rstrip("/") + ("/chat/completions" if api == "chat" else "/completions")
        query = "?" + url.raw_query_string if url.raw_query_string else ""  # kept as given
        self.url = yarl.URL(str(url.with_path(path)) + query, encoded=True)
        self.shown_url = str(self.url).replace("://", "://***@", 1) if basic else str(self.url)
        self.chat = api == "chat"
        self.model = model
        self.ignore_eos = ignore_eos
        self.count_tokens = count_tokens
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.timeout_s = timeout_s
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        elif basic:
            self.headers["Authorization"] = basic
        self.stop_on_404 = stop_on_404
        self.connected = False
        self.answered = False
        self.fatal: UsageError | None = None
        self.t0 = 0.0
        self.session: aiohttp.ClientSession | None = None

    def body(self, prompt: Prompt) -> bytes:
        """The JSON request body for ``prompt``."""
        payload: dict[str, Any] = {"model": self.model, "max_tokens": prompt.max_tokens,
                                   "temperature": 0, "stream": True,
                                   "stream_options": {"include_usage": True}}
        if self.chat:
            payload["messages"] = [{"role": "user", "content": prompt.text}]
        else:
            payload["prompt"] = prompt.text
        if self.ignore_eos:
            payload["ignore_eos"] = True
        return json.dumps(payload).encode()

    async def one(self, prompt: Prompt) -> RequestRecord:
        """Send ``prompt`` and time its stream; never raises for the server's faults (a
        fatal condition is left in :attr:`fatal` and the request recorded as failed).
        """
        assert self.session is not None
        body = self.body(prompt)
        sent = time.perf_counter()
        rec = RequestRecord(start_s=sent - self.t0, input_tokens=prompt.input_tokens)
        stream = Stream(self.chat)
        closed = ""
        try:
            async with self.session.post(self.url, data=body, headers=self.headers,
                                         timeout=self.timeout) as resp:
                self.connected = True
                if resp.status != 200:
                    head = await resp.content.read(BODY_HEAD)
                    rec.error = (f"HTTP {resp.status}: "
                                 f"{head.decode('utf-8', 'replace').strip()}")
                    if resp.status == 404 and self.stop_on_404 and not self.answered:
                        self._set_fatal(self.not_found())
                    return rec
                self.answered = True
                perf = time.perf_counter
                try:
                    async for data in resp.content.iter_any():
                        stream.feed(data, perf())
                        if stream.done or stream.error:
                            break
                except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
                    closed = f"{type(exc).__name__}: {exc}"
                stream.finish(perf())
                end = perf()
        except aiohttp.ClientConnectorError as exc:
            if exc.os_error.errno in _FD_ERRNOS:
                self._set_fatal(self.out_of_files(exc.os_error))
            elif not self.connected:
                self._set_fatal(self.refused(exc))
            rec.error = f"cannot connect: {exc}"
            return rec
        except TimeoutError:
            rec.error = f"timeout after {self.timeout_s:g} s"
            return rec
        except (aiohttp.ClientError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno in _FD_ERRNOS:
                self._set_fatal(self.out_of_files(exc))
            rec.error = f"{type(exc).__name__}: {exc}"[:BODY_HEAD]
            return rec
        return fill_record(rec, stream, prompt.max_tokens, sent, end, closed,
                           self.count_tokens)

    def _set_fatal(self, error: UsageError) -> None:
        """Keep the first fatal error: the run stops sending and raises it."""
        if self.fatal is None:
            self.fatal = error

    def refused(self, exc: BaseException) -> UsageError:
        """The error for an endpoint nothing answers at."""
        return UsageError(
            f"[serve] endpoint {self.endpoint}: cannot connect ({exc}).",
            hint="Start the server (vLLM, SGLang, TGI, llama.cpp) and wait until it "
                 "answers, or fix `[serve] endpoint` in the gates file.")

    def not_found(self) -> UsageError:
        """The error for an endpoint whose first answer is HTTP 404."""
        return UsageError(
            f"[serve] endpoint {self.endpoint}: the endpoint answered 404 for "
            f"{self.shown_url}; no such API path.",
            hint="The endpoint is the base URL the API paths hang off and usually ends in "
                 "`/v1` (http://127.0.0.1:8000/v1); fix `[serve] endpoint` in the gates "
                 "file.")

    def out_of_files(self, exc: OSError) -> UsageError:
        """The error for this process running out of file descriptors."""
        limit = ""
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            limit = f" (now {soft})" if soft != resource.RLIM_INFINITY else ""
        except (ImportError, OSError, ValueError):
            pass
        return UsageError(
            f"[serve] endpoint {self.endpoint}: pin ran out of file descriptors opening "
            f"connections ({exc.strerror or exc}): this is this process's open-file limit "
            f"(`ulimit -n`{limit}), not the server.",
            hint="Lower `concurrency` in [serve.workload] / [serve.sustained], or raise the "
                 "limit (`ulimit -n 65536` in the shell that runs pin) and run again.")


async def _run_batch(runner: _Runner, prompts: list[Prompt], *, count: int,
                     concurrency: int | None, request_rate: float | None,
                     min_duration_s: float | None, seed: int,
                     progress: Callable[[int, int], None] | None) -> list[RequestRecord]:
    """Send ``count`` requests (more while ``min_duration_s`` has not passed), cycling
    ``prompts``, at most ``min(concurrency, count)`` in flight (``concurrency`` under
    ``min_duration_s``); return their records in the order sent. ``progress`` hears of
    each request that finished (not of one cancelled).
    """
    # a fixed number of requests never needs more connections than requests; a timed
    # run keeps ``concurrency`` busy (``count`` when none is set)
    cap = concurrency or count
    if min_duration_s is None:
        cap = min(cap, count)
    sem = asyncio.Semaphore(max(1, cap))
    rng = random.Random(seed)
    tasks: list[asyncio.Task[RequestRecord]] = []
    done = 0

    async def one(prompt: Prompt) -> RequestRecord:
        nonlocal done
        try:
            rec = await runner.one(prompt)
        finally:
            sem.release()
        done += 1
        if progress is not None:
            progress(done, count)
        return rec

    def more(i: int) -> bool:
        if i < count:
            return True
        return min_duration_s is not None and time.perf_counter() - runner.t0 < min_duration_s

    next_at = 0.0
    i = 0
    try:
        while runner.fatal is None and more(i):
            if request_rate is not None:
                wait = runner.t0 + next_at - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                next_at += rng.expovariate(request_rate)
            await sem.acquire()
            if runner.fatal is not None or not more(i):
                sem.release()
                break
            tasks.append(asyncio.create_task(one(prompts[i % len(prompts)])))
            i += 1
        return list(await asyncio.gather(*tasks))
    except BaseException:  # cancelled (Ctrl-C): stop the requests still in flight
        for task in tasks:
            task.cancel()
        raise


async def run_load(endpoint: str, model: str, api: Api, prompts: list[Prompt], *,
                   concurrency: int | None = None, request_rate: float | None = None,
                   warmup: int = 0, min_duration_s: float | None = None, seed: int = 0,
                   timeout_s: float = 600.0, ignore_eos: bool = False,
                   count_tokens: Callable[[str], int] | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   api_key: str | None = None, stop_on_404: bool = False) -> LoadRun:
    """Run one load point against ``endpoint`` (the base URL ending in ``/v1``) and
    return its :class:`LoadRun` (its ``endpoint`` with credentials redacted).

    ``prompts`` are sent in order (cycled under ``min_duration_s``); ``concurrency`` caps
    requests in flight (``None``: no cap beyond the number of requests); ``request_rate``
    (requests/s) spaces sends as Poisson arrivals from ``seed`` (``None``: all at once);
    ``warmup`` requests (the first prompts, at the same cap) run first and are dropped;
    ``timeout_s`` bounds each request; ``count_tokens`` counts output text when the server
    sends no ``usage``; ``progress`` is called with (requests finished, requests planned) -
    under ``min_duration_s`` the first may pass the second; a cancelled request is not
    reported; ``api_key`` is sent as a bearer token when given (else the endpoint's
    ``user:password``, if any, as basic auth); ``stop_on_404``: an HTTP 404 before any
    request was answered 200 stops the run with ``UsageError`` (the path is wrong) instead
    of counting failures.

    Raises ``UsageError`` (exit 2) when ``prompts`` is empty, when ``concurrency`` or
    ``request_rate`` is not positive, when ``endpoint`` is not a valid http(s) URL, when it
    cannot be connected to before any response (connection refused, unknown host), on a
    first HTTP 404 with ``stop_on_404``, and when this process runs out of file
    descriptors.
    """
    if not prompts:
        raise UsageError("The load generator got no prompts to send.",
                         hint="Check [serve.workload] prompts / requests.")
    if (concurrency is not None and concurrency < 1) or (
            request_rate is not None and not request_rate > 0):
        raise UsageError(f"concurrency ({concurrency}) must be >= 1 and request rate "
                         f"({request_rate}) > 0.", hint="Fix [serve.workload].")
    runner = _Runner(endpoint, model, api, timeout_s=timeout_s, ignore_eos=ignore_eos,
                     count_tokens=count_tokens, api_key=api_key, stop_on_404=stop_on_404)
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    async with aiohttp.ClientSession(connector=connector) as session:
        runner.session = session
        if warmup:
            runner.t0 = time.perf_counter()
            await _run_batch(runner, prompts, count=warmup, concurrency=concurrency,
                             request_rate=None, min_duration_s=None, seed=seed, progress=None)
            if runner.fatal is not None:
                raise runner.fatal
        runner.t0 = time.perf_counter()
        records = await _run_batch(runner, prompts, count=len(prompts),
                                   concurrency=concurrency, request_rate=request_rate,
                                   min_duration_s=min_duration_s, seed=seed,
                                   progress=progress)
        duration = time.perf_counter() - runner.t0
        if runner.fatal is not None:
            raise runner.fatal
    return LoadRun(endpoint=runner.endpoint, model=model, api=api, records=records,
                   duration_s=duration, concurrency=concurrency, request_rate=request_rate,
                   warmup=warmup, seed=seed)


def run_point(endpoint: str, model: str, api: Api, prompts: list[Prompt], *,
              concurrency: int | None = None, request_rate: float | None = None,
              warmup: int = 0, min_duration_s: float | None = None, seed: int = 0,
              timeout_s: float = 600.0, ignore_eos: bool = False,
              count_tokens: Callable[[str], int] | None = None,
              progress: Callable[[int, int], None] | None = None,
              api_key: str | None = None, stop_on_404: bool = False) -> LoadRun:
    """:func:`run_load` from synchronous code (a fresh event loop; not from inside a
    running one). Raises as it does.
    """
    return asyncio.run(run_load(endpoint, model, api, prompts, concurrency=concurrency,
                                request_rate=request_rate, warmup=warmup,
                                min_duration_s=min_duration_s, seed=seed,
                                timeout_s=timeout_s, ignore_eos=ignore_eos,
                                count_tokens=count_tokens, progress=progress,
                                api_key=api_key, stop_on_404=stop_on_404))
