"""``pin login``'s store (pinning.oci.login): where the credentials go, that nothing else in
the Docker config is lost (also with concurrent writers), and that no secret is echoed."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pinning.errors import BuildError, UsageError
from pinning.oci import auth
from pinning.oci.login import store_credentials


def test_a_new_config_is_private_and_read_back_by_pin(tmp_path: Path) -> None:
    path = tmp_path / "docker" / "config.json"
    assert store_credentials("reg.example:5000", "alice", "s3cret pw", path=path) == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert base64.b64decode(doc["auths"]["reg.example:5000"]["auth"]) == b"alice:s3cret pw"
    creds = auth.credentials("reg.example:5000", path=path)
    assert creds is not None and (creds.username, creds.password) == ("alice", "s3cret pw")


def test_other_entries_and_keys_are_kept_and_docker_hub_uses_its_key(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"auths": {"other.example": {"auth": "eDp5"}},
                                "proxies": {"default": {"noProxy": "127.0.0.1"}}}))
    store_credentials("docker.io", "bob", "pw", path=path)
    doc = json.loads(path.read_text())
    assert doc["proxies"] == {"default": {"noProxy": "127.0.0.1"}}
    assert set(doc["auths"]) == {"other.example", "https://index.docker.io/v1/"}


def _helper(tmp_path: Path, body: str) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "docker-credential-fake"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}


def test_a_configured_helper_gets_the_credentials(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    got = tmp_path / "stored.json"
    monkeypatch.setenv("PATH", _helper(tmp_path, f'cat > {got}\n')["PATH"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"credsStore": "fake"}))
    where = store_credentials("reg.example", "carol", "pw1", path=path)
    assert where == "the credential helper docker-credential-fake"
    assert json.loads(got.read_text()) == {"ServerURL": "reg.example", "Username": "carol",
                                           "Secret": "pw1"}
    assert json.loads(path.read_text()) == {"credsStore": "fake"}  # nothing in the clear


def test_a_failing_helper_that_echoes_the_secret_is_not_quoted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _helper(tmp_path, "cat; cat >&2; exit 1\n")["PATH"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"credsStore": "fake"}))
    with pytest.raises(BuildError) as err:
        store_credentials("reg.example", "dave", 'my  "s3cret"', path=path)
    assert "s3cret" not in str(err.value) + (err.value.hint or "")
    assert "exit 1" in str(err.value)


@pytest.mark.parametrize(("user", "password"), [("", "x"), ("u", ""), ("u", "a\nb"),
                                                ("a:b", "x")])
def test_bad_credentials_are_usage_errors(tmp_path: Path, user: str, password: str) -> None:
    with pytest.raises(UsageError):
        store_credentials("reg.example", user, password, path=tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()


def _login(args: tuple[str, int]) -> None:
    path, i = args
    store_credentials(f"reg{i}.example", f"user{i}", f"pw{i}", path=Path(path))


def test_concurrent_logins_keep_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        pool.map(_login, [(str(path), i) for i in range(12)])
    doc = json.loads(path.read_text())
    assert set(doc["auths"]) == {f"reg{i}.example" for i in range(12)}


def test_closed_stdin_is_a_usage_error(tmp_path: Path) -> None:
    env = dict(os.environ, DOCKER_CONFIG=str(tmp_path))
    r = subprocess.run(f"{sys.executable} -m pinning login 127.0.0.1:9 -u me --password-stdin"
                       " <&-", shell=True, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "Standard input is closed" in r.stderr and "Traceback" not in r.stderr
