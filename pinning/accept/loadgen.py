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
records, with times in seconds from :func:`time.perf_counter`:

* ``ttft_s``: from sending to the first event whose text is non-empty (``choices[0].text``;
  for chat ``choices[0].delta.content`` or ``reasoning_content``). vLLM's completions client
  starts the clock at the first ``choices`` event even when its text is empty; pin waits for
  text, so a chat stream's opening ``{"role": "assistant", "content": ""}`` is not a token.
* ``itls_s``: the gaps between consecutive events with text (one per event, however many
  tokens it carries, as vLLM counts them).
* ``latency_s``: from sending to the end of the stream (``[DONE]`` or the connection's end).
* ``output_tokens`` and its basis: the server's ``usage.completion_tokens`` (``usage``),
  else the caller's tokenizer count of the text (``tokenizer``), else the number of events
  with text (``chunks``).
* ``error``: ``""`` on success; else why (``HTTP 500: <body head>``, ``timeout after 600 s``,
  the error event's message, ``no token received``, a stream that ended before ``[DONE]``
  and without a ``finish_reason``, a ``usage.completion_tokens`` above ``max_tokens``).

A request succeeds only when its stream ended with ``data: [DONE]`` or a choice carried a
non-null ``finish_reason``: vLLM's completions stream puts ``finish_reason`` on the chunk of
the last token, then sends the ``usage`` chunk (``choices: []``) and always ends with
``data: [DONE]``, even after an error event (vllm-project/vllm@
00463e627b4cbe549b5e9815a2bdb0100ae88ea9:vllm/entrypoints/openai/serving_completion.py;
date not recorded); a stream cut before either is a dropped connection, not an answer. The
server's ``usage.completion_tokens`` is believed up to ``max_tokens`` (vLLM may merge
several tokens into one event, so a count above the number of events is normal); above both
``max_tokens`` and the events received it is impossible and fails the request.

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
and never recorded: :func:`redact_endpoint` gives the form stored and printed.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import yarl

from pinning.accept.judge import percentile
from pinning.accept.results import LatencyStats, PerRequest, ReadResult, ServeSummary, Throughput
from pinning.accept.workload import Prompt
from pinning.errors import UsageError
from pinning.util.jsonread import load_json

__all__ = ["Api", "LoadRun", "RequestRecord", "TokenBasis", "check_endpoint",
           "poisson_schedule", "redact_endpoint", "run_load", "run_point", "thirds"]

Api = Literal["completions", "chat"]
#: Where a request's output-token count came from (module docstring).
TokenBasis = Literal["usage", "tokenizer", "chunks"]
_BODY_HEAD = 300
_FD_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})


def redact_endpoint(endpoint: str) -> str:
    """``endpoint`` with the userinfo of its authority replaced by ``***``
    (``http://user:pw@host:8000/v1?x=1`` -> ``http://***@host:8000/v1?x=1``); unchanged when
    it has none. Works on text that is not a valid URL too, so error messages can use it.
    """
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        return endpoint
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at != -1:
            end = min(end, at)
    authority = rest[:end]
    if "@" not in authority:
        return endpoint
    return f"{scheme}://***@{authority.rpartition('@')[2]}{rest[end:]}"


def _split_endpoint(endpoint: str) -> tuple[yarl.URL, str | None]:
    """``(URL without userinfo, basic-auth header value or None)`` of ``endpoint``;
    ``UsageError`` naming ``[serve] endpoint`` when it is not an http(s) URL with a host
    and a valid port.
    """
    shown = redact_endpoint(endpoint)
    hint = ("Set `[serve] endpoint` in the gates file to the server's base URL, such as "
            "http://127.0.0.1:8000/v1.")
    try:
        url = yarl.URL(endpoint)
        port = url.port
        host = url.host
    except (ValueError, TypeError) as exc:
        raise UsageError(f"[serve] endpoint {shown}: not a valid URL ({exc}).",
                         hint=hint) from exc
    if url.scheme not in ("http", "https") or not host or port is None:
        raise UsageError(f"[serve] endpoint {shown}: not an http:// or https:// URL with a "
                         "host.", hint=hint)
    auth = None
    if url.user is not None or url.password is not None:
        pair = f"{url.user or ''}:{url.password or ''}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
        url = url.with_user(None)
    return url, auth


