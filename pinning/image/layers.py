"""Deterministic image layers: rewrite a tar so the same files always give the same bytes.

Docker's builds stamp wall-clock times into file mtimes and record build-host users; pip and
apt leave caches and logs. :func:`normalize_layer` rewrites a layer tar with entries sorted
by path, every mtime set to the lock's epoch (seconds), uid/gid 0 with empty user and group
names, no PAX extended headers but those long paths need, and the volatile paths of
:data:`VOLATILE` dropped; :func:`gzip_layers` compresses layers in parallel into gzip
bytes that depend only on the tar (fixed level and block size, zero header time, no file
name; see :data:`COMPRESSOR`). The result's sha256 is the layer's diff ID (uncompressed)
and digest (compressed).
"""

from __future__ import annotations

import fnmatch
import io
import os
import struct
import tarfile
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from pinning.oci.documents import LayerBlob
from pinning.util.digests import sha256_digest
from pinning.util.progress import NULL_PROGRESS, Progress

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


# --- Deterministic parallel gzip -------------------------------------------------------------
#
# pigz's scheme (madler/pigz@cfea798680dffee49702105f71c757bc1684f9bf:pigz.1, read 2026-12-01):
# the input is cut into fixed blocks compressed in parallel, each primed with "the last 32K of
# the previous block ... as a preset dictionary", each but the last ended with an empty stored
# block (a zlib sync flush) so the pieces join on byte boundaries into one ordinary deflate
# stream. The output depends only on the input, the level, the block size and the zlib that
# deflates (never on the thread count or timing). pin's header and trailer are its own (RFC
# 1952, https://www.rfc-editor.org/rfc/rfc1952, May 1996): no file name, MTIME 0, XFL 2 for
# level 9, 4 for level 1, else 0, and OS 255 ("unknown"), as ``GzipFile._write_gzip_header``
# writes them in CPython's Lib/gzip.py (python/cpython branch 3.11,
# https://github.com/python/cpython/blob/3.11/Lib/gzip.py, date not recorded; observed in
# CPython 3.11.7; older CPythons wrote XFL 2 at every level, e.g.
# python/cpython@69e4ea589c6055e482135e96faa866f100f636b0:Lib/gzip.py, date not recorded).
# So an input of one block gives exactly the bytes
# ``gzip.GzipFile(filename="", mode="wb", fileobj=..., mtime=0, compresslevel=L)`` gives for
# the same level L (``compresslevel=6`` for pin's default; GzipFile's own default level is 9,
# which gives other bytes) -- observed with CPython 3.11.7. Threads suffice: CPython calls
# zlib's deflate between Py_BEGIN_ALLOW_THREADS and Py_END_ALLOW_THREADS
# (python/cpython@014310787f0791e60b7c1b9105b3c47ba8f1e48b:Modules/zlibmodule.c, read
# 2026-12-01).

GZIP_LEVEL = 6
"""The pinned deflate level of every layer pin compresses (pin's choice: zlib's default,
``Z_DEFAULT_COMPRESSION`` "currently equivalent to level 6", https://www.zlib.net/manual.html
and madler/zlib@41fda48fc264ed0cfe612f64a462bacac09f735e:zlib.h, ``deflateInit``; date not
recorded). Pinned as 6 itself, so a zlib whose default moved would not change the bytes."""
GZIP_BLOCK_BYTES = 1024 * 1024
"""The pinned input block size in bytes: changing it changes every layer digest."""
GZIP_WINDOW_BYTES = 32 * 1024
"""Bytes of the previous block given to the next as its preset dictionary (deflate's window)."""
COMPRESSOR = f"gzip deflate level={GZIP_LEVEL} block={GZIP_BLOCK_BYTES} dict={GZIP_WINDOW_BYTES}"
"""The compressor identity pin writes into each image's manifest annotations (under
:data:`COMPRESSOR_ANNOTATION`). The zlib version is left out on purpose: two machines with
different zlib builds that give the same bytes must give the same manifest digest; when the
bytes differ, the layer digests differ and :func:`pinning.image.record.diff_images` names
zlib (:func:`compressor_identity` gives this machine's).
"""
COMPRESSOR_ANNOTATION = "dev.pin.layer.compressor"
"""Manifest annotation key holding :data:`COMPRESSOR`."""

_MIN_BLOCK = GZIP_WINDOW_BYTES


def compressor_identity() -> str:
    """:data:`COMPRESSOR` plus this process's zlib (``zlib.ZLIB_RUNTIME_VERSION``): all that
    decides the compressed bytes of a layer.
    """
    return f"{COMPRESSOR} zlib={zlib.ZLIB_RUNTIME_VERSION}"


