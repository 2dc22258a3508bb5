"""pin's digest cache file: what :class:`~pinning.probe.hasher.Hasher` remembers of files it
hashed, keyed by (device, inode, size, mtime_ns, ctime_ns) and the real path, read and written
so that a cache in a folder or file pin does not trust is never read, written or replaced.

The file is ``{"version": 2, "entries": {REAL_PATH: [dev, ino, size, mtime_ns, ctime_ns,
sha256, git_sha1|null, stored_time]}}``. Nothing here raises: a cache that cannot be read is
empty, one that cannot be written is not written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinning.util.cache import trusted_folder_fd

CACHE_VERSION = 2
"""The ``version`` of the digest cache file; a file of another version is ignored (version 1
keyed entries without ``ctime_ns``)."""

MAX_CACHE_ENTRIES = 100_000
"""The most files the digest cache remembers; the oldest stored are dropped first."""

MAX_CACHE_BYTES = 64 * 1024 * 1024
"""A digest cache file larger than this (bytes) is ignored and rewritten."""

_READ = 1024 * 1024  # bytes per read
HEX64 = re.compile(r"[0-9a-f]{64}")
"""A sha256 in hex (a cache entry's digest, an LFS blob's name)."""
HEX40 = re.compile(r"[0-9a-f]{40}")
"""A sha1 in hex (a git blob id, a git commit)."""


@dataclass
class Entry:
    """One remembered digest: the stat values it holds for, sha256, git blob id, when stored."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    sha256: str
    git_sha1: str | None
    stored: float  # time.time() when stored (the oldest are dropped first)

    def key(self) -> tuple[int, int, int, int, int]:
        """The stat values the digest holds for (:func:`stat_key`)."""
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)

    def to_json(self) -> list[Any]:
        """The entry as the cache file stores it (a list of eight)."""
        return [self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns, self.sha256,
                self.git_sha1, self.stored]


def stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What the digest cache trusts of a file: (device, inode, size, mtime_ns, ctime_ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _entry_of(value: object) -> Entry | None:
    """An entry of the cache file, or ``None`` for anything not exactly its shape."""
    if not isinstance(value, list) or len(value) != 8:
        return None
    dev, ino, size, mtime_ns, ctime_ns, sha256, git_sha1, stored = value
    ints = (dev, ino, size, mtime_ns, ctime_ns)
    if not all(type(v) is int and 0 <= v < 2**64 for v in ints):
        return None
    if not (isinstance(sha256, str) and HEX64.fullmatch(sha256)):
        return None
    if git_sha1 is not None and not (isinstance(git_sha1, str) and HEX40.fullmatch(git_sha1)):
        return None
    if type(stored) not in (int, float):
        return None
    return Entry(dev, ino, size, mtime_ns, ctime_ns, sha256, git_sha1, float(stored))


def _own_regular(st: os.stat_result) -> bool:
    """True for a regular file (not a link, FIFO, device) owned by the effective user."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def _read_cache_at(dir_fd: int, name: str) -> dict[str, Entry]:
    """The entries of the cache file ``name`` in the open folder ``dir_fd``; ``{}`` when it
    is absent, a symbolic link (never followed), not a regular file owned by the user,
    larger than :data:`MAX_CACHE_BYTES`, not JSON or of another version; malformed entries
    are skipped one by one (the file is rewritten whole on the next save).
    """
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY
                     | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not _own_regular(st) or st.st_size > MAX_CACHE_BYTES:
            return {}
        chunks: list[bytes] = []
        left = MAX_CACHE_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, _READ))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return {}
    finally:
        os.close(fd)
    if left <= 0:
        return {}
    try:
        data = json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    out: dict[str, Entry] = {}
    for key, value in entries.items():
        entry = _entry_of(value)
        if entry is not None and key.startswith("/") and len(key) <= 4096:
            out[key] = entry
    return out


def load_cache(path: Path) -> dict[str, Entry]:
    """The entries of the digest cache file ``path`` (:func:`_read_cache_at`); ``{}`` when
    its folder is not one pin trusts (:func:`_cache_dir_fd`). Never raises.
    """
    fd = trusted_folder_fd(path.parent, create=False)
    if fd is None:
        return {}
    try:
        return _read_cache_at(fd, path.name)
    finally:
        os.close(fd)


def _temp_name(name: str) -> str:
    """A fresh temporary name next to the cache file ``name``: ``.<name>.<pid>.<hex>.tmp``."""
    return f".{name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"


def is_temp_of(entry_name: str, name: str) -> bool:
    """True when ``entry_name`` is a temporary file of the cache file ``name``."""
    return entry_name.startswith(f".{name}.") and entry_name.endswith(".tmp")


def _replace_at(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a new temporary file (mode 0600, never through a link) in the open
    folder ``dir_fd``, then rename it over ``name`` itself: a link named ``name`` is
    replaced, its target never written. Raises ``OSError`` (the temporary file removed).
    """
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def save_cache(path: Path, new: dict[str, Entry]) -> dict[str, Entry] | None:
    """Merge ``new`` into the cache file ``path`` (with what the file holds now, bounded to
    :data:`MAX_CACHE_ENTRIES`, the oldest stored dropped) and replace it whole; the merged
    entries, or ``None`` when nothing was written: the cache's folder or file is not one pin
    trusts (a link, another user's, writable by others) or the write failed. Never raises.
    """
    dir_fd = trusted_folder_fd(path.parent, create=True)
    if dir_fd is None:
        return None
    try:
        try:
            st: os.stat_result | None = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not _own_regular(st):
            return None  # a link, FIFO, device or another user's file: never written
        merged = _read_cache_at(dir_fd, path.name)
        merged.update(new)
        if len(merged) > MAX_CACHE_ENTRIES:
            keep = sorted(merged.items(), key=lambda kv: kv[1].stored)[-MAX_CACHE_ENTRIES:]
            merged = dict(keep)
        data = {"version": CACHE_VERSION,
                "entries": {k: e.to_json() for k, e in sorted(merged.items())}}
        _replace_at(dir_fd, path.name, json.dumps(data, separators=(",", ":")).encode())
    except (OSError, ValueError):
        return None
    finally:
        os.close(dir_fd)
    return merged
