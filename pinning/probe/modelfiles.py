"""A model's files on a host, hashed: a revision in the local Hugging Face cache or a local
model folder (a converted checkpoint), every file with its size and sha256.

Nothing here touches the network or raises for what it finds on disk: an absent model is a
:class:`ModelTree` with ``reason`` set, a damaged file a :class:`ModelProblem`. Hashing is
streamed (1 MiB reads into one reused buffer), parallel over files (``hashlib`` releases the
GIL while it hashes a large piece), and remembered by :class:`Hasher` in a digest cache keyed
by (device, inode, size, mtime_ns, ctime_ns) and the real path, so a second look at an
unchanged 100 GB model stats its files and reads none of them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from pinning.errors import ProbeError
from pinning.lockfile.models import ModelFile
from pinning.probe.root import HostRoot
from pinning.util.digests import HashObject, stable_file_digests
from pinning.util.files import read_regular_bytes

ProblemKind = Literal["missing", "incomplete", "blob-mismatch", "unreadable", "not-a-file"]

CACHE_VERSION = 2
"""The ``version`` of the digest cache file; a file of another version is ignored (version 1
keyed entries without ``ctime_ns``)."""

MAX_CACHE_ENTRIES = 100_000
"""The most files the digest cache remembers; the oldest stored are dropped first."""

MAX_CACHE_BYTES = 64 * 1024 * 1024
"""A digest cache file larger than this (bytes) is ignored and rewritten."""

MAX_DEPTH = 64
"""The deepest folder nesting read under a model folder or snapshot."""

_READ = 1024 * 1024  # bytes per read
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX40 = re.compile(r"[0-9a-f]{40}")
# A Hugging Face repo id (ORG/NAME or NAME) and a ref name (main, refs/pr/1): no `..`, no `--`.
_REPO_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REF = re.compile(r"[A-Za-z0-9._-]{1,128}(?:/[A-Za-z0-9._-]{1,128}){0,4}")


@dataclass(frozen=True)
class ModelProblem:
    """Something wrong with one file: ``missing`` (listed for the revision, no bytes),
    ``incomplete`` (a ``.incomplete`` download), ``blob-mismatch`` (a cache blob whose bytes
    do not match its name: sha256 for LFS files, git blob id for small ones), ``unreadable``,
    ``not-a-file`` (a FIFO, device, folder where a file should be). ``detail`` one line.

    ``path`` is the ``/``-separated path relative to the model folder, or its ``ascii()``
    form (quoted, escaped) when a lock could not record it: a name that is not UTF-8 (lone
    surrogates from ``os.fsdecode``), or holds a control character or a backslash. Lone
    surrogates in ``detail`` are written as ``\\udcXX``. Both are set so on construction, so
    every problem can be printed and written as UTF-8.
    """

    path: str
    kind: ProblemKind
    detail: str

    def __post_init__(self) -> None:
        if not _recordable(self.path):
            object.__setattr__(self, "path", ascii(self.path))
        object.__setattr__(self, "detail", _printable(self.detail))


def _recordable(name: str) -> bool:
    """True when ``name`` is valid UTF-8 and holds no control character or backslash."""
    if any(ord(ch) < 32 or ord(ch) == 127 or ch == "\\" for ch in name):
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(text: str) -> str:
    """``text`` with lone surrogates (undecodable bytes of a file name) escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(frozen=True)
class ModelTree:
    """What a host holds of one model. ``source`` ``hf-cache`` or ``directory``;
    ``location`` the snapshot or folder read; ``files`` sorted by path; ``problems`` per
    file; ``reason`` set (and ``files`` empty) when the model is not there at all.
    """

    source: Literal["hf-cache", "directory"]
    location: str
    id: str | None = None
    revision: str | None = None
    files: list[ModelFile] = field(default_factory=list)
    problems: list[ModelProblem] = field(default_factory=list)
    reason: str | None = None


class NotRegularFile(OSError):
    """A path that should be a regular file is a FIFO, device, folder or socket (the
    :meth:`Hasher.digest_many` value for it; nothing was read, nothing waited on).
    """


