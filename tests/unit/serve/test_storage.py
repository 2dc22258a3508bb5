from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from pinning.errors import LockfileError, UsageError
from pinning.serve.auth import Authenticator, Need
from pinning.serve.errors import ApiError
from pinning.serve.storage import Store, default_url, upgrade
from pinning.serve.storage.engine import create
from pinning.serve.storage.migrate import current
from pinning.serve.storage.models import Base
from pinning.serve.storage.records import NewReport
from tests.support.components import free_port
from tests.support.paths import ROOT

LOCK_A = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()
LOCK_B = (ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock").read_bytes()


def add_report(store: Store, host: str, lock_hash: str, **fields: Any) -> int:
    """Store one report of ``host`` (a batch of one); its id."""
    fields["reasons"] = tuple(fields.get("reasons", ()))
    return store.add_reports([NewReport(host, lock_hash, **fields)])[0]


def ticking() -> Callable[[], dt.datetime]:
    """A clock one second later at every call (history order must not rest on it)."""
    start = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    ticks = iter(range(1_000_000))
    return lambda: start + dt.timedelta(seconds=next(ticks))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url, clock=ticking())
    try:
        yield s
    finally:
        s.close()


def test_store_lock_is_idempotent_and_keeps_exact_bytes(store: Store) -> None:
    first = store.store_lock(LOCK_A)
    assert first.startswith("sha256:") and len(first) == 71
    # Same content, another header comment: same hash, the first bytes kept.
    assert store.store_lock(b"# uploaded again\n" + LOCK_A) == first
    assert store.get_lock(first) == LOCK_A
    second = store.store_lock(LOCK_B)
    assert second != first
    listed = store.list_locks()
    assert [i.content_hash for i in listed] == [second, first]  # newest first
    assert listed[1].size == len(LOCK_A) and listed[1].request["gpu"] == "h200"
    assert store.get_lock("sha256:" + "0" * 64) is None


def test_store_lock_refuses_what_is_not_a_lock(store: Store) -> None:
    with pytest.raises(LockfileError, match="uploaded lock") as bad:
        store.store_lock(b"lock-version = 1\n")
    assert bad.value.exit_code == 5
    with pytest.raises(LockfileError, match="not valid TOML"):
        store.store_lock(b"\xff\xfe")
    edited = LOCK_A.replace(b'gpu = "h200"', b'gpu = "h100"', 1)
    assert edited != LOCK_A
    with pytest.raises(LockfileError):
        store.store_lock(edited)
    assert store.list_locks() == []