def check_endpoint(endpoint: str) -> None:
    """Raise ``UsageError`` (exit 2) naming ``[serve] endpoint`` when ``endpoint`` is not an
    http(s) URL with a host and a port in 0-65535 (``http://host:99999/v1``,
    ``http://[::1/v1``); the message shows it with :func:`redact_endpoint`.
    """
    _split_endpoint(endpoint)


@dataclass
class RequestRecord:
    """One measured request. ``start_s`` is when it was sent, seconds after the run's
    start; ``ttft_s``, ``itls_s`` (gaps between events with text) and ``latency_s`` are
    seconds from sending (0 when it failed before them); ``output_tokens`` counted on
    ``token_basis``; ``input_tokens`` the server's ``usage.prompt_tokens``, else the
    prompt's counted tokens, else ``None``; ``text`` the generated text; ``error`` ``""``
    when it succeeded.
    """

    start_s: float
    ttft_s: float = 0.0
    itls_s: list[float] = field(default_factory=list)
    latency_s: float = 0.0
    output_tokens: int = 0
    token_basis: TokenBasis = "chunks"
    input_tokens: int | None = None
    text: str = ""
    error: str = ""


class _Stream:
    """The SSE parser and timer of one response: fed raw bytes as they arrive."""

    __slots__ = ("buf", "chat", "chunks", "data", "done", "error", "finished", "first", "itls",
                 "last", "parts", "prompt_tokens", "usage_tokens")

    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.buf = b""
        self.data: bytes | None = None
        self.first = 0.0
        self.last = 0.0
        self.itls: list[float] = []
        self.parts: list[str] = []
        self.chunks = 0
        self.usage_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.done = False
        self.finished = False
        self.error = ""

    def feed(self, data: bytes, now: float) -> None:
        """Take the bytes of one read; handle each complete event, keep the rest."""
        if b"\n" not in data:
            self.buf += data
            return
        lines = (self.buf + data).split(b"\n") if self.buf else data.split(b"\n")
        self.buf = lines.pop()
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if self.data is not None:
                    self.event(self.data, now)
                    self.data = None
            elif line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                self.data = value if self.data is None else self.data + b"\n" + value
            elif line[:6] == b"error:":
                self.error = "error event: " + line[6:].strip().decode("utf-8", "replace")

    def finish(self, now: float) -> None:
        """The stream ended: handle a last event that had no blank line after it."""
        if self.buf:
            self.feed(b"\n", now)
        if self.data is not None:
            self.event(self.data, now)
            self.data = None

    def event(self, payload: bytes, now: float) -> None:
        """One ``data:`` payload: ``[DONE]``, an error object, or a chunk."""
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            obj = load_json(payload, UsageError, label="an event")
            err = obj.get("error")
            if err is not None or obj.get("object") == "error":
                self.error = "error event: " + _message(err if err is not None else obj)
                return
            choices = obj.get("choices")
            if choices:
                if any(c.get("finish_reason") is not None for c in choices):
                    self.finished = True
                choice = choices[0]
                if self.chat:
                    delta = choice.get("delta") or {}
                    text = delta.get("content") or delta.get("reasoning_content")
                else:
                    text = choice.get("text")
                if text:
                    if self.chunks:
                        self.itls.append(now - self.last)
                    else:
                        self.first = now
                    self.last = now
                    self.chunks += 1
                    self.parts.append(text)
            usage = obj.get("usage")
            if usage:
                self.usage_tokens = _whole(usage.get("completion_tokens"))
                self.prompt_tokens = _whole(usage.get("prompt_tokens"))
        except (UsageError, ValueError, AttributeError, TypeError, IndexError, KeyError):
            self.error = f"unexpected event: {payload[:_BODY_HEAD]!r}"


