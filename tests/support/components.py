"""Start and stop the real components (private dockerd, local registry) for tests and
benchmarks. Raises ``RuntimeError`` when a component is missing or does not come up."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.paths import ROOT
from tests.support.tokenserver import TokenServer, start_token_server

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    """Poll ``check`` until it returns truthy; ``RuntimeError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up in {timeout:g} s ({last})")


@dataclass
class Engine:
    """A private dockerd: ``url`` for the SDK, ``client`` (docker.DockerClient)."""

    url: str
    client: Any
    root: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the daemon and remove its data root."""
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def start_dockerd() -> Engine:
    """dockerd on a private socket and data root, ``--bridge=none --iptables=false``."""
    exe = shutil.which("dockerd")
    if exe is None or os.geteuid() != 0:
        raise RuntimeError("dockerd is not installed or not running as root")
    import docker

    root = Path(tempfile.mkdtemp(prefix="pind-", dir="/tmp"))  # short: socket path limit
    sock = root / "docker.sock"
    with (root / "dockerd.log").open("wb") as log:  # the daemon keeps its own descriptor
        proc = subprocess.Popen(
            [exe, "--host", f"unix://{sock}", "--data-root", str(root / "data"),
             "--exec-root", str(root / "exec"), "--pidfile", str(root / "docker.pid"),
             "--bridge=none", "--iptables=false", "--ip6tables=false"],
            stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: proc.poll() is None and sock.exists(), "dockerd socket")
    client = docker.DockerClient(base_url=f"unix://{sock}", timeout=600)
    wait_for(client.ping, "dockerd")
    return Engine(url=f"unix://{sock}", client=client, root=root, proc=proc)


@dataclass
class RegistryProc:
    """A registry on 127.0.0.1: ``url`` (``http://...``, or ``https://...`` with TLS), ``host``
    (127.0.0.1:PORT), ``ca`` (the PEM CA that signed its certificate, with TLS), ``auth``
    (the user and password it accepts, when it asks for any) and ``tokens`` (its token
    server, with bearer auth)."""

    url: str
    host: str
    root: Path
    proc: subprocess.Popen[bytes]
    ca: Path | None = None
    auth: tuple[str, str] | None = None
    tokens: TokenServer | None = None

    def stop(self) -> None:
        """Stop the registry (and its token server) and remove its storage."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.tokens is not None:
            self.tokens.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def docker_config(self, folder: Path, *, password: str | None = None) -> Path:
        """Write ``folder/config.json`` holding this registry's credentials (``password``
        overrides the right one) as ``docker login`` does; return ``folder``."""
        if self.auth is None:
            raise ValueError("this registry asks for no credentials")
        user, right = self.auth
        raw = f"{user}:{right if password is None else password}".encode()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(
            {"auths": {self.host: {"auth": base64.b64encode(raw).decode()}}}))
        return folder


@dataclass
class BaseImage:
    """The base image in the test registry: ``repo``, ``digest`` and ``ref`` (repo@digest)."""

    repo: str
    digest: str
    ref: str
    epoch: int


@dataclass(frozen=True)
class LocalCA:
    """A CA made for one test run: ``cert`` (PEM file) and the server certificate and key it
    issued for 127.0.0.1 (``server_cert``, ``server_key``)."""

    cert: Path
    server_cert: Path
    server_key: Path


