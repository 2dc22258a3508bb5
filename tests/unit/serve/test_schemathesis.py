"""schemathesis (https://schemathesis.readthedocs.io/, 4.32.5) against pin serve's own
OpenAPI document, in process, on SQLite and PostgreSQL: every operation, with an admin token
(the write paths past authentication, a stored lock assigned to a host and a group so
report paths get past 409) and without one under ``reads = "token"``. No answer may be a
server error, and every answer's status, Content-Type and body must be the documented ones.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from pinning.serve.app import create_app
from pinning.serve.config import ServeConfig
from pinning.serve.storage import Store
from tests.support.postgres import Postgres

HOST, GROUP = "n1", "rack-1"
C = schemathesis.checks
#: Checked on every answer: no 5xx; status, Content-Type, headers and body as documented;
#: an undeclared method answered 405 with Allow.
CHECKS = [C.not_a_server_error, C.status_code_conformance, C.content_type_conformance,
          C.response_headers_conformance, C.response_schema_conformance, C.unsupported_method]
#: Also checked without a token under reads = "token": every operation but the health
#: check needs one, so a request without it (or with a wrong one) is refused. With reads
#: open (the default) a read without a token is answered by design.
AUTH_CHECKS = [C.ignored_auth, C.missing_required_header, C.negative_data_rejection]


@dataclass
class Served:
    """The app under test (behind :func:`_no_lifespan`), its stored lock's hash and the
    headers every call sends.
    """

    app: Any
    lock_hash: str
    lock_text: str
    headers: dict[str, str]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An empty database for this module: a SQLite file or one on the test PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('schemathesis') / 'pin.db'}"
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture(scope="module", params=["admin", "anonymous"])
def served(request: pytest.FixtureRequest, db_url: str, lock_bytes: bytes) -> Iterator[Served]:
    """The app over a store holding the MI300X lock, assigned to host n1 and group rack-1;
    with an admin token (reads open), or with none (reads = "token"). One per module and
    database: what the operations store stays for the next ones.
    """
    admin = request.param == "admin"
    store_url = db_url if admin else _fresh(request, db_url)
    store = Store(store_url)
    try:
        config = ServeConfig(reads="open" if admin else "token")
        with TestClient(create_app(store, config)) as client:
            secret = store.create_token("admin", None)[1]
            auth = {"Authorization": f"Bearer {secret}"}
            r = client.post("/api/v1/locks", content=lock_bytes,
                            headers={**auth, "content-type": "application/toml"})
            assert r.status_code == 201, r.text
            lock_hash = str(r.json()["content_hash"])
            for path in (f"hosts/{HOST}", f"groups/{GROUP}"):
                r = client.put(f"/api/v1/assignments/{path}", json={"lock": lock_hash},
                               headers=auth)
                assert r.status_code == 200, r.text
            assert isinstance(client.app, FastAPI)
            yield Served(_no_lifespan(client.app), lock_hash, lock_bytes.decode(),
                         auth if admin else {})
    finally:
        store.close()


def _no_lifespan(app: FastAPI) -> Any:
    """``app`` for schemathesis's ASGI transport, which runs an app's lifespan itself and
    ends it after each operation (closing the batch writer): the fixture's TestClient owns
    the app's lifespan, so this wrapper answers lifespan messages without passing them on.
    """

    async def guest(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            kind = (await receive())["type"]
            await send({"type": kind + ".complete"})
            if kind == "lifespan.shutdown":
                return

    return guest


def _fresh(request: pytest.FixtureRequest, db_url: str) -> str:
    """Another empty database of ``db_url``'s kind."""
    if db_url.startswith("sqlite"):
        tmp: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
        return f"sqlite:///{tmp.mktemp('schemathesis') / 'pin.db'}"
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database()


