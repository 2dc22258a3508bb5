"""A model's files on a host, hashed: a revision in the local Hugging Face cache or a local
model folder (a converted checkpoint), every file with its size and sha256.

Nothing here touches the network or raises for what it finds on disk: an absent model is a
:class:`ModelTree` with ``reason`` set, a damaged file a :class:`ModelProblem`. Hashing is
streamed (1 MiB reads into one reused buffer), parallel over files (``hashlib`` releases the
GIL while it hashes a large piece), and remembered by :class:`Hasher` in a digest cache keyed
by (device, inode, size, mtime_ns) and the real path, so a second look at an unchanged 100 GB
model stats its files and reads none of them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from pinning.errors import ProbeError
from pinning.lockfile.models import ModelFile
from pinning.util.files import atomic_write_bytes, read_regular_bytes

ProblemKind = Literal["missing", "incomplete", "blob-mismatch", "unreadable", "not-a-file"]

CACHE_VERSION = 1
"""The ``version`` of the digest cache file; a file of another version is ignored."""

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
    """

    path: str
    kind: ProblemKind
    detail: str


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
    sha256: str
    git_sha1: str | None
    stored: float  # time.time() when stored (the oldest are dropped first)

    def to_json(self) -> list[Any]:
        return [self.dev, self.ino, self.size, self.mtime_ns, self.sha256, self.git_sha1,
                self.stored]


def _entry_of(value: object) -> _Entry | None:
    """An entry of the cache file, or ``None`` for anything not exactly its shape."""
    if not isinstance(value, list) or len(value) != 7:
        return None
    dev, ino, size, mtime_ns, sha256, git_sha1, stored = value
    ints = (dev, ino, size, mtime_ns)
    if not all(type(v) is int and 0 <= v < 2**64 for v in ints):
        return None
    if not (isinstance(sha256, str) and _HEX64.fullmatch(sha256)):
        return None
    if git_sha1 is not None and not (isinstance(git_sha1, str) and _HEX40.fullmatch(git_sha1)):
        return None
    if type(stored) not in (int, float):
        return None
    return _Entry(dev, ino, size, mtime_ns, sha256, git_sha1, float(stored))


def _load_cache(path: Path) -> dict[str, _Entry]:
    """The entries of the digest cache file ``path``; ``{}`` when it is absent, unreadable,
    not a regular file, too large, not JSON or of another version; malformed entries are
    skipped one by one (the file is rewritten whole on the next save).
    """
    try:
        raw = read_regular_bytes(path, ProbeError, label=str(path), limit=MAX_CACHE_BYTES)
        data = json.loads(raw)
    except (ProbeError, ValueError, RecursionError):
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


def _git_blob_prefix(size: int) -> bytes:
    """The header git hashes before a blob's bytes: ``blob <size>\\0``."""
    return b"blob %d\0" % size


def _hash_fd(fd: int, size: int, git: bool) -> tuple[int, str, str | None]:
    """(bytes read, sha256, git blob sha1 when ``git``) of the open file ``fd`` of ``size``
    bytes, read in 1 MiB pieces into one buffer. The git header uses ``size``: a file that
    changed length while read mismatches, as it should.
    """
    sha = hashlib.sha256()
    sha1 = hashlib.sha1(_git_blob_prefix(size), usedforsecurity=False) if git else None
    buf = bytearray(_READ)
    view = memoryview(buf)
    total = 0
    with open(fd, "rb", buffering=0, closefd=False) as f:
        while n := f.readinto(buf):
            sha.update(view[:n])
            if sha1 is not None:
                sha1.update(view[:n])
            total += n
    return total, sha.hexdigest(), (sha1.hexdigest() if sha1 is not None else None)


