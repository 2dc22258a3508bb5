"""Render :class:`~pinning.util.progress.Progress` on standard error.

:func:`progress_for` picks the renderer: rich bars (bytes done, total, rate, time left) when
standard error is a terminal; plain lines (``pull sha256:1a2b… 12.3 MB done``), one when a task
starts and one when it ends, when it is not (a CI log, a pipe); nothing with ``--quiet`` or
``--format json``. Every renderer is thread-safe: layers are compressed and pushed in
parallel.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import click

from pinning.util.progress import NULL_PROGRESS, Progress, Task
from pinning.util.text import printable


def human_bytes(n: float) -> str:
    """``n`` bytes as a short decimal text (``950 B``, ``12.3 MB``, ``1.20 GB``)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"
    return f"{int(n)} B"


def _stopped(seconds: float | None) -> str:
    """``stopped (N s)`` when a task ends while an exception propagates (its ``done()`` runs
    in a ``finally`` block of a step that failed), so no "done" line stands just before the
    error; ``""`` otherwise.
    """
    import sys

    if sys.exc_info()[1] is None:
        return ""
    return "stopped" + (f" ({seconds:.1f} s)" if seconds is not None else "")


class _LineTask:
    def __init__(self, sink: LineProgress, label: str, total: int | None) -> None:
        self._sink, self._label, self._total = sink, label, total
        self._done_bytes = 0
        self._started = time.monotonic()
        self._finished = False
        self._lock = threading.Lock()

    def advance(self, n: int) -> None:
        with self._lock:
            self._done_bytes += n

    def done(self, note: str = "") -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            seconds = time.monotonic() - self._started
        note = note or _stopped(seconds)
        if note:
            self._sink.line(f"{self._label}: {note}")
            return
        rate = f", {human_bytes(self._done_bytes / seconds)}/s" if seconds > 0.05 else ""
        amount = human_bytes(self._done_bytes) if self._done_bytes else "done"
        self._sink.line(f"{self._label}: {amount}{rate if self._done_bytes else ''} "
                        f"({seconds:.1f} s)")


class LineProgress:
    """Plain lines on ``stream``: ``LABEL (SIZE)...`` at the start of a task, ``LABEL: SIZE,
    RATE/s (SECONDS s)`` at its end. For logs and pipes, where bars would be noise.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        """Write one line (control characters shown escaped)."""
        with self._lock:
            click.echo("  " + printable(text, newlines=False), err=self._stream is None,
                       file=self._stream)

    def task(self, label: str, total: int | None = None) -> Task:
        """Print the start line and return the task."""
        self.line(f"{label}" + (f" ({human_bytes(total)})..." if total else "..."))
        return _LineTask(self, label, total)


class _RichTask:
    def __init__(self, bars: Any, task_id: Any) -> None:
        self._bars, self._id = bars, task_id
        self._finished = False

    def advance(self, n: int) -> None:
        self._bars.update(self._id, advance=n)

    def done(self, note: str = "") -> None:
        if self._finished:
            return
        self._finished = True
        note = note or _stopped(None)
        if note:
            task = next((t for t in self._bars.tasks if t.id == self._id), None)
            label = task.description if task is not None else ""
            self._bars.update(self._id, description=f"{label} ({printable(note)})")
        task = next((t for t in self._bars.tasks if t.id == self._id), None)
        if task is not None and task.total is None:
            self._bars.update(self._id, total=task.completed or 1,
                              completed=task.completed or 1)
        elif task is not None:
            self._bars.update(self._id, completed=task.total)
        self._bars.stop_task(self._id)


class RichProgress:
    """Bars on a terminal (rich): label, bar, bytes done / total, rate, time left."""

    def __init__(self, bars: Any) -> None:
        self._bars = bars

    def task(self, label: str, total: int | None = None) -> Task:
        """Add a bar (an indeterminate one when ``total`` is unknown)."""
        return _RichTask(self._bars, self._bars.add_task(printable(label, newlines=False),
                                                         total=total))


@contextmanager
def progress_for(fmt: str = "text", *, quiet: bool = False,
                 stream: TextIO | None = None) -> Iterator[Progress]:
    """The progress sink for a command run: nothing for ``--quiet`` or ``--format json``,
    rich bars when standard error (or ``stream``) is a terminal, plain lines otherwise.
    The bars stay on the screen when the command ends, showing the last state.
    """
    if quiet or fmt == "json":
        yield NULL_PROGRESS
        return
    out = stream or sys.stderr
    if not out.isatty():
        yield LineProgress(stream)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as Bars

    bars = Bars(TextColumn("  {task.description}"), BarColumn(), DownloadColumn(),
                TransferSpeedColumn(), TimeRemainingColumn(),
                console=Console(file=out), transient=False)
    with bars:
        yield RichProgress(bars)


def log_lines(fmt: str, *, quiet: bool = False) -> Callable[[str], None] | None:
    """A printer for build log lines: one rewritten line on a terminal, plain lines
    otherwise, nothing for JSON output or ``--quiet`` (stderr, so stdout stays
    machine-readable).
    """
    if fmt == "json" or quiet:
        return None
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        if tty:
            click.echo("\r\033[K  " + printable(line[:110], newlines=False), err=True,
                       nl=False)
        else:
            click.echo("  " + printable(line, newlines=False), err=True)

    return show


def end_log_line() -> None:
    """Clear the rewritten log line on a terminal."""
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


def quiet_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``-q/--quiet`` (passed as ``quiet``): no progress bars or log lines, only the
    result and errors.
    """
    return click.option("-q", "--quiet", is_flag=True,
                        help="No progress output; only the result and errors.")(func)
