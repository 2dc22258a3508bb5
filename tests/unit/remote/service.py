"""A fake pin service for client tests: the responses of the API contract (pin serve, API
v1) on 127.0.0.1, recording every request (method, path, query, headers, exact body).

Served with :func:`tests.support.httpserve.serving`. Tokens: ``pin_good`` may do anything,
``pin_other_host`` is a report token bound to host ``other`` (403 elsewhere); no token or
another is 401 with ``WWW-Authenticate: Bearer realm="pin"``. ``force`` makes every answer
``(status, headers, body)``; ``delay_s`` sleeps before answering.
"""

from __future__ import annotations

import http.server
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pinning.errors import LockfileError
from pinning.lockfile.io import parse_lock_bytes
from tests.support.httpserve import serving

GOOD = "pin_good"
BOUND = "pin_other_host"


@dataclass
class Seen:
    """One request the fake service answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeService:
    """The fake service's state: ``url`` once serving; ``seen`` requests; ``locks`` stored
    (content hash -> bytes); ``verdict`` the host report answer's result and reason.
    """

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    locks: dict[str, bytes] = field(default_factory=dict)
    force: tuple[int, dict[str, str], bytes] | None = None
    delay_s: float = 0.0
    verdict: tuple[str, str | None] = ("match", None)
    pulled: bytes | None = None  # answer every lock GET with these bytes
    next_id: int = 0

    def error(self, status: int, code: str, message: str,
              hint: str = "") -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json"}
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="pin"'
        body = {"error": {"status": status, "code": code, "message": message, "hint": hint}}
        return status, headers, json.dumps(body).encode()

    def ok(self, status: int, data: Any) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json"}, json.dumps(data).encode()

    def answer(self, req: Seen) -> tuple[int, dict[str, str], bytes]:
        if self.force is not None:
            return self.force
        path = req.path.removeprefix("/api/v1")
        if req.method == "GET" and path.startswith("/locks/"):
            return self._get_lock(unquote(path.removeprefix("/locks/")))
        auth = req.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        if token not in (GOOD, BOUND):
            return self.error(401, "unauthorized", "A valid bearer token is needed to write.",
                              "Create one with pin serve token create.")
        if token == BOUND and not (path.startswith("/hosts/other/")):
            return self.error(403, "forbidden", "This token may only report as host other.",
                              "Use the host's own token.")
        if req.method == "POST" and path == "/locks":
            try:
                lock = parse_lock_bytes(req.body, label="uploaded lock")
            except LockfileError as err:
                return self.error(422, "invalid", err.message, err.hint)
            created = lock.content_hash not in self.locks
            self.locks[lock.content_hash] = req.body
            return self.ok(201 if created else 200, {
                "content_hash": lock.content_hash, "created": created,
                "url": f"/api/v1/locks/{lock.content_hash}"})
        if req.method == "PUT" and path.startswith("/assignments/"):
            kind, name = path.removeprefix("/assignments/").split("/", 1)
            want = json.loads(req.body)["lock"]
            if want not in self.locks:
                return self.error(404, "not-found", f"No stored lock {want}.")
            return self.ok(200, {kind.rstrip("s"): unquote(name), "lock": want})
        if req.method == "POST" and path.startswith("/hosts/") and path.endswith("/reports"):
            host = unquote(path.split("/")[2])
            named = req.query.get("lock", [None])[0]
            if named is None:
                return self.error(409, "conflict", f"No lock assigned to host {host}.",
                                  "Assign one: pin lock push LOCK --assign-host HOST.")
            self.next_id += 1
            result, reason = self.verdict
            return self.ok(201, {"id": self.next_id, "host": host,
                                 "group": req.query.get("group", [None])[0],
                                 "lock_hash": named, "result": result, "reason": reason,
                                 "reasons": [], "received_at": "2026-12-01T10:00:00Z"})
        if req.method == "POST" and path in ("/acceptance", "/audits", "/cost-verdicts"):
            self.next_id += 1
            return self.ok(201, {"id": self.next_id})
        return self.error(404, "not-found", f"No route {req.method} {req.path}.")

    def _get_lock(self, ref: str) -> tuple[int, dict[str, str], bytes]:
        if self.pulled is not None:
            return 200, {"Content-Type": "application/toml"}, self.pulled
        hexpart = ref.removeprefix("sha256:")
        hits = [h for h in self.locks if h.removeprefix("sha256:").startswith(hexpart)]
        if not hits:
            return self.error(404, "not-found", f"No stored lock {ref}.",
                              "Push it with pin lock push.")
        if len(hits) > 1:
            return self.error(409, "conflict", f"The prefix {ref} names {len(hits)} locks.")
        return 200, {"Content-Type": "application/toml"}, self.locks[hits[0]]


def _handler(svc: FakeService) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else b""
            req = Seen(self.command, parts.path, parse_qs(parts.query),
                       {k.lower(): v for k, v in self.headers.items()}, body)
            svc.seen.append(req)
            if svc.delay_s:
                time.sleep(svc.delay_s)
            status, headers, data = svc.answer(req)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _serve

    return Handler


@contextmanager
def fake_service() -> Iterator[FakeService]:
    """A running :class:`FakeService`."""
    svc = FakeService()
    with serving(_handler(svc), poll_s=0.05) as port:
        svc.url = f"http://127.0.0.1:{port}"
        yield svc


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