def _whole(value: Any) -> int | None:
    """``value`` when it is a whole number >= 0, else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _message(err: Any) -> str:
    """The ``message`` of an OpenAI-style error object, or the object as JSON."""
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])[:_BODY_HEAD]
    return json.dumps(err)[:_BODY_HEAD]


@dataclass
class LoadRun:
    """One finished run: its ``records`` in the order requests were sent (warm-up ones
    excluded), ``endpoint`` with any credentials redacted (:func:`redact_endpoint`),
    ``duration_s`` from the first measured send to the last completion, and
    the settings it ran with.
    """

    endpoint: str
    model: str
    api: Api
    records: list[RequestRecord]
    duration_s: float
    concurrency: int | None
    request_rate: float | None
    warmup: int
    seed: int

    def texts(self) -> list[tuple[str, str]]:
        """``(generated text, error)`` of each record, in the order sent (the prompts'
        order when no ``min_duration_s`` repeated them).
        """
        return [(r.text, r.error) for r in self.records]

    def to_read_result(self, source: str, index: int = 0,
                       harness_version: str | None = None) -> ReadResult:
        """The run as a :class:`ReadResult` (harness ``pin-loadgen``) that
        ``pinning.accept.judge.judge_point`` judges as it judges a vLLM result: totals,
        throughputs (per second of ``duration_s``; ``output tokens`` counted as each
        record's basis says, named in ``metadata["output-token-count"]``), latency stats in
        ms over successful requests (TPOT over those with more than one token, ITL over
        every gap; std is the population standard deviation, as numpy's default) and the
        per-request arrays in seconds (a failed request: zeros and its error).
        """
        ok = [r for r in self.records if not r.error]
        dur = self.duration_s
        out_tokens = sum(r.output_tokens for r in ok)
        in_known = all(r.input_tokens is not None for r in ok)
        in_tokens = sum(r.input_tokens or 0 for r in ok) if in_known else None
        rates = [("requests", len(ok), "requests"),
                 ("output-tokens", out_tokens, "output tokens")]
        if in_tokens is not None:
            rates.append(("total-tokens", in_tokens + out_tokens, "input + output tokens"))
        bases = _tally(r.token_basis for r in ok)
        summary = ServeSummary(
            source=source, index=index, harness="pin-loadgen", harness_version=harness_version,
            backend="openai-" + self.api, endpoint=self.endpoint, model=self.model,
            max_concurrency=self.concurrency, request_rate=self.request_rate,
            completed=len(ok), failed=len(self.records) - len(ok), duration_s=dur,
            total_input_tokens=in_tokens, total_output_tokens=out_tokens,
            throughput=[Throughput(name=n, per_s=v / dur if dur > 0 else 0.0, basis=b)
                        for n, v, b in rates],
            latency=_latency(ok),
            metadata={"api": self.api, "output-token-count": bases or "none",
                      "input-token-count": "known" if in_known and ok else "not known",
                      "warmup-requests": str(self.warmup), "seed": str(self.seed)},
            detailed=True)
        requests = PerRequest(
            ttfts=[r.ttft_s for r in self.records],
            latencies=[r.latency_s for r in self.records],
            itls=[list(r.itls_s) for r in self.records],
            output_lens=[r.output_tokens for r in self.records],
            errors=[r.error for r in self.records])
        return ReadResult(summary, requests)


def _tally(bases: Any) -> str:
    """``"usage"`` when every basis is the same, else ``"usage 10, chunks 2"``."""
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{b} {n}" for b, n in sorted(counts.items()))


def _stats(values_s: list[float]) -> LatencyStats:
    """Mean, median, population std and p50/p90/p95/p99 of ``values_s``, in ms."""
    ms = [v * 1000.0 for v in values_s]
    return LatencyStats(mean=statistics.fmean(ms), median=statistics.median(ms),
                        std=statistics.pstdev(ms),
                        percentiles={p: percentile(ms, float(p[1:]))
                                     for p in ("p50", "p90", "p95", "p99")})


def _latency(ok: list[RequestRecord]) -> dict[str, LatencyStats]:
    """The four metrics' stats over the successful records (a metric with no value is
    left out).
    """
    series = {
        "ttft": [r.ttft_s for r in ok],
        "tpot": [(r.latency_s - r.ttft_s) / (r.output_tokens - 1)
                 for r in ok if r.output_tokens > 1],
        "itl": [g for r in ok for g in r.itls_s],
        "e2el": [r.latency_s for r in ok]}
    return {m: _stats(v) for m, v in series.items() if v}


def thirds(run: LoadRun) -> tuple[float, float]:
    """``(first-third, last-third)`` output-token throughput of ``run`` (tokens/s).

    The rule: the run's wall time ``duration_s`` is cut in three equal parts; each
    successful request's ``output_tokens`` are spread evenly over its events with text,
    each credited at the time it arrived (``start_s + ttft_s`` plus the gaps); a part's
    throughput is the tokens credited inside it over a third of the duration. ``(0, 0)``
    for a run of no duration.
    """
    third = run.duration_s / 3.0
    if third <= 0:
        return 0.0, 0.0
    first = last = 0.0
    for r in run.records:
        if r.error or not r.output_tokens:
            continue
        each = r.output_tokens / (len(r.itls_s) + 1)
        t = r.start_s + r.ttft_s
        for gap in (0.0, *r.itls_s):
            t += gap
            if t < third:
                first += each
            elif t >= 2 * third:
                last += each
    return first / third, last / third


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
        url, basic = _split_endpoint(endpoint)
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
        stream = _Stream(self.chat)
        closed = ""
        try:
            async with self.session.post(self.url, data=body, headers=self.headers,
                                         timeout=self.timeout) as resp:
                self.connected = True
                if resp.status != 200:
                    head = await resp.content.read(_BODY_HEAD)
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
            rec.error = f"{type(exc).__name__}: {exc}"[:_BODY_HEAD]
            return rec
        return self._finish(rec, stream, prompt.max_tokens, sent, end, closed)

    def _set_fatal(self, error: UsageError) -> None:
        """Keep the first fatal error: the run stops sending and raises it."""
        if self.fatal is None:
            self.fatal = error

    def _finish(self, rec: RequestRecord, stream: _Stream, max_tokens: int, sent: float,
                end: float, closed: str) -> RequestRecord:
        """Fill ``rec`` from a stream that ended (``closed``: why the connection broke,
        ``""`` when it ended in order).
        """
        rec.text = "".join(stream.parts)
        if stream.error:
            rec.error = stream.error
            return rec
        if not (stream.done or stream.finished):
            rec.error = (f"the stream ended before [DONE] / a finish_reason (connection "
                         f"closed after {stream.chunks} chunks"
                         + (f"; {closed}" if closed else "") + ")")[:_BODY_HEAD]
            return rec
        if not stream.chunks:
            rec.error = "no token received: the stream ended without text"
            return rec
        usage = stream.usage_tokens
        if usage is not None and usage > max(max_tokens, stream.chunks):
            rec.error = (f"the server reported {usage} completion tokens for max_tokens "
                         f"{max_tokens} ({stream.chunks} chunks with text received)")
            return rec
        rec.ttft_s = stream.first - sent
        rec.itls_s = stream.itls
        rec.latency_s = end - sent
        if stream.prompt_tokens is not None:
            rec.input_tokens = stream.prompt_tokens
        if usage is not None:
            rec.output_tokens, rec.token_basis = usage, "usage"
        elif self.count_tokens is not None:
            rec.output_tokens, rec.token_basis = self.count_tokens(rec.text), "tokenizer"
        else:
            rec.output_tokens, rec.token_basis = stream.chunks, "chunks"
        return rec

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
