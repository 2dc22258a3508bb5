"""Regressions from the adversarial review of pin serve: one refused report never fails the
others of its batch, NUL characters never reach the databases, a known host cannot move to
another group's lock with ?group=, the report path checks the token before it reads the
body, and database URLs are shown without any password.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from pinning.serve.ingest import BatchWriter
from pinning.serve.storage.engine import redact
from pinning.serve.storage.records import NewReport
from tests.support.serve import drifting, snapshot_bytes
from tests.unit.serve.test_app import JSON, TOML, Env, _env


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    yield from _env(store_url)


def _report(host: str) -> NewReport:
    return NewReport(host=host, group=None, lock_hash="sha256:" + "a" * 64, result="match",
                     reason=None, reasons=(), snapshot_hash=None, gpu=None, body=None)


class _Refusing:
    """A store whose transaction fails whenever the batch holds host ``bad``."""

    def __init__(self) -> None:
        self.stored: list[str] = []

    def add_reports(self, batch: Sequence[NewReport]) -> list[int]:
        if any(r.host == "bad" for r in batch):
            raise RuntimeError("refused by the database")
        self.stored += [r.host for r in batch]
        return list(range(len(self.stored) - len(batch), len(self.stored)))


def test_a_refused_report_fails_only_itself() -> None:
    store = _Refusing()
    writer = BatchWriter(store, max_batch=64)  # type: ignore[arg-type]
    try:
        futures = {h: writer.submit(_report(h)) for h in ("a", "b", "bad", "c", "d")}
        for host in ("a", "b", "c", "d"):
            futures[host].result(timeout=30)
        with pytest.raises(RuntimeError, match="refused"):
            futures["bad"].result(timeout=30)
    finally:
        writer.close(30)
    assert sorted(store.stored) == ["a", "b", "c", "d"]


def test_a_nul_in_a_report_is_refused_before_the_batch() -> None:
    bad = NewReport(host="n1", group=None, lock_hash="sha256:" + "a" * 64, result="drift",
                    reason="pin: x\x00y", reasons=("x",), snapshot_hash=None, gpu=None,
                    body=None)
    assert bad.problem() is not None and "NUL" in (bad.problem() or "")


def test_a_gpu_name_with_a_nul_is_stored_without_it(env: Env, lock_bytes: bytes,
                                                   snapshot: dict[str, Any]) -> None:
    h = env.client.post("/api/v1/locks", content=lock_bytes, headers={**env.admin, **TOML})
    lock = h.json()["content_hash"]
    snap = copy.deepcopy(snapshot)
    snap["gpus"][0]["name"]["value"] = "MI300X\u0000x"
    r = env.client.post(f"/api/v1/hosts/n1/reports?lock={lock}", content=snapshot_bytes(snap),
                        headers={**env.bearer("report"), **JSON})
    assert r.status_code == 201, r.text
    assert env.client.get("/api/v1/hosts/n1").json()["host"]["gpu"] == "MI300Xx"


@pytest.mark.parametrize("path", ["/api/v1/hosts/%00", "/api/v1/hosts?gpu=%00",
                                  "/api/v1/hosts?group=a%00", "/hosts/%00", "/?gpu=%00"])
def test_a_nul_in_a_path_or_query_is_a_bad_request(env: Env, path: str) -> None:
    r = env.client.get(path)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "bad-request"


def test_a_known_host_keeps_its_group_s_lock(env: Env, lock_bytes: bytes,
                                            snapshot: dict[str, Any]) -> None:
    from tests.support.paths import ROOT

    prod = env.client.post("/api/v1/locks", content=lock_bytes,
                           headers={**env.admin, **TOML}).json()["content_hash"]
    other = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()
    lab = env.client.post("/api/v1/locks", content=other,
                          headers={**env.admin, **TOML}).json()["content_hash"]
    for group, lock in (("prod", prod), ("lab", lab)):
        assert env.client.put(f"/api/v1/assignments/groups/{group}", json={"lock": lock},
                              headers=env.admin).status_code == 200
    token = env.bearer("report", "node1")
    first = env.client.post("/api/v1/hosts/node1/reports?group=prod",
                            content=snapshot_bytes(drifting(snapshot)),
                            headers={**token, **JSON})
    assert first.status_code == 201 and first.json()["result"] == "drift"
    again = env.client.post("/api/v1/hosts/node1/reports?group=lab",
                            content=snapshot_bytes(drifting(snapshot)),
                            headers={**token, **JSON})
    assert again.status_code == 201, again.text
    assert again.json()["lock_hash"] == prod
    assert again.json()["group"] == "prod"
    assert again.json()["result"] == "drift"


def test_the_report_path_checks_the_token_before_the_body(env: Env) -> None:
    r = env.client.post("/api/v1/hosts/n1/reports", content=b"x" * (5 << 20),
                        headers=JSON)
    assert r.status_code == 401  # not 413: the body was never read


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://pin@h/db?password=s3cret", "postgresql://pin@h/db?password=***"),
    ("postgresql://pin:p@ss@h/db", "postgresql://pin:***@h/db"),
    ("postgresql://pin:pw@h:5/db?sslmode=require&PASSWORD=x",
     "postgresql://pin:***@h:5/db?sslmode=require&PASSWORD=***"),
    ("sqlite:////tmp/a@b/pin.db", "sqlite:////tmp/a@b/pin.db"),
])
def test_database_urls_are_shown_without_passwords(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_names_the_store_cannot_keep_are_refused(env: Env) -> None:
    name = "a" * 254  # one over a DNS name's bound, the column's size
    r = env.client.put(f"/api/v1/assignments/hosts/{name}", json={"lock": "0" * 12},
                       headers=env.admin)
    assert r.status_code == 422, r.text
    r = env.client.post(f"/api/v1/hosts/{name}/reports", content=b"{}",
                        headers={**env.bearer("report"), **JSON})
    assert r.status_code == 422, r.text  # not 503 "unavailable"


@pytest.mark.parametrize("name", [".", "..", "..."])
def test_dots_alone_are_not_a_name(name: str) -> None:
    from pinning.serve.api.context import check_name
    from pinning.serve.errors import ApiError

    with pytest.raises(ApiError) as caught:
        check_name("Host", name)
    assert caught.value.status == 422
    assert check_name("Host", "node-1.example") == "node-1.example"


def test_an_upper_case_lock_prefix_is_found(env: Env, lock_bytes: bytes) -> None:
    lock = env.client.post("/api/v1/locks", content=lock_bytes,
                           headers={**env.admin, **TOML}).json()["content_hash"]
    r = env.client.get(f"/api/v1/locks/{lock[7:19].upper()}")
    assert r.status_code == 200 and r.content == lock_bytes


def test_a_node_scoped_report_judges_the_node_only(env: Env, lock_bytes: bytes,
                                                   snapshot: dict[str, Any]) -> None:
    """?scope=node judges as pin verify --node-only: another ROCm user space is the
    image's business on Kubernetes, a firmware change is the node's.
    """
    from tests.support.fleetgen import DRIFTS

    lock = env.client.post("/api/v1/locks", content=lock_bytes,
                           headers={**env.admin, **TOML}).json()["content_hash"]
    token = {**env.bearer("report"), **JSON}
    user_space = copy.deepcopy(snapshot)
    DRIFTS["rocm"](user_space, random.Random(1))
    answers = {}
    for scope in ("full", "node"):
        r = env.client.post(f"/api/v1/hosts/k8s-{scope}/reports",
                            params={"lock": lock, "scope": scope},
                            content=snapshot_bytes(user_space), headers=token)
        assert r.status_code == 201, r.text
        answers[scope] = r.json()
    assert answers["full"]["result"] == "drift" and answers["full"]["scope"] == "full"
    assert answers["node"]["result"] == "match" and answers["node"]["scope"] == "node"
    node = env.client.post("/api/v1/hosts/k8s-fw/reports", params={"lock": lock,
                                                                   "scope": "node"},
                           content=snapshot_bytes(drifting(snapshot)), headers=token)
    assert node.json()["result"] == "drift"
    assert node.json()["reason"].startswith("pin: firmware")
    bad = env.client.post("/api/v1/hosts/k8s-x/reports", params={"lock": lock,
                                                                 "scope": "image"},
                          content=snapshot_bytes(snapshot), headers=token)
    assert bad.status_code == 422, bad.text


def test_the_report_path_has_one_door(store_url: str) -> None:
    """POST /api/v1/hosts/{host}/reports is answered by the ASGI fast path alone: FastAPI
    mounts no route for it, the OpenAPI document still describes it (parameters, body,
    answers), and any other method is 405 with Allow: POST.
    """
    from fastapi.testclient import TestClient

    from pinning.serve.app import create_app
    from pinning.serve.storage import Store

    store = Store(store_url)
    try:
        app = create_app(store)
        paths = [getattr(r, "path", "") for r in app.router.routes]
        paths += [getattr(r, "path", "") for inc in app.router.routes
                  for r in getattr(getattr(inc, "original_router", None), "routes", [])]
        assert not any(p.endswith("/hosts/{host}/reports") for p in paths), paths
        with TestClient(app) as client:
            op = client.get("/openapi.json").json()["paths"][
                "/api/v1/hosts/{host}/reports"]["post"]
            assert {p["name"] for p in op["parameters"]} == {"host", "group", "lock", "scope"}
            assert {"201", "401", "403", "409", "413", "415", "422"} <= set(op["responses"])
            assert "application/json" in op["requestBody"]["content"]
            for method in ("GET", "PUT", "DELETE"):
                r = client.request(method, "/api/v1/hosts/n1/reports")
                assert r.status_code == 405 and r.headers["allow"] == "POST"
                assert r.json()["error"]["code"] == "method-not-allowed"
    finally:
        store.close()
