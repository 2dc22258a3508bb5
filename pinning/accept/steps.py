"""What a trainer process printed, as read: its JSON step lines ``{"step", "loss", "tokens",
"step_time_s"}`` on standard output (bounded: 64 MiB, 64 KiB a line; other lines counted,
the first kept for the reason) and tiny-lm's ``{"info": {...}}`` line on standard error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning.errors import UsageError
from pinning.util.jsonread import as_finite, load_json
from pinning.util.text import printable

__all__ = ["Proc", "read_info", "read_steps", "span"]

# At most this much of a trainer's standard output is read (64 MiB), and this much of
# each line (64 KiB).
_MAX_OUT = 64 * 1024 * 1024
_MAX_LINE = 64 * 1024


@dataclass
class Proc:
    """A finished trainer process as read: its ``label``, ``exit_code``, the step lines
    (``steps``, ``losses`` as printed, NaN included, ``tokens``, ``times`` in seconds), its
    ``info``, ``error`` (why it did not complete, ``None`` when it did) and how many other
    lines it printed (``skipped``, the first one kept in ``first_skipped``).
    """

    label: str
    exit_code: int | None = None
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    info: dict[str, Any] | None = None
    error: str | None = None
    skipped: int = 0
    first_skipped: str = ""


def span(steps: list[int]) -> str:
    """``1-20`` for a run of steps, else the first few (``3, 1, 2, ...``)."""
    if steps == list(range(steps[0], steps[0] + len(steps))):
        return f"{steps[0]}-{steps[-1]}"
    return ", ".join(map(str, steps[:5])) + (", ..." if len(steps) > 5 else "")


def read_steps(proc: Proc, path: Path) -> None:
    """Fill ``proc`` from the JSON step lines of ``path`` (bounded); count other lines."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_OUT)
    except OSError as exc:
        proc.error = proc.error or f"its output could not be read ({exc.strerror or exc})"
        return
    for raw in data.splitlines():
        line = raw[:_MAX_LINE].decode("utf-8", "replace").strip()
        if not line:
            continue
        step = _step(line)
        if step is None:
            if not proc.skipped:
                proc.first_skipped = printable(line[:120], newlines=False)
            proc.skipped += 1
            continue
        proc.steps.append(step[0])
        proc.losses.append(step[1])
        proc.tokens.append(step[2])
        proc.times.append(step[3])


def _step(line: str) -> tuple[int, float, int, float] | None:
    """``(step, loss, tokens, step_time_s)`` of a step line, or ``None`` for any other."""
    if not line.startswith("{"):
        return None
    try:
        obj = load_json(line, UsageError, label="a step line")
    except UsageError:
        return None
    if not isinstance(obj, dict):
        return None
    step, loss = obj.get("step"), obj.get("loss")
    tokens, secs = obj.get("tokens", 0), obj.get("step_time_s")
    if not (isinstance(step, int) and not isinstance(step, bool) and step >= 0):
        return None
    if as_finite(tokens) is None or as_finite(secs) is None:
        return None
    loss_f, secs_f = _loss_value(loss), as_finite(secs)
    if loss_f is None or secs_f is None or not (isinstance(tokens, int) and tokens >= 0
                                                and secs_f >= 0):
        return None
    return step, loss_f, tokens, secs_f


def _loss_value(loss: object) -> float | None:
    """A loss as the harness writes it: a number, NaN or infinite included (a diverged
    step); ``None`` for anything else, an integer too large for a float too.
    """
    if isinstance(loss, bool) or not isinstance(loss, int | float):
        return None
    try:
        return float(loss)
    except OverflowError:
        return None


def read_info(proc: Proc, path: Path) -> None:
    """Take the harness's ``{"info": {...}}`` line from the head of standard error."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_MAX_LINE)
    except OSError:
        return
    for raw in head.splitlines()[:20]:
        if raw.startswith(b"{\"info\""):
            try:
                obj = load_json(raw, UsageError, label="an info line")
            except UsageError:
                continue
            info = obj.get("info") if isinstance(obj, dict) else None
            if isinstance(info, dict):
                proc.info = {str(k): v for k, v in info.items()
                             if isinstance(v, str | int | float | bool) or v is None}
            return
