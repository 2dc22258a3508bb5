"""Hardening II of pin serve, in process: every route checks the token before it reads or
validates anything (401, never 422 or 413, without a token), the OpenAPI document follows
the read policy, /metrics labels carry fact names only, and `pin serve token create --out`
writes the secret to a private file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi import APIRouter
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from pinning.cli import main
from pinning.serve.api.context import AuthFirstRoute
from pinning.serve.app import create_app
from pinning.serve.config import ServeConfig
from pinning.serve.metrics import MAX_FACT_SERIES, fact_counts
from pinning.serve.storage import Store
from tests.support.serve import drifting, mi300x_lock_bytes, mi300x_snapshot, snapshot_bytes

TOKEN_READS = ServeConfig.model_validate({"reads": "token"})


def _client(store_url: str, config: ServeConfig | None = None) -> Iterator[TestClient]:
    store = Store(store_url)
    try:
        with TestClient(create_app(store, config)) as client:
            client.app_state_store = store  # type: ignore[attr-defined]
            yield client
    finally:
        store.close()


@pytest.fixture
def open_client(store_url: str) -> Iterator[TestClient]:
    yield from _client(store_url)


@pytest.fixture
def token_client(store_url: str) -> Iterator[TestClient]:
    yield from _client(store_url, TOKEN_READS)


def _bearer(client: TestClient, scope: str = "admin") -> dict[str, str]:
    store: Store = client.app_state_store  # type: ignore[attr-defined]
    return {"Authorization": "Bearer " + store.create_token(scope)[1]}


def _code(r: object) -> tuple[int, str]:
    body = r.json()  # type: ignore[attr-defined]
    return r.status_code, body["error"]["code"]  # type: ignore[attr-defined]


def test_openapi_document_follows_the_read_policy(open_client: TestClient,
                                                   token_client: TestClient) -> None:
    assert open_client.get("/openapi.json").status_code == 200
    r = token_client.get("/openapi.json")
    assert r.status_code == 401 and "paths" not in r.text
    assert r.json()["error"]["hint"]
    ok = token_client.get("/openapi.json", headers=_bearer(token_client, "report"))
    assert ok.status_code == 200 and "/api/v1/locks" in ok.json()["paths"]
    for client in (open_client, token_client):  # no Swagger page in either mode
        assert client.get("/docs").status_code == 404
        assert client.get("/redoc").status_code == 404


def _write_routes(client: TestClient) -> list[tuple[str, str]]:
    """Every write operation the service declares (its OpenAPI document's paths)."""
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    return [(method.upper(), path) for path, ops in sorted(paths.items())
            for method in sorted(ops) if method not in ("get", "head")]


def test_every_write_checks_the_token_before_reading_the_request(
        open_client: TestClient) -> None:
    routes = _write_routes(open_client)
    assert ("PUT", "/api/v1/assignments/hosts/{host}") in routes and len(routes) >= 8
    bad_bodies = [b"{not json", b'{"lock": 7, "extra": [1]}', b"\xff" * 5_000_000]
    for method, path in routes:
        url = (path.replace("{host}", "n1").replace("{group}", "g1"))
        for body in bad_bodies:
            for query in ("", "?lock=" + "z" * 500 + "&scope=nonsense&group=" + "x" * 400):
                r = open_client.request(method, url + query, content=body,
                                        headers={"content-type": "application/json"})
                assert _code(r) == (401, "unauthorized"), (method, url, query, r.text[:200])
    # a token of the wrong scope is 403 before the body is looked at, too
    report = _bearer(open_client, "report")
    r = open_client.put("/api/v1/assignments/hosts/n1", content=b"{not json",
                        headers={**report, "content-type": "application/json"})
    assert _code(r) == (403, "forbidden")


def test_reads_under_token_policy_are_401_before_the_query_is_validated(
        token_client: TestClient) -> None:
    for url in ("/api/v1/hosts?limit=notanumber", "/api/v1/hosts?lock=" + "z" * 500,
                "/api/v1/acceptance/notanumber", "/metrics", "/api/v1/locks"):
        assert _code(token_client.get(url)) == (401, "unauthorized"), url
    assert token_client.get("/api/v1/health").status_code == 200  # health needs no token


def test_a_write_route_without_a_declared_scope_cannot_be_declared() -> None:
    router = APIRouter(route_class=AuthFirstRoute)

    def endpoint() -> None:
        """Unmarked."""

    with pytest.raises(TypeError, match="needs @needs"):
        router.add_api_route("/x", endpoint, methods=["POST"])
    router.add_api_route("/y", endpoint, methods=["GET"])  # a read: the read policy


def test_metrics_labels_are_fact_names_never_values_read_from_hosts(
        open_client: TestClient) -> None:
    admin = {**_bearer(open_client), "content-type": "application/json"}
    lock = open_client.post("/api/v1/locks", content=mi300x_lock_bytes(),
                            headers={**admin, "content-type": "application/toml"}
                            ).json()["content_hash"]
    snap = drifting(mi300x_snapshot())
    values = []
    for i in range(12):  # twelve hosts, each with another firmware value
        fw = snap["gpus"][0]["firmware"]
        block = "mec" if "mec" in fw else sorted(fw)[0]
        fw[block] = f"0x{0x7700 + i:08x}" if fw[block].startswith("0x") else f"9.{i}"
        values.append(fw[block])
        r = open_client.post(f"/api/v1/hosts/n{i}/reports?lock={lock}",
                             content=snapshot_bytes(snap), headers=admin)
        assert r.status_code == 201 and r.json()["result"] == "drift", r.text
    text = open_client.get("/metrics").text
    series = [s for f in text_string_to_metric_families(text) for s in f.samples
              if s.name == "pin_drift_reasons"]
    labels = [s.labels["fact"] for s in series]
    assert len(labels) == len(set(labels)) >= 1
    assert not any(v in label for v in values for label in labels)
    assert not any("[" in label or "!=" in label or " " in label for label in labels)
    assert max(s.value for s in series) == 12  # every host counted once under its fact


def test_fact_counts_bound_the_series() -> None:
    many = {f"packages.p{i:03d}": 1 + i % 3 for i in range(MAX_FACT_SERIES + 40)}
    cut = fact_counts(many)
    assert len(cut) == MAX_FACT_SERIES + 1 and "other" in cut
    assert sum(cut.values()) == sum(many.values())
    assert fact_counts({"firmware.mec": 2}) == {"firmware.mec": 2}


def _create(tmp_path: Path, *args: str) -> tuple[int, str]:
    db = f"sqlite:///{tmp_path / 'pin.db'}"
    r = CliRunner().invoke(main, ["serve", "token", "create", "--scope", "report",
                                  "--db", db, *args])
    return r.exit_code, r.output


def test_token_create_out_writes_a_private_file(tmp_path: Path) -> None:
    out = tmp_path / "node.token"
    code, text = _create(tmp_path, "--out", str(out))
    assert code == 0, text
    secret = out.read_text().strip()
    assert len(secret) >= 32 and secret not in text  # not on standard output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    # an existing 0600 file is replaced, still 0600
    code, text = _create(tmp_path, "--out", str(out))
    assert code == 0, text
    assert out.read_text().strip() != secret and stat.S_IMODE(out.stat().st_mode) == 0o600
    store = Store(f"sqlite:///{tmp_path / 'pin.db'}")
    try:
        assert store.token_info(out.read_text().strip()) is not None
    finally:
        store.close()


def test_token_create_out_refuses_a_file_others_may_read(tmp_path: Path) -> None:
    loose = tmp_path / "loose.token"
    loose.write_text("keep me\n")
    os.chmod(loose, 0o644)
    code, text = _create(tmp_path, "--out", str(loose))
    assert code == 2 and "0644" in text and "Traceback" not in text
    assert loose.read_text() == "keep me\n"  # untouched
    code, text = _create(tmp_path, "--out", str(tmp_path))  # a directory
    assert code == 2 and "Traceback" not in text
    code, text = _create(tmp_path, "--out", "-")
    assert code == 2 and "Traceback" not in text
    _create(tmp_path)  # the database exists
    db = tmp_path / "pin.db"
    os.chmod(db, 0o600)  # even a private database file is never the secret's file
    before = db.read_bytes()
    code, text = _create(tmp_path, "--out", str(db))
    assert code == 2 and "--db" in text and db.read_bytes() == before


def test_token_create_out_with_json_names_the_file_not_the_secret(tmp_path: Path) -> None:
    out = tmp_path / "new.token"
    code, text = _create(tmp_path, "--out", str(out), "--format", "json")
    assert code == 0, text
    doc = json.loads(text)
    doc = doc.get("result", doc)
    assert doc["secret-file"] == str(out) and "secret" not in doc
    assert out.read_text().strip() not in text


def test_token_create_json_still_prints_the_secret(tmp_path: Path) -> None:
    code, text = _create(tmp_path, "--format", "json")
    assert code == 0
    doc = json.loads(text)
    assert len(doc.get("result", doc)["secret"]) >= 32
