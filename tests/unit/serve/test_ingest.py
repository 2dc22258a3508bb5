"""pin serve's ingest: group commit (futures resolve only after the commit, a failed batch
fails its futures, close drains) and verification of posted snapshots exactly as pin verify."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import pytest

from pinning.errors import ProbeError, UsageError
from pinning.fleet.reason import drift_word
from pinning.lockfile.io import render
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.snapshot import parse_snapshot
from pinning.serve import ingest
from pinning.serve.ingest import BatchWriter, Verifiers, gpu_of
from pinning.serve.storage import Store
from pinning.serve.storage.records import NewReport
from pinning.verify.report import verify
from tests.support.fleetgen import DRIFTS, base_snapshot
from tests.support.locks import frozen_mi300x, lock_for
from tests.support.paths import ROOT

LOCK_A = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()


class Gated:
    """A store whose add_reports waits for ``go`` and fails while ``fail`` is set, and
    records each batch's size."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.go = threading.Event()
        self.entered = threading.Event()
        self.fail = False
        self.sizes: list[int] = []

    def add_reports(self, batch: Sequence[NewReport]) -> list[int]:
        self.entered.set()
        assert self.go.wait(30)
        self.sizes.append(len(batch))
        if self.fail:
            raise UsageError("the database is gone")
        return self.store.add_reports(batch)


def report(lock: str, host: str, result: str = "match") -> NewReport:
    return NewReport(host=host, lock_hash=lock, result=result, gpu="h200")


