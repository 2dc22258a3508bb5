"""pin's registry client against the real distribution registry (Debian ``docker-registry``
2.8) on 127.0.0.1, as a team runs it: TLS with a CA made in the test, htpasswd (bcrypt) Basic
auth or the bearer-token flow through a token server, credentials from a temporary Docker
config. Push and read back, the clear errors (wrong password, no credentials, wrong CA),
chunked uploads the registry accepts, a cross-repository mount that sends no bytes, and a
base layer streamed from another registry. No Docker engine is needed.
"""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import BuildError, UsageError
from pinning.image.layers import gzip_layer
from pinning.oci import blobs as blobs_module
from pinning.oci.auth import engine_auth
from pinning.oci.documents import ImageDocs, LayerBlob, image_docs
from pinning.oci.registry import Registry, fetch_docs
from tests.integration.conftest import running_registry
from tests.support.components import RegistryProc, make_ca

USER = ("alice", "correct horse battery")


@pytest.fixture(scope="module")
def basic_tls() -> Iterator[RegistryProc]:
    yield from running_registry(auth=USER, tls=True)


@pytest.fixture(scope="module")
def token_tls() -> Iterator[RegistryProc]:
    yield from running_registry(auth=USER, tls=True, token=True)


@pytest.fixture(scope="module")
def plain() -> Iterator[RegistryProc]:
    yield from running_registry()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PIN_REGISTRY_CA", raising=False)
    monkeypatch.setenv("PIN_DOCKER_CERTS_D", str(tmp_path / "certs.d"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-config"))


def _login(reg: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
           password: str | None = None) -> Path:
    folder = reg.docker_config(tmp_path / "docker", password=password)
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))
    return folder / "config.json"


def _layer(size: int, name: str) -> LayerBlob:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        data = os.urandom(size)
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip_layer(buf.getvalue())


def _image(*sizes: int) -> ImageDocs:
    return image_docs([_layer(size, f"f{i}") for i, size in enumerate(sizes)],
                      epoch=1_700_000_000)


def _same(a: ImageDocs, b: ImageDocs) -> bool:
    return (a.manifest, a.config, [x.data for x in a.layers]) == (
        b.manifest, b.config, [x.data for x in b.layers])


def test_push_and_read_back_with_docker_config_credentials(
        basic_tls: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _login(basic_tls, tmp_path, monkeypatch)
    assert basic_tls.ca is not None
    docs = _image(200_000, 5_000)
    reg = Registry(basic_tls.host, ca_cert=basic_tls.ca)  # bare loopback host: HTTPS first
    digest = reg.push_image("pin/trial", "v1", docs)
    assert reg.base == f"https://{basic_tls.host}" and digest == docs.digest
    back = fetch_docs(basic_tls.host, f"{basic_tls.host}/pin/trial@{digest}",
                      ca_cert=basic_tls.ca)
    assert _same(back, docs)
    monkeypatch.setenv("PIN_REGISTRY_CA", str(basic_tls.ca))  # the variable works as well
    assert Registry(f"https://{basic_tls.host}").manifest_digest("pin/trial", "v1") == digest
    assert engine_auth(basic_tls.host) == {"username": USER[0], "password": USER[1],
                                           "serveraddress": basic_tls.host}


def test_wrong_password_no_credentials_and_wrong_ca(
        basic_tls: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _login(basic_tls, tmp_path, monkeypatch, password="not the password")
    with pytest.raises(BuildError) as info:
        Registry(basic_tls.host, ca_cert=basic_tls.ca).push_image("pin/x", "t", _image(10))
    text = info.value.render()
    assert "refused the credentials" in text and str(config) in text
    assert f"docker login {basic_tls.host}" in text and "not the password" not in text
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "nothing"))
    with pytest.raises(BuildError) as info:
        Registry(basic_tls.host, ca_cert=basic_tls.ca).ping()
    assert "needs credentials" in info.value.message
    assert f"docker login {basic_tls.host}" in info.value.hint
    _login(basic_tls, tmp_path, monkeypatch)
    wrong = make_ca(tmp_path / "wrong", name="not the registry's CA")
    with pytest.raises(BuildError) as info:
        Registry(f"https://{basic_tls.host}", ca_cert=wrong.cert).ping()
    assert "TLS certificate is not trusted" in info.value.message
    assert "--ca-cert" in info.value.hint and "PIN_REGISTRY_CA" in info.value.hint
    with pytest.raises(BuildError, match="TLS certificate is not trusted by the system's CAs"):
        Registry(basic_tls.host).ping()  # no CA at all: never falls back to plain HTTP


