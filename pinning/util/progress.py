"""The progress seam: long steps (pull, export, normalise, compress, push, fetch) report bytes
through a :class:`Progress` so the library never prints; the CLI renders it (rich bars on a
terminal, plain lines otherwise, nothing with ``--quiet``: :mod:`pinning.cli.progress`).

Implementations must be thread-safe: layers are compressed and pushed in parallel.
"""

from __future__ import annotations

from typing import Protocol


class Task(Protocol):
    """One step being shown: ``advance`` by a number of units (bytes unless the task's total
    says otherwise), ``done`` once (also after a failure; a second call does nothing), with
    an optional ``note`` saying how it ended without doing the work (``already in the
    registry``, ``mounted from pin/base``, ``cached``).
    """

    def advance(self, n: int) -> None:
        """Record ``n`` more units done (``n`` >= 0)."""

    def done(self, note: str = "") -> None:
        """Mark the task finished (``note``: how, when the work was not done)."""


class Progress(Protocol):
    """A sink for tasks. ``task(label, total)`` starts one: ``label`` a short human text
    (``push layer 2/3 sha256:1a2b3c4d5e6f``), ``total`` the number of bytes expected, or
    ``None`` when unknown.
    """

    def task(self, label: str, total: int | None = None) -> Task:
        """Start showing a task; return its handle."""
        ...


class _NullTask:
    def advance(self, n: int) -> None:
        """Ignore progress."""

    def done(self, note: str = "") -> None:
        """Nothing to finish."""


class NullProgress:
    """A :class:`Progress` that shows nothing (the library default)."""

    def task(self, label: str, total: int | None = None) -> Task:
        """A task that ignores its progress."""
        return _NullTask()


NULL_PROGRESS: Progress = NullProgress()
"""The shared do-nothing progress sink."""
