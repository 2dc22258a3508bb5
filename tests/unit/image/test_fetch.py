"""The fetch step of ``pin build``: the lock's wheels downloaded from a PEP 503 index on
127.0.0.1 into a cache, sha256-checked while streaming, reused when already there, and never
left half-written."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import BuildError
from pinning.image import fetch
from pinning.image.fetch import _Fetcher, default_wheel_cache, fetch_wheels
from pinning.lockfile.io import amend, read_lock
from pinning.lockfile.models import Lockfile
from pinning.lockfile.wheels import Wheel
from pinning.util.progress import NULL_PROGRESS
from tests.support.httpserve import serving
from tests.support.paths import ROOT
from tests.support.pyindex import Dist, build_wheels, serve_index

GRAPH: dict[str, list[str]] = {"torch==2.13.0+rocm7.2": [], "filelock==3.0": []}
TAGS = {"torch==2.13.0+rocm7.2": ["cp312-cp312-manylinux_2_28_x86_64"]}


class Recorder:
    """A thread-safe Progress that records each task's label, total, bytes and end."""

    def __init__(self) -> None:
        self.tasks: dict[str, list[int | None]] = {}
        self.lock = threading.Lock()

    def task(self, label: str, total: int | None = None) -> Recorder._Task:
        with self.lock:
            self.tasks[label] = [total, 0, 0]
        return Recorder._Task(self, label)

    class _Task:
        def __init__(self, owner: Recorder, label: str) -> None:
            self.owner, self.label = owner, label

        def advance(self, n: int) -> None:
            with self.owner.lock:
                row = self.owner.tasks[self.label]
                row[1] = (row[1] or 0) + n

        def done(self, note: str = "") -> None:
            with self.owner.lock:
                row = self.owner.tasks[self.label]
                row[2] = (row[2] or 0) + 1


def _lock(url: str, dists: list[Dist], **override: dict[str, object]) -> Lockfile:
    base = url.removesuffix("/simple")
    wheels = []
    for d in dists:
        version = d.filename.split("-")[1]
        data: dict[str, object] = {"name": d.project, "version": version, "filename": d.filename,
                "sha256": d.sha256, "url": f"{base}/files/{d.filename.replace('+', '%2B')}"}
        data.update(override.get(d.project, {}))
        wheels.append(Wheel.model_validate(data))
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    return amend(lk, wheels=wheels, packages={w.name: w.version for w in wheels})


def _dists(tmp_path: Path) -> list[Dist]:
    return build_wheels(tmp_path / "probe", GRAPH, tags=TAGS)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_fetches_every_wheel_hash_checked(tmp_path: Path) -> None:
    progress = Recorder()
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, log):
        dists = _dists(tmp_path)
        torch_size = (tmp_path / "probe" / dists[0].filename).stat().st_size
        lk = _lock(url, dists, torch={"size": torch_size})
        dest = tmp_path / "cache" / "wheels"
        assert fetch_wheels(lk, dest, progress=progress, jobs=2) == dest
    assert lk.wheels is not None
    assert _files(dest) == sorted(w.filename for w in lk.wheels)
    for w in lk.wheels:
        data = (dest / w.filename).read_bytes()
        assert hashlib.sha256(data).hexdigest() == w.sha256
        # The total is the locked size when the index gave one (PyPI does), else unknown.
        assert progress.tasks[f"fetch {w.filename}"] == [w.size, len(data), 1]
    assert next(w for w in lk.wheels if w.name == "torch").size == torch_size
    assert sorted(p for p in log if p.endswith(".whl")) == sorted(
        f"/files/{w.filename}" for w in lk.wheels)


def test_a_cached_wheel_is_reused_and_a_wrong_one_replaced(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, log):
        lk = _lock(url, _dists(tmp_path))
        dest = tmp_path / "cache"
        fetch_wheels(lk, dest)
        log.clear()
        fetch_wheels(lk, dest)
        assert log == []  # nothing downloaded again
        assert lk.wheels is not None
        victim = dest / lk.wheels[0].filename
        victim.write_bytes(b"not the locked bytes")
        fetch_wheels(lk, dest)
        assert log == [f"/files/{lk.wheels[0].filename}"]
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == lk.wheels[0].sha256


def test_a_hash_mismatch_names_url_and_hashes_and_leaves_nothing(tmp_path: Path) -> None:
    wrong = "0" * 64
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        dists = _dists(tmp_path)
        lk = _lock(url, dists, filelock={"sha256": wrong})
        dest = tmp_path / "cache"
        with pytest.raises(BuildError) as err:
            fetch_wheels(lk, dest, jobs=1)
    real = next(d.sha256 for d in dists if d.project == "filelock")
    msg = err.value.message
    assert f"{url.removesuffix('/simple')}/files/filelock-3.0-py3-none-any.whl" in msg
    assert f"has sha256 {real}" in msg and f"expects {wrong}" in msg
    assert err.value.exit_code == 8
    assert "filelock-3.0-py3-none-any.whl" not in _files(dest)
    assert not [n for n in _files(dest) if n.endswith(".part")]