def make_ca(folder: Path, *, name: str = "pin test CA") -> LocalCA:
    """A fresh EC P-256 CA in ``folder`` and a server certificate it signed for the IP
    address 127.0.0.1 (and ``localhost``), valid for a day."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                            crl_sign=True, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                              critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = LocalCA(cert=folder / "ca.crt", server_cert=folder / "server.crt",
                   server_key=folder / "server.key")
    paths.cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.server_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.server_key.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return paths


def start_registry(*, auth: tuple[str, str] | None = None, tls: bool = False,
                   token: bool = False) -> RegistryProc:
    """The distribution registry (Debian ``docker-registry``) on a free 127.0.0.1 port.

    ``auth`` = ``(user, password)`` makes it ask for them: HTTP Basic from an htpasswd file
    (bcrypt), or with ``token`` the bearer-token flow through a token server
    (:mod:`tests.support.tokenserver`) that knows them. ``tls`` serves HTTPS with a
    certificate from a CA made here (``RegistryProc.ca``).
    """
    exe = shutil.which("docker-registry") or shutil.which("registry")
    if exe is None:
        raise RuntimeError("the distribution registry (Debian docker-registry) is not installed")
    if token and auth is None:
        raise ValueError("token auth needs a user and password")
    import requests

    root = Path(tempfile.mkdtemp(prefix="pinreg-"))
    port = free_port()
    config = root / "config.yml"
    text = ("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{port}\n")
    ca: LocalCA | None = None
    if tls:
        ca = make_ca(root / "tls")
        text += (f"  tls:\n    certificate: {ca.server_cert}\n    key: {ca.server_key}\n")
    tokens: TokenServer | None = None
    if auth is not None and token:
        tokens = start_token_server(root, *auth)
        text += (f"auth:\n  token:\n    realm: {tokens.realm}\n    service: {tokens.service}\n"
                 f"    issuer: {tokens.issuer}\n    rootcertbundle: {tokens.root}\n")
    elif auth is not None:
        import bcrypt

        user, password = auth
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
        (root / "htpasswd").write_text(f"{user}:{hashed}\n")
        text += f"auth:\n  htpasswd:\n    realm: pin-test\n    path: {root / 'htpasswd'}\n"
    config.write_text(text)
    with (root / "registry.log").open("wb") as log:  # the registry keeps its own descriptor
        proc = subprocess.Popen([exe, "serve", str(config)], stdout=log,
                                stderr=subprocess.STDOUT)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    verify: str | bool = str(ca.cert) if ca is not None else True
    try:
        wait_for(lambda: proc.poll() is None and requests.get(
            url + "/v2/", timeout=2, verify=verify).status_code in (200, 401), "registry")
    except RuntimeError:
        proc.kill()
        if tokens is not None:
            tokens.stop()
        log_text = (root / "registry.log").read_text(errors="replace")[-2000:]
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"the registry did not come up: {log_text}") from None
    return RegistryProc(url=url, host=f"127.0.0.1:{port}", root=root, proc=proc,
                        ca=ca.cert if ca is not None else None, auth=auth, tokens=tokens)


def push_base(registry_url: str) -> tuple[str, str, int]:
    """Build (or take from the cache) pin's base image and push it with
    :func:`pinning.image.base.push_base_image`; ``(repo, digest, epoch)``."""
    from pinning.image.base import load_recipe, push_base_image
    from pinning.oci.reference import parse_pinned
    from pinning.oci.registry import Registry

    repo = "pin/base"
    ref = push_base_image(Registry(registry_url), repo)
    return repo, parse_pinned(ref).required_digest, load_recipe().epoch


# Real PyPI wheels, downloaded by `make wheelhouse` (part of `make test`).
WHEELS = ROOT / ".wheelhouse"
SMALL_PACKAGES = {"idna": "3.10", "packaging": "24.2", "six": "1.16.0"}


def small_lock() -> Lockfile:
    """A resolved MI300X lock whose [packages] are three small pure-Python wheels."""
    from pinning.lockfile.io import lock_json, seal
    from pinning.matrix.load import load_matrix
    from pinning.resolve.constraints import Constraints, parse_framework, parse_runtime_spec
    from pinning.resolve.resolver import resolve
    from pinning.resolve.to_lock import lock_from_resolution

    if not WHEELS.is_dir():
        pytest.fail(f"{WHEELS} is missing: run `make wheelhouse`")
    m = load_matrix()
    c = Constraints(gpu="mi300x", frameworks=(parse_framework("pytorch==2.7"),),
                    rocm=parse_runtime_spec("--rocm", "7.1.1"))
    data = lock_json(lock_from_resolution(resolve(m, c), m))
    data["packages"] = dict(SMALL_PACKAGES)
    data["environment"] = {"PIN_TRIAL": "1"}
    data.pop("content-hash")
    return seal(data)
