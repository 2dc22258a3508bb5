"""pin serve and pin serve token: tokens printed once and stored hashed, listed, revoked;
the real server (a subprocess on a free port) takes a report with a token, refuses one
without, and stops on SIGTERM.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinning.cli import main
from pinning.serve.storage import Store
from tests.support.serve import (
    mi300x_lock_bytes,
    mi300x_snapshot,
    snapshot_bytes,
    start_serve,
    stop_serve,
)


def pin(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_token_create_list_revoke(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'pin.db'}"
    code, out, err = pin("serve", "token", "create", "--scope", "report", "--host", "node-1",
                         "--db", db)
    assert code == 0, err
    secret = out.strip()
    assert secret.startswith("pin_") and "\n" not in secret
    assert "shown this once" in err and secret not in err
    store = Store(db)
    try:
        info = store.token_info(secret)
        assert info is not None and (info.scope, info.host) == ("report", "node-1")
    finally:
        store.close()
    code, out, _ = pin("serve", "token", "create", "--scope", "admin", "--db", db,
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["result"]["scope"] == "admin"
    assert doc["result"]["secret"].startswith("pin_")
    code, out, _ = pin("serve", "token", "list", "--db", db, "--format", "json")
    tokens = json.loads(out)["result"]["tokens"]
    assert [t["scope"] for t in tokens] == ["report", "admin"]
    assert secret not in out
    code, out, _ = pin("serve", "token", "revoke", tokens[0]["id"], "--db", db)
    assert code == 0 and "Revoked" in out
    code, out, _ = pin("serve", "token", "list", "--db", db)
    assert "revoked" in out and "live" in out
    code, _, err = pin("serve", "token", "revoke", tokens[0]["id"], "--db", db)
    assert code == 2 and "No live token" in err


def test_token_create_refuses_bad_input(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'pin.db'}"
    code, _, err = pin("serve", "token", "create", "--scope", "publish", "--host", "n1",
                       "--db", db)
    assert code == 2 and "report tokens only" in err
    code, _, _ = pin("serve", "token", "create", "--scope", "root", "--db", db)
    assert code == 2
    code, _, err = pin("serve", "token", "list", "--db", "mysql://x/y")
    assert code == 2 and "mysql" in err


def test_serve_reads_its_config_table(tmp_path: Path) -> None:
    from pinning.errors import UsageError
    from pinning.serve.config import load_serve_config, read_serve_config

    cfg = tmp_path / "config.toml"
    cfg.write_text('[fleet]\ntimeout-s = 20\n[serve]\nport = 9000\nreads = "token"\n'
                   'acceptance-keys = ["keys/team.pub"]\n')
    got, path = read_serve_config(str(cfg), {})
    assert path == cfg and got.port == 9000 and got.reads == "token"
    assert got.acceptance_keys == (tmp_path / "keys" / "team.pub",)
    assert got.max_body_bytes == 4 * 1024 * 1024
    cfg.write_text('[serve]\nreads = "maybe"\nmax-body = 3\n')
    with pytest.raises(UsageError) as bad:
        load_serve_config(cfg)
    assert "[serve] reads" in bad.value.message and "[serve] max-body: unknown key" in \
        bad.value.message and bad.value.exit_code == 2
    with pytest.raises(UsageError):
        read_serve_config(None, {"PIN_CONFIG": str(cfg)})
    with pytest.raises(UsageError, match="no such file"):
        read_serve_config(str(tmp_path / "missing.toml"), {})


def request(url: str, data: bytes, token: str | None) -> tuple[int, dict[str, object]]:
    headers = {"content-type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_pin_serve_process(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'pin.db'}"
    url, admin, proc = start_serve(db)
    try:
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        req = urllib.request.Request(url + "/api/v1/locks", data=mi300x_lock_bytes(),
                                     headers={"Authorization": f"Bearer {admin}",
                                              "content-type": "application/toml"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            lock = json.loads(resp.read())["content_hash"]
        body = snapshot_bytes(mi300x_snapshot())
        status, doc = request(f"{url}/api/v1/hosts/node-1/reports?lock={lock}", body, None)
        assert status == 401 and doc["error"]["code"] == "unauthorized"  # type: ignore[index]
        status, doc = request(f"{url}/api/v1/hosts/node-1/reports?lock={lock}", body, admin)
        assert status == 201 and doc["result"] == "match"
    finally:
        code = stop_serve(proc)
    assert code == 0
    store = Store(db)
    try:
        assert [r.result for r in store.host_history("node-1")] == ["match"]
    finally:
        store.close()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("10.0.0.5", False), ("pin.example", False)])
def test_only_loopback_addresses_are_quiet(host: str, loopback: bool) -> None:
    from pinning.util.net import is_loopback_host  # what pin serve asks of --host

    assert is_loopback_host(host) is loopback
