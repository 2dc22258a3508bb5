"""One short line for a drifting host: the reason Slurm shows on a drained node
(``scontrol update ... Reason=``), the Node Problem Detector condition message, and the
fleet summary's grouping key.

The line starts with the fixed prefix ``pin: `` so operators, and pin itself, can tell
pin's drains from others' (Nebius's Slurm operator gives each kind of drain its own reason
prefix for this: https://github.com/nebius/soperator/pull/1904, 2025-12-05, "HC drains and
compute maintenance drains may interfere with each other since they have the same drain
prefix"). It names the first drifting fact as
``<fact>[<gpu>] <want>!=<have>``, then ``(+N more)`` when more facts drifted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pinning.guards.view import Finding

#: Every reason pin writes starts with this; a drain whose reason does not is not pin's.
PREFIX = "pin: "

#: Default bound in characters: Node Problem Detector cuts a custom plugin's message at its
#: ``max_output_length``, 80 unless configured (``defaultMaxOutputLength = 80`` in
#: kubernetes/node-problem-detector@01a6793b0ddac8d51bdc191ff553745283d4b3e5:
#: pkg/custompluginmonitor/types/config.go, read 2026-12-01).
DEFAULT_LIMIT = 80

# Anything but these becomes "_": the reason travels as one argv word to scontrol and as
# one line to NPD; quotes, spaces and control characters inside values never reach them.
_UNSAFE = re.compile(r"[^A-Za-z0-9._:+,/@~^=<>\[\]-]")


def _word(text: str | None, empty: str) -> str:
    """``text`` as one safe word (``", "`` joins become ``,``), ``empty`` when none."""
    if text is None or not text.strip():
        return empty
    return _UNSAFE.sub("_", text.strip().replace(", ", ","))


def fact_label(finding: Finding) -> str:
    """``firmware.blocks[0]`` for a per-GPU fact, else the fact's dotted path."""
    return finding.fact + (f"[{finding.gpu}]" if finding.gpu is not None else "")


def drift_word(finding: Finding) -> str:
    """``<fact>[<gpu>] <want>!=<have>`` for one drifting finding; ``absent`` stands for a
    value the host lacks, ``unknown`` for one that could not be read or a want the lock
    does not state.
    """
    have_empty = "absent" if finding.status == "missing" else "unknown"
    return (f"{_word(fact_label(finding), 'unknown')} "
            f"{_word(finding.expected, 'unknown')}!={_word(finding.actual, have_empty)}")


def short_reason(drift: Sequence[Finding], limit: int = DEFAULT_LIMIT) -> str:
    """The reason line for ``drift`` (the findings that make a host drift, in report
    order): ``pin: <fact> <want>!=<have>`` plus `` (+N more)``, at most ``limit``
    characters (the first word is cut with ``~`` when it alone is too long).
    ``pin: no drift`` when ``drift`` is empty. Pure; ASCII only.
    """
    if limit < len(PREFIX) + 16:
        raise ValueError(f"limit {limit} is too small for a reason")
    if not drift:
        return PREFIX + "no drift"
    more = len(drift) - 1
    tail = f" (+{more} more)" if more else ""
    head = PREFIX + drift_word(drift[0])
    room = limit - len(tail)
    if len(head) > room:
        head = head[:room - 1] + "~"
    return head + tail
