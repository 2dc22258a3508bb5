"""Registry secrets stay with the registry: credentials go only to its own scheme, host and
port (never to an upload ``Location`` elsewhere), a plain-HTTP upload off loopback is refused,
a token that cannot be a header value is refused, and whatever a hostile registry or token
server echoes back of the ``Authorization`` pin sent is masked before it is shown. Store
registries (:mod:`tests.unit.oci.stub_registry`) on 127.0.0.1 / 127.0.0.2 play both sides."""

from __future__ import annotations

import base64
import http.server
import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import requests

from pinning.errors import BuildError
from pinning.oci import blobs as blobs_module
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.oci.registry import Registry, media_type_of
from pinning.oci.text import ERROR_READ_BYTES, MASK, error_body, mask_secrets
from pinning.util.digests import sha256_digest
from tests.support.httpserve import serving
from tests.support.oci_registry import Store, serve

CHUNK = 1000
PASSWORD = "s3cret-pw"
BASIC = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobs_module, "CHUNK_SIZE", CHUNK)
    monkeypatch.delenv("PIN_REGISTRY_CA", raising=False)


def _docker_config(tmp_path: Path, host: str, monkeypatch: pytest.MonkeyPatch,
                   password: str = PASSWORD) -> None:
    folder = tmp_path / "docker"
    folder.mkdir(exist_ok=True)
    auth = base64.b64encode(f"alice:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))


# -- credentials go to the registry's own address only -----------------------------------------


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])  # another port / another host
@pytest.mark.parametrize("mode", ["basic", "bearer"])
def test_an_upload_location_elsewhere_gets_no_credentials(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, bind: str) -> None:
    main = Store(auth=mode, password=PASSWORD)
    elsewhere = Store(blobs=main.blobs, uploads=main.uploads)  # takes the upload, no auth
    data = b"layer bytes " * 300  # 3600 bytes: PATCH chunks, then PUT
    with serve(main) as host, serve(elsewhere, bind=bind):
        main.upload_url = elsewhere.url
        _docker_config(tmp_path, host, monkeypatch)
        assert Registry(f"http://{host}").put_blob("pin/app", data) == sha256_digest(data)
    assert main.blobs[("pin/app", sha256_digest(data))] == data
    assert [r.method for r in elsewhere.log] == ["PATCH"] * 4 + ["PUT"]
    assert [r.authorization for r in elsewhere.log] == [None] * 5
    signed = [r.authorization for r in main.log if r.authorization]
    assert signed and (mode == "bearer" or signed == [main.basic] * len(signed))


@pytest.mark.parametrize("mode", ["basic", "bearer"])
def test_an_upload_host_that_asks_for_credentials_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    main = Store(auth=mode, password=PASSWORD)
    elsewhere = Store(auth="basic", password=PASSWORD, blobs=main.blobs, uploads=main.uploads)
    with serve(main) as host, serve(elsewhere, bind="127.0.0.2"):
        main.upload_url = elsewhere.url
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError) as info:
            Registry(f"http://{host}").put_blob("pin/app", b"small blob")
    assert info.value.exit_code == 8
    assert "not on the registry's own address" in info.value.message
    assert elsewhere.log and all(r.authorization is None for r in elsewhere.log)
    assert PASSWORD not in info.value.render()


@pytest.mark.parametrize("upload_url,needle", [
    ("http://upload.example.com", "plain HTTP on upload.example.com"),
    ("http://10.1.2.3:5000", "plain HTTP on 10.1.2.3"),
    ("ftp://upload.example.com", "not an http(s) URL"),
])
def test_an_unsafe_upload_location_is_refused_before_anything_is_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upload_url: str, needle: str) -> None:
    main = Store(auth="basic", password=PASSWORD)
    with serve(main) as host:
        main.upload_url = upload_url
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError) as info:
            Registry(f"http://{host}").put_blob("pin/app", b"small blob")
    assert needle in info.value.message and info.value.exit_code == 8
    assert [r.method for r in main.log if r.status != 401] == ["HEAD", "POST"]


def test_a_relative_location_resolves_against_the_request_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The PATCH answers of the other server carry relative Locations: they stay there.
    main = Store()
    elsewhere = Store(blobs=main.blobs, uploads=main.uploads)
    with serve(main) as host, serve(elsewhere):
        main.upload_url = elsewhere.url
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "none"))
        Registry(f"http://{host}").put_blob("pin/app", b"x" * 2500)
    assert [r.method for r in main.log] == ["HEAD", "POST"]
    assert [r.method for r in elsewhere.log] == ["PATCH", "PATCH", "PATCH", "PUT"]


# -- tokens ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["tok\u2603", "tok\u00e9", "tok\x00x", "tok en", "tok\tx"])
def test_a_token_that_is_not_printable_ascii_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    main = Store(auth="bearer", password=PASSWORD, token_text=token)
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError) as info:
            Registry(f"http://{host}").ping()
    assert info.value.exit_code == 8
    assert "not printable ASCII" in info.value.message and "RFC 6750" in info.value.message
    assert token not in info.value.render()
    assert [r.path for r in main.log] == ["/v2/", "/token"]  # the token was never sent


