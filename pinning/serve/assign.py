"""The lock assignments a running service reads on every report, kept in memory.

A report is verified against its host's own lock, else its group's (see
:meth:`~pinning.serve.storage.fleet.FleetMixin.assigned_lock`). Reading that from the
database on every report was slow (measured by ``make bench`` on 2026-12-02: 265 reports/s
before this cache, 714/s after), so the service keeps every host and group assignment, and
every host's stored group, in memory.

**The bound.** A change made through this process (``PUT``/``DELETE`` of an assignment)
is used by its next report (:meth:`AssignmentCache.invalidate`). A change made through
another ``pin serve`` sharing the database is used by this one within
:data:`TTL_S` + :data:`STALE_S` seconds (5 s): once the maps are :data:`TTL_S` old, the
next lookup starts a reload in a background thread and goes on with the maps it has (a
reload reads every host, which would otherwise stall every request of the event loop
while it runs); maps :data:`TTL_S` + :data:`STALE_S` old are reloaded before the lookup
answers. Usually the change is used after :data:`TTL_S` plus one reload.

A host keeps the group of its first report, and that group decides its lock: a later
report's ``?group=`` cannot move a known host to another group's lock (a node must not
choose what it is judged against). ``?group=`` places a host that has none yet. A host's
stored group never changes and hosts are never deleted, so a reload adds to the
membership it knew (a host that joined while the reload read is kept).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinning.serve.storage.store import Store

#: Seconds an assignment read from the database is used before a reload starts.
TTL_S = 2.0
#: Seconds past :data:`TTL_S` that maps are still used while a background reload runs.
STALE_S = 3.0


class AssignmentCache:
    """Host and group assignments of ``store``, reloaded in the background after ``ttl_s``
    seconds and before answering after ``ttl_s + stale_s`` (``clock``: monotonic seconds;
    see the module docstring). Thread-safe. Raises what the store raises (``UsageError``,
    exit 2) when the database cannot be read by a reload made before answering (a failed
    background reload is retried by the next lookup).
    """

    def __init__(self, store: Store, ttl_s: float = TTL_S,
                 clock: Callable[[], float] = time.monotonic, *,
                 stale_s: float = STALE_S) -> None:
        self.store, self.ttl_s, self.stale_s, self._clock = store, ttl_s, stale_s, clock
        self._lock = threading.Lock()
        self._hosts: dict[str, str] = {}
        self._groups: dict[str, str] = {}
        self._member: dict[str, str] = {}
        self._loaded = -float("inf")
        self._reloading: threading.Thread | None = None

    def invalidate(self) -> None:
        """Forget what was loaded: the next lookup reads the database before answering."""
        with self._lock:
            self._loaded = -float("inf")

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait up to ``timeout_s`` seconds (``None``: as long as it takes) for a background
        reload in progress to end (tests, and a clean stop).
        """
        thread = self._reloading
        if thread is not None:
            thread.join(timeout_s)

    def _reload(self) -> None:
        """Read the maps from the database and install them (membership added to)."""
        started = self._clock()
        hosts, groups = self.store.assignments()
        member = self.store.host_groups()
        with self._lock:
            member.update(self._member)  # a stored group never changes: keep what we knew
            self._hosts, self._groups, self._member = hosts, groups, member
            self._loaded = max(self._loaded, started)

    def _background(self) -> None:
        """The body of a background reload; its failure is left to the next lookup."""
        try:
            self._reload()
        except Exception:  # retried; a lookup past the bound raises it
            pass
        finally:
            with self._lock:
                self._reloading = None

    def _current(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """The host, group and membership maps (see the class docstring)."""
        with self._lock:
            age = self._clock() - self._loaded
            if age < self.ttl_s:
                return self._hosts, self._groups, self._member
            now = age >= self.ttl_s + self.stale_s
            if not now and self._reloading is None:
                self._reloading = threading.Thread(target=self._background, daemon=True,
                                                   name="pin-serve-assignments")
                self._reloading.start()
        if now:
            self._reload()
        with self._lock:
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
        return self.resolve(host, group)[1]

    def resolve(self, host: str, given: str | None) -> tuple[str | None, str | None]:
        """``(group, lock)`` of a report of ``host`` posted with ``?group=given``: what
        :meth:`group_of` and :meth:`lock_for` answer, from one look at the maps.
        """
        hosts, groups, member = self._current()
        group = member.get(host, given)
        own = hosts.get(host)
        if own is not None:
            return group, own
        return group, None if group is None else groups.get(group)
