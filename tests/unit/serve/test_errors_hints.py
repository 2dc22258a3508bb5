"""pin serve's error answers: every ApiError has a hint, a 503 keeps the operator's message
and hint in the server's log, and a 500 is logged with its traceback.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pinning.errors import LockfileError
from pinning.serve.app import create_app
from pinning.serve.errors import UNAVAILABLE, ApiError, pin_error_response, unexpected_response
from pinning.serve.storage import Store
from pinning.serve.storage.engine import URL_HINT, database_error
from tests.support.paths import ROOT

JSON = {"content-type": "application/json"}


def test_api_error_needs_a_hint() -> None:
    with pytest.raises(ValueError, match="has no hint"):
        ApiError(404, "Not stored.", "  ")
    assert ApiError(404, "Not stored.", "List them at /api/v1/locks.").hint.startswith("List")
    # A PinError without a hint of its own still answers with one.
    assert ApiError.of(422, LockfileError("Bad lock.")).hint.strip() != ""
    assert ApiError.of(422, LockfileError("Bad lock.", hint="Fix it.")).hint == "Fix it."


def _api_error_calls() -> Iterator[tuple[str, ast.Call]]:
    for path in sorted((ROOT / "pinning" / "serve").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "ApiError"):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node


def test_every_api_error_raised_in_pin_serve_has_a_hint() -> None:
    calls = list(_api_error_calls())
    assert len(calls) >= 20  # the sites are found at all
    for where, call in calls:
        hint: Any = (call.args[2] if len(call.args) > 2 else
                     next((k.value for k in call.keywords if k.arg == "hint"), None))
        assert hint is not None, f"{where}: ApiError without a hint"
        if isinstance(hint, ast.Constant):
            assert str(hint.value).strip(), f"{where}: empty hint"


def _body(response: Any) -> dict[str, Any]:
    import json

    return dict(json.loads(bytes(response.body))["error"])


def test_503_hides_the_operators_hint_and_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    err = database_error("postgresql://pin:s3cret@db.example/pin", OSError("disk I/O error"))
    with caplog.at_level(logging.ERROR, logger="pin.serve"):
        body = _body(pin_error_response(err, "GET /api/v1/locks"))
    assert (body["status"], body["message"], body["hint"]) == (503, *UNAVAILABLE)
    assert "--db" not in str(body) and "disk I/O" not in str(body)
    logged = caplog.text
    assert "GET /api/v1/locks" in logged and "disk I/O error" in logged
    assert URL_HINT in logged and "s3cret" not in logged


def test_other_pin_errors_are_invalid_input_with_their_hint() -> None:
    body = _body(pin_error_response(LockfileError("Bad lock.", hint="Fix it."), "POST /x"))
    assert (body["status"], body["message"], body["hint"]) == (422, "Bad lock.", "Fix it.")


def test_500_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        with caplog.at_level(logging.ERROR, logger="pin.serve"):
            body = _body(unexpected_response(exc, "GET /x"))
    assert body["status"] == 500 and "RuntimeError" in body["message"]
    assert "boom" not in str(body) and "server log" in body["hint"]
    (record,) = [r for r in caplog.records if r.name == "pin.serve"]
    assert record.exc_info is not None and record.exc_info[1] is not None
    assert "Traceback" in caplog.text and "boom" in caplog.text


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Store, TestClient, dict[str, str]]]:
    store = Store(f"sqlite:///{tmp_path / 'pin.db'}")
    admin = {"Authorization": "Bearer " + store.create_token("admin")[1]}
    try:
        with TestClient(create_app(store), raise_server_exceptions=False) as client:
            yield store, client, admin
    finally:
        store.close()


def _post_with_broken_tokens(
        served: tuple[Store, TestClient, dict[str, str]], path: str,
        error: Callable[[Store], Exception], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> Any:
    """POST ``{}`` to ``path`` as admin while the store's token lookup raises
    ``error(store)``, capturing pin.serve's ERROR log; the answer.
    """
    store, client, admin = served

    def broken(secret: str) -> None:
        raise error(store)

    monkeypatch.setattr(store, "token_info", broken)
    with caplog.at_level(logging.ERROR, logger="pin.serve"):
        return client.post(path, content=b"{}", headers={**admin, **JSON})


@pytest.mark.parametrize("path", ["/api/v1/locks", "/api/v1/hosts/node-1/reports"])
def test_database_failure_answers_503_without_the_operators_hint(
        served: tuple[Store, TestClient, dict[str, str]], path: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    r = _post_with_broken_tokens(
        served, path, lambda store: database_error(store.url, OSError(
            "unable to open database file")), monkeypatch, caplog)
    assert r.status_code == 503, r.text
    body = r.json()["error"]
    assert (body["message"], body["hint"]) == UNAVAILABLE
    assert "--db" not in r.text and "unable to open" not in r.text
    assert "unable to open database file" in caplog.text and "--db" in caplog.text


@pytest.mark.parametrize("path", ["/api/v1/locks", "/api/v1/hosts/node-1/reports"])
def test_unexpected_error_answers_500_and_logs_the_traceback(
        served: tuple[Store, TestClient, dict[str, str]], path: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    r = _post_with_broken_tokens(served, path, lambda _: RuntimeError("the token table is odd"),
                                 monkeypatch, caplog)
    assert r.status_code == 500, r.text
    assert "Traceback" not in r.text and "odd" not in r.text
    assert any(rec.name == "pin.serve" and rec.exc_info for rec in caplog.records)
    assert "Traceback" in caplog.text and "the token table is odd" in caplog.text

