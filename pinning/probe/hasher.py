"""Hashing a model's files: :class:`Hasher` streams files through sha256 (and the git blob
sha1 where a cache blob is named by it) in parallel threads and remembers each digest in pin's
digest cache (:mod:`pinning.probe.digestcache`), so a second look at an unchanged 100 GB model
stats its files and reads none of them.

The bytes go through ``hashlib``, which is OpenSSL's sha256 (the library ``openssl dgst``
uses, with the CPU's SHA extensions), read with ``readinto`` into one reused buffer of up to
1 MiB and handed over as views, never copied; ``hashlib`` releases the GIL while it hashes a
large piece. The loop is :func:`pinning.util.digests.stable_file_digests`, not
``hashlib.file_digest``, because it must feed two hashes in one pass and see a file that
changed while read; ``bench/bench_model_hash.py`` holds it to ``file_digest`` and ``openssl
dgst -sha256`` in CPU time. Files are not ``mmap``-ed: a file truncated while mapped kills
the process (``SIGBUS``), and faulting the pages in cost more CPU than ``readinto``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from pinning.probe.digestcache import Entry, load_cache, save_cache, stat_key
from pinning.util.digests import HashObject, stable_file_digests


class NotRegularFile(OSError):
    """A path that should be a regular file is a FIFO, device, folder or socket (the
    :meth:`Hasher.digest_many` value for it; nothing was read, nothing waited on).
    """


@dataclass(frozen=True)
class Digest:
    """One file's digest: ``size`` in bytes, ``sha256`` hex, ``git_sha1`` the git blob id
    (hex) when asked for, else ``None``.
    """

    size: int
    sha256: str
    git_sha1: str | None


def kind_of(mode: int) -> str:
    """What a non-regular file of ``st_mode`` ``mode`` is, in words (``a FIFO``)."""
    for test, word in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return word
    return "not a plain file"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as ``taskset`` sets it; else
    ``os.cpu_count()``), at least 1.
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _git_blob_prefix(size: int) -> bytes:
    """The header git hashes before a blob's bytes: ``blob <size>\\0``."""
    return b"blob %d\0" % size


def _hashes_for(st: os.stat_result, git: bool) -> list[HashObject]:
    """The hash objects for one file of stat ``st``: sha256, and the git blob sha1 (its
    header uses the size before reading: a file that changed length while read mismatches,
    as it should) when ``git``. Raises :class:`NotRegularFile` for a FIFO, device, folder
    (nothing is read then).
    """
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file")
    if not git:
        return [hashlib.sha256()]
    return [hashlib.sha256(), hashlib.sha1(_git_blob_prefix(st.st_size),
                                           usedforsecurity=False)]