@dataclass(frozen=True)
class _Digest:
    size: int
    sha256: str
    git_sha1: str | None  # the git blob id, when asked for


@dataclass
class _Entry:
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    sha256: str
    git_sha1: str | None
    stored: float  # time.time() when stored (the oldest are dropped first)

    def key(self) -> tuple[int, int, int, int, int]:
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)

    def to_json(self) -> list[Any]:
        return [self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns, self.sha256,
                self.git_sha1, self.stored]


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What the digest cache trusts of a file: (device, inode, size, mtime_ns, ctime_ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _entry_of(value: object) -> _Entry | None:
    """An entry of the cache file, or ``None`` for anything not exactly its shape."""
    if not isinstance(value, list) or len(value) != 8:
        return None
    dev, ino, size, mtime_ns, ctime_ns, sha256, git_sha1, stored = value
    ints = (dev, ino, size, mtime_ns, ctime_ns)
    if not all(type(v) is int and 0 <= v < 2**64 for v in ints):
        return None
    if not (isinstance(sha256, str) and _HEX64.fullmatch(sha256)):
        return None
    if git_sha1 is not None and not (isinstance(git_sha1, str) and _HEX40.fullmatch(git_sha1)):
        return None
    if type(stored) not in (int, float):
        return None
    return _Entry(dev, ino, size, mtime_ns, ctime_ns, sha256, git_sha1, float(stored))


def _cache_dir_fd(folder: Path, *, create: bool) -> int | None:
    """An open descriptor of the digest cache's folder ``folder`` when pin may trust it, else
    ``None`` (no persistent cache): the folder itself is not a symbolic link, is owned by
    the effective user and is not writable by group or others (a ``/tmp/pin-<uid>`` that
    another user made first, or a shared ``PIN_CACHE_DIR``, is refused). ``create``: make
    it (mode 0700) when absent. Never raises.
    """
    if create:
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        st = None
    if st is None or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def _own_regular(st: os.stat_result) -> bool:
    """True for a regular file (not a link, FIFO, device) owned by the effective user."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def _read_cache_at(dir_fd: int, name: str) -> dict[str, _Entry]:
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
    out: dict[str, _Entry] = {}
    for key, value in entries.items():
        entry = _entry_of(value)
        if entry is not None and key.startswith("/") and len(key) <= 4096:
            out[key] = entry
    return out


def _load_cache(path: Path) -> dict[str, _Entry]:
    """The entries of the digest cache file ``path`` (:func:`_read_cache_at`); ``{}`` when
    its folder is not one pin trusts (:func:`_cache_dir_fd`). Never raises.
    """
    fd = _cache_dir_fd(path.parent, create=False)
    if fd is None:
        return {}
    try:
        return _read_cache_at(fd, path.name)
    finally:
        os.close(fd)


def _temp_name(name: str) -> str:
    """A fresh temporary name next to the cache file ``name``: ``.<name>.<pid>.<hex>.tmp``."""
    return f".{name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"


def _is_temp_of(entry_name: str, name: str) -> bool:
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
        raise NotRegularFile(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file")
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
    ``workers``: the threads hashing at once (default ``min(8, os.cpu_count())``).
    ``bytes_read`` / ``files_read``: what this Hasher read, for tests and benchmarks.

    The cache file is ``{"version": 2, "entries": {REAL_PATH: [dev, ino, size, mtime_ns,
    ctime_ns, sha256, git_sha1|null, stored_time]}}``, at most :data:`MAX_CACHE_ENTRIES`
    (oldest dropped). It is used only when its folder is a real folder (not a symbolic
    link) owned by the user and not writable by group or others, and the file itself is
    absent or a regular file owned by the user: a cache file that is a link (to a file
    worth keeping, say) is never read, written or replaced, and the Hasher then runs with
    no persistent cache. A corrupt or hostile cache file is ignored and replaced; a save
    merges what another pin process wrote meanwhile, writes a new temporary file (mode
    0600) in the same folder and renames it over the cache file's own name: concurrent
    writers never tear it, the last one wins. Saving never raises: a cache that cannot be
    written is no cache.
    """

    def __init__(self, cache_file: Path | None = None, *, workers: int | None = None) -> None:
        self.cache_file = cache_file
        self.workers = max(1, workers if workers is not None else min(8, os.cpu_count() or 1))
        self.bytes_read = 0
        self.files_read = 0
        self._entries: dict[str, _Entry] = _load_cache(cache_file) if cache_file else {}
        self._new: dict[str, _Entry] = {}

    def digest_many(self, paths: list[Path]) -> dict[Path, tuple[int, str] | OSError]:
        """``{path: (size, sha256 hex)}`` for each regular file (an ``OSError`` value for one
        that cannot be read); saves the cache. Raises :class:`~pinning.errors.DriftError`
        (exit 6) for a file that changed while hashed, twice.
        """
        out: dict[Path, tuple[int, str] | OSError] = {}
        for path, got in self._digests(paths, set()).items():
            out[path] = got if isinstance(got, OSError) else (got.size, got.sha256)
        return out

    def _digests(self, paths: list[Path], git: set[Path]) -> dict[Path, _Digest | OSError]:
        """:class:`_Digest` (with the git blob id for the paths in ``git``) or ``OSError``
        (:class:`NotRegularFile` for a FIFO, device, folder) per path; saves the cache (also
        the digests learnt before a failure). Raises :class:`~pinning.errors.DriftError`
        (exit 6) for a file that changed while hashed, twice; files not started yet are
        then not read.
        """
        out: dict[Path, _Digest | OSError] = {}
        todo: list[Path] = []
        for path in dict.fromkeys(paths):
            hit = self._lookup(path, path in git)
            if hit is None:
                todo.append(path)
            else:
                out[path] = hit
        try:
            results = self._read_all(todo, git)
        finally:
            self.save()
        out.update(zip(todo, results, strict=True))
        read = [r for r in results if not isinstance(r, OSError)]
        self.bytes_read += sum(r.size for r in read)
        self.files_read += len(read)
        return out

    def _read_all(self, todo: list[Path], git: set[Path]) -> list[_Digest | OSError]:
        """:meth:`_read` of each of ``todo``, in ``workers`` threads; on the first error
        raised, the files not started are cancelled and the error raised.
        """
        if len(todo) < 2 or self.workers < 2:
            return [self._read(p, p in git) for p in todo]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
            futures = [pool.submit(self._read, p, p in git) for p in todo]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _lookup(self, path: Path, git: bool) -> _Digest | OSError | None:
        """The remembered digest of ``path`` when its stat still matches, an ``OSError``
        when it cannot be stat'ed, ``None`` when it must be read.
        """
        try:
            real = os.path.realpath(path)
            st = os.stat(real)
        except OSError as exc:
            return exc
        if not stat.S_ISREG(st.st_mode):
            return None  # _read says what it is, without blocking
        entry = self._entries.get(real)
        if entry is None or entry.key() != _stat_key(st):
            return None
        if git and entry.git_sha1 is None:
            return None
        return _Digest(entry.size, entry.sha256, entry.git_sha1)

    def _read(self, path: Path, git: bool) -> _Digest | OSError:
        """Hash ``path`` (:func:`~pinning.util.digests.stable_file_digests`: opened without
        blocking, checked to be a regular file on the descriptor, read again once when it
        changed while read) and remember its digest. Raises
        :class:`~pinning.errors.DriftError` (exit 6) for a file that changed both times.
        """
        real = os.path.realpath(path)
        try:
            got = stable_file_digests(real, lambda st: _hashes_for(st, git), label=str(path))
        except NotRegularFile as exc:
            return NotRegularFile(exc.errno, exc.strerror, str(path))
        except OSError as exc:
            return exc
        sha256, git_sha1 = got.hexdigests[0], (got.hexdigests[1] if git else None)
        entry = _Entry(*_stat_key(got.stat), sha256, git_sha1, time.time())
        self._entries[real] = entry
        self._new[real] = entry
        return _Digest(got.size, sha256, git_sha1)

    def save(self) -> None:
        """Write the digests learnt since the last save to ``cache_file`` (merged with what
        the file holds now, bounded to :data:`MAX_CACHE_ENTRIES`); nothing when nothing is
        new, there is no cache file, or the cache's folder or file is not one pin trusts
        (see the class docstring: a link, another user's, writable by others). Never raises.
        """
        if self.cache_file is None or not self._new:
            return
        path = self.cache_file
        dir_fd = _cache_dir_fd(path.parent, create=True)
        if dir_fd is None:
            return
        try:
            try:
                st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not _own_regular(st):
                return  # a link, FIFO, device or another user's file: never written
            merged = _read_cache_at(dir_fd, path.name)
            merged.update(self._new)
            if len(merged) > MAX_CACHE_ENTRIES:
                keep = sorted(merged.items(), key=lambda kv: kv[1].stored)[-MAX_CACHE_ENTRIES:]
                merged = dict(keep)
            data = {"version": CACHE_VERSION,
                    "entries": {k: e.to_json() for k, e in sorted(merged.items())}}
            _replace_at(dir_fd, path.name, json.dumps(data, separators=(",", ":")).encode())
        except (OSError, ValueError):
            return
        finally:
            os.close(dir_fd)
        self._entries.update(merged)
        self._new.clear()


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return word
    return "not a plain file"


def _problem_of(rel: str, exc: OSError) -> ModelProblem:
    """The problem an ``OSError`` from hashing ``rel`` stands for."""
    if isinstance(exc, NotRegularFile):
        return ModelProblem(rel, "not-a-file", exc.strerror or str(exc))
    if isinstance(exc, FileNotFoundError):
        return ModelProblem(rel, "missing", "the file is gone")
    return ModelProblem(rel, "unreadable", f"cannot be read ({exc.strerror or exc})")


def _inside(real: str, root: str) -> bool:
    """True when the real path ``real`` lies under the real folder ``root``."""
    return real == root or real.startswith(root.rstrip("/") + "/")


def _walk(top: Path, skip: set[str]) -> tuple[list[tuple[str, Path]], list[ModelProblem]]:
    """Every entry under ``top`` that is not a folder, as ``(relative path, path)`` sorted,
    iteratively (no recursion), at most :data:`MAX_DEPTH` folders deep; ``.git`` folders and
    the relative folder paths in ``skip`` are left out. Folders that cannot be listed and
    folders too deep are problems.
    """
    found: list[tuple[str, Path]] = []
    problems: list[ModelProblem] = []
    stack: list[tuple[Path, str, int]] = [(top, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            problems.append(ModelProblem(prefix.rstrip("/") or ".", "unreadable",
                                         f"the folder cannot be listed ({exc.strerror})"))
            continue
        for entry in entries:
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if not is_dir:
                found.append((rel, Path(entry.path)))
            elif entry.name == ".git" or rel in skip:
                continue
            elif depth + 1 >= MAX_DEPTH:
                problems.append(ModelProblem(rel, "unreadable", f"nested deeper than "
                                             f"{MAX_DEPTH} folders; not read"))
            else:
                stack.append((Path(entry.path), rel + "/", depth + 1))
    found.sort()
    return found, problems


def _record(rel: str, digest: _Digest) -> ModelFile | ModelProblem:
    """The lock entry of one file, or a problem when its name cannot be recorded."""
    try:
        return ModelFile(path=rel, size=digest.size, sha256=digest.sha256)
    except ValidationError:
        return ModelProblem(rel, "unreadable", "a file name a lock cannot record "
                            "(a control character, a backslash or not UTF-8)")


def read_hub_model(cache_dir: Path, model_id: str, revision: str, *,
                   hasher: Hasher | None = None, root: Path | None = None) -> ModelTree:
    """The files of ``model_id`` at ``revision`` in the Hugging Face cache ``cache_dir``
    (huggingface_hub's documented layout, offline), hashed, each cache blob checked against
    its name.

    The layout (huggingface_hub guide "Manage huggingface_hub cache-system",
    https://huggingface.co/docs/huggingface_hub/guides/manage-cache, published_unknown: the
    page carries no date): ``<cache_dir>/models--ORG--NAME/`` holds ``blobs/`` (file bytes,
    each named by its etag: the sha256 for an LFS file, the git blob id ``sha1("blob
    <size>\\0" + bytes)`` for a small one), ``refs/<branch>`` (a commit hash) and
    ``snapshots/<commit>/<path>``: relative links to ``../../blobs/<name>``. A download in
    progress is ``blobs/<name>.incomplete`` and gets its snapshot link only when complete
    (``huggingface_hub/file_download.py``, ``hf_hub_download``); ``.no_exist/<commit>/``
    marks files known not to exist (``_CACHED_NO_EXIST``) and is not part of the model.

    ``revision`` is the 40-hex commit (a branch name is looked up in ``refs/``; the tree
    then carries the commit it names). Each file is listed with its real size and sha256;
    a blob whose bytes do not match its name is ``blob-mismatch`` (still listed), a link to
    an absent blob ``missing`` (``incomplete`` when its ``.incomplete`` download is there),
    a link leaving the model's cache folder ``unreadable`` (not followed), any
    ``blobs/*.incomplete`` an ``incomplete`` problem under its ``blobs/`` path. A model or
    revision not in the cache is ``reason`` (naming ``cache_dir``), ``files`` empty.
    Never raises for what is on disk, but :class:`~pinning.errors.DriftError` (exit 6) for
    a file that changed while hashed, twice; ``hasher`` ``None``: a Hasher without a cache
    file.

    ``root``: the root of a recorded host (``pin verify --root``) under which ``cache_dir``
    lies; links (the snapshot's, or an absolute one to ``/<cache>/models--.../blobs/...``)
    are then resolved as that host sees them, inside ``root``, and one that leaves the
    model's cache folder is refused as above. ``None``: links are resolved on this machine.
    """
    hasher = hasher or Hasher()
    resolver = _Resolver(root)
    located = _locate(Path(cache_dir), model_id, revision, resolver)
    if isinstance(located, ModelTree):
        return located
    repo, snapshot, commit = located
    entries, problems = _walk(snapshot, set())
    wanted = _snapshot_targets(repo, entries, problems, resolver)
    git = {Path(real) for _, real, blob in wanted if blob and _HEX40.fullmatch(blob)}
    digests = hasher._digests([Path(real) for _, real, _ in wanted], git)
    files = _collect(wanted, digests, problems)
    problems.extend(_incomplete_blobs(repo / "blobs"))
    return ModelTree(source="hf-cache", location=str(snapshot), id=model_id, revision=commit,
                     files=files, problems=sorted(problems, key=lambda p: (p.path, p.kind)))


def _locate(cache_dir: Path, model_id: str, revision: str,
            resolver: _Resolver) -> tuple[Path, Path, str] | ModelTree:
    """``(model cache folder, snapshot folder, commit)`` (real paths under a recorded
    host's root), or a tree with ``reason`` when the id or revision is malformed or the
    snapshot is not in ``cache_dir``.
    """
    repo = cache_dir / ("models--" + model_id.replace("/", "--"))
    base = ModelTree(source="hf-cache", location=str(repo), id=model_id, revision=revision)
    if not _REPO_ID.fullmatch(model_id) or "--" in model_id or ".." in model_id:
        return _absent(base, f"{model_id!r} is not a Hugging Face model id (ORG/NAME)")
    try:
        if resolver.host is not None:
            repo = Path(resolver.real(repo))
    except OSError as exc:
        return _absent(base, f"the cache folder {repo} cannot be read ({exc.strerror or exc})")
    commit = _commit_of(repo, revision, resolver)
    if commit is None:
        return _absent(base, f"{model_id}@{revision} is not in the Hugging Face cache "
                       f"{cache_dir} (no refs/{revision} naming a commit); pin a 40-hex commit")
    snapshot = repo / "snapshots" / commit
    if not snapshot.is_dir() or snapshot.is_symlink():
        base = ModelTree(source="hf-cache", location=str(snapshot), id=model_id,
                         revision=commit)
        return _absent(base, f"{model_id}@{commit} is not in the Hugging Face cache "
                       f"{cache_dir} (no {snapshot}); download it on a host with network "
                       f"(`hf download {model_id} --revision {commit}`) or point HF_HUB_CACHE "
                       "at the cache that holds it")
    return repo, snapshot, commit


def _collect(wanted: list[tuple[str, str, str | None]], digests: dict[Path, _Digest | OSError],
             problems: list[ModelProblem]) -> list[ModelFile]:
    """The lock entries of the hashed files ``wanted`` (``(relative path, real path, blob
    name or None)``); what could not be hashed or recorded, and blobs whose bytes do not
    match their names, are added to ``problems``.
    """
    files: list[ModelFile] = []
    for rel, real, blob in wanted:
        got = digests[Path(real)]
        made = _problem_of(rel, got) if isinstance(got, OSError) else _record(rel, got)
        if isinstance(made, ModelProblem):
            problems.append(made)
            continue
        files.append(made)
        if blob is not None and not isinstance(got, OSError):
            problems.extend(_blob_check(rel, blob, got))
    return files


def _commit_of(repo: Path, revision: str, resolver: _Resolver) -> str | None:
    """``revision`` when it is a 40-hex commit; else the commit ``refs/<revision>`` of the
    model's cache folder ``repo`` names; ``None`` when there is none.
    """
    if _HEX40.fullmatch(revision):
        return revision
    if not _REF.fullmatch(revision) or ".." in revision:
        return None
    try:
        ref = Path(resolver.real(repo / "refs" / revision))
        text = read_regular_bytes(ref, ProbeError, label="ref",
                                  limit=1024).decode("ascii", "replace").strip()
    except (ProbeError, OSError):
        return None
    return text if _HEX40.fullmatch(text) else None


def _snapshot_targets(repo: Path, entries: list[tuple[str, Path]], problems: list[ModelProblem],
                      resolver: _Resolver) -> list[tuple[str, str, str | None]]:
    """``(relative path, real path, blob name or None)`` of each snapshot entry to hash; a
    link out of ``repo``, or to a blob that is absent, becomes a problem in ``problems``.
    """
    repo_real = resolver.real(repo)
    blobs_real = os.path.join(repo_real, "blobs")
    wanted: list[tuple[str, str, str | None]] = []
    for rel, path in entries:
        try:
            real = resolver.real(path)
        except OSError as exc:
            problems.append(_problem_of(rel, exc))
            continue
        if not _inside(real, repo_real):
            problems.append(ModelProblem(rel, "unreadable", "a link out of the model's cache "
                                         f"folder {repo}; not followed"))
            continue
        blob = os.path.basename(real) if os.path.dirname(real) == blobs_real else None
        if os.path.lexists(real):
            wanted.append((rel, real, blob))
        elif blob is not None and os.path.lexists(real + ".incomplete"):
            problems.append(ModelProblem(rel, "incomplete", f"blobs/{blob} is still "
                                         "downloading or was interrupted"))
        else:
            problems.append(ModelProblem(rel, "missing", f"its blob {blob or real} is not in "
                                         "the cache"))
    return wanted


def _blob_check(rel: str, blob: str, got: _Digest) -> list[ModelProblem]:
    """A ``blob-mismatch`` problem when the blob's name (64 hex: sha256; 40 hex: git blob
    id) is not what its bytes hash to; nothing for other names.
    """
    if _HEX64.fullmatch(blob):
        what, named = "sha256", got.sha256
    elif _HEX40.fullmatch(blob):
        what, named = "git blob id", got.git_sha1 or ""
    else:
        return []
    if named == blob:
        return []
    return [ModelProblem(rel, "blob-mismatch", f"blobs/{blob}: the bytes' {what} is "
                         f"{named}, not the blob's name")]


def _incomplete_blobs(blobs: Path) -> list[ModelProblem]:
    """An ``incomplete`` problem per ``blobs/*.incomplete`` (a download not finished)."""
    try:
        names = sorted(e.name for e in os.scandir(blobs) if e.name.endswith(".incomplete"))
    except OSError:
        return []
    return [ModelProblem(f"blobs/{n}", "incomplete", "a download of this model that did not "
                         "finish; one of its files may be absent from the snapshot")
            for n in names]


def _absent(base: ModelTree, reason: str) -> ModelTree:
    """``base`` with ``reason`` and no files."""
    return ModelTree(source=base.source, location=base.location, id=base.id,
                     revision=base.revision, reason=reason)


def read_model_dir(path: Path, *, hasher: Hasher | None = None, exclude: Iterable[Path] = (),
                   root: Path | None = None) -> ModelTree:
    """Every regular file under the model folder ``path``, hashed.

    Files are listed sorted by their ``/``-separated path relative to ``path``; ``.git/``
    folders and huggingface_hub's ``.cache/huggingface/`` (the metadata a ``local_dir``
    download keeps) are left out. A link to a file inside the folder is followed (listed
    under the link's name); a link out of it is ``unreadable`` and not followed; a dangling
    link ``missing``; a FIFO, device, socket or link to a folder ``not-a-file`` (never read,
    never waited on). The walk is iterative and at most :data:`MAX_DEPTH` deep. A folder
    that is absent or not a folder is ``reason``. Never raises for what is on disk, but
    :class:`~pinning.errors.DriftError` (exit 6) for a file that changed while hashed, twice.

    ``exclude``: files left out entirely (neither listed nor a problem) when their real
    path is one of these paths' real paths, e.g. the lock file written into the model
    folder. pin's own digest cache (:func:`default_cache_file`, and ``hasher``'s cache
    file) and its temporary files are always left out when they lie inside the folder.

    ``root``: the root of a recorded host (``pin verify --root``) under which ``path``
    lies; links are then resolved as that host sees them (an absolute target ``/x`` is
    ``<root>/x``, ``..`` never climbs above ``root``) and a link that leaves ``path`` is
    refused as above. ``None``: links are resolved on this machine.
    """
    hasher = hasher or Hasher()
    resolver = _Resolver(root)
    top = Path(path)
    base = ModelTree(source="directory", location=str(top))
    try:
        root_real = resolver.real(top)
    except OSError as exc:
        return _absent(base, f"{top} cannot be read ({exc.strerror or exc})")
    if not os.path.isdir(root_real):
        return _absent(base, f"{top} is not a folder (no model there)")
    skipped = _excluded(exclude, hasher)
    entries, problems = _walk(Path(root_real), {".cache/huggingface"})
    wanted: list[tuple[str, str]] = []
    for rel, entry in entries:
        if _skipped(str(entry), skipped):
            continue
        got = _dir_entry(rel, entry, resolver, top, root_real)
        if isinstance(got, ModelProblem):
            problems.append(got)
        elif not _skipped(got, skipped):
            wanted.append((rel, got))
    digests = hasher._digests([Path(real) for _, real in wanted], set())
    files = _collect([(rel, real, None) for rel, real in wanted], digests, problems)
    return ModelTree(source="directory", location=str(top), files=files,
                     problems=sorted(problems, key=lambda p: (p.path, p.kind)))


def _dir_entry(rel: str, entry: Path, resolver: _Resolver, folder: Path,
               folder_real: str) -> str | ModelProblem:
    """The real path to hash for the entry ``entry`` (``rel``) of the model folder
    ``folder`` (real path ``folder_real``), or the problem it is: a link out of the folder,
    a dangling link, a link to something not a regular file, a FIFO, device or socket.
    """
    try:
        lst = os.lstat(entry)
    except OSError as exc:
        return _problem_of(rel, exc)
    if not stat.S_ISLNK(lst.st_mode):
        if stat.S_ISREG(lst.st_mode):
            return str(entry)
        return ModelProblem(rel, "not-a-file", f"{_kind(lst.st_mode)}, not a regular file; "
                            "not read")
    try:
        real = resolver.real(entry)
        if not _inside(real, folder_real):
            return ModelProblem(rel, "unreadable", f"a link out of {folder} (to "
                                f"{resolver.show(real)}); not followed")
        mode = os.stat(real).st_mode
    except OSError as exc:
        return _problem_of(rel, exc)
    if not stat.S_ISREG(mode):
        return ModelProblem(rel, "not-a-file", f"a link to {_kind(mode)}; not followed")
    return real


class _Resolver:
    """Real paths of a host's files: ``os.path.realpath`` when ``root`` is ``None`` (or
    ``/``); with a recorded host's ``root``, links in paths under it resolved inside it as
    that host sees them (:meth:`HostRoot.path`: an absolute target ``/x`` is ``<root>/x``,
    ``..`` never climbs above ``root``).
    """

    def __init__(self, root: Path | None) -> None:
        base = os.path.realpath(root) if root is not None else "/"
        self.base = base
        self.host = HostRoot(Path(base)) if base != "/" else None
        self.tops = tuple(dict.fromkeys((os.path.abspath(root), base))) if root else ()

    def real(self, path: Path | str) -> str:
        """The real path of ``path`` (absolute, links resolved). Raises ``OSError``
        (``ELOOP``) for a loop of links under a root.
        """
        if self.host is not None:
            full = os.path.abspath(path)
            for top in self.tops:
                if _inside(full, top):
                    return str(self.host.path("/" + full[len(top):].lstrip("/")))
        return os.path.realpath(path)

    def show(self, real: str) -> str:
        """A real path as a message names it: the host's path (``/...``) under a root."""
        if self.host is not None and _inside(real, self.base):
            return "/" + real[len(self.base):].lstrip("/")
        return real


def _excluded(exclude: Iterable[Path], hasher: Hasher) -> dict[str, str | None]:
    """``{real path: cache file name or None}`` of the files a folder walk leaves out: each
    of ``exclude``, and pin's digest cache files (whose temporary files are left out too).
    """
    out: dict[str, str | None] = {os.path.realpath(p): None for p in exclude}
    caches = [default_cache_file()]
    if hasher.cache_file is not None:
        caches.append(hasher.cache_file)
    for cache in caches:
        out[os.path.realpath(cache)] = cache.name
    return out


def _skipped(real: str, skipped: dict[str, str | None]) -> bool:
    """True when the real path ``real`` is one of ``skipped`` or a temporary file of one of
    its cache files (:func:`_excluded`).
    """
    if real in skipped:
        return True
    folder, name = os.path.split(real)
    return any(cache is not None and os.path.dirname(path) == folder and _is_temp_of(name, cache)
               for path, cache in skipped.items())


def default_cache_file() -> Path:
    """Where pin keeps its digest cache (``$XDG_CACHE_HOME/pin/model-digests.json``).

    ``$PIN_CACHE_DIR/model-digests.json`` when ``PIN_CACHE_DIR`` is set; else under
    ``$XDG_CACHE_HOME/pin/`` when that is an absolute path (the XDG Base Directory
    Specification, https://specifications.freedesktop.org/basedir-spec/latest/, ignores a
    relative one), else ``~/.cache/pin/``; with no home folder, the temp folder.
    """
    name = "model-digests.json"
    if os.environ.get("PIN_CACHE_DIR"):
        return Path(os.environ["PIN_CACHE_DIR"]) / name
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "pin" / name
    try:
        return Path.home() / ".cache" / "pin" / name
    except RuntimeError:
        return Path(tempfile.gettempdir()) / f"pin-{os.getuid()}" / name
