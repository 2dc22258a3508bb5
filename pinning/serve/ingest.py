"""pin serve's report ingest: verification of posted snapshots and group commit.

:class:`Verifiers` keeps one :class:`~pinning.fleet.batch.FleetVerifier` per lock hash (the
32 most recently used), so what depends on the lock alone is worked out once per lock, and
remembers the outcome of snapshot bytes it has seen (hosts of one fleet mostly post equal
snapshots). :class:`BatchWriter` stores reports from daemon threads: every report queued
while a commit runs joins the next one (up to ``max_batch``), so a thousand reports a second
cost a few dozen transactions, and each report's future resolves only after the commit that
stored it (an acknowledged report is durable); a batch wakes the event loop once, not once
per report. On PostgreSQL :data:`PG_WRITERS` threads commit side by side: with one, every
report waited for the commit before it (its flush included) and the service stayed at about
1,400 reports/s whatever its CPU (bench/bench_serve.py, 2026-12-05); PostgreSQL flushes
concurrent commits together. SQLite takes one writer at a time, so it keeps one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import queue
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from pinning.errors import UsageError
from pinning.serve.storage.records import GPU_LEN

if TYPE_CHECKING:
    from pinning.fleet.batch import FleetVerifier, Outcome
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts
    from pinning.serve.storage.records import NewReport
    from pinning.serve.storage.store import Store

#: Verifiers kept (one per lock hash, least recently used dropped first).
VERIFIERS = 32
#: Snapshot outcomes remembered per verifier (cleared when full).
MEMO_LIMIT = 65536
#: Reports committed together at most.
MAX_BATCH = 256
#: Writer threads (transactions in flight at once) on PostgreSQL: one transaction runs while
#: another waits for its flush. Four gave the same reports/s as two on this project's 2-core
#: machine with more CPU per report (smaller batches: 105 against 75 us in the writers,
#: 2026-12-05), so two.
PG_WRITERS = 2

_STOP = object()


class BatchWriter:
    """Stores :class:`~pinning.serve.storage.records.NewReport` records with
    :meth:`Store.add_reports` from ``writers`` daemon threads (transactions in flight at
    once), up to ``max_batch`` reports per transaction.

    :meth:`submit` returns a :class:`~concurrent.futures.Future` resolved with the report's
    id after the commit that stored it; when that batch fails, every future of the batch
    fails with the exception (nothing of it is stored) and the writer goes on. A report
    whose future was cancelled before its batch started is not stored. :meth:`close`
    stores everything queued, then stops the threads. Thread-safe. Raises ``UsageError``
    (exit 2) when ``max_batch`` or ``writers`` is under 1.
    """

    def __init__(self, store: Store, max_batch: int = MAX_BATCH, *, writers: int = 1) -> None:
        if max_batch < 1 or writers < 1:
            raise UsageError(f"BatchWriter max_batch {max_batch} and writers {writers} must "
                             "be at least 1.")
        self.store, self.max_batch = store, max_batch
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closed = False
        self._guard = threading.Lock()
        self._threads = [threading.Thread(target=self._run, name=f"pin-serve-writer-{n}",
                                          daemon=True) for n in range(writers)]
        for thread in self._threads:
            thread.start()

    def submit(self, report: NewReport, *, waiter: Waiter | None = None) -> Future[int]:
        """Queue ``report``; its future resolves with the stored id once committed (and
        ``waiter``'s asyncio future, from its loop). Raises ``UsageError`` (exit 2) at once
        when the store would refuse the report (:meth:`NewReport.problem`, so one bad report
        cannot fail a batch), and after :meth:`close`.
        """
        why = report.problem()
        if why:
            raise UsageError(f"Host report of {report.host[:40]!r}: {why}.")
        future: Future[int] = Future()
        with self._guard:
            if self._closed:
                raise UsageError("The report writer is closed; the report was not stored.",
                                 hint="The service is stopping; send the report again.")
            self._queue.put((report, future, waiter))
        return future

    async def write(self, report: NewReport) -> int:
        """:meth:`submit` ``report`` and wait, without blocking the event loop, until it is
        committed; its id. Raises what the batch's commit raised. A batch wakes the loop
        once for all its reports (one ``call_soon_threadsafe``, not one per report); a wait
        cancelled before the report's batch started leaves it unstored.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        future = self.submit(report, waiter=(loop, done))
        try:
            return await done
        except asyncio.CancelledError:
            future.cancel()
            raise

    def close(self, timeout_s: float | None = None) -> None:
        """Store every queued report, then stop the threads (waits up to ``timeout_s``
        seconds for each, ``None``: as long as it takes). Further :meth:`submit` calls fail.
        """
        with self._guard:
            if not self._closed:
                self._closed = True
                for _ in self._threads:
                    self._queue.put(_STOP)
        for thread in self._threads:
            thread.join(timeout_s)

    def _run(self) -> None:
        """A writer thread: take what is queued (blocking for the first), commit it; stop
        at the first stop mark it takes (one is queued per thread).
        """
        stop = False
        while not stop:
            batch: list[_Item] = []
            item = self._queue.get()
            while True:
                if item is _STOP:
                    stop = True
                    break
                entry = cast("_Item", item)
                if entry[1].set_running_or_notify_cancel():
                    batch.append(entry)
                if len(batch) >= self.max_batch:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[_Item]) -> None:
        """Store ``batch`` in one transaction and resolve (or fail) its futures. When the
        transaction fails, each report is tried again alone, so a report the database
        refuses fails only its own request, never the others committed with it.
        """
        try:
            ids: list[int | BaseException] = list(
                self.store.add_reports([r for r, _, _ in batch]))
        except BaseException as exc:  # the thread goes on
            if len(batch) > 1:
                for one in batch:
                    self._commit([one])
                return
            ids = [exc]
        wake: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[int], Any]]] = {}
        for (_, future, waiter), rid in zip(batch, ids, strict=True):
            if isinstance(rid, BaseException):
                future.set_exception(rid)
            else:
                future.set_result(rid)
            if waiter is not None:
                wake.setdefault(waiter[0], []).append((waiter[1], rid))
        for loop, settled in wake.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, settled)


