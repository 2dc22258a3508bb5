"""A hostile registry's error text is bounded: an 11 MB error line shows as a few hundred
characters and "... (N bytes more)", the rest of the body is counted, not kept, and a
manifest over 4 MiB is refused. A real HTTP server on 127.0.0.1 plays the registry."""

from __future__ import annotations

import contextlib
import http.server
from collections.abc import Iterator

import pytest

from pinning.errors import BuildError
from pinning.oci.registry import MAX_MANIFEST_BYTES, Registry
from pinning.oci.text import ERROR_TEXT_CHARS, clip_text
from tests.support.httpserve import serving

HUGE_ERROR = b'{"errors":[{"code":"DENIED","message":"' + b"x" * 10_800_000 + b'"}]}'
MANIFEST = b"{" + b" " * (MAX_MANIFEST_BYTES + 10) + b"}"


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a huge error, except the manifest path (a huge manifest)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes, *, length: bool = True) -> None:
        self.send_response(status)
        if length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stopped reading (a bounded reader)
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith("/manifests/big"):
            self._send(200, MANIFEST)
        elif self.path.endswith("/manifests/nolength"):
            self._send(500, HUGE_ERROR, length=False)
        else:
            self._send(500, HUGE_ERROR)

    def do_HEAD(self) -> None:
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def hostile() -> Iterator[str]:
    with serving(_Hostile) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("reference", ["v1", "nolength"])
def test_huge_error_body_is_cut_with_the_count_of_bytes_left(hostile: str,
                                                              reference: str) -> None:
    with pytest.raises(BuildError) as exc:
        Registry(hostile, timeout=30).get_manifest("pin/x", reference)
    message = exc.value.message
    assert "answered 500" in message and '{"errors":[{"code":"DENIED"' in message
    assert len(message) < 1000
    assert message.endswith("bytes more)")
    left = int(message.rsplit("(", 1)[1].split()[0])
    assert 10_000_000 < left <= len(HUGE_ERROR)


def test_manifest_over_4_mib_is_refused(hostile: str) -> None:
    with pytest.raises(BuildError, match=f"larger than {MAX_MANIFEST_BYTES} bytes"):
        Registry(hostile, timeout=30).get_manifest("pin/x", "big")


def test_an_error_without_body_still_names_the_status(hostile: str) -> None:
    with pytest.raises(BuildError, match="answered 403"):
        Registry(hostile, timeout=30).has_blob("pin/x", "sha256:" + "0" * 64)


def test_clip_text() -> None:
    assert clip_text("short  error\n text") == "short error text"
    long = "é" * (ERROR_TEXT_CHARS + 10)
    assert clip_text(long) == "é" * ERROR_TEXT_CHARS + "... (20 bytes more)"
    assert clip_text("abc", more=5) == "abc... (5 bytes more)"
    assert clip_text("a\n  b", squeeze=False) == "a\n  b"