def test_a_printable_token_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "eyJhbGciOi.JIUzI1NiJ9-_~+/=="
    main = Store(auth="bearer", password=PASSWORD, token_text=token)
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        Registry(f"http://{host}").ping()
    assert main.log[-1].authorization == f"Bearer {token}"


# -- echoed secrets are masked -----------------------------------------------------------------


def test_a_registry_echoing_basic_credentials_is_masked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = Store(auth="basic", echo=True)  # the config's password is not the stub's
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError) as info:
            Registry(f"http://{host}").ping()
    text = info.value.render()
    assert main.log[-1].authorization == BASIC  # what was sent, and echoed
    assert "refused the credentials" in text and f"denied for {MASK}" in text
    assert BASIC.split()[1] not in text and PASSWORD not in text


def test_a_token_server_echoing_basic_credentials_is_masked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = Store(auth="bearer", echo=True)
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError) as info:
            Registry(f"http://{host}").ping()
    text = info.value.render()
    assert "token server" in text and f"denied for {MASK}" in text
    assert BASIC.split()[1] not in text and PASSWORD not in text


def test_a_registry_echoing_a_bearer_token_is_masked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "T0KEN-that-the-registry-echoes"
    main = Store(auth="bearer", password=PASSWORD, token_text=token, echo=True)
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        reg = Registry(f"http://{host}")
        reg.ping()  # a token is held
        main.auth = "basic"  # the registry now refuses it twice, quoting it each time
        with pytest.raises(BuildError) as info:
            reg.ping()
    assert [r.authorization for r in main.log[-2:]] == [f"Bearer {token}"] * 2
    text = info.value.render()
    assert "refused the credentials" in text and f"denied for {MASK}" in text
    assert token not in text


class _EchoChallenge(http.server.BaseHTTPRequestHandler):
    """Basic sign-in, then a 401 whose WWW-Authenticate quotes the Authorization it got."""

    protocol_version = "HTTP/1.1"
    pings = 0

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        sent = self.headers.get("Authorization")
        type(self).pings += 1
        self.send_response(200 if sent and type(self).pings == 2 else 401)
        if sent is None:
            self.send_header("WWW-Authenticate", 'Basic realm="r"')
        elif type(self).pings > 2:
            self.send_header("WWW-Authenticate", f'Foo got="{sent}"')
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def echo_challenge() -> Iterator[str]:
    handler = type("Handler", (_EchoChallenge,), {"pings": 0})
    with serving(handler) as port:
        yield f"127.0.0.1:{port}"


def test_a_challenge_echoing_the_authorization_is_masked(
        echo_challenge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _docker_config(tmp_path, echo_challenge, monkeypatch)
    reg = Registry(f"http://{echo_challenge}")
    reg.ping()  # 401 Basic, then 200 with the config's credentials
    with pytest.raises(BuildError) as info:
        reg.ping()  # 401 "Foo got=<Basic ...>": no challenge pin can answer
    text = info.value.render()
    assert "without a challenge pin can answer" in text and f'got="{MASK}"' in text
    assert BASIC.split()[1] not in text


class _Body:
    """Just what :func:`error_body` reads of a ``requests.Response``."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.headers = {"Content-Length": str(len(body))}

    def iter_content(self, chunk_size: int) -> Iterator[bytes]:
        for i in range(0, len(self.body), chunk_size):
            yield self.body[i:i + chunk_size]


def _as_response(body: bytes) -> requests.Response:
    return cast("requests.Response", _Body(body))


def test_a_secret_cut_at_the_read_limit_shows_no_part() -> None:
    secret = BASIC.split()[1]
    # White space squeezes to one space, so the text at the 64 KiB cut would be shown.
    body = b" " * (ERROR_READ_BYTES - 10) + secret.encode() + b" tail"
    text = error_body(_as_response(body), (secret,))
    assert secret[:10] not in text and secret[:4] not in text
    assert text.endswith("bytes more)")
    whole = error_body(_as_response(b"denied for " + BASIC.encode()), (BASIC, secret))
    assert whole == f"denied for {MASK}"
    assert error_body(_as_response(b"plain error"), ()) == "plain error"


def test_mask_secrets() -> None:
    assert mask_secrets("a tok/en b tok\\/en c", ("tok/en",)) == f"a {MASK} b {MASK} c"
    assert mask_secrets("Basic abc abcd", ("abcd", "abc", "")) == f"Basic {MASK} {MASK}"
    assert mask_secrets("nothing here", ()) == "nothing here"


def test_deeply_nested_json_is_not_a_crash() -> None:
    assert media_type_of(b"[" * 200_000 + b"]" * 200_000) == MEDIA_MANIFEST


def test_a_deeply_nested_token_answer_is_no_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = Store(auth="bearer", password=PASSWORD, token_body=b"[" * 200_000 + b"]" * 200_000)
    with serve(main) as host:
        _docker_config(tmp_path, host, monkeypatch)
        with pytest.raises(BuildError, match="answered without a token"):
            Registry(f"http://{host}").ping()
