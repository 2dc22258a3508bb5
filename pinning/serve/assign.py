"""The lock assignments a running service reads on every report, kept in memory.

A report is verified against its host's own lock, else its group's (see
:meth:`~pinning.serve.storage.fleet.FleetMixin.assigned_lock`). Reading that from the
database on every report was slow (measured by ``make bench`` on 2026-12-02: 265 reports/s
before this cache, 714/s after), so the service keeps
every host and group assignment, and every host's stored group, in memory: reloaded at most
:data:`TTL_S` seconds after the last load, and at once after this process changes an
assignment. Another ``pin serve`` sharing a PostgreSQL database sees a change within
:data:`TTL_S` seconds.

A host keeps the group of its first report, and that group decides its lock: a later
report's ``?group=`` cannot move a known host to another group's lock (a node must not
choose what it is judged against). ``?group=`` places a host that has none yet.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinning.serve.storage.store import Store

#: Seconds an assignment read from the database is used before it is read again.
TTL_S = 2.0


class AssignmentCache:
    """Host and group assignments of ``store``, reloaded after ``ttl_s`` seconds
    (``clock``: monotonic seconds). Thread-safe. Raises what the store raises
    (``UsageError``, exit 2) when the database cannot be read.
    """

    def __init__(self, store: Store, ttl_s: float = TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store, self.ttl_s, self._clock = store, ttl_s, clock
        self._lock = threading.Lock()
        self._hosts: dict[str, str] = {}
        self._groups: dict[str, str] = {}
        self._member: dict[str, str] = {}
        self._loaded = -float("inf")

    def invalidate(self) -> None:
        """Forget what was loaded: the next lookup reads the database."""
        with self._lock:
            self._loaded = -float("inf")

    def _current(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """The host, group and membership maps, reloaded when older than ``ttl_s``."""
        with self._lock:
            if self._clock() - self._loaded >= self.ttl_s:
                self._hosts, self._groups = self.store.assignments()
                self._member = self.store.host_groups()
                self._loaded = self._clock()
            return self._hosts, self._groups, self._member

    def group_of(self, host: str, given: str | None) -> str | None:
        """The group ``host`` belongs to: its stored one, else ``given`` (a new host)."""
        return self._current()[2].get(host, given)

    def joined(self, host: str, group: str | None) -> None:
        """Note that ``host``'s report with ``group`` was stored (its first group stays)."""
        if group is not None:
            with self._lock:
                self._member.setdefault(host, group)

    def lock_for(self, host: str, group: str | None) -> str | None:
        """The content hash ``host``'s report is verified against: its own assignment, else
        its group's (:meth:`group_of`; ``None``: none applies).
        """
        hosts, groups, _ = self._current()
        own = hosts.get(host)
        if own is not None:
            return own
        which = self.group_of(host, group)
        return None if which is None else groups.get(which)
