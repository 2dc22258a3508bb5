"""Credentials from the Docker config (auths, identity tokens, credential helpers run as real
programs on PATH) and the ``WWW-Authenticate`` parser (quoted strings, several challenges,
hostile input in linear time)."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from typing import SupportsIndex

import pytest

from pinning.errors import BuildError
from pinning.oci.auth import (
    DOCKER_HUB_KEY,
    config_key,
    credentials,
    docker_config_path,
    engine_auth,
    key_host,
)
from pinning.oci.challenge import Challenge, parse_challenges

# -- WWW-Authenticate --------------------------------------------------------------------------


def test_bearer_challenge_of_distribution() -> None:
    # As distribution's token access controller writes it (scope with a comma inside quotes).
    header = ('Bearer realm="https://auth.example.com/token",service="registry.example.com",'
              'scope="repository:pin/trial:pull,push",error="insufficient_scope"')
    assert parse_challenges(header) == [Challenge("bearer", {
        "realm": "https://auth.example.com/token", "service": "registry.example.com",
        "scope": "repository:pin/trial:pull,push", "error": "insufficient_scope"})]


def test_two_challenges_spaces_escapes_and_case() -> None:
    # RFC 7235 section 4.1's example, and a merged header of two challenges.
    header = ('Newauth realm="apps", type=1,  title="Login to \\"apps\\"", '
              'BASIC REALM="simple"')
    assert parse_challenges(header) == [
        Challenge("newauth", {"realm": "apps", "type": "1", "title": 'Login to "apps"'}),
        Challenge("basic", {"realm": "simple"})]
    assert parse_challenges('Basic realm = "a, b=c" , Bearer realm="x"') == [
        Challenge("basic", {"realm": "a, b=c"}), Challenge("bearer", {"realm": "x"})]


def test_scope_of_two_repositories_and_a_repeated_name() -> None:
    header = ('Bearer realm="r",scope="repository:a:pull,push repository:b:pull",'
              'realm="second"')
    (challenge,) = parse_challenges(header)
    assert challenge.params["scope"].split() == ["repository:a:pull,push", "repository:b:pull"]
    assert challenge.params["realm"] == "r"  # the first of a repeated name wins


def test_token68_and_bare_schemes() -> None:
    assert parse_challenges("Negotiate abc+/9==, Basic realm=x") == [
        Challenge("negotiate", {}, "abc+/9=="), Challenge("basic", {"realm": "x"})]
    assert parse_challenges("Basic") == [Challenge("basic", {})]
    assert parse_challenges("Basic, Bearer") == [Challenge("basic", {}),
                                                 Challenge("bearer", {})]


@pytest.mark.parametrize("header", ["", "   ", ",,,", '"quoted first"', "Bearer realm=\"open",
                                    "Bearer realm=", "Bearer =x", "\x00Basic"])
def test_malformed_headers_give_what_was_read_and_never_raise(header: str) -> None:
    challenges = parse_challenges(header)
    assert all(isinstance(c, Challenge) for c in challenges)
    if header.startswith("Bearer realm=\"open"):
        assert challenges == [Challenge("bearer", {"realm": "open"})]
    if header in ("", "   ", ",,,", '"quoted first"', "\x00Basic"):
        assert challenges == []


class _Counting(str):
    """A string that counts how often the parser reads a character of it."""

    reads = 0

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        _Counting.reads += 1
        return super().__getitem__(key)


def test_the_read_counter_sees_a_whole_pass() -> None:
    header = _Counting("Bearer " + 'a="b,c", ' * 1000)
    _Counting.reads = 0
    assert parse_challenges(header)[0].params == {"a": "b,c"}
    assert len(header) <= _Counting.reads <= 4 * len(header)


@pytest.mark.parametrize("unit", ['a=\\"', 'x="' + "\\\\" * 3, "a=b, ", " " * 3 + ",", "=" * 4,
                                  "Basic ", 'realm="' + "," * 5])
def test_hostile_headers_are_read_in_one_pass(unit: str) -> None:
    # Inputs that make a backtracking regex with nested quantifiers blow up: the parser
    # reads each character a bounded number of times, however long the header.
    for n in (10_000, 40_000):
        header = _Counting("Bearer " + unit * (n // len(unit)))
        _Counting.reads = 0
        parse_challenges(header)
        assert 0 < _Counting.reads <= 4 * len(header), (unit, n)


# -- the Docker config ------------------------------------------------------------------------


def _config(folder: Path, doc: object, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(doc))
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))
    return folder / "config.json"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_config_path_follows_docker_config(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert docker_config_path() == tmp_path / "config.json"
    monkeypatch.delenv("DOCKER_CONFIG")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert docker_config_path() == tmp_path / "home" / ".docker" / "config.json"


def test_keys_docker_uses() -> None:
    for hub in ("docker.io", "index.docker.io", "registry-1.docker.io", "Docker.IO:443"):
        assert config_key(hub) == DOCKER_HUB_KEY
    assert config_key("registry.example.com:5000") == "registry.example.com:5000"
    assert key_host("https://registry.example.com:5000/v2/") == "registry.example.com:5000"
    assert key_host("registry.example.com/whatever") == "registry.example.com"
    assert key_host(DOCKER_HUB_KEY) == "index.docker.io"


def test_auths_entry_forms(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = _config(tmp_path / "c", {"auths": {
        "reg.example.com:5000": {"auth": _b64("alice:pa:ss\x00")},
        "https://other.example.com/v1/": {"username": "bob", "password": "pw"},
        DOCKER_HUB_KEY: {"auth": _b64("carol:hub")},
        "tok.example.com": {"auth": "", "identitytoken": "refresh-me"},
        "empty.example.com": {},
    }}, monkeypatch)
    creds = credentials("reg.example.com:5000")
    assert creds is not None and (creds.username, creds.password) == ("alice", "pa:ss")
    assert creds.basic == "Basic " + _b64("alice:pa:ss")
    assert str(path) in creds.source and "pa:ss" not in repr(creds)
    other = credentials("other.example.com")  # a URL key matches its host
    assert other is not None and (other.username, other.password) == ("bob", "pw")
    hub = credentials("docker.io")
    assert hub is not None and hub.username == "carol"
    token = credentials("tok.example.com")
    assert token is not None and token.identity_token == "refresh-me" and token.basic is None
    assert "refresh-me" not in repr(token)
    assert credentials("empty.example.com") is None
    assert credentials("unknown.example.com") is None
    assert engine_auth("reg.example.com:5000") == {
        "username": "alice", "password": "pa:ss", "serveraddress": "reg.example.com:5000"}
    assert engine_auth("tok.example.com") == {"identitytoken": "refresh-me",
                                              "serveraddress": "tok.example.com"}
    assert engine_auth("docker.io") == {"username": "carol", "password": "hub",
                                        "serveraddress": DOCKER_HUB_KEY}
    assert engine_auth("unknown.example.com") is None


def test_no_config_file_means_no_credentials(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "absent"))
    assert credentials("reg.example.com") is None
    assert engine_auth("reg.example.com") is None


@pytest.mark.parametrize("text,needle", [
    ('{"auths": {"r.example": {"auth": "c2VjcmV0LXBhc3N3b3Jk"', "not JSON (line 1, column 56: "),
    ("[" * 200_000 + "]" * 200_000, "JSON nested too deeply"),  # past the parser's recursion
    ('{"auths": ' + "[" * 200_000, "JSON nested too deeply"),
    ('{"auths": ' + "1" * 5_000 + "}", "a number too long to read"),
    ("[1, 2]", "top level is not a JSON object"),
    ('{"auths": []}', '"auths" is not an object'),
    ('{"auths": {"r.example": "x"}}', "is not an object"),
    ('{"auths": {"r.example": {"auth": "not base64!"}}}', "is not base64"),
    ('{"auths": {"r.example": {"auth": "bm9jb2xvbg=="}}}', "does not decode to user:password"),
    ('{"credsStore": "../evil"}', "not a helper name"),
])
def test_malformed_config_is_a_clear_error_without_secrets(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "config.json").write_text(text)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    with pytest.raises(BuildError) as info:
        credentials("r.example")
    assert needle in info.value.message and str(tmp_path) in info.value.render()
    assert "secret-password" not in info.value.render()
    assert "c2VjcmV0" not in info.value.render()


def _helper(bin_dir: Path, name: str, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real ``docker-credential-NAME`` program on PATH; it logs the key it was asked for."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / f"docker-credential-{name}"
    exe.write_text("#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread -r key\n"
                   f"printf '%s\\n' \"$key\" >> {bin_dir}/asked\n{script}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir / "asked"


def test_cred_helpers_and_creds_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = _helper(tmp_path / "bin", "x", """case "$key" in
  reg.example.com:5000) echo '{"ServerURL":"reg.example.com:5000","Username":"alice","Secret":"pw"}';;
  https://index.docker.io/v1/) echo '{"Username":"<token>","Secret":"idtoken"}';;
  *) echo 'credentials not found in native keychain'; exit 1;;