def test_plain_http_to_a_remote_host_is_refused() -> None:
    with pytest.raises(UsageError, match="plain HTTP only to a loopback registry"):
        Registry("http://registry.example.com:5000")


def test_chunked_upload_is_accepted_by_the_registry(
        basic_tls: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _login(basic_tls, tmp_path, monkeypatch)
    monkeypatch.setattr(blobs_module, "CHUNK_SIZE", 64 * 1024)
    docs = _image(300_000, 150_000)  # incompressible: several chunks each
    assert docs.layers[0].size > 4 * 64 * 1024
    reg = Registry(basic_tls.host, ca_cert=basic_tls.ca)
    digest = reg.push_image("pin/chunked", "v1", docs, jobs=2)
    back = fetch_docs(basic_tls.host, f"{basic_tls.host}/pin/chunked@{digest}",
                      ca_cert=basic_tls.ca)
    assert _same(back, docs)


def _record_requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, int]]:
    """Every (method, URL, status) requests sends from now on."""
    import requests

    seen: list[tuple[str, str, int]] = []
    original = requests.Session.request

    def request(self: requests.Session, method: str, url: str, *args: Any,
                **kw: Any) -> requests.Response:
        resp = original(self, method, url, *args, **kw)
        seen.append((method.upper(), resp.url, resp.status_code))
        return resp

    monkeypatch.setattr(requests.Session, "request", request)
    return seen


