"""A minimal token server for the distribution registry's ``auth: token`` (tests only).

The registry (distribution 2.8) trusts a JWT signed with ES256 whose header carries the
signing certificate in ``x5c``, chained to a certificate in its ``rootcertbundle``; the
claims name ``iss`` (its ``issuer``), ``aud`` (its ``service``), ``exp``/``nbf`` and the
granted ``access`` list (distribution/distribution@01509db714038a26a335447f59a92ac4e44ef25e:
registry/auth/token/token.go, ``Verify`` and ``parseAndVerifyCertChain``; the flow in
docs/spec/auth/token.md; date not recorded).

This server grants every requested ``repository:NAME:ACTIONS`` scope to the one user whose
Basic credentials match, or to the holder of its refresh (identity) token (``POST`` with
``grant_type=refresh_token``); anonymous requests get a token with no access, so the
registry answers 401 again. It records each request (method, scopes, who) in ``requests``.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.server
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

TOKEN_SECONDS = 300


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class TokenRequest:
    """One request the token server answered: ``method``, ``scopes``, ``user`` (``None``
    anonymous, ``"<refresh>"`` for a refresh token) and the ``status`` sent."""

    method: str
    scopes: list[str]
    user: str | None
    status: int


@dataclass
class TokenServer:
    """A running token server: ``realm`` (its URL), ``service``, ``issuer``, ``root`` (the
    PEM bundle for the registry's ``rootcertbundle``), ``refresh_token`` (accepted as an
    identity token) and the ``requests`` it answered."""

    realm: str
    service: str
    issuer: str
    root: Path
    refresh_token: str
    requests: list[TokenRequest] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None
    thread: threading.Thread | None = None

    def stop(self) -> None:
        """Stop serving."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.thread is not None:
            self.thread.join()


def _signing_pair(folder: Path) -> tuple[ec.EllipticCurvePrivateKey, bytes, Path]:
    """An EC P-256 key, its self-signed certificate (DER) and the PEM file holding it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pin test token signer")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    root = folder / "token-root.pem"
    root.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert.public_bytes(serialization.Encoding.DER), root


def _jwt(key: ec.EllipticCurvePrivateKey, cert_der: bytes, claims: dict[str, Any]) -> str:
    """A compact JWS (ES256: the raw 32-byte r and s) with the certificate in ``x5c``."""
    header = {"typ": "JWT", "alg": "ES256", "x5c": [base64.b64encode(cert_der).decode()]}
    signing_input = (_b64url(json.dumps(header).encode()) + "."
                     + _b64url(json.dumps(claims).encode()))
    der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return signing_input + "." + _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def _access(scopes: list[str]) -> list[dict[str, Any]]:
    """The ``access`` claim granting every ``type:name:actions`` scope asked for."""
    out = []
    for scope in scopes:
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        if kind and name:
            out.append({"type": kind, "name": name, "actions": actions.split(",")})
    return out


def start_token_server(folder: Path, user: str, password: str, *,
                       service: str = "pin-test-registry",
                       issuer: str = "pin-test-issuer") -> TokenServer:
    """Serve tokens on ``http://127.0.0.1:PORT/token`` for ``user``/``password``; the root
    bundle is written to ``folder``."""
    key, cert_der, root = _signing_pair(folder)
    state = TokenServer(realm="", service=service, issuer=issuer, root=root,
                        refresh_token=uuid.uuid4().hex)
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def token_for(who: str | None, scopes: list[str]) -> bytes:
        now = int(time.time())
        claims = {"iss": issuer, "sub": who or "", "aud": service, "exp": now + TOKEN_SECONDS,
                  "nbf": now - 10, "iat": now, "jti": uuid.uuid4().hex,
                  "access": _access(scopes) if who else []}
        body: dict[str, Any] = {"token": _jwt(key, cert_der, claims),
                                "expires_in": TOKEN_SECONDS}
        body["access_token"] = body["token"]
        return json.dumps(body).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            scopes = [s for value in query.get("scope", []) for s in value.split()]
            sent = self.headers.get("Authorization")
            if sent is not None and sent != expected:
                state.requests.append(TokenRequest("GET", scopes, "?", 401))
                self._send(401, b'{"details":"wrong user or password"}')
                return
            who = user if sent == expected else None
            state.requests.append(TokenRequest("GET", scopes, who, 200))
            self._send(200, token_for(who, scopes))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            scopes = [s for value in form.get("scope", []) for s in value.split()]
            good = (form.get("grant_type") == ["refresh_token"]
                    and form.get("refresh_token") == [state.refresh_token])
            state.requests.append(TokenRequest("POST", scopes, "<refresh>" if good else "?",
                                               200 if good else 401))
            if not good:
                self._send(401, b'{"details":"bad refresh token"}')
                return
            self._send(200, token_for(user, scopes))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.server, state.thread = server, thread
    state.realm = f"http://127.0.0.1:{server.server_address[1]}/token"
    return state
