"""pin serve's JSON API in process (FastAPI's TestClient), on SQLite and PostgreSQL: every
endpoint's answer and its errors, the report path (match, drift with the pin: reason,
history kept) and reads = "token".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pinning.serve.api.models import HostDetail, HostList, LockSummary, ReportAck
from pinning.serve.app import create_app
from pinning.serve.config import ServeConfig
from pinning.serve.storage import Store
from tests.support.paths import ROOT
from tests.support.serve import drifting, snapshot_bytes

OTHER_LOCK = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()
JSON = {"content-type": "application/json"}
TOML = {"content-type": "application/toml"}


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A real porting audit and cost report, as pin audit / pin cost write them."""
    from pinning.cli import main

    tmp = tmp_path_factory.mktemp("artefacts")
    run = CliRunner().invoke
    r = run(main, ["audit", str(ROOT / "examples" / "cuda-project"), "--gpu", "mi300x",
                   "--format", "json", "-o", str(tmp / "audit.json")])
    assert r.exit_code == 11, r.output  # inline PTX is blocked: the bill is still written
    r = run(main, ["cost", str(ROOT / "tests" / "data" / "acceptance" / "judged-c4.json"),
                   "--prices", str(ROOT / "pinning" / "cost" / "data" /
                                   "article-prices-2026-09-28.toml"),
                   "--gpu", "H200", "--unbound-ok", "-o", str(tmp / "cost.json")])
    assert r.exit_code == 0, r.output
    return {"audit": (tmp / "audit.json").read_bytes(), "cost": (tmp / "cost.json").read_bytes()}


class Env:
    def __init__(self, store: Store, client: TestClient) -> None:
        self.store, self.client = store, client
        self.admin = self.bearer("admin")

    def bearer(self, scope: str, host: str | None = None) -> dict[str, str]:
        return {"Authorization": "Bearer " + self.store.create_token(scope, host)[1]}


def _env(store_url: str, config: ServeConfig | None = None) -> Iterator[Env]:
    store = Store(store_url)
    try:
        with TestClient(create_app(store, config)) as client:
            yield Env(store, client)
    finally:
        store.close()


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    yield from _env(store_url)