def test_futures_resolve_only_after_the_commit_in_one_batch(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    gated = Gated(store)
    writer = BatchWriter(gated, max_batch=8)  # type: ignore[arg-type]
    try:
        first = writer.submit(report(lock, "n-0"))
        assert gated.entered.wait(30)  # the first batch is being committed, held
        rest = [writer.submit(report(lock, f"n-{i}", "drift")) for i in range(1, 11)]
        assert not first.done() and not any(f.done() for f in rest)
        assert store.count_hosts() == 0  # nothing acknowledged, nothing stored yet
        gated.go.set()
        ids = [first.result(30), *(f.result(30) for f in rest)]
    finally:
        writer.close()
    assert gated.sizes == [1, 8, 2]  # what queued during a commit joins the next one
    assert ids == sorted(ids) and len(set(ids)) == 11
    assert {s.host: s.report_id for s in store.latest_reports()} == {
        f"n-{i}": rid for i, rid in enumerate(ids)}


def test_a_failed_batch_fails_its_futures_and_the_writer_goes_on(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    gated = Gated(store)
    gated.fail = True
    writer = BatchWriter(gated)  # type: ignore[arg-type]
    try:
        doomed = writer.submit(report(lock, "lost"))
        assert gated.entered.wait(30)
        also = writer.submit(report(lock, "lost-too"))
        gated.go.set()
        with pytest.raises(UsageError, match="the database is gone"):
            doomed.result(30)
        with pytest.raises(UsageError, match="the database is gone"):
            also.result(30)
        gated.fail = False
        assert writer.submit(report(lock, "kept")).result(30) > 0
    finally:
        writer.close()
    assert [s.host for s in store.latest_reports()] == ["kept"]


def test_a_bad_report_fails_alone_at_submit(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    writer = BatchWriter(store)
    try:
        with pytest.raises(UsageError, match="result 'fine' is not one of"):
            writer.submit(report(lock, "n-1", "fine"))
        with pytest.raises(UsageError, match="gpu .* must be 1 to 128 characters"):
            writer.submit(NewReport(host="n-1", lock_hash=lock, result="match", gpu="x" * 129))
        assert writer.submit(report(lock, "n-1")).result(30) > 0
    finally:
        writer.close()
    with pytest.raises(UsageError, match="max_batch 0"):
        BatchWriter(store, max_batch=0)


def test_close_drains_the_queue_and_refuses_more(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    gated = Gated(store)
    writer = BatchWriter(gated, max_batch=64)  # type: ignore[arg-type]
    futures = [writer.submit(report(lock, f"h-{i:03}")) for i in range(200)]
    cancelled: Future[int] = writer.submit(report(lock, "cancelled"))
    assert cancelled.cancel()  # still queued: it can be withdrawn, and is not stored
    gated.go.set()
    writer.close()
    assert all(f.done() for f in futures)
    assert len({f.result() for f in futures}) == 200
    assert store.count_hosts() == 200 and store.host_status("cancelled") is None
    with pytest.raises(UsageError, match="writer is closed"):
        writer.submit(report(lock, "late"))
    writer.close()  # a second close is harmless


def test_write_awaits_the_commit(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    writer = BatchWriter(store)

    async def post_all() -> list[int]:
        return list(await asyncio.gather(*(writer.write(report(lock, f"a-{i}"))
                                           for i in range(50))))

    try:
        ids = asyncio.run(post_all())
    finally:
        writer.close()
    assert len(set(ids)) == 50
    assert {h.report_id for h in store.latest_reports()} == set(ids)


# Verification


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


@pytest.fixture(scope="module")
def snapshots() -> list[bytes]:
    """The recorded MI300X host as pin probe writes it, and each kind of drift of it."""
    base = base_snapshot()
    out = [json.dumps(base, indent=2).encode()]
    for name, change in sorted(DRIFTS.items()):
        data = copy.deepcopy(base)
        change(data, random.Random(name))
        out.append(json.dumps(data).encode())
    return out


def test_verifiers_conclude_what_verify_does(store: Store, frozen: Lockfile, matrix: Matrix,
                                             snapshots: list[bytes]) -> None:
    lock_hash = store.store_lock(render(frozen).encode())
    assert lock_hash == frozen.content_hash
    verifiers = Verifiers(store, matrix)
    results = []
    for n, data in enumerate(snapshots * 2):  # twice: the second pass is remembered
        facts = parse_snapshot(data, "test")
        want = verify(frozen, facts, matrix, lock_name=lock_hash, host_name=f"h{n}")
        got, gpu = verifiers.check_gpu(lock_hash, data, f"h{n}")
        assert got == verifiers.check(lock_hash, data, f"h{n}")
        assert got.result == want.result and dict(got.counts) == want.counts
        assert len(got.reasons) == len({drift_word(f) for f in want.drift})
        assert (got.reason is None) == (want.result == "match")
        assert gpu == gpu_of(facts) == facts.gpus[0].name.value
        results.append(got.result)
    assert results[0] == "match" and "drift" in results  # the recorded host matches
    assert verifiers.verifier(lock_hash) is verifiers.verifier(lock_hash)


def test_verifiers_refuse_bad_snapshots_and_unknown_locks(store: Store, frozen: Lockfile,
                                                          matrix: Matrix) -> None:
    lock_hash = store.store_lock(render(frozen).encode())
    verifiers = Verifiers(store, matrix)
    with pytest.raises(ProbeError, match="Host snapshot gpu-07 body: not JSON") as bad:
        verifiers.check(lock_hash, b"{", "gpu-07 body")
    assert bad.value.exit_code == 7
    with pytest.raises(ProbeError, match="not UTF-8"):
        verifiers.check(lock_hash, b"\xff", "x")
    with pytest.raises(UsageError, match="is not stored") as unknown:
        verifiers.check("sha256:" + "4" * 64, b"{}", "x")
    assert "pin lock push" in (unknown.value.hint or "")


def test_verifier_cache_keeps_the_most_recently_used(store: Store, matrix: Matrix,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest, "VERIFIERS", 2)
    hashes = [store.store_lock(render(lock_for(matrix, "mi300x", fw, rocm="7.1.1")).encode())
              for fw in ("pytorch==2.7", "pytorch==2.8", "pytorch==2.9")]
    verifiers = Verifiers(store, matrix)
    first = verifiers.verifier(hashes[0])
    verifiers.verifier(hashes[1])
    assert verifiers.verifier(hashes[0]) is first  # used again: now the most recent
    verifiers.verifier(hashes[2])  # drops hashes[1]
    assert verifiers.verifier(hashes[0]) is first
    assert list(verifiers._cache) == [hashes[2], hashes[0]]
    assert verifiers.verifier(hashes[0]).lock.content_hash == hashes[0]


def test_gpu_of_a_host_without_gpus_is_none(snapshots: list[bytes]) -> None:
    data: dict[str, Any] = json.loads(snapshots[0])
    data["gpus"] = []
    assert gpu_of(parse_snapshot(json.dumps(data).encode(), "t")) is None
