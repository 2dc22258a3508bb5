"""Where pin connects and whom it trusts: the registry address rules (HTTP only on loopback,
HTTPS first then plain HTTP for a bare loopback host, Docker Hub's endpoint), the image
reference host rules, and the CA order (given, PIN_REGISTRY_CA, certs.d, system) against a
real TLS server on 127.0.0.1 with a CA made in the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.errors import BuildError, UsageError
from pinning.oci.address import parse_address, resolve_ca
from pinning.oci.reference import is_loopback, parse, parse_pinned, registry_url, split_host
from pinning.oci.registry import Registry
from tests.support.components import LocalCA, make_ca
from tests.support.oci_registry import Store, serve

DIGEST = "sha256:" + "a" * 64


@pytest.fixture(autouse=True)
def _no_ambient_trust(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PIN_REGISTRY_CA", raising=False)
    monkeypatch.setenv("PIN_DOCKER_CERTS_D", str(tmp_path / "certs.d"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCA:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def tls_stub(ca: LocalCA) -> Iterator[tuple[str, Store]]:
    stub = Store()
    with serve(stub, cert=(ca.server_cert, ca.server_key)) as host:
        yield host, stub


@pytest.fixture
def plain_stub() -> Iterator[tuple[str, Store]]:
    stub = Store()
    with serve(stub) as host:
        yield host, stub


# -- addresses ---------------------------------------------------------------------------------


@pytest.mark.parametrize("base,host,endpoint,scheme", [
    ("https://registry.example.com:5000/", "registry.example.com:5000",
     "registry.example.com:5000", "https"),
    ("registry.example.com", "registry.example.com", "registry.example.com", "https"),
    ("docker.io", "docker.io", "registry-1.docker.io", "https"),
    ("https://index.docker.io", "index.docker.io", "registry-1.docker.io", "https"),
    ("http://127.0.0.1:5000", "127.0.0.1:5000", "127.0.0.1:5000", "http"),
    ("http://localhost:5000", "localhost:5000", "localhost:5000", "http"),
    ("http://[::1]:5000", "[::1]:5000", "[::1]:5000", "http"),
    ("127.0.0.1:5000", "127.0.0.1:5000", "127.0.0.1:5000", None),
    ("127.1.2.3", "127.1.2.3", "127.1.2.3", None),
])
def test_addresses(base: str, host: str, endpoint: str, scheme: str | None) -> None:
    address = parse_address(base)
    assert (address.host, address.endpoint, address.scheme) == (host, endpoint, scheme)


@pytest.mark.parametrize("base,needle", [
    ("http://registry.example.com:5000", "plain HTTP only to a loopback registry"),
    ("http://10.0.0.5", "plain HTTP only to a loopback registry"),
    ("http://docker.io", "plain HTTP only to a loopback registry"),
    ("ftp://registry.example.com", "is not https or http"),
    ("https://registry.example.com/v2/", "no path, user or query"),
    ("registry.example.com/pin", "no path, user or query"),
    ("https://registry.example.com?x=1", "no path, user or query"),
    ("registry.example.com:http", "no path, user or query"),
    ("registry.example.com:123456", "no path, user or query"),
    ("", "is empty"),
    ("   ", "is empty"),
    ("reg istry.example.com", "characters a host name cannot"),
    ("régistry.example.com", "characters a host name cannot"),
])
def test_refused_addresses(base: str, needle: str) -> None:
    # A bad --registry value is a usage error (exit 2), not a registry failure (exit 8).
    with pytest.raises(UsageError) as info:
        Registry(base)
    assert info.value.exit_code == 2
    assert needle in info.value.message
    if "plain HTTP" in needle:
        assert "https://" in info.value.hint


@pytest.mark.parametrize("base,shown", [
    ("https://user:hunter2@registry.example.com", "'https://***@registry.example.com'"),
    ("user:hunter2@registry.example.com:5000", "'***@registry.example.com:5000'"),
    ("https://u:hunter2/x?y#z@registry.example.com", "'https://***@registry.example.com'"),
    ("ftp://user:hunter2@registry.example.com", "'ftp://***@registry.example.com'"),
    ("u:hunter2@ftp://registry.example.com", "'***@ftp://registry.example.com'"),
])
def test_user_info_is_refused_without_echoing_the_password(base: str, shown: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_address(base)
    text = info.value.render()
    assert info.value.exit_code == 2 and "hunter2" not in text and "user:" not in text
    assert shown in info.value.message and "user name or password" in info.value.message
    assert "pin login" in info.value.hint


def test_loopback_and_hosts() -> None:
    assert [is_loopback(h) for h in ("localhost:5000", "127.0.0.1", "127.9.9.9:1", "[::1]:5",
                                     "LOCALHOST")] == [True] * 5
    assert [is_loopback(h) for h in ("10.0.0.1", "registry.local", "localhost.evil.com",
                                     "[::2]:5", "128.0.0.1")] == [False] * 5
    assert split_host("[::1]:5000") == ("::1", "5000")
    assert split_host("host:1") == ("host", "1")
    assert split_host("host") == ("host", None)
    assert split_host("::1") == ("", None)
    assert registry_url("127.0.0.1:5000") == "127.0.0.1:5000"
    assert registry_url("registry.example.com") == "https://registry.example.com"
    assert parse(f"docker.io/rocm/pytorch@{DIGEST}").registry_url == "https://docker.io"


@pytest.mark.parametrize("text", [f"rocm/pytorch@{DIGEST}", f"library/ubuntu:22.04@{DIGEST}"])
def test_a_reference_without_a_registry_host_is_refused(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse(text)
    assert "names no registry host" in info.value.message
    assert f"docker.io/{text}" in info.value.hint
    with pytest.raises(BuildError):
        parse_pinned(text)


@pytest.mark.parametrize("text", [f"localhost/pin/x@{DIGEST}", f"Registry/pin/x@{DIGEST}",
                                  f"127.0.0.1:5000/pin/x@{DIGEST}", f"nvcr.io/nvidia/pytorch@{DIGEST}",
                                  f"[::1]:5000/pin/x@{DIGEST}"])
def test_references_with_a_host_parse(text: str) -> None:
    assert str(parse_pinned(text)) == text


def test_docker_hub_one_part_names_are_library() -> None:
    reg = Registry("docker.io")
    assert (reg._repo("ubuntu"), reg._repo("rocm/pytorch")) == ("library/ubuntu", "rocm/pytorch")
    assert Registry("registry.example.com")._repo("ubuntu") == "ubuntu"


# -- scheme and trust --------------------------------------------------------------------------


def test_bare_loopback_uses_plain_http_when_the_server_has_no_tls(
        plain_stub: tuple[str, Store]) -> None:
    host, stub = plain_stub
    reg = Registry(host)
    reg.ping()
    assert reg.base == f"http://{host}"
    assert stub.requests("GET")[-1].path == "/v2/"


def test_bare_loopback_prefers_https(tls_stub: tuple[str, Store], ca: LocalCA) -> None:
    host, stub = tls_stub
    reg = Registry(host, ca_cert=ca.cert)
    reg.ping()
    assert reg.base == f"https://{host}"
    assert [r.path for r in stub.requests("GET")] == ["/v2/", "/v2/"]  # the probe, the ping


def test_untrusted_certificate_names_the_ca_options(tls_stub: tuple[str, Store],
                                                    tmp_path: Path) -> None:
    host, stub = tls_stub
    for base in (host, f"https://{host}"):  # a bare host never falls back to plain HTTP here
        with pytest.raises(BuildError) as info:
            Registry(base).ping()
        assert "TLS certificate is not trusted by the system's CAs" in info.value.message
        assert "--ca-cert" in info.value.hint and "PIN_REGISTRY_CA" in info.value.hint
        assert f"certs.d/{host}/ca.crt" in info.value.hint
    wrong = make_ca(tmp_path / "wrong", name="another CA")
    with pytest.raises(BuildError) as info:
        Registry(host, ca_cert=wrong.cert).ping()
    assert f"{wrong.cert} (from --ca-cert)" in info.value.message
    assert not stub.requests("GET")  # no request ever reached the handler


def test_ca_order(tls_stub: tuple[str, Store], ca: LocalCA, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    host, _ = tls_stub
    certs_d = tmp_path / "certs.d" / host
    certs_d.mkdir(parents=True)
    (certs_d / "ca.crt").write_bytes(ca.cert.read_bytes())
    assert resolve_ca(host) == (certs_d / "ca.crt", f"Docker's {tmp_path / 'certs.d'}/{host}/ca.crt")
    Registry(f"https://{host}").ping()  # Docker's certs.d is enough
    other = tmp_path / "other.pem"
    other.write_bytes(make_ca(tmp_path / "o").cert.read_bytes())
    monkeypatch.setenv("PIN_REGISTRY_CA", str(other))
    assert resolve_ca(host) == (other, "PIN_REGISTRY_CA")
    with pytest.raises(BuildError, match="from PIN_REGISTRY_CA"):
        Registry(f"https://{host}").ping()  # the variable comes before certs.d
    assert resolve_ca(host, ca.cert) == (ca.cert, "--ca-cert")
    Registry(f"https://{host}", ca_cert=ca.cert).ping()  # the argument comes first


@pytest.mark.parametrize("content,needle", [(None, "does not exist"),
                                            (b"not a certificate", "is not a PEM certificate")])
def test_an_unusable_ca_file(tmp_path: Path, content: bytes | None, needle: str) -> None:
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(BuildError) as info:
        Registry("https://registry.example.com", ca_cert=path)
    assert needle in info.value.message and str(path) in info.value.message


def test_nothing_answers(tmp_path: Path) -> None:
    from tests.support.components import free_port

    with pytest.raises(BuildError) as info:
        Registry(f"127.0.0.1:{free_port()}", timeout=5).ping()
    assert "neither HTTPS nor plain HTTP answered" in info.value.message