def test_mount_across_repositories_sends_no_bytes(
        basic_tls: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _login(basic_tls, tmp_path, monkeypatch)
    docs = _image(250_000, 120_000)
    Registry(basic_tls.host, ca_cert=basic_tls.ca).push_image("team/base", "v1", docs)
    # A new image whose layers pin does not hold: they live in team/base on this registry.
    held = [LayerBlob(data=None, digest=x.digest, diff_id=x.diff_id, length=x.size,
                      source=f"{basic_tls.host}/team/base") for x in docs.layers]
    app = image_docs(held, epoch=1_700_000_001, env={"APP": "1"})
    seen = _record_requests(monkeypatch)
    reg = Registry(basic_tls.host, ca_cert=basic_tls.ca)
    digest = reg.push_image("team/app", "v1", app)
    mounts = [(url, status) for method, url, status in seen
              if method == "POST" and "mount=" in url]
    assert len(mounts) == 2 and all(status == 201 for _, status in mounts)
    assert all("from=team%2Fbase" in url or "from=team/base" in url for url, _ in mounts)
    sent = [(m, u) for m, u, _ in seen if m in ("PATCH", "PUT") and "/blobs/uploads/" in u]
    assert len(sent) == 1  # only the new config; no layer byte went over the wire
    assert (reg.stats.mounted, reg.stats.uploaded) == (2, 1)
    assert reg.stats.bytes_uploaded == len(app.config)
    # The registry links the layers into team/app's own storage.
    layers_dir = (basic_tls.root / "data" / "docker" / "registry" / "v2" / "repositories"
                  / "team" / "app" / "_layers" / "sha256")
    for layer in docs.layers:
        assert (layers_dir / layer.digest[7:] / "link").read_text() == layer.digest
    back = fetch_docs(basic_tls.host, f"{basic_tls.host}/team/app@{digest}",
                      ca_cert=basic_tls.ca)
    assert [x.data for x in back.layers] == [x.data for x in docs.layers]


def test_a_base_layer_is_streamed_from_another_registry(
        basic_tls: RegistryProc, plain: RegistryProc, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobs_module, "CHUNK_SIZE", 64 * 1024)
    vendor = _image(400_000)
    Registry(plain.host).push_image("vendor/base", "v1", vendor)  # plain HTTP on loopback
    light = fetch_docs(plain.host, f"{plain.host}/vendor/base@{vendor.digest}", layers=False)
    assert light.layers[0].data is None and light.layers[0].source == f"{plain.host}/vendor/base"
    _login(basic_tls, tmp_path, monkeypatch)
    app = image_docs(list(light.layers), epoch=1_700_000_002)
    reg = Registry(basic_tls.host, ca_cert=basic_tls.ca)
    digest = reg.push_image("team/from-vendor", "v1", app)
    assert reg.stats.uploaded == 2 and reg.stats.bytes_uploaded == app.layers[0].size + len(
        app.config)
    back = fetch_docs(basic_tls.host, f"{basic_tls.host}/team/from-vendor@{digest}",
                      ca_cert=basic_tls.ca)
    assert back.layers[0].data == vendor.layers[0].data


def test_bearer_token_flow(token_tls: RegistryProc, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert token_tls.tokens is not None
    _login(token_tls, tmp_path, monkeypatch)
    docs = _image(100_000)
    reg = Registry(token_tls.host, ca_cert=token_tls.ca)
    digest = reg.push_image("pin/trial", "v1", docs)
    asked = [(r.method, r.user, r.scopes) for r in token_tls.tokens.requests]
    assert ("GET", USER[0], ["repository:pin/trial:pull,push", "repository:pin/trial:pull"]) \
        in asked or ("GET", USER[0], ["repository:pin/trial:pull,push"]) in asked
    assert all(r.status == 200 for r in token_tls.tokens.requests)
    back = fetch_docs(token_tls.host, f"{token_tls.host}/pin/trial@{digest}",
                      ca_cert=token_tls.ca)
    assert _same(back, docs)
    # A wrong password is refused by the token server: a clear error.
    _login(token_tls, tmp_path, monkeypatch, password="wrong")
    with pytest.raises(BuildError) as info:
        Registry(token_tls.host, ca_cert=token_tls.ca).manifest_digest("pin/trial", "v1")
    assert "token server" in info.value.message and "refused the credentials" in info.value.message
    # No credentials: the anonymous token grants nothing, the registry asks again.
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "none"))
    with pytest.raises(BuildError, match="needs credentials"):
        Registry(token_tls.host, ca_cert=token_tls.ca).manifest_digest("pin/trial", "v1")


def test_identity_token_from_a_credential_helper(
        token_tls: RegistryProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert token_tls.tokens is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-pintest"
    answer = json.dumps({"Username": "<token>", "Secret": token_tls.tokens.refresh_token})
    helper.write_text(f"#!/bin/sh\nread -r key\n[ \"$key\" = {token_tls.host} ] || "
                      "{ echo 'credentials not found in native keychain'; exit 1; }\n"
                      f"echo '{answer}'\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "config.json").write_text(json.dumps(
        {"credHelpers": {token_tls.host: "pintest"}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    before = len(token_tls.tokens.requests)
    docs = _image(1000)
    digest = Registry(token_tls.host, ca_cert=token_tls.ca).push_image("pin/helper", "v1", docs)
    used = token_tls.tokens.requests[before:]
    assert used and all((r.method, r.user, r.status) == ("POST", "<refresh>", 200) for r in used)
    assert fetch_docs(token_tls.host, f"{token_tls.host}/pin/helper@{digest}",
                      ca_cert=token_tls.ca).manifest == docs.manifest
    assert engine_auth(token_tls.host) == {"identitytoken": token_tls.tokens.refresh_token,
                                           "serveraddress": token_tls.host}
