"""Issue 33 §2: what the faster report path keeps. An acknowledged report is committed under
the group commit (readable from a new connection as soon as it is acknowledged), the batch
SQL stores what the models read back, and two app instances on one database agree on
assignments within the bound :mod:`pinning.serve.assign` documents. Each runs on SQLite and
on a real PostgreSQL (``store_url``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pinning.errors import UsageError
from pinning.serve.app import create_app
from pinning.serve.assign import STALE_S, TTL_S, AssignmentCache
from pinning.serve.ingest import BatchWriter
from pinning.serve.storage import NewReport, Store
from tests.support.paths import ROOT
from tests.support.serve import drifting, snapshot_bytes

OTHER_LOCK = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()
JSON = {"content-type": "application/json"}
TOML = {"content-type": "application/toml"}


def _stored(url: str, report_id: int) -> bytes | None:
    """The body of report ``report_id`` read through a new engine (a new connection)."""
    from sqlalchemy import create_engine, select

    from pinning.serve.storage.engine import parse_url
    from pinning.serve.storage.models import HostReportRow

    engine = create_engine(parse_url(url))
    try:
        with engine.connect() as conn:
            body = conn.execute(select(HostReportRow.body).where(
                HostReportRow.id == report_id)).scalar_one_or_none()
    finally:
        engine.dispose()
    return None if body is None else bytes(body)


class _Counting(Store):
    """A store counting its report transactions and the reports in each."""

    batches: list[int]

    def add_reports(self, batch: Sequence[NewReport]) -> list[int]:
        self.batches.append(len(batch))
        return super().add_reports(batch)


def test_an_acknowledged_report_is_committed_under_group_commit(store_url: str,
                                                                lock_bytes: bytes) -> None:
    store = _Counting(store_url)
    store.batches = []
    lock = store.store_lock(lock_bytes)
    seen: dict[int, bytes | None] = {}
    done = threading.Event()
    writer = BatchWriter(store)
    total = 120

    def acknowledged(future: Future[int]) -> None:  # runs as the ack is given
        rid = future.result()
        seen[rid] = _stored(store_url, rid)
        if len(seen) == total:
            done.set()

    try:
        for n in range(total):
            body = b'{"n": %d}' % n
            writer.submit(NewReport(host=f"h{n % 7}", lock_hash=lock, result="match",
                                    group="g", body=body)).add_done_callback(acknowledged)
        assert done.wait(60)
    finally:
        writer.close()
        store.close()
    assert sum(store.batches) == total and max(store.batches) > 1  # grouped commits
    bodies = [body for body in seen.values() if body is not None]  # None: not readable
    assert sorted(bodies) == sorted(b'{"n": %d}' % n for n in range(total))


def test_batch_sql_keeps_hosts_latest_and_history(store: Store, lock_bytes: bytes) -> None:
    lock = store.store_lock(lock_bytes)
    first = store.add_reports([
        NewReport(host="a", lock_hash=lock, result="match", group="g1", gpu="MI300X"),
        NewReport(host="b", lock_hash=lock, result="drift", group="g2", reason="pin: r",
                  reasons=("rocm", "driver")),
        NewReport(host="a", lock_hash=lock, result="drift", group="g9", reason="pin: x",
                  reasons=("kernel",), snapshot_hash="sha256:" + "a" * 64, body=b"{}")])
    assert first == sorted(first) and len(set(first)) == 3
    latest = {s.host: s for s in store.latest_reports()}
    assert latest["a"].report_id == first[2] and latest["a"].reasons == ["kernel"]
    assert latest["a"].group == "g1"  # the group of its first report stays
    assert latest["b"].reason == "pin: r" and latest["b"].reasons == ["rocm", "driver"]
    history = store.host_history("a")
    assert [r.id for r in history] == [first[2], first[0]]
    assert history[0].snapshot_hash == "sha256:" + "a" * 64 and history[1].gpu == "MI300X"
    again = store.add_reports([NewReport(host="b", lock_hash=lock, result="match")])
    assert again[0] > first[2] and store.host_status("b").result == "match"  # type: ignore[union-attr]


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def two(store_url: str) -> Iterator[tuple[TestClient, TestClient, _Clock, dict[str, str]]]:
    """Two apps on one database, each with its own store; the second's assignment cache on
    a fake clock. Yields both clients, that clock and an admin token's header.
    """
    one, other = Store(store_url), Store(store_url)
    clock = _Clock()
    try:
        with TestClient(create_app(one)) as a, TestClient(create_app(other)) as b:
            b.app.state.pin.assignments = AssignmentCache(other, clock=clock)  # type: ignore[attr-defined]
            yield a, b, clock, {"Authorization": "Bearer " + one.create_token("admin")[1]}
    finally:
        one.close()
        other.close()


def _lock_used(client: TestClient, auth: dict[str, str], body: bytes, host: str) -> Any:
    r = client.post(f"/api/v1/hosts/{host}/reports?group=rack", content=body,
                    headers={**auth, **JSON})
    assert r.status_code == 201, r.text
    return r.json()["lock_hash"]


def test_an_assignment_changed_through_one_app_is_used_by_the_other_within_the_bound(
        two: tuple[TestClient, TestClient, _Clock, dict[str, str]], lock_bytes: bytes,
        snapshot: dict[str, Any]) -> None:
    a, b, clock, auth = two
    first, second = (a.post("/api/v1/locks", content=data, headers={**auth, **TOML}).json()[
        "content_hash"] for data in (lock_bytes, OTHER_LOCK))
    body = snapshot_bytes(drifting(snapshot))
    assert a.put("/api/v1/assignments/groups/rack", json={"lock": first},
                 headers=auth).status_code == 200
    assert _lock_used(b, auth, body, "n1") == first
    assert a.put("/api/v1/assignments/groups/rack", json={"lock": second},
                 headers=auth).status_code == 200
    assert _lock_used(a, auth, body, "n2") == second  # its own change: at once
    assert _lock_used(b, auth, body, "n3") == first  # the other: within TTL_S, as it was
    clock.now += TTL_S + STALE_S  # the bound: reloaded before answering
    assert _lock_used(b, auth, body, "n4") == second
    # Past TTL_S only: a background reload starts; once it ends the change is used.
    assert a.put("/api/v1/assignments/groups/rack", json={"lock": first},
                 headers=auth).status_code == 200
    clock.now += TTL_S
    _lock_used(b, auth, body, "n5")  # starts the reload (answers with either lock)
    b.app.state.pin.assignments.wait(30)  # type: ignore[attr-defined]
    assert _lock_used(b, auth, body, "n6") == first
    # A host keeps the group of its first report across both apps.
    assert b.get("/api/v1/hosts/n1").json()["host"]["group"] == "rack"


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 4095, 3 * 2047 + 5, 64 * 1024,
                                  64 * 1024 + 1])
def test_snapshot_digest_is_sha256_of_the_whole_body(size: int) -> None:
    import hashlib

    from pinning.serve.api.hosts import snapshot_digest

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert snapshot_digest(data).hexdigest() == hashlib.sha256(data).hexdigest()


class _Refusing(_Counting):
    """A store whose transaction fails whenever the batch holds the host ``refused`` (such
    a batch is not counted).
    """

    def add_reports(self, batch: Sequence[NewReport]) -> list[int]:
        if any(r.host == "refused" for r in batch):
            raise UsageError("refused by the test")
        return super().add_reports(batch)


def test_awaited_writes_with_two_writers_get_their_own_id_or_error(store_url: str,
                                                                   lock_bytes: bytes) -> None:
    store = _Refusing(store_url)
    store.batches = []
    lock = store.store_lock(lock_bytes)
    writer = BatchWriter(store, writers=2)

    async def post_all() -> list[int | BaseException]:
        return list(await asyncio.gather(
            *(writer.write(NewReport(host="refused" if n == 37 else f"w{n}", lock_hash=lock,
                                     result="match")) for n in range(80)),
            return_exceptions=True))

    try:
        got = asyncio.run(post_all())
    finally:
        writer.close()
        store.close()
    assert isinstance(got[37], UsageError)
    ids = [g for n, g in enumerate(got) if n != 37]
    assert all(isinstance(i, int) for i in ids) and len(set(ids)) == 79
    assert sum(store.batches) == 79  # each other report committed once; the refused one
    # failed its batch, which was tried again report by report


def test_concurrent_batches_of_new_hosts_keep_one_host_and_its_newest_report(
        store_url: str, lock_bytes: bytes) -> None:
    """Two stores (as two processes) write batches naming the same new hosts at once: each
    host is created once, keeps the group of a first report, and its latest report is its
    highest id (the upsert finds a host another transaction created meanwhile).
    """
    stores = [Store(store_url), Store(store_url)]
    lock = stores[0].store_lock(lock_bytes)
    ids: list[int] = []
    guard = threading.Lock()
    start = threading.Barrier(4)

    def write(store: Store, tag: int) -> None:
        start.wait()
        for n in range(10):
            batch = [NewReport(host=f"h{(n + k) % 12}", lock_hash=lock, result="match",
                               group=f"g{tag}", body=b"%d" % tag) for k in range(6)]
            got = store.add_reports(batch)
            with guard:
                ids.extend(got)

    try:
        threads = [threading.Thread(target=write, args=(stores[t % 2], t)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        latest = {s.host: s for s in stores[0].latest_reports(limit=100)}
        assert len(ids) == len(set(ids)) == 4 * 10 * 6
        assert sorted(latest) == sorted(f"h{n}" for n in range(12))
        for host, status in latest.items():
            history = stores[0].host_history(host, limit=1000)
            assert status.report_id == max(r.id for r in history)
            assert status.group in {"g0", "g1", "g2", "g3"}
    finally:
        for store in stores:
            store.close()


def test_postgresql_stores_snapshots_lz4_compressed_and_reads_them_back(
        store: Store, lock_bytes: bytes) -> None:
    if store.dialect != "postgresql":
        pytest.skip("PostgreSQL's TOAST compression")
    from sqlalchemy import text

    lock = store.store_lock(lock_bytes)
    body = b'{"packages": [%s]}' % b", ".join(b'"pkg%d"' % n for n in range(2000))
    [rid] = store.add_reports([NewReport(host="a", lock_hash=lock, result="match", body=body)])
    with store._write.connect() as conn:
        has_lz4 = conn.execute(text(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
            "WHERE name = 'default_toast_compression'")).scalar_one_or_none()
        method = conn.execute(text("SELECT pg_column_compression(body) FROM host_reports "
                                   "WHERE id = :i"), {"i": rid}).scalar_one()
    assert method == ("lz4" if has_lz4 else "pglz")  # before PostgreSQL 14: pglz
    assert store.host_history("a")[0].id == rid
    assert _stored(store.url, rid) == body
