"""Typed reads of one value from a serving-results document (a parsed JSON object): finite
numbers, whole counts, text, the request rate and per-request number lists. Each raises
``UsageError`` (exit 2) naming where the value sits and what was expected, with :data:`HINT`.
"""

from __future__ import annotations

import math
from typing import Any

from pinning.accept.summary import MAX_COUNT
from pinning.errors import UsageError
from pinning.util.jsonread import as_finite

__all__ = ["HINT", "finite", "finite_list", "request_rate", "text_value", "whole"]

HINT = ("Pass the file `vllm bench serve --save-result` wrote (JSON), the --output-file of "
        "SGLang's bench_serving (JSON lines) or GuideLLM's benchmarks.json, unedited.")


def finite(doc: dict[str, Any], key: str, where: str, *, required: bool = False,
           nonneg: bool = False) -> float | None:
    """``doc[key]`` as a finite float (``>= 0`` with ``nonneg``: latencies, durations,
    throughputs); ``None`` when absent (or null) and not required.
    """
    value = doc.get(key)
    if value is None:
        if required:
            raise UsageError(f"{where}: `{key}` is missing.", hint=HINT)
        return None
    number = as_finite(value)
    if number is None:
        raise UsageError(f"{where}: `{key}` must be a finite number, not "
                         f"{_short(value)}.", hint=HINT)
    if nonneg and number < 0:
        raise UsageError(f"{where}: `{key}` is {number:.6g}; a latency, duration or "
                         "throughput cannot be negative, so the file is not what the "
                         "harness wrote.", hint=HINT)
    return number


def _short(value: object) -> str:
    """``repr(value)`` cut to 40 characters (a 4,000-digit integer is not quoted whole)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a number "\
        "too large for a float"
    return text[:40]


def whole(doc: dict[str, Any], key: str, where: str, *, required: bool = False) -> int | None:
    """``doc[key]`` as a whole number from 0 to :data:`MAX_COUNT`; ``None`` when absent
    and not required.
    """
    value = finite(doc, key, where, required=required)
    if value is None:
        return None
    if value < 0 or value != int(value) or value > MAX_COUNT:
        raise UsageError(f"{where}: `{key}` must be a whole number from 0 to "
                         f"{MAX_COUNT:.0e}, not {value:.6g}.", hint=HINT)
    return int(value)


def text_value(doc: dict[str, Any], key: str) -> str | None:
    """``doc[key]`` when it is a string (or a number, as text); else ``None``."""
    value = doc.get(key)
    if isinstance(value, bool) or value is None:
        return None
    return str(value) if isinstance(value, str | int | float) else None


def request_rate(doc: dict[str, Any], where: str) -> float | None:
    """``request_rate``: a positive number, or ``"inf"``/``inf``/absent for unlimited
    (``None``; vLLM writes the string ``"inf"`` when no ``--request-rate`` was given).
    """
    value = doc.get("request_rate")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError as exc:
            raise UsageError(f"{where}: `request_rate` {value!r:.40} is not a number.",
                             hint=HINT) from exc
    if value is None or value == math.inf:
        return None
    rate = finite({"request_rate": value}, "request_rate", where)
    if rate is not None and rate <= 0:
        raise UsageError(f"{where}: `request_rate` is {rate:.6g}; a request rate must be "
                         "above 0 (or inf for unlimited).", hint=HINT)
    return rate


def finite_list(doc: dict[str, Any], key: str, where: str) -> list[float] | None:
    """``doc[key]`` as a list of finite numbers ``>= 0`` (times in seconds, token counts);
    ``None`` when absent.
    """
    value = doc.get(key)
    if value is None:
        return None
    numbers = [as_finite(v) for v in value] if isinstance(value, list) else [None]
    if any(v is None for v in numbers):
        raise UsageError(f"{where}: `{key}` must be a list of finite numbers.", hint=HINT)
    if any(v is not None and v < 0 for v in numbers):
        raise UsageError(f"{where}: `{key}` holds a negative value; per-request times and "
                         "counts cannot be negative.", hint=HINT)
    return [v for v in numbers if v is not None]