def default_jobs() -> int:
    """Compression threads: the CPUs this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not every platform has sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _gzip_header(level: int) -> bytes:
    """The 10-byte gzip member header: no flags, MTIME 0, XFL 2 (level 9) / 4 (level 1) /
    0, OS 255.
    """
    xfl = b"\x02" if level == 9 else b"\x04" if level == 1 else b"\x00"
    return b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + xfl + b"\xff"


def _blocks(size: int, block_size: int) -> list[tuple[int, int]]:
    """``(start, end)`` offsets cutting ``size`` bytes into blocks; one empty block for 0."""
    if size == 0:
        return [(0, 0)]
    return [(i, min(i + block_size, size)) for i in range(0, size, block_size)]


def _deflate_block(view: memoryview, start: int, end: int, level: int, last: bool) -> bytes:
    """Raw deflate of ``view[start:end]`` primed with the 32 KiB before ``start``; a sync
    flush ends it, or the final block's end when ``last``. zlib releases the GIL meanwhile.
    """
    if start:
        comp = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY,
                                zdict=view[max(0, start - GZIP_WINDOW_BYTES):start])
    else:
        comp = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    out = comp.compress(view[start:end])
    return out + comp.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


def _check(level: int, block_size: int) -> None:
    if not 1 <= level <= 9:
        raise ValueError(f"gzip level {level} is not 1-9")
    if block_size < _MIN_BLOCK:
        raise ValueError(f"gzip block size {block_size} is below {_MIN_BLOCK} bytes")


def _sums(data: bytes) -> tuple[str, int]:
    """The sha256 digest and the CRC-32 of ``data`` (both release the GIL)."""
    return sha256_digest(data), zlib.crc32(data)


def gzip_layers(tars: Sequence[bytes], *, level: int = GZIP_LEVEL,
                block_size: int = GZIP_BLOCK_BYTES, jobs: int | None = None,
                progress: Progress = NULL_PROGRESS) -> list[LayerBlob]:
    """Compress each tar of ``tars`` into a :class:`~pinning.oci.documents.LayerBlob`, all
    layers' blocks on one pool of ``jobs`` threads (default :func:`default_jobs`).

    Each blob is one gzip member made as the block comment above says: the same tar gives
    the same bytes whatever ``jobs`` is, on every machine whose zlib deflates alike.
    ``level`` is the deflate level 1-9 and ``block_size`` the input block in bytes (at least
    32 KiB); both are pinned by default and change every digest when changed. ``progress``
    gets one task per layer (``compress layer I/N``, total = the tar's bytes). Raises
    ``ValueError`` for a bad level or block size (a bug in the caller).
    """
    _check(level, block_size)
    workers = jobs or default_jobs()
    header = _gzip_header(level)
    count = len(tars)
    tasks = [progress.task(f"compress layer {i + 1}/{count}", len(t)) for i, t in enumerate(tars)]

    def one(index: int, view: memoryview, start: int, end: int, last: bool) -> bytes:
        out = _deflate_block(view, start, end, level, last)
        tasks[index].advance(end - start)
        return out

    out: list[LayerBlob] = []
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pin-gzip") as pool:
            pending = []
            for i, tar in enumerate(tars):
                view = memoryview(tar)
                spans = _blocks(len(tar), block_size)
                parts = [pool.submit(one, i, view, s, e, n == len(spans) - 1)
                         for n, (s, e) in enumerate(spans)]
                pending.append((pool.submit(_sums, tar), parts))
            for i, (sums, parts) in enumerate(pending):
                diff_id, crc = sums.result()
                size = len(tars[i])
                data = b"".join([header, *(p.result() for p in parts),
                                 struct.pack("<II", crc, size & 0xFFFFFFFF)])
                out.append(LayerBlob(data=data, digest=sha256_digest(data), diff_id=diff_id))
                tasks[i].done()
    finally:
        for task in tasks:
            task.done()
    return out


def gzip_layer(tar_bytes: bytes, *, level: int = GZIP_LEVEL, jobs: int | None = None,
               block_size: int = GZIP_BLOCK_BYTES) -> LayerBlob:
    """Compress one normalised tar (see :func:`gzip_layers`) into a
    :class:`~pinning.oci.documents.LayerBlob`: header MTIME 0, no file name.
    """
    return gzip_layers([tar_bytes], level=level, jobs=jobs, block_size=block_size)[0]