def test_history_is_newest_first_and_limited(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    ids = [add_report(store, "node-1", lock, result=r, reasons=[f"pin: {n}"] if r == "drift"
                             else [])
           for n, r in enumerate(["match", "drift", "unknown", "match"])]
    add_report(store, "node-2", lock, result="match")
    history = store.host_history("node-1")
    assert [r.id for r in history] == ids[::-1]
    assert [r.result for r in history] == ["match", "unknown", "drift", "match"]
    assert history[2].reasons == ["pin: 1"] and history[2].host == "node-1"
    assert history[0].received_at.tzinfo is not None
    assert [r.id for r in store.host_history("node-1", limit=2)] == ids[:1:-1]
    assert store.host_history("no-such-host") == []


def test_latest_per_host_with_filters_counts_and_summary(store: Store) -> None:
    a, b = store.store_lock(LOCK_A), store.store_lock(LOCK_B)
    add_report(store, "gpu-03", b, result="drift", reasons=["rocm"], gpu="mi300x",
                      reason="pin: rocm 7.1!=7.0")
    add_report(store, "gpu-03", a, result="match", gpu="h200", group="old")  # latest of gpu-03
    add_report(store, "gpu-01", a, result="drift", gpu="h200", group="train",
                      reasons=["driver", "kernel"], reason="pin: driver 580!=575 (+1 more)")
    add_report(store, "gpu-02", a, result="drift", gpu="h200", reasons=["driver"])
    add_report(store, "gpu-04", b, result="unknown", gpu="mi300x", snapshot_hash=b[:71])

    def names(**filters: str) -> list[str]:
        listed = [r.host for r in store.latest_reports(**filters)]  # type: ignore[arg-type]
        assert store.count_hosts(**filters) == len(listed)
        return listed

    assert names() == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert names(status="drift") == ["gpu-01", "gpu-02"]  # gpu-03's drift is history
    assert names(lock=b) == ["gpu-04"]
    assert names(gpu="h200") == ["gpu-01", "gpu-02", "gpu-03"]
    assert names(gpu="mi300x", status="unknown") == ["gpu-04"]
    assert names(group="train") == ["gpu-01"]
    assert names(group="old") == []  # a known host keeps the group of its first report
    assert names(gpu="a100") == []
    assert [r.host for r in store.latest_reports(limit=2, offset=1)] == ["gpu-02", "gpu-03"]
    one = store.host_status("gpu-01")
    assert one is not None and one == store.latest_reports(group="train")[0]
    assert (one.lock_hash, one.result, one.reasons, one.gpu, one.group) == (
        a, "drift", ["driver", "kernel"], "h200", "train")
    assert one.reason == "pin: driver 580!=575 (+1 more)" and one.received_at.tzinfo
    assert one.report_id == store.host_history("gpu-01")[0].id
    assert store.host_status("no-such-host") is None

    summary = store.fleet_summary(a)
    assert summary.hosts == {"match": 1, "drift": 2, "unknown": 0}
    assert [(r.reason, r.hosts) for r in summary.top_reasons] == [("driver", 2), ("kernel", 1)]
    empty = store.fleet_summary("sha256:" + "1" * 64)
    assert empty.hosts == {"match": 0, "drift": 0, "unknown": 0} and empty.top_reasons == []
    every = store.fleet_summaries()
    assert [s.lock_hash for s in every] == sorted([a, b])
    assert {s.lock_hash: s.hosts["unknown"] for s in every} == {a: 0, b: 1}
    assert store.fleet_summaries(b, top=1)[0].top_reasons == []
    assert store.fleet_summaries("sha256:" + "1" * 64) == []
    assert store.drift_by_fact() == {"driver": 2, "kernel": 1}
    seen = store.last_seen_by_host()
    assert list(seen) == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert seen["gpu-03"] > seen["gpu-01"] - dt.timedelta(days=1) and seen["gpu-03"].tzinfo


def test_a_batch_is_one_transaction_with_ids_in_order(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    add_report(store, "n-2", lock, result="match", group="g")
    batch = [NewReport(host=h, lock_hash=lock, result=r, reasons=w, gpu="h200",
                       reason="pin: x" if w else None, group="batch",
                       body=f"{{\"n\": {i}}}".encode())
             for i, (h, r, w) in enumerate([
                 ("n-1", "drift", ("driver",)), ("n-2", "drift", ("kernel",)),
                 ("n-1", "match", ()), ("n-3", "unknown", ()),
                 ("n-2", "drift", ("rocm", "driver")), ("n-1", "drift", ("python",))])]
    ids = store.add_reports(batch)
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert store.add_reports([]) == []
    # The last report of a host in the batch is its latest.
    latest = {s.host: s for s in store.latest_reports()}
    assert latest["n-1"].report_id == ids[5] and latest["n-1"].reasons == ["python"]
    assert latest["n-2"].report_id == ids[4] and latest["n-2"].reasons == ["rocm", "driver"]
    assert latest["n-3"].result == "unknown" and latest["n-3"].reason is None
    assert latest["n-2"].group == "g" and latest["n-1"].group == "batch"
    history = store.host_history("n-1")
    assert [r.id for r in history] == [ids[5], ids[2], ids[0]]
    assert history[0].reason == "pin: x" and history[1].reason is None
    assert store.count_hosts(status="drift") == 2

    # A bad report anywhere refuses the whole batch: nothing of it is stored.
    bad = [NewReport(host="n-9", lock_hash=lock, result="match"),
           NewReport(host="n-1", lock_hash=lock, result="fine")]
    with pytest.raises(UsageError, match="report 2 of the batch .'n-1'.: result 'fine'"):
        store.add_reports(bad)
    with pytest.raises(UsageError, match="1 to 253 characters"):
        store.add_reports([NewReport(host="x" * 254, lock_hash=lock, result="match")])
    assert store.host_status("n-9") is None and store.count_hosts() == 3


def test_assignments_host_over_group_and_given_group_over_stored(store: Store) -> None:
    a, b = store.store_lock(LOCK_A), store.store_lock(LOCK_B)
    add_report(store, "gpu-01", a, result="match", group="train")
    assert store.assigned_lock("gpu-01") is None
    assert store.assignments() == ({}, {})

    store.assign_group("train", a)
    store.assign_group("infer", b)
    assert store.assigned_lock("gpu-01") == a  # the stored group's
    assert store.assigned_lock("gpu-01", "infer") == b  # the given group over the stored one
    assert store.assigned_lock("new-host", "infer") == b
    assert store.assigned_lock("new-host") is None
    assert store.assigned_lock("gpu-01", "no-such-group") is None

    store.assign_host("gpu-01", b)  # the host's own over every group's
    store.assign_host("gpu-09", a)  # an unknown host is created with its assignment
    assert store.assigned_lock("gpu-01", "train") == b
    assert store.assigned_lock("gpu-09") == a
    store.assign_group("train", b)  # replaces
    assert store.assignments() == ({"gpu-01": b, "gpu-09": a}, {"infer": b, "train": b})
    assert store.host_status("gpu-09") is None  # assigned, never reported: not listed

    store.assign_host("gpu-01", None)
    store.assign_group("infer", None)
    store.assign_group("never-assigned", None)
    assert store.assigned_lock("gpu-01") == b  # its group's again
    assert store.assignments() == ({"gpu-09": a}, {"train": b})

    unknown = "sha256:" + "2" * 64
    with pytest.raises(UsageError, match="is not stored") as err:
        store.assign_host("gpu-01", unknown)
    assert err.value.exit_code == 2
    with pytest.raises(UsageError, match="is not stored"):
        store.assign_group("train", unknown)
    assert store.assignments() == ({"gpu-09": a}, {"train": b})


def test_find_locks_by_hash_or_prefix(store: Store) -> None:
    a, b = store.store_lock(LOCK_A), store.store_lock(LOCK_B)
    digits = a.removeprefix("sha256:")
    assert store.find_locks(a) == [a]
    assert store.find_locks(digits) == [a]
    assert store.find_locks(digits[:12]) == [a]
    assert store.find_locks("sha256:" + digits[:20].upper()) == [a]
    assert store.find_locks(digits[:11]) == []  # too short to name a lock
    assert store.find_locks("sha256:" + "0" * 64) == []
    assert store.find_locks("zz" + digits[:12]) == [] and store.find_locks("") == []
    assert store.find_locks(digits[:30] + "%") == []

    # Two stored hashes sharing a 12-digit prefix: the prefix is ambiguous. Only real
    # locks can be stored, so the second row is written directly.
    from sqlalchemy import insert

    from pinning.serve.storage.models import LockRow

    twin = "sha256:" + digits[:12] + ("0" if digits[12] != "0" else "1") + digits[13:]
    engine = create(store.url, write=True)
    with engine.begin() as conn:
        conn.execute(insert(LockRow).values(content_hash=twin, body=b"x", request={},
                                            created_at=dt.datetime.now(dt.UTC)))
    engine.dispose()
    assert store.find_locks(digits[:12]) == sorted([a, twin])
    assert store.find_locks(a) == [a]
    assert b not in store.find_locks(digits[:12])


def test_artefacts_list_newest_first_and_exact_bytes(store: Store) -> None:
    a, b = store.store_lock(LOCK_A), store.store_lock(LOCK_B)
    first = store.add_acceptance(a, b'{"passed": true}', passed=True, signature_verified=False)
    second = store.add_acceptance(a, b'{"signed": 1}', passed=False, signature_verified=True,
                                  image_digest="sha256:" + "3" * 64)
    store.add_acceptance(b, b"{}", passed=True, signature_verified=False)
    audit = store.add_audit(b'{"audit": 1}', {"ready": 3, "port": 1}, lock_hash=a)
    cost = store.add_cost_verdict(b'{"cost": 2}')

    listed = store.list_artefacts("acceptance", lock_hash=a)
    assert [i.id for i in listed] == [second, first]
    assert (listed[0].passed, listed[0].signature_verified, listed[0].image_digest) == (
        False, True, "sha256:" + "3" * 64)
    assert listed[1].totals is None and listed[1].received_at.tzinfo is not None
    assert len(store.list_artefacts("acceptance")) == 3
    assert len(store.list_artefacts("acceptance", limit=1)) == 1
    audits = store.list_artefacts("audit")
    assert [(i.id, i.kind, i.totals, i.passed) for i in audits] == [
        (audit, "audit", {"ready": 3, "port": 1}, None)]
    costs = store.list_artefacts("cost", lock_hash=a)
    assert costs == [] and store.list_artefacts("cost")[0].lock_hash is None
    assert store.get_artefact("acceptance", second) == b'{"signed": 1}'
    assert store.get_artefact("audit", audit) == b'{"audit": 1}'
    assert store.get_artefact("cost", cost) == b'{"cost": 2}'
    assert store.get_artefact("cost", cost + 100) is None
    with pytest.raises(UsageError, match="kind 'signature'"):
        store.list_artefacts("signature")
    with pytest.raises(UsageError, match="kind 'audits'"):
        store.get_artefact("audits", audit)


def test_dialect_revision_and_token_info(store: Store, store_url: str) -> None:
    assert store.dialect == store_url.split(":")[0]
    assert store.revision() == "0001"
    token_id, secret = store.create_token("report", host="gpu-01")
    info = store.token_info(secret)
    assert info is not None and (info.id, info.scope, info.host) == (token_id, "report", "gpu-01")
    assert store.token_info(secret + "x") is None
    store.revoke_token(token_id)
    revoked = store.token_info(secret)
    assert revoked is not None and revoked.revoked_at is not None


def test_report_result_must_be_known(store: Store) -> None:
    with pytest.raises(UsageError, match="'ok' is not one of match, drift, unknown"):
        add_report(store, "n", "sha256:" + "0" * 64, result="ok")
    assert store.latest_reports() == []


def test_token_scope_host_binding_and_revocation(store: Store, store_url: str) -> None:
    bound_id, bound = store.create_token("report", host="gpu-01")
    _, publish = store.create_token("publish")
    admin_id, admin = store.create_token("admin")
    assert bound.startswith("pin_") and len({bound, publish, admin}) == 3
    auth = Authenticator(store, ttl_s=0)  # no cache: revocation shows at once

    def allows(secret: str, need: Need, host: str | None = None) -> bool:
        try:
            auth.require(f"Bearer {secret}", need, host)
        except ApiError:
            return False
        return True

    assert allows(bound, "report", "gpu-01")
    assert not allows(bound, "report", "gpu-02")  # cannot write as another host
    assert not allows(bound, "report")
    assert not allows(bound, "publish", "gpu-01")
    assert allows(publish, "publish") and not allows(publish, "report")
    assert all(allows(admin, scope, "any") for scope in ("report", "publish", "admin"))
    assert not allows(bound + "x", "report", "gpu-01")
    assert not allows("", "report", "gpu-01")

    assert store.revoke_token(bound_id) and not store.revoke_token(bound_id)
    assert not store.revoke_token("no-such-id")
    assert not allows(bound, "report", "gpu-01")
    infos = {t.id: t for t in store.list_tokens()}
    assert infos[bound_id].revoked_at is not None and infos[admin_id].revoked_at is None
    assert infos[bound_id].host == "gpu-01"

    # Only the sha256 of each secret is stored.
    from sqlalchemy import text

    engine = create(store_url, write=False)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, secret_sha256 FROM tokens")).all()
        dump = repr(conn.execute(text("SELECT * FROM tokens")).all())
    engine.dispose()
    assert {str(r[0]): str(r[1]) for r in rows}[admin_id] == hashlib.sha256(admin.encode()).hexdigest()
    assert all(secret not in dump for secret in (bound, publish, admin))
    with pytest.raises(UsageError, match="scope 'root'"):
        store.create_token("root")


def test_concurrent_writers_lose_no_acknowledged_report(store: Store) -> None:
    lock = store.store_lock(LOCK_A)
    acknowledged: list[int] = []
    failures: list[BaseException] = []
    guard = threading.Lock()

    def writer(n: int) -> None:
        try:
            for i in range(15):
                # Every thread writes to shared hosts too: host creation races.
                host = f"shared-{i % 3}" if i % 2 else f"own-{n}"
                rid = add_report(store, host, lock, result="match" if i % 4 else "drift")
                with guard:
                    acknowledged.append(rid)
        except BaseException as exc:  # reported below, with the thread's failure
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(acknowledged) == 90 == len(set(acknowledged))
    stored = {r.id for h in {r.host for r in store.latest_reports()}
              for r in store.host_history(h, limit=1000)}
    assert stored == set(acknowledged)
    assert len(store.latest_reports()) == 3 + 6


def test_migration_and_models_agree(store_url: str) -> None:
    upgrade(store_url)
    upgrade(store_url)  # a second upgrade is a no-op
    engine = create(store_url, write=True)
    try:
        assert current(engine) == "0001"
        with engine.connect() as conn:  # alembic's autogenerate comparison: nothing differs
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_database_of_a_newer_pin_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "pin.db"
    url = f"sqlite:///{path}"
    Store(url).close()
    with sqlite3.connect(path) as conn:  # as a newer pin's migration would leave it
        conn.execute("UPDATE alembic_version SET version_num = '0099_future'")
    for opening in (lambda: Store(url), lambda: upgrade(url)):
        with pytest.raises(UsageError, match="migrated by a newer pin") as newer:
            opening()
        assert newer.value.exit_code == 2
        assert "revision 0099_future, this pin knows up to 0001" in newer.value.message
        assert "pin version or newer" in (newer.value.hint or "")
    with sqlite3.connect(path) as conn:  # left as it was
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            ("0099_future",)]


def test_sqlite_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "pin.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_default_url_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url() == f"sqlite:///{tmp_path / 'data' / 'pin' / 'pin.db'}"
    Store().close()  # creates the folder
    assert (tmp_path / "data" / "pin" / "pin.db").is_file()
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # invalid per the spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{tmp_path / 'home' / '.local' / 'share' / 'pin' / 'pin.db'}"


@pytest.mark.parametrize(("url", "says"), [
    ("mysql://admin:s3cret@db.example/pin", "'mysql' is not a database"),
    ("not a url", "cannot be parsed"),
    ("sqlite://", "in-memory"),
    ("sqlite:////nonexistent-folder/sub/pin.db", "cannot be opened"),
])
def test_bad_url_is_a_usage_error(url: str, says: str) -> None:
    with pytest.raises(UsageError, match=says) as bad:
        Store(url)
    assert bad.value.exit_code == 2
    assert "s3cret" not in bad.value.render()


def test_unreachable_postgresql_names_url_without_password() -> None:
    url = f"postgresql://pin:s3cret@127.0.0.1:{free_port()}/pin"
    with pytest.raises(UsageError, match="cannot be opened") as bad:
        Store(url)
    assert "s3cret" not in bad.value.render()
    assert "pin:***@127.0.0.1" in bad.value.message
