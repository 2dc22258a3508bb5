"""/metrics: the text exposition parsed back with prometheus_client's parser."""

from __future__ import annotations

import datetime as dt

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from pinning.serve.app import create_app
from pinning.serve.metrics import StoreCollector, render, short_digest
from pinning.serve.storage import Store
from pinning.serve.storage.records import NewReport
from tests.support.serve import drifting, mi300x_lock_bytes, mi300x_snapshot, snapshot_bytes


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_collector_reads_the_store(store: Store) -> None:
    lock = store.store_lock(mi300x_lock_bytes())
    store.add_reports([
        NewReport(host="a", lock_hash=lock, result="match"),
        NewReport(host="b", lock_hash=lock, result="drift", reason="pin: fw",
                  reasons=("firmware",)),
        NewReport(host="c", lock_hash=lock, result="drift", reason="pin: fw",
                  reasons=("firmware", "driver")),
    ])
    seen = store.last_seen_by_host()
    later = max(seen.values()) + dt.timedelta(seconds=30)
    got = samples(render(StoreCollector(store, lambda: 7, clock=lambda: later)).decode())
    d12 = short_digest(lock)
    assert len(d12) == 12
    hosts = {(lab["status"], lab["lock"]): v for lab, v in got["pin_hosts"]}
    assert hosts == {("match", d12): 1, ("drift", d12): 2, ("unknown", d12): 0}
    assert {lab["fact"]: v for lab, v in got["pin_drift_reasons"]} == {"firmware": 2,
                                                                      "driver": 1}
    ages = {lab["host"]: v for lab, v in got["pin_host_last_report_age_seconds"]}
    assert set(ages) == {"a", "b", "c"} and min(ages.values()) >= 30
    assert got["pin_last_report_age_seconds"][0][1] == max(ages.values())
    assert got["pin_reports_total"] == [({}, 7.0)]


def test_metrics_endpoint_counts_acknowledged_reports(store: Store) -> None:
    _, admin = store.create_token("admin")
    headers = {"Authorization": f"Bearer {admin}", "content-type": "application/json"}
    with TestClient(create_app(store)) as client:
        empty = samples(client.get("/metrics").text)
        assert empty["pin_reports_total"] == [({}, 0.0)]
        assert empty["pin_last_report_age_seconds"] == [({}, 0.0)]
        lock = client.post("/api/v1/locks", content=mi300x_lock_bytes(),
                           headers={**headers, "content-type": "application/toml"}
                           ).json()["content_hash"]
        snap = mi300x_snapshot()
        for host, body in (("n1", snap), ("n2", drifting(snap))):
            r = client.post(f"/api/v1/hosts/{host}/reports?lock={lock}",
                            content=snapshot_bytes(body), headers=headers)
            assert r.status_code == 201
        r = client.get("/metrics")
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        got = samples(r.text)
    assert got["pin_reports_total"] == [({}, 2.0)]
    hosts = {lab["status"]: v for lab, v in got["pin_hosts"]}
    assert hosts == {"match": 1, "drift": 1, "unknown": 0}
    assert sum(v for _, v in got["pin_drift_reasons"]) >= 1