esac""", monkeypatch)
    _helper(tmp_path / "bin", "broken",
            "echo 'keychain locked, secret hunter2-on-stdout'; "
            "echo 'stderr hunter2-on-stderr' >&2; exit 1", monkeypatch)
    _config(tmp_path / "c", {"credsStore": "x", "credHelpers": {
        "https://helped.example.com": "broken"},
        "auths": {"reg.example.com:5000": {"auth": _b64("ignored:because-helper")}}},
        monkeypatch)
    creds = credentials("reg.example.com:5000")
    assert creds is not None and (creds.username, creds.password) == ("alice", "pw")
    assert creds.source == "the credential helper docker-credential-x"
    hub = credentials("docker.io")
    assert hub is not None and hub.identity_token == "idtoken" and hub.username is None
    assert credentials("nothing.example.com") is None  # "not found" is no entry
    assert asked.read_text().split() == ["reg.example.com:5000", DOCKER_HUB_KEY,
                                         "nothing.example.com"]
    with pytest.raises(BuildError) as info:  # credHelpers wins over credsStore, by URL key
        credentials("helped.example.com")
    assert "docker-credential-broken failed (exit 1)" in info.value.message
    text = info.value.render()  # the helper's output may hold the secret: never quoted
    assert "hunter2" not in text and "keychain locked" not in text
    assert "docker-credential-broken get" in info.value.hint  # run it by hand to see why


@pytest.mark.parametrize("script,needle", [
    ("echo 'not json'", "printed something that is not JSON"),
    ("echo '{\"Username\": 1, \"Secret\": \"s\"}'", "without a string Username and Secret"),
    ("sleep 5", "did not answer"),
])
def test_misbehaving_helper(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str,
                            needle: str) -> None:
    _helper(tmp_path / "bin", "odd", script, monkeypatch)
    _config(tmp_path / "c", {"credsStore": "odd"}, monkeypatch)
    monkeypatch.setattr("pinning.oci.auth.HELPER_TIMEOUT_S", 0.5)
    with pytest.raises(BuildError) as info:
        credentials("r.example.com")
    assert needle in info.value.message


def test_helper_missing_from_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _config(tmp_path / "c", {"credsStore": "desktop"}, monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BuildError) as info:
        credentials("r.example.com")
    assert "docker-credential-desktop, which is not on PATH" in info.value.message
    assert "credsStore" in info.value.hint