def _document() -> dict[str, Any]:
    """The service's OpenAPI document, as GET /openapi.json answers it."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'pin.db'}")
        try:
            with TestClient(create_app(store)) as client:
                doc: dict[str, Any] = client.get("/openapi.json").json()
        finally:
            store.close()
    return doc


# A lock upload is TOML text: sent as text/plain sends it.
schemathesis.serializer.alias("application/toml", "text/plain")
schema = schemathesis.openapi.from_dict(_document())


def _pick(case: Any, salt: str) -> bool:
    """A repeatable coin for ``case``: true for about half of the generated cases."""
    seed = repr((case.path_parameters, case.query, salt)).encode()
    return hashlib.sha256(seed).digest()[0] % 2 == 0


def _steer(case: Any, served: Served, snapshot: dict[str, Any]) -> None:
    """Point about half of the cases at stored things, so that they get past 404 / 409 /
    422: the stored lock for ``ref``, ``other``, ``lock`` and an assignment's body, the
    lock's own bytes for an upload, a valid host name, and for a report the assigned host
    n1 and the recorded host's snapshot.
    """
    params = case.path_parameters or {}
    path = case.operation.path
    for name in ("ref", "other"):
        if name in params and _pick(case, name):
            params[name] = served.lock_hash
    if case.query and "lock" in case.query and _pick(case, "lock"):
        case.query["lock"] = served.lock_hash[:20]
    if path.startswith("/api/v1/assignments/") and case.method == "PUT" and _pick(case, "a"):
        params["host" if "host" in params else "group"] = "n2"
        if isinstance(case.body, dict) and "lock" in case.body:
            case.body["lock"] = served.lock_hash
    if path == "/api/v1/locks" and case.method == "POST" and _pick(case, "upload"):
        case.body = served.lock_text
    if path == "/api/v1/hosts/{host}/reports" and _pick(case, "host"):
        params["host"] = HOST
        if _pick(case, "body"):
            case.body = snapshot


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_api_has_no_server_error(case: Any, served: Served, snapshot: dict[str, Any]) -> None:
    _steer(case, served, snapshot)
    checks = CHECKS if served.headers else CHECKS + AUTH_CHECKS
    case.call_and_validate(headers=served.headers, checks=checks, app=served.app)


# Regression tests of what schemathesis found.


@pytest.fixture
def client(store_url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    store = Store(store_url)
    try:
        with TestClient(create_app(store)) as c:
            yield c, {"Authorization": "Bearer " + store.create_token("admin", None)[1]}
    finally:
        store.close()


def test_405_carries_allow(client: tuple[TestClient, dict[str, str]]) -> None:
    """RFC 9110 section 15.5.6: a 405 answer carries Allow (the error handler dropped it)."""
    c, _ = client
    r = c.request("TRACE", "/api/v1/health")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method-not-allowed"
    assert "GET" in r.headers["allow"].replace(" ", "").split(",")
    r = c.patch("/api/v1/locks")
    assert r.status_code == 405
    assert set(r.headers["allow"].replace(" ", "").split(",")) & {"GET", "POST"}
    ok = c.get("/api/v1/health")
    assert ok.status_code == 200 and "allow" not in ok.headers


def test_400_is_documented(
        client: tuple[TestClient, dict[str, str]]) -> None:
    """FastAPI refuses a body that is not JSON with 400 before the handler, the report
    middleware a URL with a NUL in it; the OpenAPI document lists 400 (it did not).
    """
    c, admin = client
    for path in ("/api/v1/assignments/hosts/n1", "/api/v1/assignments/groups/g1"):
        r = c.put(path, content=b"\xff{not json", headers={**admin,
                                                           "content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "bad-request", r.text
        assert "Traceback" not in r.text
        assert "400" in c.get("/openapi.json").json()["paths"][
            path.replace("n1", "{host}").replace("g1", "{group}")]["put"]["responses"]
    r = c.put("/api/v1/assignments/hosts/n1", json={"lock": "sha256:" + "0" * 64},
              headers=admin)
    assert r.status_code == 404, r.text  # valid JSON naming no stored lock: not 400
    # A NUL in the URL is answered 400 on any path: every API operation documents it.
    r = c.get("/api/v1/hosts", params={"gpu": "a\x00b"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-request", r.text
    doc = c.get("/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if path != "/api/v1/health":
                assert "400" in op["responses"], (method, path)
