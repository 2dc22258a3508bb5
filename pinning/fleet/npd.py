"""Node Problem Detector (NPD) custom plugin output for ``pin verify --format npd``.

NPD's custom plugin monitor runs a plugin every ``invoke_interval`` and reads its exit status
and standard output: 0 is OK, 1 NonOK (a problem: a ``permanent`` rule sets its node condition
to True), anything else Unknown; standard output, whitespace-trimmed and cut at
``max_output_length`` characters (default 80), becomes the condition message; standard error
is only logged (kubernetes/node-problem-detector@98ba606d4f046910f1acb9d6e9c26cf13582bcab:
pkg/custompluginmonitor/plugin/plugin.go, and types/types.go, types/config.go; the plugin
protocol is referenced from pkg/custompluginmonitor/README.md; AMD ships its GPU health check
the same way, ROCm/gpu-operator@0f8f3bb568788d9ca424a3f208581a8d1d033210:
docs/npd/node-problem-detector.md; read 2026).

pin answers with one line of at most the configured length, so NPD never cuts it: the short
drift reason of :mod:`pinning.fleet.reason` on drift.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinning.verify.report import VerifyReport

__all__ = ["DEFAULT_MAX_OUTPUT", "MIN_OUTPUT", "OK", "PROBLEM", "UNKNOWN", "npd_result",
           "npd_unknown"]

#: NPD's exit statuses (``cpmtypes.OK``, ``NonOK``, ``Unknown``).
OK = 0
PROBLEM = 1
UNKNOWN = 2

#: NPD's default ``max_output_length`` (``defaultMaxOutputLength`` in types/config.go);
#: equal to :data:`pinning.fleet.reason.DEFAULT_LIMIT` (kept here as a literal so that
#: ``pin --help``, which shows it, does not import the reason module and pydantic).
DEFAULT_MAX_OUTPUT = 80

#: The shortest limit pin accepts: room for the ``pin: `` prefix and a cut fact
#: (:func:`pinning.fleet.reason.short_reason` refuses less).
MIN_OUTPUT = 21


def _check(limit: int) -> None:
    """``ValueError`` when ``limit`` is below :data:`MIN_OUTPUT`."""
    if limit < MIN_OUTPUT:
        raise ValueError(f"max output length {limit} is below {MIN_OUTPUT}")


def _fit(text: str, limit: int) -> str:
    """``text`` on one line of printable ASCII (other characters become ``?``, runs of white
    space one space), cut to ``limit`` characters with a final ``~`` when longer.
    """
    flat = " ".join(text.split())
    safe = "".join(c if " " <= c <= "~" else "?" for c in flat)
    return safe if len(safe) <= limit else safe[:limit - 1] + "~"


def npd_result(report: VerifyReport, limit: int = DEFAULT_MAX_OUTPUT) -> tuple[int, str]:
    """The plugin's exit status and message for a verify report: :data:`OK` with
    ``pin: matches lock sha256:<12 hex>`` when the host matches, :data:`PROBLEM` with the
    short drift reason (``pin: <fact> <want>!=<have> (+N more)``) on drift. The message is
    one line of at most ``limit`` characters; ``ValueError`` for a ``limit`` below
    :data:`MIN_OUTPUT`. Pure.
    """
    from pinning.fleet.reason import PREFIX, short_reason

    _check(limit)
    if report.result == "drift":
        return PROBLEM, short_reason(report.drift, limit)
    digest = report.lock_hash.removeprefix("sha256:")[:12]
    return OK, _fit(f"{PREFIX}matches lock sha256:{digest}", limit)


def npd_unknown(message: str, limit: int = DEFAULT_MAX_OUTPUT) -> tuple[int, str]:
    """:data:`UNKNOWN` and ``pin: unknown: <message>`` on one line of at most ``limit``
    characters: the lock could not be read or the host could not be probed, so pin cannot
    say whether it drifted. ``ValueError`` for a ``limit`` below :data:`MIN_OUTPUT`. Pure.
    """
    from pinning.fleet.reason import PREFIX

    _check(limit)
    return UNKNOWN, _fit(f"{PREFIX}unknown: {message}", limit)