class Hasher:
    """Streams files through sha256 in parallel threads and remembers digests by
    (device, inode, size, mtime_ns, ctime_ns) in ``cache_file`` (JSON, replaced whole), so
    an unchanged file is never read twice. ``cache_file`` ``None``: no persistent cache.

    The cache trusts the five stat values of a file's real path: any write to a file
    changes its ctime, and so does putting its mtime back with ``os.utime``, so a file
    edited in place is read again (ctime is set by the kernel and cannot be set back by a
    user; on file systems with coarse timestamps two changes in one clock tick share one
    ctime). Entries live in memory for the Hasher's life too.
    ``workers``: the threads hashing at once (default ``min(8, usable_cores())``: more
    threads than cores the process may run on only add switches).
    ``bytes_read`` / ``files_read``: what this Hasher read, for tests and benchmarks.

    The cache file (:mod:`~pinning.probe.digestcache`) holds at most
    :data:`~pinning.probe.digestcache.MAX_CACHE_ENTRIES` (oldest dropped). It is used only
    when its folder is a real folder (not a symbolic link) owned by the user and not
    writable by group or others, and the file itself is absent or a regular file owned by
    the user: a cache file that is a link (to a file worth keeping, say) is never read,
    written or replaced, and the Hasher then runs with no persistent cache. A corrupt or
    hostile cache file is ignored and replaced; a save merges what another pin process
    wrote meanwhile, writes a new temporary file (mode 0600) in the same folder and renames
    it over the cache file's own name: concurrent writers never tear it, the last one wins.
    Saving never raises: a cache that cannot be written is no cache.
    """

    def __init__(self, cache_file: Path | None = None, *, workers: int | None = None) -> None:
        self.cache_file = cache_file
        self.workers = max(1, workers if workers is not None else min(8, usable_cores()))
        self.bytes_read = 0
        self.files_read = 0
        self._entries: dict[str, Entry] = load_cache(cache_file) if cache_file else {}
        self._new: dict[str, Entry] = {}

    def digest_many(self, paths: list[Path]) -> dict[Path, tuple[int, str] | OSError]:
        """``{path: (size, sha256 hex)}`` for each regular file (an ``OSError`` value for one
        that cannot be read); saves the cache. Raises :class:`~pinning.errors.DriftError`
        (exit 6) for a file that changed while hashed, twice.
        """
        out: dict[Path, tuple[int, str] | OSError] = {}
        for path, got in self.digests(paths, set()).items():
            out[path] = got if isinstance(got, OSError) else (got.size, got.sha256)
        return out

    def digests(self, paths: list[Path], git: set[Path]) -> dict[Path, Digest | OSError]:
        """:class:`Digest` (with the git blob id for the paths in ``git``) or ``OSError``
        (:class:`NotRegularFile` for a FIFO, device, folder) per path; saves the cache (also
        the digests learnt before a failure). Raises :class:`~pinning.errors.DriftError`
        (exit 6) for a file that changed while hashed, twice; files not started yet are
        then not read.
        """
        out: dict[Path, Digest | OSError] = {}
        todo: list[tuple[Path, str]] = []
        for path in dict.fromkeys(paths):
            hit = self._lookup(path, path in git)
            if isinstance(hit, str):
                todo.append((path, hit))
            else:
                out[path] = hit
        try:
            results = self._read_all(todo, git)
        finally:
            self.save()
        out.update(zip((path for path, _ in todo), results, strict=True))
        read = [r for r in results if not isinstance(r, OSError)]
        self.bytes_read += sum(r.size for r in read)
        self.files_read += len(read)
        return out

    def _read_all(self, todo: list[tuple[Path, str]], git: set[Path]
                  ) -> list[Digest | OSError]:
        """:meth:`_read` of each ``(path, real path)`` of ``todo``, in ``workers`` threads;
        on the first error raised, the files not started are cancelled and the error raised.
        """
        if len(todo) < 2 or self.workers < 2:
            return [self._read(p, real, p in git) for p, real in todo]
        from concurrent.futures import ThreadPoolExecutor  # its import costs ~5 ms (logging)

        with ThreadPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
            futures = [pool.submit(self._read, p, real, p in git) for p, real in todo]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _lookup(self, path: Path, git: bool) -> Digest | OSError | str:
        """The remembered digest of ``path`` when its stat still matches, an ``OSError``
        when it cannot be stat'ed, else its real path (links resolved, once per file), to
        be read.
        """
        try:
            real = os.path.realpath(path)
            st = os.stat(real)
        except OSError as exc:
            return exc
        if not stat.S_ISREG(st.st_mode):
            return real  # _read says what it is, without blocking
        entry = self._entries.get(real)
        if entry is None or entry.key() != stat_key(st):
            return real
        if git and entry.git_sha1 is None:
            return real
        return Digest(entry.size, entry.sha256, entry.git_sha1)

    def _read(self, path: Path, real: str, git: bool) -> Digest | OSError:
        """Hash ``path``, whose real path is ``real``
        (:func:`~pinning.util.digests.stable_file_digests`: opened without blocking, checked
        to be a regular file on the descriptor, read again once when it changed while read)
        and remember its digest under ``real``. Raises :class:`~pinning.errors.DriftError`
        (exit 6) for a file that changed both times.
        """
        try:
            got = stable_file_digests(real, lambda st: _hashes_for(st, git), label=str(path))
        except NotRegularFile as exc:
            return NotRegularFile(exc.errno, exc.strerror, str(path))
        except OSError as exc:
            return exc
        sha256, git_sha1 = got.hexdigests[0], (got.hexdigests[1] if git else None)
        entry = Entry(*stat_key(got.stat), sha256, git_sha1, time.time())
        self._entries[real] = entry
        self._new[real] = entry
        return Digest(got.size, sha256, git_sha1)

    def save(self) -> None:
        """Write the digests learnt since the last save to ``cache_file``
        (:func:`~pinning.probe.digestcache.save_cache`); nothing when nothing is new, there
        is no cache file, or the cache's folder or file is not one pin trusts (see the class
        docstring: a link, another user's, writable by others). Never raises.
        """
        if self.cache_file is None or not self._new:
            return
        merged = save_cache(self.cache_file, self._new)
        if merged is not None:
            self._entries.update(merged)
            self._new.clear()


def default_cache_file() -> Path:
    """Where pin keeps its digest cache: ``model-digests.json`` in pin's cache folder
    (:func:`pinning.util.cache.cache_root`: ``$PIN_CACHE_DIR``, ``$XDG_CACHE_HOME/pin``,
    ``~/.cache/pin``, or with no home folder ``<temp>/pin-<uid>``).
    """
    from pinning.util.cache import cache_root

    return cache_root() / "model-digests.json"