#: Where :meth:`BatchWriter.write` waits: its event loop and the asyncio future there.
Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[int]"]
#: A queued report, its future and its waiter.
_Item = tuple["NewReport", Future[int], Waiter | None]


def _settle(settled: list[tuple[asyncio.Future[int], Any]]) -> None:
    """In the waiters' loop: give each asyncio future its id or exception (skipping one
    whose wait was cancelled).
    """
    for done, rid in settled:
        if done.done():
            continue
        if isinstance(rid, BaseException):
            done.set_exception(rid)
        else:
            done.set_result(rid)


class Verifiers:
    """Verification of posted snapshots against stored locks, with ``matrix`` (``None``:
    the shipped matrix, loaded on first use) and ``strict`` as ``pin verify --strict``.

    Safe for concurrent use: the cache is guarded, and each verifier is used by one thread
    at a time (:class:`~pinning.fleet.batch.FleetVerifier` is not thread-safe).
    """

    def __init__(self, store: Store, matrix: Matrix | None = None, *,
                 strict: bool = False) -> None:
        self.store, self.strict = store, strict
        self._matrix = matrix
        self._guard = threading.Lock()
        self._cache: OrderedDict[str, _Entry] = OrderedDict()

    def matrix(self) -> Matrix:
        """The matrix the verifiers use (loaded once)."""
        with self._guard:
            if self._matrix is None:
                from pinning.matrix.load import load_matrix

                self._matrix = load_matrix(())
            return self._matrix

    def verifier(self, lock_hash: str) -> FleetVerifier:
        """The :class:`~pinning.fleet.batch.FleetVerifier` of the stored lock ``lock_hash``
        (cached). Raises ``UsageError`` (exit 2) when the lock is not stored, and
        ``LockfileError`` (exit 5) when its stored bytes no longer parse.
        """
        return self._entry(lock_hash).verifier

    def check(self, lock_hash: str, snapshot: bytes, where: str) -> Outcome:
        """The :class:`~pinning.fleet.batch.Outcome` of the snapshot bytes ``snapshot``
        (named ``where`` in errors) against the lock ``lock_hash``: exactly what ``pin
        verify`` concludes. Raises ``ProbeError`` (exit 7) for an invalid snapshot, and as
        :meth:`verifier`.
        """
        return self.check_gpu(lock_hash, snapshot, where)[0]

    def check_gpu(self, lock_hash: str, snapshot: bytes, where: str, *,
                  node_only: bool = False,
                  digest: bytes | None = None) -> tuple[Outcome, str | None]:
        """:meth:`check`, and the first GPU's name (:func:`gpu_of`), parsing the snapshot
        once; equal bytes are verified once per lock and scope (remembered by their
        sha256; ``digest``: that sha256 when the caller has it already). ``node_only``:
        judged as ``pin verify --node-only`` judges.
        """
        from pinning.probe.snapshot import parse_snapshot

        entry = self._entry(lock_hash)
        key = (digest or hashlib.sha256(snapshot).digest()) + (b"n" if node_only else b"")
        with entry.guard:
            hit = entry.seen.get(key)
            if hit is None:
                facts = parse_snapshot(snapshot, where)
                hit = (entry.verifier.outcome(facts, node_only=node_only), gpu_of(facts))
                if len(entry.seen) >= MEMO_LIMIT:
                    entry.seen.clear()
                entry.seen[key] = hit
        return hit

    def _entry(self, lock_hash: str) -> _Entry:
        """The cached verifier of ``lock_hash``, built on first use (see :meth:`verifier`)."""
        with self._guard:
            entry = self._cache.get(lock_hash)
            if entry is not None:
                self._cache.move_to_end(lock_hash)
                return entry
        entry = _Entry(self._build(lock_hash))
        with self._guard:
            entry = self._cache.setdefault(lock_hash, entry)
            self._cache.move_to_end(lock_hash)
            while len(self._cache) > VERIFIERS:
                self._cache.popitem(last=False)
        return entry

    def _build(self, lock_hash: str) -> FleetVerifier:
        """A new verifier of the stored lock ``lock_hash``."""
        from pinning.fleet.batch import FleetVerifier
        from pinning.lockfile.io import parse_lock_bytes

        data = self.store.get_lock(lock_hash)
        if data is None:
            raise UsageError(f"Lock {lock_hash!r} is not stored, so reports cannot be verified "
                             "against it.", hint="Push it with `pin lock push FILE`.")
        lock = parse_lock_bytes(data, label=f"stored lock {lock_hash}")
        return FleetVerifier(lock, self.matrix(), lock_name=lock_hash, strict=self.strict,
                             memo=False)


class _Entry:
    """A cached verifier, the lock serialising its use, and its remembered outcomes."""

    def __init__(self, verifier: FleetVerifier) -> None:
        self.verifier = verifier
        self.guard = threading.Lock()
        self.seen: dict[bytes, tuple[Outcome, str | None]] = {}


def gpu_of(snapshot: HostFacts) -> str | None:
    """The first GPU's name as the snapshot reads it (``None``: no GPU, or no name read),
    for the ``gpu`` column and the dashboard's GPU filter.
    """
    for gpu in snapshot.gpus:
        name = "".join(c for c in gpu.name.value or "" if c.isprintable())[:GPU_LEN]
        return name or None
    return None