def test_more_bytes_than_locked_is_refused(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        lk = _lock(url, _dists(tmp_path), filelock={"size": 10})
        with pytest.raises(BuildError, match="more than the 10 bytes"):
            fetch_wheels(lk, tmp_path / "cache")
    assert not [n for n in _files(tmp_path / "cache") if "filelock" in n]


def test_http_errors_and_unreachable_servers(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        lk = _lock(url, _dists(tmp_path),
                   filelock={"url": f"{url.removesuffix('/simple')}/files/gone.whl"})
        with pytest.raises(BuildError, match=r"answered HTTP 404") as err:
            fetch_wheels(lk, tmp_path / "cache")
    assert "--wheelhouse" in err.value.hint
    # The server is gone now: a connection error, named, with no file left.
    with pytest.raises(BuildError, match="cannot download"):
        fetch_wheels(lk, tmp_path / "cache2")
    assert not [n for n in _files(tmp_path / "cache2") if n.endswith(".part")]


def test_a_wheel_without_url_must_be_in_the_cache(tmp_path: Path) -> None:
    dists = _dists(tmp_path)
    lk = _lock("http://127.0.0.1:9/simple", dists, filelock={"url": None},
               torch={"url": None})
    with pytest.raises(BuildError, match="records no URL") as err:
        fetch_wheels(lk, tmp_path / "cache")
    assert "--wheelhouse" in err.value.hint
    # Already in the cache with the locked bytes: nothing to fetch, no server needed.
    cache = tmp_path / "probe"
    assert fetch_wheels(lk, cache) == cache


def test_no_wheels_and_an_unwritable_cache(tmp_path: Path) -> None:
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    with pytest.raises(BuildError, match="records no wheels"):
        fetch_wheels(lk, tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    lk = _lock("http://127.0.0.1:9/simple", _dists(tmp_path))
    with pytest.raises(BuildError, match="cannot be created"):
        fetch_wheels(lk, blocker / "wheels")


def test_only_https_or_loopback_http_is_fetched(tmp_path: Path) -> None:
    # The lock model refuses plain http elsewhere; a wheel made without validation is
    # refused again by the fetch itself.
    good = Wheel(name="a", version="1.0", filename="a-1.0-py3-none-any.whl",
                 sha256="0" * 64, url="https://files.example/a-1.0-py3-none-any.whl")
    bad = good.model_copy(update={"url": "http://files.example/a-1.0-py3-none-any.whl"})
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    lk = lk.model_copy(update={"wheels": [bad]})
    with pytest.raises(BuildError, match="https only"):
        fetch_wheels(lk, tmp_path / "cache")
    with pytest.raises(ValueError, match="loopback"):
        Wheel.model_validate({**good.model_dump(), "url": bad.url})
    with pytest.raises(ValueError, match="user name or password"):
        Wheel.model_validate({**good.model_dump(), "url": "https://u:p@files.example/a.whl"})
    assert Wheel.model_validate({**good.model_dump(),
                                 "url": "http://[::1]:8/a.whl"}).url == "http://[::1]:8/a.whl"


def test_default_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path))
    assert default_wheel_cache() == tmp_path / "wheels"
    monkeypatch.delenv("PIN_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_wheel_cache() == tmp_path / "home" / ".cache" / "pin" / "wheels"


# --- the bytes as sent, a bound without a locked size, every redirect hop checked ---------

BODY = b"PK\x03\x04" + bytes(range(256)) * 8


@contextmanager
def _stub(redirects: dict[str, str] | None = None
          ) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A server on 127.0.0.1 with fixed answers; yields ``(base URL, [(path,
    Accept-Encoding)])``. ``/gzip``: BODY gzip-compressed, ``Content-Encoding: gzip``;
    ``/stream``: BODY without a length, the connection closed at its end; ``/plain``: BODY;
    ``/to?LOCATION``: a 302 to LOCATION (relative or absolute); ``/r/NAME``: a 302 to
    ``redirects[NAME]``; ``/loop``: a 302 to itself.
    """
    log: list[tuple[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes = b"", *, length: bool = True,
                  **headers: str) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k.replace("_", "-"), v)
            if length:
                self.send_header("Content-Length", str(len(body)))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            log.append((self.path, self.headers.get("Accept-Encoding", "")))
            path, _, query = self.path.partition("?")
            if path == "/gzip":
                self._send(200, gzip.compress(BODY, mtime=0), Content_Encoding="gzip")
            elif path == "/stream":
                self._send(200, BODY, length=False)
            elif path == "/plain":
                self._send(200, BODY)
            elif path == "/to":
                self._send(302, Location=urllib.parse.unquote(query))
            elif path.startswith("/r/") and path[3:] in (redirects or {}):
                self._send(302, Location=(redirects or {})[path[3:]])
            elif path == "/loop":
                self._send(302, Location="/loop")
            else:
                self._send(404)

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}", log


def _wheel(url: str, data: bytes = BODY, size: int | None = None) -> Wheel:
    return Wheel(name="a", version="1.0", filename="a-1.0-py3-none-any.whl",
                 sha256=hashlib.sha256(data).hexdigest(), url=url, size=size)


def _fetch(wheel: Wheel, dest: Path) -> None:
    dest.mkdir(exist_ok=True)
    _Fetcher(dest, NULL_PROGRESS).fetch(wheel)


def test_the_bytes_hashed_are_those_sent_not_decoded(tmp_path: Path) -> None:
    raw = gzip.compress(BODY, mtime=0)
    with _stub() as (base, log):
        _fetch(_wheel(f"{base}/gzip", raw), tmp_path / "c")
        with pytest.raises(BuildError, match="has sha256") as err:
            _fetch(_wheel(f"{base}/gzip", BODY), tmp_path / "d")
    # pip hashes the file as stored; a gzip Content-Encoding is not undone.
    assert (tmp_path / "c" / "a-1.0-py3-none-any.whl").read_bytes() == raw
    assert hashlib.sha256(raw).hexdigest() in err.value.message
    assert _files(tmp_path / "d") == []
    assert log == [("/gzip", "identity")] * 2


def test_without_a_locked_size_the_download_is_bounded(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert fetch.MAX_WHEEL_BYTES == 32 * 1024**3
    monkeypatch.setattr(fetch, "MAX_WHEEL_BYTES", 100)
    with _stub() as (base, _log):
        # No length announced: the stream is cut past the bound.
        with pytest.raises(BuildError, match=r"sent more than 100 bytes \(MAX_WHEEL_BYTES"):
            _fetch(_wheel(f"{base}/stream"), tmp_path / "c")
        # A length announced past the bound: refused before the body is read.
        with pytest.raises(BuildError, match=rf"announces {len(BODY)} bytes, more than 100"):
            _fetch(_wheel(f"{base}/plain"), tmp_path / "c")
        # A locked size is the bound instead, announced or not.
        with pytest.raises(BuildError, match="sent more than the 10 bytes the lock records"):
            _fetch(_wheel(f"{base}/stream", size=10), tmp_path / "c")
        monkeypatch.setattr(fetch, "MAX_WHEEL_BYTES", len(BODY))
        _fetch(_wheel(f"{base}/stream"), tmp_path / "ok")
    assert _files(tmp_path / "c") == []
    assert (tmp_path / "ok" / "a-1.0-py3-none-any.whl").read_bytes() == BODY


def test_redirects_within_loopback_are_followed(tmp_path: Path) -> None:
    with _stub() as (base, log):
        _fetch(_wheel(f"{base}/to?/to%3F{urllib.parse.quote(base + '/plain')}"), tmp_path / "c")
    assert (tmp_path / "c" / "a-1.0-py3-none-any.whl").read_bytes() == BODY
    assert [p for p, _ in log][-1] == "/plain" and len(log) == 3


@pytest.mark.parametrize(("location", "shown"), [
    ("http://example.invalid/x", "http://example.invalid/x"),
    ("http://u:SECRETPW@example.invalid/x", "http://***@example.invalid/x"),
    ("file:///etc/passwd", "file:///etc/passwd"),
])
def test_a_redirect_off_https_is_refused_before_it_is_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, location: str, shown: str) -> None:
    looked_up: list[object] = []
    real = socket.getaddrinfo

    def spy(host: object, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", spy)
    with _stub({"off": location}) as (base, log):
        hop = f"{base}/r/off"
        with pytest.raises(BuildError) as err:
            _fetch(_wheel(hop), tmp_path / "c")
    msg = err.value.message
    assert f"a-1.0-py3-none-any.whl: {hop} redirects to {shown}: pin fetches over https" in msg
    assert "SECRETPW" not in err.value.render()
    assert "example.invalid" not in looked_up  # no connection was attempted
    assert len(log) == 1 and _files(tmp_path / "c") == []


def test_too_many_redirects(tmp_path: Path) -> None:
    with _stub() as (base, log), pytest.raises(BuildError, match="redirected more than 10"):
        _fetch(_wheel(f"{base}/loop"), tmp_path / "c")
    assert len(log) == fetch.MAX_REDIRECTS + 1
    assert _files(tmp_path / "c") == []
