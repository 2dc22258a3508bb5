"""Node Problem Detector (NPD) custom plugin output for ``pin verify --format npd``.

NPD's custom plugin monitor runs a plugin every ``invoke_interval`` and reads its exit status
and standard output: 0 is OK, 1 NonOK (a problem: a ``permanent`` rule sets its node condition
to True), anything else Unknown; standard output, whitespace-trimmed and cut at
``max_output_length`` characters, becomes the condition message; standard error is only
logged. ``max_output_length`` defaults to 80 when the config leaves it out
(``defaultMaxOutputLength``). Sources, all read 2026-12-01:

- kubernetes/node-problem-detector@011b9e6a46f4b87d40112a1ce772c907c48e3511:
  pkg/custompluginmonitor/plugin/plugin.go (``run``: exit codes, trim, cut);
- kubernetes/node-problem-detector@146a394f3f47aa6bba492ceb3c3a670fec1ee092:
  pkg/custompluginmonitor/types/types.go (``OK``, ``NonOK``, ``Unknown``; ``CustomRule``);
- kubernetes/node-problem-detector@01a6793b0ddac8d51bdc191ff553745283d4b3e5:
  pkg/custompluginmonitor/types/config.go (``defaultMaxOutputLength = 80``, the defaults
  ``ApplyConfiguration`` fills in, and ``Validate``);
- kubernetes/node-problem-detector@51b0a4e94bd27875ead28944977e801f302d03f9:
  pkg/custompluginmonitor/README.md (the plugin protocol is referenced from there);
- AMD ships its GPU health check the same way:
  ROCm/gpu-operator@0f8f3bb568788d9ca424a3f208581a8d1d033210:
  docs/npd/node-problem-detector.md.

pin answers with one line of at most the configured length, so NPD never cuts it: the short
drift reason of :mod:`pinning.fleet.reason` on drift.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinning.verify.report import VerifyReport

__all__ = ["DEFAULT_MAX_OUTPUT", "MIN_OUTPUT", "OK", "PROBLEM", "UNKNOWN", "not_probed",
           "npd_result", "npd_unknown"]

#: NPD's exit statuses (``cpmtypes.OK``, ``NonOK``, ``Unknown``).
OK = 0
PROBLEM = 1
UNKNOWN = 2

#: NPD's default ``max_output_length`` (``defaultMaxOutputLength`` in types/config.go);
#: equal to :data:`pinning.fleet.reason.DEFAULT_LIMIT` (kept here as a literal so that
#: ``pin --help``, which shows it, does not import the reason module and pydantic).
DEFAULT_MAX_OUTPUT = 80

#: :data:`pinning.fleet.reason.PREFIX`, as a literal for the same reason.
_PREFIX = "pin: "

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


def not_probed(report: VerifyReport) -> int:
    """How many locked facts (distinct fact and GPU) ``report`` could not read: findings
    with status ``not-probed``, except guard rules that do not apply here (``guard:*``
    codes, listed only with ``-v``). Pure.
    """
    return len({(f.fact, f.gpu) for f in report.findings
                if f.status == "not-probed" and not f.code.startswith("guard:")})


def _match_line(digest: str, unprobed: int, limit: int) -> str:
    """The OK line: ``pin: matches lock sha256:<12 hex>``, with ``(N facts not probed)``
    when ``unprobed`` > 0; shorter forms when that does not fit ``limit``, the note kept
    before the digest, and a cut line as the last resort.
    """
    head = f"{_PREFIX}matches lock sha256:{digest}"
    if not unprobed:
        return _fit(head, limit)
    facts = "fact" if unprobed == 1 else "facts"
    for line in (f"{head} ({unprobed} {facts} not probed)", f"{head} ({unprobed} not probed)",
                 f"{_PREFIX}matches ({unprobed} not probed)"):
        if len(line) <= limit:
            return line
    return _fit(f"{_PREFIX}matches ({unprobed} not probed)", limit)


def npd_result(report: VerifyReport, limit: int = DEFAULT_MAX_OUTPUT) -> tuple[int, str]:
    """The plugin's exit status and message for a verify report: :data:`OK` with
    ``pin: matches lock sha256:<12 hex>`` when the host matches, plus ``(N facts not
    probed)`` when some locked facts could not be read (:func:`not_probed`; a warning, so
    still OK unless the report is ``strict``); :data:`PROBLEM` with the short drift reason
    (``pin: <fact> <want>!=<have> (+N more)``) on drift. The message is one line of at most
    ``limit`` characters; ``ValueError`` for a ``limit`` below :data:`MIN_OUTPUT`. Pure.
    """
    from pinning.fleet.reason import short_reason

    _check(limit)
    if report.result == "drift":
        return PROBLEM, short_reason(report.drift, limit)
    digest = report.lock_hash.removeprefix("sha256:")[:12]
    return OK, _match_line(digest, not_probed(report), limit)


def npd_unknown(message: str, limit: int = DEFAULT_MAX_OUTPUT) -> tuple[int, str]:
    """:data:`UNKNOWN` and ``pin: unknown: <message>`` on one line of at most ``limit``
    characters: the lock could not be read or the host could not be probed, so pin cannot
    say whether it drifted. ``ValueError`` for a ``limit`` below :data:`MIN_OUTPUT`. Pure.
    """
    _check(limit)
    return UNKNOWN, _fit(f"{_PREFIX}unknown: {message}", limit)
