"""The server-sent-events reader of one streamed completion, fed raw bytes as they arrive
and timing each event with text (what :mod:`pinning.accept.loadgen` records per request).

pin keeps its own reader rather than an SSE library because it must stamp every event with
the time its bytes arrived (TTFT and inter-token gaps), and stop at ``[DONE]``, an error
event or an ``error:`` line without waiting for the connection to close.

What each request records (:func:`fill_record`), with times in seconds from
:func:`time.perf_counter`:

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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pinning.accept.loadrun import RequestRecord
from pinning.errors import UsageError
from pinning.util.jsonread import load_json

__all__ = ["BODY_HEAD", "Stream", "fill_record"]

#: How much of a response body or an event an error message quotes (bytes or characters).
BODY_HEAD = 300


class Stream:
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
            self.error = f"unexpected event: {payload[:BODY_HEAD]!r}"


def _whole(value: Any) -> int | None:
    """``value`` when it is a whole number >= 0, else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _message(err: Any) -> str:
    """The ``message`` of an OpenAI-style error object, or the object as JSON."""
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])[:BODY_HEAD]
    return json.dumps(err)[:BODY_HEAD]


def fill_record(rec: RequestRecord, stream: Stream, max_tokens: int, sent: float, end: float,
            closed: str, count_tokens: Callable[[str], int] | None) -> RequestRecord:
    """Fill ``rec`` from a stream that ended (``closed``: why the connection broke,
    ``""`` when it ended in order; ``count_tokens`` counts the text when the server sent no
    ``usage``) and return it: the success rules and fields of the module docstring.
    """
    rec.text = "".join(stream.parts)
    if stream.error:
        rec.error = stream.error
        return rec
    if not (stream.done or stream.finished):
        rec.error = (f"the stream ended before [DONE] / a finish_reason (connection "
                     f"closed after {stream.chunks} chunks"
                     + (f"; {closed}" if closed else "") + ")")[:BODY_HEAD]
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
    elif count_tokens is not None:
        rec.output_tokens, rec.token_basis = count_tokens(rec.text), "tokenizer"
    else:
        rec.output_tokens, rec.token_basis = stream.chunks, "chunks"
    return rec