def error(r: Any, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert body["status"] == status and body["code"] == code and body["hint"].strip()
    assert "Traceback" not in r.text
    return str(body["message"])


def push(env: Env, data: bytes) -> str:
    r = env.client.post("/api/v1/locks", content=data, headers={**env.admin, **TOML})
    assert r.status_code in (200, 201), r.text
    return str(r.json()["content_hash"])


def test_health_and_openapi(env: Env) -> None:
    r = env.client.get("/api/v1/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["database"] == env.store.dialect
    assert body["schema"] == env.store.revision() != ""
    doc = env.client.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    post = doc["paths"]["/api/v1/locks"]["post"]
    assert "application/toml" in post["requestBody"]["content"]
    assert {"201", "401", "413", "422"} <= set(post["responses"])
    report = doc["paths"]["/api/v1/hosts/{host}/reports"]["post"]
    assert "application/json" in report["requestBody"]["content"]
    assert report["security"] == [{"bearer": []}]
    assert env.client.get("/docs").status_code == 404


def test_locks_upload_download_list_diff(env: Env, lock_bytes: bytes) -> None:
    c = env.client
    r = c.post("/api/v1/locks", content=lock_bytes, headers={**env.admin, **TOML})
    assert r.status_code == 201 and r.json()["created"] is True
    h = r.json()["content_hash"]
    assert r.json()["url"] == f"/api/v1/locks/{h}"
    again = c.post("/api/v1/locks", content=lock_bytes, headers={**env.admin, **TOML})
    assert again.status_code == 200 and again.json() == {**r.json(), "created": False}
    got = c.get(f"/api/v1/locks/{h}")
    assert got.content == lock_bytes and got.headers["etag"] == f'"{h}"'
    assert got.headers["content-type"].startswith("application/toml")
    assert c.get(f"/api/v1/locks/{h[7:19]}").content == lock_bytes  # a 12-digit prefix
    other = push(env, OTHER_LOCK)
    listed = c.get("/api/v1/locks").json()["locks"]
    assert {i["content_hash"] for i in listed} == {h, other}
    assert all(set(i) == {"content_hash", "request", "size", "created_at"} for i in listed)
    diff = c.get(f"/api/v1/locks/{h}/diff/{other}").json()
    assert diff["equal"] is False and diff["changes"]
    assert {"layer", "path", "old", "new"} <= set(diff["changes"][0])
    assert c.get(f"/api/v1/locks/{h}/diff/{h}").json() == {"equal": True, "changes": []}


def test_lock_errors(env: Env, lock_bytes: bytes) -> None:
    c = env.client
    error(c.post("/api/v1/locks", content=lock_bytes, headers=TOML), 401, "unauthorized")
    assert c.post("/api/v1/locks", content=lock_bytes).headers["www-authenticate"] == \
        'Bearer realm="pin"'
    error(c.post("/api/v1/locks", content=lock_bytes, headers={**env.bearer("report"), **TOML}),
          403, "forbidden")
    msg = error(c.post("/api/v1/locks", content=b"lock-version = 1\n",
                       headers={**env.admin, **TOML}), 422, "invalid")
    assert "uploaded lock" in msg
    error(c.post("/api/v1/locks", content=lock_bytes,
                 headers={**env.admin, "content-type": "image/png"}), 415,
          "unsupported-media-type")
    error(c.get("/api/v1/locks/sha256:" + "0" * 64), 404, "not-found")
    error(c.get("/api/v1/locks/nonsense"), 404, "not-found")
    a, b = push(env, lock_bytes), push(env, OTHER_LOCK)
    common = 0
    while a[7 + common] == b[7 + common]:
        common += 1
    if common >= 12:  # two stored hashes sharing 12 digits: practically never
        error(c.get(f"/api/v1/locks/{a[7:7 + common]}"), 409, "conflict")


def test_body_over_the_limit_is_413(store_url: str, lock_bytes: bytes) -> None:
    for e in _env(store_url, ServeConfig(max_body_bytes=2048)):
        big = lock_bytes + b"#" * 4096
        msg = error(e.client.post("/api/v1/locks", content=big, headers={**e.admin, **TOML}),
                    413, "too-large")
        assert "2048 bytes" in msg

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
            for _ in range(8):
                yield b"x" * 1024

        error(e.client.post("/api/v1/hosts/n1/reports?lock=" + "a" * 12, content=chunks(),
                            headers={**e.admin, **JSON}), 413, "too-large")
        assert e.store.list_locks() == []


def post_report(env: Env, host: str, body: bytes, query: str = "",
                headers: dict[str, str] | None = None) -> Any:
    return env.client.post(f"/api/v1/hosts/{host}/reports{query}", content=body,
                           headers={**(env.admin if headers is None else headers), **JSON})


def test_report_match_then_drift_keeps_history(env: Env, lock_bytes: bytes,
                                                snapshot: dict[str, Any]) -> None:
    h = push(env, lock_bytes)
    token = env.bearer("report", "node-1")
    first = post_report(env, "node-1", snapshot_bytes(snapshot), f"?lock={h[:19]}", token)
    assert first.status_code == 201, first.text
    ack = ReportAck.model_validate(first.json())
    assert (ack.result, ack.reason, ack.reasons, ack.lock_hash) == ("match", None, [], h)
    second = post_report(env, "node-1", snapshot_bytes(drifting(snapshot)), f"?lock={h}",
                         token)
    assert second.status_code == 201
    drift = second.json()
    assert drift["result"] == "drift" and drift["reason"].startswith("pin: ")
    assert "mec" in drift["reason"] and drift["reasons"]
    assert drift["id"] > ack.id and drift["received_at"].endswith("Z")
    detail = HostDetail.model_validate(env.client.get("/api/v1/hosts/node-1").json())
    assert detail.host.result == "drift" and detail.host.reason == drift["reason"]
    assert detail.host.gpu == "MI300X"
    assert [r.result for r in detail.history] == ["drift", "match"]
    assert env.client.get("/api/v1/hosts/node-1?limit=1").json()["history"][0]["id"] == \
        drift["id"]
    listed = HostList.model_validate(env.client.get("/api/v1/hosts?status=drift").json())
    assert listed.total == 1 and listed.hosts[0].host == "node-1"
    assert env.client.get("/api/v1/hosts?status=match").json() == {"hosts": [], "total": 0}
    assert env.client.get("/api/v1/hosts?gpu=MI300X").json()["total"] == 1
    summary = env.client.get("/api/v1/fleet/summary").json()
    assert summary["hosts"] == 1 and summary["locks"][0]["drift"] == 1
    assert summary["locks"][0]["top_reasons"][0]["hosts"] == 1
    lock_summary = LockSummary.model_validate(
        env.client.get(f"/api/v1/locks/{h}/summary").json())
    assert lock_summary.fleet.drift == 1 and lock_summary.lock.content_hash == h


def test_report_uses_host_then_group_assignment(env: Env, lock_bytes: bytes,
                                                snapshot: dict[str, Any]) -> None:
    c = env.client
    h, other = push(env, lock_bytes), push(env, OTHER_LOCK)
    publish = env.bearer("publish")
    r = c.put("/api/v1/assignments/groups/rack-1", json={"lock": h[:20]}, headers=publish)
    assert r.status_code == 200 and r.json() == {"group": "rack-1", "lock": h}
    r = post_report(env, "n2", snapshot_bytes(snapshot), "?group=rack-1")
    assert r.status_code == 201 and r.json()["lock_hash"] == h and r.json()["group"] == "rack-1"
    r = c.put("/api/v1/assignments/hosts/n2", json={"lock": other}, headers=publish)
    assert r.json() == {"host": "n2", "lock": other}
    assert c.get("/api/v1/assignments").json() == {"hosts": {"n2": other},
                                                   "groups": {"rack-1": h}}
    # The host's own assignment wins over ?lock= and its group.
    assert post_report(env, "n2", snapshot_bytes(snapshot), f"?lock={h}").json()[
        "lock_hash"] == other
    assert c.delete("/api/v1/assignments/hosts/n2", headers=publish).status_code == 204
    assert c.delete("/api/v1/assignments/groups/rack-1", headers=publish).status_code == 204
    assert c.get("/api/v1/assignments").json() == {"hosts": {}, "groups": {}}
    error(c.put("/api/v1/assignments/hosts/n2", json={"lock": "sha256:" + "0" * 64},
                headers=publish), 404, "not-found")
    error(c.put("/api/v1/assignments/hosts/n2", json={"nope": 1}, headers=publish), 422,
          "invalid")
    error(c.put("/api/v1/assignments/hosts/n2", json={"lock": h}, headers=env.bearer("report")),
          403, "forbidden")


def test_report_errors(env: Env, lock_bytes: bytes, snapshot: dict[str, Any]) -> None:
    body = snapshot_bytes(snapshot)
    h = push(env, lock_bytes)
    error(post_report(env, "n1", body, f"?lock={h}", {}), 401, "unauthorized")
    error(post_report(env, "n1", body, f"?lock={h}", {"Authorization": "Bearer pin_nope"}),
          401, "unauthorized")
    error(post_report(env, "n1", body, f"?lock={h}", env.bearer("publish")), 403, "forbidden")
    msg = error(post_report(env, "n1", body, f"?lock={h}", env.bearer("report", "n2")), 403,
                "forbidden")
    assert "n2" in msg
    msg = error(post_report(env, "n1", body), 409, "conflict")
    assert "No lock is assigned" in msg
    r = post_report(env, "n1", body, "?lock=" + "0" * 12)
    error(r, 404, "not-found")
    assert "pin lock push" in r.json()["error"]["hint"]
    msg = error(post_report(env, "n1", b"{not json", f"?lock={h}"), 422, "invalid")
    assert "not JSON" in msg
    error(post_report(env, "n1", b'{"gpus": 3}', f"?lock={h}"), 422, "invalid")
    error(env.client.post(f"/api/v1/hosts/n1/reports?lock={h}", content=body,
                          headers={**env.admin, "content-type": "text/plain"}), 415,
          "unsupported-media-type")
    error(post_report(env, "bad name!", body, f"?lock={h}"), 422, "invalid")
    error(env.client.get("/api/v1/hosts/n1"), 404, "not-found")  # nothing was stored
    assert env.client.get("/api/v1/hosts").json()["total"] == 0


def signed_result(lock_hash: str) -> tuple[bytes, bytes, Any]:
    from cryptography.hazmat.primitives.asymmetric import ec

    from pinning.accept.attest import sign_result
    from tests.unit.accept.test_attest import result

    key = ec.generate_private_key(ec.SECP256R1())
    res = result(lock_hash=lock_hash)
    plain = res.model_dump_json(by_alias=True, exclude_none=True).encode()
    return plain, sign_result(res, key), key


def test_acceptance_plain_signed_and_refused(store_url: str, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    lock_hash = "sha256:" + "1" * 64
    plain, envelope, key = signed_result(lock_hash)
    pub = tmp_path / "team.pub"
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    for e in _env(store_url, ServeConfig(acceptance_keys=(pub,))):
        post = e.client.post
        r = post("/api/v1/acceptance", content=plain, headers={**e.admin, **JSON})
        assert r.status_code == 201, r.text
        assert r.json() == {"id": r.json()["id"], "lock_hash": lock_hash, "passed": True,
                            "signature_verified": False}
        assert e.client.get(f"/api/v1/acceptance/{r.json()['id']}").content == plain
        r = post("/api/v1/acceptance", content=envelope, headers={**e.admin, **JSON})
        assert r.status_code == 201 and r.json()["signature_verified"] is True
        assert e.client.get(f"/api/v1/acceptance/{r.json()['id']}").content == envelope
        from pinning.accept.attest import sign_result
        from tests.unit.accept.test_attest import result

        stranger = sign_result(result(lock_hash=lock_hash), ec.generate_private_key(
            ec.SECP256R1()))
        msg = error(post("/api/v1/acceptance", content=stranger, headers={**e.admin, **JSON}),
                    422, "invalid")
        assert "does not verify" in msg
        error(post("/api/v1/acceptance", content=b'{"mode": "host"}',
                   headers={**e.admin, **JSON}), 422, "invalid")
        error(post("/api/v1/acceptance", content=plain, headers={**e.bearer("report"), **JSON}),
              403, "forbidden")
        assert len(e.store.list_artefacts("acceptance")) == 2
        error(e.client.get("/api/v1/acceptance/999"), 404, "not-found")


def test_audits_and_cost_verdicts(env: Env, lock_bytes: bytes,
                                  artefacts: dict[str, bytes]) -> None:
    h = push(env, lock_bytes)
    post = env.client.post
    r = post(f"/api/v1/audits?lock={h}", content=artefacts["audit"],
             headers={**env.admin, **JSON})
    assert r.status_code == 201, r.text
    totals = json.loads(artefacts["audit"])["totals"]
    assert r.json()["totals"] == totals and totals["blocked"] >= 1
    assert env.client.get(f"/api/v1/audits/{r.json()['id']}").content == artefacts["audit"]
    r = post(f"/api/v1/cost-verdicts?lock={h}", content=artefacts["cost"],
             headers={**env.admin, **JSON})
    assert r.status_code == 201, r.text
    assert env.client.get(f"/api/v1/cost-verdicts/{r.json()['id']}").content == \
        artefacts["cost"]
    summary = env.client.get(f"/api/v1/locks/{h}/summary").json()
    assert len(summary["audits"]) == 1 and summary["audits"][0]["totals"] == totals
    assert len(summary["cost_verdicts"]) == 1
    error(post("/api/v1/audits", content=artefacts["cost"], headers={**env.admin, **JSON}),
          422, "invalid")
    error(post("/api/v1/cost-verdicts", content=artefacts["audit"],
               headers={**env.admin, **JSON}), 422, "invalid")
    error(post("/api/v1/audits", content=b"[", headers={**env.admin, **JSON}), 422, "invalid")
    error(post("/api/v1/audits?lock=" + "0" * 12, content=artefacts["audit"],
               headers={**env.admin, **JSON}), 404, "not-found")


def test_reads_token(store_url: str, lock_bytes: bytes) -> None:
    for e in _env(store_url, ServeConfig(reads="token")):
        h = push(e, lock_bytes)
        for path in ("/api/v1/locks", f"/api/v1/locks/{h}", "/api/v1/hosts",
                     "/api/v1/fleet/summary", "/metrics", "/api/v1/assignments"):
            r = e.client.get(path)
            error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == 'Bearer realm="pin"'
            assert e.client.get(path, headers=e.bearer("report", "n1")).status_code == 200
        assert e.client.get("/api/v1/health").status_code == 200  # never guarded
