"""The service and a multi-target lock: ``pin lock push LOCK --target NAME`` uploads the
target's lock (its view rendered as a lock-version 1 document, whose content hash is the
target's, the one hosts verifying against it report); ``pin serve`` refuses an uploaded
lock-version 2 file with 422 naming its targets and the remedy; a lock file given for a
service ``?lock=`` parameter (``--report-lock``) takes a target too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from pinning.errors import UsageError
from pinning.lockfile.io import parse_lock_bytes, read_lock, render
from pinning.serve.app import create_app
from pinning.serve.storage import Store
from tests.support.cli import pin
from tests.support.multilock_targets import CANDIDATE, CURRENT, write_multi
from tests.unit.remote.service import GOOD, FakeService, fake_service

TOML = {"content-type": "application/toml"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    store = Store(f"sqlite:///{tmp_path / 'pin.db'}")
    try:
        with TestClient(create_app(store)) as client:
            token = store.create_token("admin", None)[1]
            yield client, {"Authorization": f"Bearer {token}", **TOML}
    finally:
        store.close()


@pytest.fixture
def service() -> Iterator[FakeService]:
    with fake_service() as svc:
        yield svc


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PIN_")} | extra


def test_an_uploaded_multi_target_lock_is_422_naming_its_targets(
        api: tuple[TestClient, dict[str, str]], tmp_path: Path) -> None:
    client, headers = api
    messages = []
    for views in (None, {"candidate": read_lock(CANDIDATE)}):
        data = write_multi(tmp_path / "pin.lock", views).read_bytes()
        r = client.post("/api/v1/locks", content=data, headers=headers)
        assert r.status_code == 422, r.text
        body = r.json()["error"]
        assert "multi-target lock" in body["message"]
        assert "pin lock push FILE --target NAME" in body["hint"]
        assert "Traceback" not in r.text
        messages.append(body["message"])
    assert "targets: current, candidate)" in messages[0]
    assert "targets: candidate)" in messages[1]
    assert client.get("/api/v1/locks", headers=headers).json()["locks"] == []
    # The target's view, as pin lock push sends it, is stored under the target's hash.
    view = render(read_lock(CANDIDATE)).encode()
    r = client.post("/api/v1/locks", content=view, headers=headers)
    assert r.status_code == 201, r.text
    assert r.json()["content_hash"] == read_lock(CANDIDATE).content_hash


def test_push_uploads_the_targets_lock(service: FakeService, tmp_path: Path) -> None:
    path = write_multi(tmp_path / "pin.lock")
    none = pin("lock", "push", str(path), "--to", service.url, env=_env(PIN_TOKEN=GOOD))
    assert none.returncode == 2 and "current, candidate" in none.stderr, none.stderr
    assert service.seen == []  # nothing sent
    done = pin("lock", "push", str(path), "--target", "candidate", "--to", service.url,
               env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    want = read_lock(CANDIDATE)
    assert done.stdout == want.content_hash + "\n"
    (seen,) = service.seen
    assert parse_lock_bytes(seen.body, label="sent") == want
    assert b"lock-version = 1" in seen.body and b"[targets." not in seen.body
    assert "pin.lock [targets.candidate]" in done.stderr
    pulled = tmp_path / "pulled.lock"
    back = pin("lock", "pull", want.content_hash, "--from", service.url, "-o", str(pulled),
               env=_env(PIN_TOKEN=GOOD))
    assert back.returncode == 0, back.stderr
    assert read_lock(pulled) == want


def test_a_lock_file_for_a_service_parameter_takes_a_target(tmp_path: Path) -> None:
    from pinning.cli.service import lock_ref

    path = str(write_multi(tmp_path / "pin.lock"))
    assert lock_ref(path, "--report-lock", "current") == read_lock(CURRENT).content_hash
    with pytest.raises(UsageError, match=r"2 targets \(current, candidate\)"):
        lock_ref(path, "--report-lock")
    with pytest.raises(UsageError, match="is a content hash"):
        lock_ref(read_lock(CURRENT).content_hash, "--report-lock", "current")
