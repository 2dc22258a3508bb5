"""One short line for a drifting host: the reason Slurm shows on a drained node
(``scontrol update ... Reason=``), the Node Problem Detector condition message, and the
fleet summary's grouping key.

The line starts with the fixed prefix ``pin: `` so operators, and pin itself, can tell
pin's drains from others' (Nebius's Slurm operator gives each kind of drain its own reason
prefix for this: https://github.com/nebius/soperator/pull/1904, 2025-12-05, "HC drains and
compute maintenance drains may interfere with each other since they have the same drain
prefix"). It names the first drifting fact as
``<fact>[<gpu>] <want>!=<have>``, then ``(+N more)`` when more facts drifted: ``N`` counts
distinct facts (dotted paths), not findings, so a fact that drifted on eight GPUs, or that
both differs from the lock and lies outside what the matrix validated, counts once.
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


def word_fact(word: str) -> str:
    """The fact of a :func:`drift_word` (``firmware.mec`` of ``firmware.mec[0] 0x1!=0x2``):
    no GPU index, no values; ``unknown`` for an empty word.
    """
    return word.split(" ", 1)[0].split("[", 1)[0] or "unknown"


def other_facts(drift: Sequence[Finding]) -> int:
    """How many facts (distinct ``fact`` dotted paths, whatever the GPU) drifted besides
    that of the first finding of ``drift``; 0 for none. Pure.
    """
    return len({f.fact for f in drift} - {drift[0].fact}) if drift else 0


def short_reason(drift: Sequence[Finding], limit: int = DEFAULT_LIMIT) -> str:
    """The reason line for ``drift`` (the findings that make a host drift, in report
    order): ``pin: <fact> <want>!=<have>`` for the first, plus `` (+N more)`` with ``N``
    the other drifting facts (:func:`other_facts`: facts, not findings), at most ``limit``
    characters (the first word is cut with ``~`` when it alone is too long).
    ``pin: no drift`` when ``drift`` is empty. Pure; ASCII only. Raises ``ValueError`` for
    a ``limit`` below 21 (a bug in the caller).
    """
    if limit < len(PREFIX) + 16:
        raise ValueError(f"limit {limit} is too small for a reason")
    if not drift:
        return PREFIX + "no drift"
    more = other_facts(drift)
    tail = f" (+{more} more)" if more else ""
    head = PREFIX + drift_word(drift[0])
    room = limit - len(tail)
    if len(head) > room:
        head = head[:room - 1] + "~"
    return head + tail
