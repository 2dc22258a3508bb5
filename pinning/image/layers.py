"""Deterministic image layers: rewrite a tar so the same files always give the same bytes.

Docker's builds stamp wall-clock times into file mtimes and record build-host users; pip and
apt leave caches and logs. :func:`normalize_layer` rewrites a layer tar with entries sorted
by path, every mtime set to the lock's epoch (seconds), uid/gid 0 with empty user and group
names, no PAX extended headers but those long paths need, and the volatile paths of
:data:`VOLATILE` dropped; :func:`gzip_layer` compresses with a zero header time and no file
name. The result's sha256 is the layer's diff ID (uncompressed) and digest
(compressed).
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import tarfile
from collections.abc import Iterable
from typing import BinaryIO

from pinning.oci.documents import LayerBlob
from pinning.util.digests import sha256_digest

# Paths that differ between identical builds: caches, logs, bytecode (fnmatch patterns on the
# member path without a leading "./" or "/"). A pattern matching a directory drops its tree.
VOLATILE: tuple[str, ...] = (
    "var/cache/apt/*",
    "var/cache/debconf/*-old",
    "var/cache/ldconfig/aux-cache",
    "var/lib/apt/lists/*",
    "var/lib/dpkg/*-old",
    "var/log/*",
    "root/.cache",
    "root/.cache/*",
    "tmp/*",
    "*/__pycache__",
    "*/__pycache__/*",
    "*.pyc",
    "etc/machine-id",
)


def _clean(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def is_volatile(path: str, patterns: Iterable[str] = VOLATILE) -> bool:
    """True when ``path`` (a tar member name) matches one of ``patterns`` or lies under a
    directory that does.
    """
    path = _clean(path).rstrip("/")
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatchcase(p, pat) for pat in patterns for p in prefixes)


# One tar member as read: its header and, for a regular file, its data.
Entry = tuple["tarfile.TarInfo", "bytes | None"]


def _read_entries(src: BinaryIO) -> Iterable[tuple[str, Entry]]:
    with tarfile.open(fileobj=src, mode="r|*") as tin:
        for member in tin:
            name = _clean(member.name).rstrip("/")
            if not name:
                continue
            data = None
            if member.isreg():
                fh = tin.extractfile(member)
                data = fh.read() if fh is not None else b""
            yield name, (member, data)


def _path_key(name: str) -> list[str]:
    """Sort key: by path components, so a directory's entries follow it directly."""
    return name.split("/")


def _write_entries(entries: dict[str, Entry], *, epoch: int,
                   patterns: tuple[str, ...]) -> bytes:
    """Write ``entries`` deterministically (see the module docstring).

    Every regular file (also old-style, contiguous or sparse ones) becomes a plain regular
    entry; extended attributes and PAX records are not kept. A hard link is kept only when
    its target is written before it; otherwise it becomes a regular file with the target's
    data (or is dropped when the target is not in the layer).
    """
    keep = {n: e for n, e in entries.items() if not is_volatile(n, patterns)}
    order = sorted(keep, key=_path_key)
    written: set[str] = set()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tout:
        for name in order:
            member, data = keep[name]
            info = tarfile.TarInfo(name)
            info.mode = member.mode & 0o7777
            info.mtime = epoch
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.pax_headers = {}
            if member.islnk():
                target = _clean(member.linkname)
                if target in written:
                    info.type, info.linkname = tarfile.LNKTYPE, target
                elif target in keep and keep[target][1] is not None:
                    info.type, data = tarfile.REGTYPE, keep[target][1]
                    info.mode = keep[target][0].mode & 0o7777
                else:
                    continue
            elif member.isreg():
                info.type = tarfile.REGTYPE
            else:
                info.type = member.type
                info.linkname = member.linkname
                info.devmajor, info.devminor = member.devmajor, member.devminor
            if data is not None and info.type == tarfile.REGTYPE:
                info.size = len(data)
                tout.addfile(info, io.BytesIO(data))
            else:
                info.size = 0
                tout.addfile(info)
            written.add(name)
    return out.getvalue()


def normalize_layer(src: BinaryIO, *, epoch: int, drop: Iterable[str] = VOLATILE) -> bytes:
    """Return the deterministic tar of layer ``src`` (an uncompressed tar stream).

    ``epoch`` (seconds since 1970) becomes every entry's mtime. Entries are sorted by path;
    the same input files give the same bytes whatever their order, times or owners were.
    """
    patterns = tuple(drop)
    return _write_entries(dict(_read_entries(src)), epoch=epoch, patterns=patterns)


def squash_layers(layers: Iterable[BinaryIO], *, epoch: int,
                  drop: Iterable[str] = VOLATILE) -> bytes:
    """Apply layer tars in order and return the result as one normalised layer tar.

    Used for everything a build adds above its base: files a later step deletes (a wheel
    house copied in, then removed) leave no trace, and volatile paths are dropped. OCI
    whiteouts are honoured: ``.wh.<name>`` removes ``name`` from the layers below it in the
    squash and is kept in the output (it may delete a base file); ``.wh..wh..opq`` hides the
    directory's earlier contents and is kept too.
    """
    patterns = tuple(drop)
    merged: dict[str, Entry] = {}
    for src in layers:
        layer = list(_read_entries(src))
        for name, entry in layer:  # whiteouts act on the layers below this one
            parent, _, base = name.rpartition("/")
            prefix = parent + "/" if parent else ""
            if base == ".wh..wh..opq":
                for key in [k for k in merged
                            if k.startswith(prefix) and k != parent and k != name]:
                    del merged[key]
                merged[name] = entry
            elif base.startswith(".wh."):
                gone = prefix + base[4:]
                for key in [k for k in merged if k == gone or k.startswith(gone + "/")]:
                    del merged[key]
                merged[name] = entry
        for name, entry in layer:
            parent, _, base = name.rpartition("/")
            if base.startswith(".wh."):
                continue
            prefix = parent + "/" if parent else ""
            merged.pop(prefix + ".wh." + base, None)  # re-created: no longer deleted
            merged[name] = entry
    return _write_entries(merged, epoch=epoch, patterns=patterns)


def gzip_layer(tar_bytes: bytes, *, level: int = 6) -> LayerBlob:
    """Compress a normalised tar deterministically (header mtime 0, no file name) into a
    :class:`~pinning.oci.documents.LayerBlob` (gzip ``level`` 1-9).
    """
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=level) as gz:
        gz.write(tar_bytes)
    data = buf.getvalue()
    return LayerBlob(
        data=data,
        digest=sha256_digest(data),
        diff_id=sha256_digest(tar_bytes),
    )
