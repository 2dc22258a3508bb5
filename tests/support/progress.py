"""A thread-safe :class:`pinning.util.progress.Progress` that records what a step reported,
for tests: one entry per task with its label, total, bytes seen, how often it was finished
and the note it ended with."""

from __future__ import annotations

import threading
from typing import Any


class _Task:
    def __init__(self, owner: Recorder, entry: dict[str, Any]) -> None:
        self._owner, self._entry = owner, entry

    def advance(self, n: int) -> None:
        with self._owner.lock:
            self._entry["seen"] += n

    def done(self, note: str = "") -> None:
        with self._owner.lock:
            self._entry["done"] = True
            self._entry["finished"] += 1
            self._entry["note"] = note


class Recorder:
    """Keeps ``tasks``: dicts ``{label, total, seen, done, finished, note}`` in start order."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def task(self, label: str, total: int | None = None) -> _Task:
        entry: dict[str, Any] = {"label": label, "total": total, "seen": 0, "done": False,
                                 "finished": 0, "note": ""}
        with self.lock:
            self.tasks.append(entry)
        return _Task(self, entry)

    def labels(self, prefix: str) -> list[dict[str, Any]]:
        """The tasks whose label starts with ``prefix``."""
        return [t for t in self.tasks if t["label"].startswith(prefix)]
