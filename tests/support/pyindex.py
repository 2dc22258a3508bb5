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
Names in ``sdist_only`` get an sdist (``NAME-VER.tar.gz``) and no wheel. ``tags`` gives a
node several wheels, one per wheel tag (``{"torch==2.13.0+rocm7.2":
["cp312-cp312-manylinux_2_28_x86_64", "py3-none-any"]}``); a node not named there gets one
``py3-none-any`` wheel. Versions may carry a local label (``+rocm7.2``, ``+cu130``), as
PyTorch's variant wheels do; links quote the file name (``torch-2.13.0%2Brocm7.2-...``), as
PyTorch's index does, and the server unquotes request paths (the log holds ``+``).

:func:`serve_indexes` serves several indexes from one server, each under its own prefix
(``/rocm7.2/simple/``, ``/cu130/simple/``), so a test resolves one variant from one index URL
and another from a second.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import io
import tarfile
import threading
import urllib.parse
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from tests.support.httpserve import serving

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile

__all__ = ["Dist", "IndexSpec", "build_wheels", "serve_index", "serve_indexes"]

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


def _wheel(name: str, version: str, requires: list[str],
           tag: str = "py3-none-any") -> tuple[str, bytes, bytes]:
    """``(file name, wheel bytes, METADATA bytes)`` of a wheel with the wheel ``tag``
    (``py3-none-any``, ``cp312-cp312-manylinux_2_28_x86_64``); the tag is written into the
    package too, so wheels of one version differ in bytes.
    """
    stem = f"{canonicalize_name(name).replace('-', '_')}-{version}"
    meta = _metadata(name, version, requires)
    pure = tag.endswith("-any")
    files: dict[str, bytes] = {
        f"{stem.split('-')[0]}/__init__.py": (f"__version__ = {version!r}\n"
                                              f"__tag__ = {tag!r}\n").encode(),
        f"{stem}.dist-info/METADATA": meta,
        f"{stem}.dist-info/WHEEL": (b"Wheel-Version: 1.0\nGenerator: pyindex (tests)\n"
                                    + f"Root-Is-Purelib: {str(pure).lower()}\n"
                                      f"Tag: {tag}\n".encode()),
    }
    record = [f"{p},{_record_hash(d)},{len(d)}" for p, d in files.items()]
    record.append(f"{stem}.dist-info/RECORD,,")
    files[f"{stem}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, _ZIP_DATE), data)
    return f"{stem}-{tag}.whl", buf.getvalue(), meta


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
                 sdist_only: frozenset[str] = frozenset(),
                 tags: Mapping[str, Sequence[str]] | None = None) -> list[Dist]:
    """Write the files of ``graph`` (see the module docstring) under ``folder``: per node an
    sdist (names in ``sdist_only``) or one wheel per tag in ``tags[key]`` (default
    ``py3-none-any``); returns one :class:`Dist` per file written. A key without ``==``
    raises ``ValueError``.
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
        for tag in (tags or {}).get(key, ("py3-none-any",)):
            filename, data, meta = _wheel(name, version, requires, tag)
            (folder / filename).write_bytes(data)
            (folder / f"{filename}.metadata").write_bytes(meta)
            dists.append(Dist(project, filename, hashlib.sha256(data).hexdigest(),
                              hashlib.sha256(meta).hexdigest()))
    return dists


def _pages(dists: list[Dist], prefix: str = "") -> dict[str, bytes]:
    """The HTML pages of the index under ``prefix`` (``""`` or ``/NAME``), by request path."""
    projects: dict[str, list[Dist]] = {}
    for d in dists:
        projects.setdefault(d.project, []).append(d)
    root = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    pages = {f"{prefix}/simple/":
             f"<!DOCTYPE html>\n<html><body>\n{root}</body></html>\n".encode()}
    for project, files in projects.items():
        links = []
        for d in files:
            attrs = ""
            if d.metadata_sha256:
                attrs = (f' data-core-metadata="sha256={d.metadata_sha256}"'
                         f' data-dist-info-metadata="sha256={d.metadata_sha256}"')
            quoted = urllib.parse.quote(d.filename)
            href = html.escape(f"../../files/{quoted}#sha256={d.sha256}")
            links.append(f'<a href="{href}"{attrs}>{html.escape(d.filename)}</a>\n')
        pages[f"{prefix}/simple/{project}/"] = (
            "<!DOCTYPE html>\n<html><body>\n" + "".join(links) + "</body></html>\n").encode()
    return pages


@dataclass(frozen=True)
class IndexSpec:
    """One index of :func:`serve_indexes`: its ``graph``, wheel ``tags`` and ``sdist_only``
    names, as :func:`build_wheels` takes them."""

    graph: dict[str, list[str]]
    tags: dict[str, list[str]] = field(default_factory=dict)
    sdist_only: frozenset[str] = frozenset()


@contextmanager
def serve_index(tmp_path: Path, graph: dict[str, list[str]], *,
                sdist_only: frozenset[str] = frozenset(),
                tags: Mapping[str, Sequence[str]] | None = None,
                ) -> Iterator[tuple[str, list[str]]]:
    """Build ``graph`` under ``tmp_path / "index"`` and serve it on 127.0.0.1 (a free port) in a
    thread; yields ``(simple index URL ending in "/simple", request log)``. The log is the
    list of request paths (``/simple/app/``, ``/files/app-1.0-py3-none-any.whl.metadata``)
    in arrival order, appended while the server runs. A path not in the index answers 404.
    """
    folder = tmp_path / "index"
    dists = build_wheels(folder, graph, sdist_only=sdist_only, tags=tags)
    with _serve({"": (folder, dists)}) as (base, log):
        yield f"{base}/simple", log


@contextmanager
def serve_indexes(tmp_path: Path, indexes: Mapping[str, IndexSpec]
                  ) -> Iterator[tuple[dict[str, str], list[str]]]:
    """Serve several indexes from one server on 127.0.0.1: index ``NAME`` (letters, digits,
    ``.``, ``-``, ``_``) is built under ``tmp_path / "index-NAME"`` and served at
    ``/NAME/simple/`` with its files at ``/NAME/files/``. Yields ``({NAME: simple index URL},
    request log)``; the log is shared, as :func:`serve_index`'s.
    """
    served: dict[str, tuple[Path, list[Dist]]] = {}
    for name, spec in indexes.items():
        if not name or not all(c.isalnum() or c in ".-_" for c in name):
            raise ValueError(f"index name {name!r}: letters, digits, '.', '-', '_' only")
        folder = tmp_path / f"index-{name}"
        served[f"/{name}"] = (folder, build_wheels(folder, spec.graph, tags=spec.tags,
                                                   sdist_only=spec.sdist_only))
    with _serve(served) as (base, log):
        yield {name: f"{base}/{name}/simple" for name in indexes}, log


@contextmanager
def _serve(served: Mapping[str, tuple[Path, list[Dist]]]) -> Iterator[tuple[str, list[str]]]:
    """Serve each ``prefix -> (folder, dists)``; yields ``(http://127.0.0.1:PORT, log)``."""
    pages: dict[str, bytes] = {}
    files: dict[str, Path] = {}
    for prefix, (folder, dists) in served.items():
        pages.update(_pages(dists, prefix))
        files.update({f"{prefix}/files/{p.name}": p for p in folder.iterdir()})
    log: list[str] = []
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real indexes serve

        def do_GET(self) -> None:
            path = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0])
            with lock:
                log.append(path)
            if "/simple/" in path and not path.endswith("/"):
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

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}", log


def with_two_wheels(lock: Lockfile, folder: Path) -> Lockfile:
    """``lock`` with two real wheels built in ``folder`` recorded (a ROCm torch and the
    filelock it needs: URL on 127.0.0.1, size, sha256), their ``[packages]`` and a Python
    target; what ``pin lock export`` tests export.
    """
    from pinning.lockfile.io import amend
    from pinning.lockfile.wheels import PythonTarget, Wheel

    wheels = []
    for d in build_wheels(folder, {"torch==2.13.0+rocm7.2": ["filelock>=3"],
                                   "filelock==3.0": []}):
        name, version = d.filename.split("-")[:2]
        wheels.append(Wheel(name=name, version=version, filename=d.filename, sha256=d.sha256,
                            url=f"http://127.0.0.1:9/files/{d.filename}",
                            size=(folder / d.filename).stat().st_size))
    python = PythonTarget(version="3.12", platform="x86_64-manylinux_2_28",
                          indexes=["http://127.0.0.1:9/simple"])
    return amend(lock, packages={w.name: w.version for w in wheels}, wheels=wheels,
                 python=python)
