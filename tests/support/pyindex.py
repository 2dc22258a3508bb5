"""A local PEP 503 simple index of real wheels, served on 127.0.0.1 for tests and benchmarks.

:func:`build_wheels` writes one pure-Python wheel per node of a dependency graph (a zip with
``NAME-VER.dist-info/METADATA`` carrying ``Requires-Dist``, ``WHEEL`` and ``RECORD``) and,
beside each, its PEP 658 core-metadata file (``NAME-VER-py3-none-any.whl.metadata``).
:func:`serve_index` serves them: ``/simple/`` (the project list), ``/simple/NAME/`` (the
project page; each wheel link carries ``data-core-metadata`` and ``data-dist-info-metadata``,
PEP 714 / PEP 658, so a resolver reads ``.metadata`` and never needs the wheel) and
``/files/FILE``. Every request path is appended to a request log, so a test can assert that
no ``.whl`` was fetched.

Graph shape: ``{"NAME==VERSION": ["REQUIREMENT", ...]}``, e.g.
``{"app==1.0": ["torchx==2.0", "helper>=1"], "torchx==2.0": [], "helper==1.2": []}``.
Names in ``sdist_only`` get an sdist (``NAME-VER.tar.gz``) and no wheel.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

__all__ = ["Dist", "build_wheels", "serve_index"]

_ZIP_DATE = (2020, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Dist:
    """One file of the index: its project (normalised name), file name, and the sha256 hex of
    the file and of its core metadata (``None`` for an sdist, which has no ``.metadata``)."""

    project: str
    filename: str
    sha256: str
    metadata_sha256: str | None


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _metadata(name: str, version: str, requires: list[str]) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             f"Summary: test distribution {name}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _wheel(name: str, version: str, requires: list[str]) -> tuple[str, bytes, bytes]:
    """``(file name, wheel bytes, METADATA bytes)`` of a py3-none-any wheel."""
    stem = f"{canonicalize_name(name).replace('-', '_')}-{version}"
    meta = _metadata(name, version, requires)
    files: dict[str, bytes] = {
        f"{stem.split('-')[0]}/__init__.py": f"__version__ = {version!r}\n".encode(),
        f"{stem}.dist-info/METADATA": meta,
        f"{stem}.dist-info/WHEEL": (b"Wheel-Version: 1.0\nGenerator: pyindex (tests)\n"
                                    b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = [f"{p},{_record_hash(d)},{len(d)}" for p, d in files.items()]
    record.append(f"{stem}.dist-info/RECORD,,")
    files[f"{stem}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, _ZIP_DATE), data)
    return f"{stem}-py3-none-any.whl", buf.getvalue(), meta


def _sdist(name: str, version: str, requires: list[str]) -> tuple[str, bytes]:
    stem = f"{canonicalize_name(name).replace('-', '_')}-{version}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        pkg = _metadata(name, version, requires)
        info = tarfile.TarInfo(f"{stem}/PKG-INFO")
        info.size = len(pkg)
        tf.addfile(info, io.BytesIO(pkg))
    return f"{stem}.tar.gz", buf.getvalue()


def build_wheels(folder: Path, graph: dict[str, list[str]], *,
                 sdist_only: frozenset[str] = frozenset()) -> list[Dist]:
    """Write the files of ``graph`` (see the module docstring) under ``folder``; returns one
    :class:`Dist` per file written. A key without ``==`` raises ``ValueError``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    dists = []
    for key, requires in graph.items():
        name, sep, version = key.partition("==")
        if not sep:
            raise ValueError(f"graph key {key!r} is not NAME==VERSION")
        project = canonicalize_name(name)
        if project in {canonicalize_name(n) for n in sdist_only}:
            filename, data = _sdist(name, version, requires)
            (folder / filename).write_bytes(data)
            dists.append(Dist(project, filename, hashlib.sha256(data).hexdigest(), None))
            continue
        filename, data, meta = _wheel(name, version, requires)
        (folder / filename).write_bytes(data)
        (folder / f"{filename}.metadata").write_bytes(meta)
        dists.append(Dist(project, filename, hashlib.sha256(data).hexdigest(),
                          hashlib.sha256(meta).hexdigest()))
    return dists


def _pages(dists: list[Dist]) -> dict[str, bytes]:
    """The HTML pages of the index, by request path."""
    projects: dict[str, list[Dist]] = {}
    for d in dists:
        projects.setdefault(d.project, []).append(d)
    root = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    pages = {"/simple/": f"<!DOCTYPE html>\n<html><body>\n{root}</body></html>\n".encode()}
    for project, files in projects.items():
        links = []
        for d in files:
            attrs = ""
            if d.metadata_sha256:
                attrs = (f' data-core-metadata="sha256={d.metadata_sha256}"'
                         f' data-dist-info-metadata="sha256={d.metadata_sha256}"')
            href = html.escape(f"../../files/{d.filename}#sha256={d.sha256}")
            links.append(f'<a href="{href}"{attrs}>{html.escape(d.filename)}</a>\n')
        pages[f"/simple/{project}/"] = (
            "<!DOCTYPE html>\n<html><body>\n" + "".join(links) + "</body></html>\n").encode()
    return pages


@contextmanager
def serve_index(tmp_path: Path, graph: dict[str, list[str]], *,
                sdist_only: frozenset[str] = frozenset()) -> Iterator[tuple[str, list[str]]]:
    """Build ``graph`` under ``tmp_path / "index"`` and serve it on 127.0.0.1 (a free port) in a
    thread; yields ``(simple index URL ending in "/simple", request log)``. The log is the
    list of request paths (``/simple/app/``, ``/files/app-1.0-py3-none-any.whl.metadata``)
    in arrival order, appended while the server runs. A path not in the index answers 404.
    """
    folder = tmp_path / "index"
    dists = build_wheels(folder, graph, sdist_only=sdist_only)
    pages = _pages(dists)
    files = {f"/files/{p.name}": p for p in folder.iterdir()}
    log: list[str] = []
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real indexes serve

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            with lock:
                log.append(path)
            if path.startswith("/simple/") and not path.endswith("/"):
                path += "/"
            if path in pages:
                self._send(pages[path], "text/html; charset=utf-8")
            elif path in files:
                kind = "text/plain" if path.endswith(".metadata") else "application/octet-stream"
                self._send(files[path].read_bytes(), kind)
            else:
                self.send_error(404)

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", log
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