class Hasher:
    """Streams files through sha256 in parallel threads and remembers digests by
    (device, inode, size, mtime_ns) in ``cache_file`` (JSON, written atomically), so an
    unchanged file is never read twice. ``cache_file`` ``None``: no persistent cache.

    The cache trusts the four stat values of a file's real path: a file rewritten in place
    with its size kept and its mtime put back (``os.utime``) on the same inode keeps its old
    digest; anything else that changes a file (a new inode by rename, a new size, a new
    mtime) makes it read again. Entries live in memory for the Hasher's life too.
    ``workers``: the threads hashing at once (default ``min(8, os.cpu_count())``).
    ``bytes_read`` / ``files_read``: what this Hasher read, for tests and benchmarks.

    The cache file is ``{"version": 1, "entries": {REAL_PATH: [dev, ino, size, mtime_ns,
    sha256, git_sha1|null, stored_time]}}``, at most :data:`MAX_CACHE_ENTRIES` (oldest
    dropped). A corrupt, hostile or non-regular cache file is ignored and replaced; a save
    merges what another pin process wrote meanwhile and replaces the file atomically
    (:func:`pinning.util.files.atomic_write_bytes`): concurrent writers never tear it, the
    last one wins. Saving never raises: a cache that cannot be written is no cache.
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
        that cannot be read); saves the cache.
        """
        out: dict[Path, tuple[int, str] | OSError] = {}
        for path, got in self._digests(paths, set()).items():
            out[path] = got if isinstance(got, OSError) else (got.size, got.sha256)
        return out

    def _digests(self, paths: list[Path], git: set[Path]) -> dict[Path, _Digest | OSError]:
        """:class:`_Digest` (with the git blob id for the paths in ``git``) or ``OSError``
        (:class:`NotRegularFile` for a FIFO, device, folder) per path; saves the cache.
        """
        out: dict[Path, _Digest | OSError] = {}
        todo: list[Path] = []
        for path in dict.fromkeys(paths):
            hit = self._lookup(path, path in git)
            if hit is None:
                todo.append(path)
            else:
                out[path] = hit
        if len(todo) > 1 and self.workers > 1:
            with ThreadPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
                results = list(pool.map(lambda p: self._read(p, p in git), todo))
        else:
            results = [self._read(p, p in git) for p in todo]
        out.update(zip(todo, results, strict=True))
        read = [r for r in results if not isinstance(r, OSError)]
        self.bytes_read += sum(r.size for r in read)
        self.files_read += len(read)
        self.save()
        return out

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
        if entry is None or (entry.dev, entry.ino, entry.size, entry.mtime_ns) != (
                st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
            return None
        if git and entry.git_sha1 is None:
            return None
        return _Digest(entry.size, entry.sha256, entry.git_sha1)

    def _read(self, path: Path, git: bool) -> _Digest | OSError:
        """Open ``path`` without blocking, check it is a regular file on the descriptor,
        hash it and remember the digest when the file did not change while read.
        """
        real = os.path.realpath(path)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as exc:
            return exc
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return NotRegularFile(errno.EINVAL, f"{_kind(before.st_mode)}, not a regular "
                                      "file", str(path))
            size, sha256, git_sha1 = _hash_fd(fd, before.st_size, git)
            after = os.fstat(fd)
        except OSError as exc:
            return exc
        finally:
            os.close(fd)
        if size == before.st_size == after.st_size and before.st_mtime_ns == after.st_mtime_ns:
            entry = _Entry(before.st_dev, before.st_ino, size, before.st_mtime_ns, sha256,
                           git_sha1, time.time())
            self._entries[real] = entry
            self._new[real] = entry
        return _Digest(size, sha256, git_sha1)

    def save(self) -> None:
        """Write the digests learnt since the last save to ``cache_file`` (merged with what
        the file holds now, bounded to :data:`MAX_CACHE_ENTRIES`); nothing when nothing is
        new or there is no cache file. Never raises.
        """
        if self.cache_file is None or not self._new:
            return
        path = self.cache_file
        with contextlib.suppress(OSError):
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                return  # a FIFO or device named as the cache: never write to it
        merged = _load_cache(path)
        merged.update(self._new)
        if len(merged) > MAX_CACHE_ENTRIES:
            keep = sorted(merged.items(), key=lambda kv: kv[1].stored)[-MAX_CACHE_ENTRIES:]
            merged = dict(keep)
        data = {"version": CACHE_VERSION,
                "entries": {k: e.to_json() for k, e in sorted(merged.items())}}
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_bytes(path, json.dumps(data, separators=(",", ":")).encode())
        except OSError:
            return
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
        return ModelProblem(ascii(rel), "unreadable", "a file name a lock cannot record "
                            "(a control character, a backslash or not UTF-8)")


def read_hub_model(cache_dir: Path, model_id: str, revision: str, *,
                   hasher: Hasher | None = None) -> ModelTree:
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
    Never raises for what is on disk; ``hasher`` ``None``: a Hasher without a cache file.
    """
    hasher = hasher or Hasher()
    located = _locate(Path(cache_dir), model_id, revision)
    if isinstance(located, ModelTree):
        return located
    repo, snapshot, commit = located
    entries, problems = _walk(snapshot, set())
    wanted = _snapshot_targets(repo, entries, problems)
    git = {Path(real) for _, real, blob in wanted if blob and _HEX40.fullmatch(blob)}
    digests = hasher._digests([Path(real) for _, real, _ in wanted], git)
    files = _collect(wanted, digests, problems)
    problems.extend(_incomplete_blobs(repo / "blobs"))
    return ModelTree(source="hf-cache", location=str(snapshot), id=model_id, revision=commit,
                     files=files, problems=sorted(problems, key=lambda p: (p.path, p.kind)))


def _locate(cache_dir: Path, model_id: str, revision: str) -> tuple[Path, Path, str] | ModelTree:
    """``(model cache folder, snapshot folder, commit)``, or a tree with ``reason`` when the
    id or revision is malformed or the snapshot is not in ``cache_dir``.
    """
    repo = cache_dir / ("models--" + model_id.replace("/", "--"))
    base = ModelTree(source="hf-cache", location=str(repo), id=model_id, revision=revision)
    if not _REPO_ID.fullmatch(model_id) or "--" in model_id or ".." in model_id:
        return _absent(base, f"{model_id!r} is not a Hugging Face model id (ORG/NAME)")
    commit = _commit_of(repo, revision)
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


def _commit_of(repo: Path, revision: str) -> str | None:
    """``revision`` when it is a 40-hex commit; else the commit ``refs/<revision>`` of the
    model's cache folder ``repo`` names; ``None`` when there is none.
    """
    if _HEX40.fullmatch(revision):
        return revision
    if not _REF.fullmatch(revision) or ".." in revision:
        return None
    try:
        text = read_regular_bytes(repo / "refs" / revision, ProbeError, label="ref",
                                  limit=1024).decode("ascii", "replace").strip()
    except ProbeError:
        return None
    return text if _HEX40.fullmatch(text) else None


def _snapshot_targets(repo: Path, entries: list[tuple[str, Path]],
                      problems: list[ModelProblem]) -> list[tuple[str, str, str | None]]:
    """``(relative path, real path, blob name or None)`` of each snapshot entry to hash; a
    link out of ``repo``, or to a blob that is absent, becomes a problem in ``problems``.
    """
    repo_real = os.path.realpath(repo)
    blobs_real = os.path.join(repo_real, "blobs")
    wanted: list[tuple[str, str, str | None]] = []
    for rel, path in entries:
        real = os.path.realpath(path)
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


def read_model_dir(path: Path, *, hasher: Hasher | None = None) -> ModelTree:
    """Every regular file under the model folder ``path``, hashed.

    Files are listed sorted by their ``/``-separated path relative to ``path``; ``.git/``
    folders and huggingface_hub's ``.cache/huggingface/`` (the metadata a ``local_dir``
    download keeps) are left out. A link to a file inside the folder is followed (listed
    under the link's name); a link out of it is ``unreadable`` and not followed; a dangling
    link ``missing``; a FIFO, device, socket or link to a folder ``not-a-file`` (never read,
    never waited on). The walk is iterative and at most :data:`MAX_DEPTH` deep. A folder
    that is absent or not a folder is ``reason``. Never raises for what is on disk.
    """
    hasher = hasher or Hasher()
    top = Path(path)
    base = ModelTree(source="directory", location=str(top))
    if not top.is_dir():
        return _absent(base, f"{top} is not a folder (no model there)")
    root_real = os.path.realpath(top)
    entries, problems = _walk(top, {".cache/huggingface"})
    wanted: list[tuple[str, Path]] = []
    for rel, entry in entries:
        try:
            lst = os.lstat(entry)
        except OSError as exc:
            problems.append(_problem_of(rel, exc))
            continue
        if stat.S_ISLNK(lst.st_mode):
            real = os.path.realpath(entry)
            if not _inside(real, root_real):
                problems.append(ModelProblem(rel, "unreadable", f"a link out of {top} "
                                             f"(to {real}); not followed"))
                continue
            try:
                mode = os.stat(real).st_mode
            except OSError as exc:
                problems.append(_problem_of(rel, exc))
                continue
            if not stat.S_ISREG(mode):
                problems.append(ModelProblem(rel, "not-a-file", f"a link to {_kind(mode)}; "
                                             "not followed"))
                continue
        elif not stat.S_ISREG(lst.st_mode):
            problems.append(ModelProblem(rel, "not-a-file", f"{_kind(lst.st_mode)}, not a "
                                         "regular file; not read"))
            continue
        wanted.append((rel, entry))
    digests = hasher._digests([p for _, p in wanted], set())
    files = _collect([(rel, str(p), None) for rel, p in wanted], digests, problems)
    return ModelTree(source="directory", location=str(top), files=files,
                     problems=sorted(problems, key=lambda p: (p.path, p.kind)))


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
