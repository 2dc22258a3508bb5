"""Content digests and the canonical JSON they are taken over.

Every ``sha256:<hex>`` pin writes (lock content hashes, snapshot hashes, OCI blob and
manifest digests, build-input labels) is made here, so that the byte form hashed is the same
everywhere: JSON with sorted keys and no whitespace, UTF-8. A file hashed for a lock or a
probe goes through :func:`stable_file_digests`, which refuses a file that changed while read.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pinning.errors import DriftError


def sha256_hex(data: bytes) -> str:
    """The bare 64-hex sha256 of ``data`` (as pip's ``--hash=sha256:`` and wheel RECORDs
    write it, without a prefix).
    """
    return hashlib.sha256(data).hexdigest()


def sha256_digest(data: bytes) -> str:
    """``sha256:<64 hex>`` of ``data``: the OCI digest form, also used for lock, snapshot
    and matrix hashes.
    """
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(doc: Any, *, ascii_only: bool = False) -> bytes:
    """Canonical JSON bytes of ``doc``: keys sorted, no whitespace, UTF-8.

    ``ascii_only`` escapes non-ASCII characters as ``\\uXXXX`` (the form the signing payloads
    have always used); every other caller hashes UTF-8 text as is. Raises ``TypeError`` for
    values JSON cannot hold (a bug in the caller).
    """
    return json.dumps(doc, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=ascii_only).encode()


def canonical_digest(doc: Any) -> str:
    """``sha256:<hex>`` of :func:`canonical_json` of ``doc``."""
    return sha256_digest(canonical_json(doc))


#: Bytes per read when a file is hashed (one reused buffer; a smaller file gets a buffer of its
#: size, at least :data:`MIN_READ_BYTES`: a 1 MiB buffer per small file costs more to zero
#: than hashing it).
READ_BYTES = 1024 * 1024
#: The least buffer a file is read with (its ``st_size`` may understate what it holds).
MIN_READ_BYTES = 64 * 1024


class HashObject(Protocol):
    """What :func:`stable_file_digests` feeds: a ``hashlib`` object (``update``, ``hexdigest``)."""

    def update(self, data: bytes | memoryview, /) -> None:
        """Add ``data`` to the hash."""

    def hexdigest(self) -> str:
        """The digest so far, as lower-case hex."""


@dataclass(frozen=True)
class FileDigests:
    """What :func:`stable_file_digests` read: ``stat`` (the open file's ``fstat`` before the
    read that succeeded), ``size`` (bytes read, equal to ``stat.st_size``) and ``hexdigests``
    (one per hash object, in the order ``start`` returned them).
    """

    stat: os.stat_result
    size: int
    hexdigests: tuple[str, ...]


def file_identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What says a file is still the same one with the same bytes: ``(st_dev, st_ino,
    st_size, st_mtime_ns, st_ctime_ns)``. Any write changes the ctime, and so does setting
    the mtime back, so equal identities before and after a read mean nothing wrote the
    file meanwhile (on file systems with coarse timestamps, two writes within one clock
    tick that keep the size can share one; nothing in user space can tell those apart).
    """
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read_into(f: io.FileIO, buf: bytearray) -> int:
    """One read of ``f`` into ``buf``: the bytes read, 0 at the end (the test seam)."""
    return f.readinto(buf) or 0


def _hash_once(path: str, start: Callable[[os.stat_result], Sequence[HashObject]]
               ) -> FileDigests | None:
    """One read of ``path`` through the hash objects ``start`` makes; ``None`` when the file
    changed meanwhile: its identity (:func:`file_identity`) differs before and after, fewer
    or more bytes than its size were read, or ``path`` now names another file (or none).
    Raises ``OSError`` (and what ``start`` raises).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        before = os.fstat(fd)
        hashes = start(before)
        buf = bytearray(min(READ_BYTES, max(MIN_READ_BYTES, before.st_size + 1)))
        view = memoryview(buf)
        total = 0
        with open(fd, "rb", buffering=0, closefd=False) as f:
            while n := _read_into(f, buf):
                for h in hashes:
                    h.update(view[:n])
                total += n
        after = os.fstat(fd)
    finally:
        os.close(fd)
    try:
        now: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        now = None
    same = (total == before.st_size and file_identity(before) == file_identity(after)
            and now is not None and file_identity(now) == file_identity(before))
    if not same:
        return None
    return FileDigests(before, total, tuple(h.hexdigest() for h in hashes))


def stable_file_digests(path: str | os.PathLike[str],
                        start: Callable[[os.stat_result], Sequence[HashObject]], *,
                        label: str | None = None) -> FileDigests:
    """Hash the file ``path`` (links followed, opened without blocking) with the hash
    objects ``start(stat)`` returns for its ``fstat`` (``start`` may raise, an ``OSError``
    for a file it refuses: nothing is read then), in :data:`READ_BYTES` pieces, and check
    the file stayed the same while read: :func:`file_identity` of the open file equal
    before and after, exactly its size read, and ``path`` still naming that file (a writer
    that renames a new file over it is seen too). A file that changed is read once more;
    one that changed both times raises :class:`~pinning.errors.DriftError` (exit 6) naming
    ``label`` (default: ``path``): no digest of it can be trusted. Raises ``OSError`` when
    it cannot be opened or read (``FileNotFoundError`` when it is gone for the second read).
    """
    where = str(path)
    for _ in range(2):
        got = _hash_once(where, start)
        if got is not None:
            return got
    raise DriftError(
        f"{label or where}: the file changed while pin was hashing it, twice (its size, "
        "modification or change time, or the file the name points to differed before and "
        "after reading it); no digest of it can be trusted.",
        hint="Stop whatever writes it (a download, a copy, a job saving a checkpoint), wait "
             "until it has finished, then run the command again.")
