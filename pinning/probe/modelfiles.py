"""A model's files on a host, hashed: a local model folder (a converted checkpoint) read by
:func:`read_model_dir`, every file with its size and sha256, and what the Hugging Face cache
reader (:mod:`pinning.probe.hubcache`) shares with it: the tree and problem shapes, the walk,
link resolution under a recorded root; and :func:`with_model_files`, a lock's ``[model]`` as
a tree read it (``pin lock model`` and ``pin resolve --model``).

Nothing here touches the network or raises for what it finds on disk: an absent model is a
:class:`ModelTree` with ``reason`` set, a damaged file a :class:`ModelProblem`. Hashing and
its digest cache are :class:`~pinning.probe.hasher.Hasher`'s.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from pinning.lockfile.models import Lockfile, Model, ModelFile, model_content_hash
from pinning.probe.digestcache import is_temp_of
from pinning.probe.hasher import Digest, Hasher, NotRegularFile, default_cache_file, kind_of
from pinning.util.text import printable

ProblemKind = Literal["missing", "incomplete", "blob-mismatch", "unreadable", "not-a-file"]

MAX_DEPTH = 64
"""The deepest folder nesting read under a model folder or snapshot."""


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


def problem_of(rel: str, exc: OSError) -> ModelProblem:
    """The problem an ``OSError`` from hashing ``rel`` stands for."""
    if isinstance(exc, NotRegularFile):
        return ModelProblem(rel, "not-a-file", exc.strerror or str(exc))
    if isinstance(exc, FileNotFoundError):
        return ModelProblem(rel, "missing", "the file is gone")
    return ModelProblem(rel, "unreadable", f"cannot be read ({exc.strerror or exc})")


def inside(real: str, root: str) -> bool:
    """True when the real path ``real`` lies under the real folder ``root``."""
    return real == root or real.startswith(root.rstrip("/") + "/")


def walk(top: Path, skip: set[str]) -> tuple[list[tuple[str, Path]], list[ModelProblem]]:
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


def _record(rel: str, digest: Digest) -> ModelFile | ModelProblem:
    """The lock entry of one file, or a problem when its name cannot be recorded."""
    try:
        return ModelFile(path=rel, size=digest.size, sha256=digest.sha256)
    except ValidationError:
        return ModelProblem(rel, "unreadable", "a file name a lock cannot record "
                            "(a control character, a backslash or not UTF-8)")


def collect(wanted: list[tuple[str, str]], digests: dict[Path, Digest | OSError],
            problems: list[ModelProblem]) -> list[ModelFile]:
    """The lock entries of the hashed files ``wanted`` (``(relative path, real path)``), in
    that order; what could not be hashed or recorded is added to ``problems``.
    """
    files: list[ModelFile] = []
    for rel, real in wanted:
        got = digests[Path(real)]
        made = problem_of(rel, got) if isinstance(got, OSError) else _record(rel, got)
        if isinstance(made, ModelProblem):
            problems.append(made)
        else:
            files.append(made)
    return files


def absent(base: ModelTree, reason: str) -> ModelTree:
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
    resolver = Resolver(root)
    top = Path(path)
    base = ModelTree(source="directory", location=str(top))
    try:
        root_real = resolver.real(top)
    except OSError as exc:
        return absent(base, f"{top} cannot be read ({exc.strerror or exc})")
    if not os.path.isdir(root_real):
        return absent(base, f"{top} is not a folder (no model there)")
    skipped = _excluded(exclude, hasher)
    entries, problems = walk(Path(root_real), {".cache/huggingface"})
    wanted: list[tuple[str, str]] = []
    for rel, entry in entries:
        if _skipped(str(entry), skipped):
            continue
        got = _dir_entry(rel, entry, resolver, top, root_real)
        if isinstance(got, ModelProblem):
            problems.append(got)
        elif not _skipped(got, skipped):
            wanted.append((rel, got))
    digests = hasher.digests([Path(real) for _, real in wanted], set())
    files = collect(wanted, digests, problems)
    return ModelTree(source="directory", location=str(top), files=files,
                     problems=sorted(problems, key=lambda p: (p.path, p.kind)))


def _dir_entry(rel: str, entry: Path, resolver: Resolver, folder: Path,
               folder_real: str) -> str | ModelProblem:
    """The real path to hash for the entry ``entry`` (``rel``) of the model folder
    ``folder`` (real path ``folder_real``), or the problem it is: a link out of the folder,
    a dangling link, a link to something not a regular file, a FIFO, device or socket.
    """
    try:
        lst = os.lstat(entry)
    except OSError as exc:
        return problem_of(rel, exc)
    if not stat.S_ISLNK(lst.st_mode):
        if stat.S_ISREG(lst.st_mode):
            return str(entry)
        return ModelProblem(rel, "not-a-file", f"{kind_of(lst.st_mode)}, not a regular file; "
                            "not read")
    try:
        real = resolver.real(entry)
        if not inside(real, folder_real):
            return ModelProblem(rel, "unreadable", f"a link out of {folder} (to "
                                f"{resolver.show(real)}); not followed")
        mode = os.stat(real).st_mode
    except OSError as exc:
        return problem_of(rel, exc)
    if not stat.S_ISREG(mode):
        return ModelProblem(rel, "not-a-file", f"a link to {kind_of(mode)}; not followed")
    return real


class Resolver:
    """Real paths of a host's files: ``os.path.realpath`` when ``root`` is ``None`` (or
    ``/``); with a recorded host's ``root``, links in paths under it resolved inside it as
    that host sees them (:meth:`HostRoot.path`: an absolute target ``/x`` is ``<root>/x``,
    ``..`` never climbs above ``root``).
    """

    def __init__(self, root: Path | None) -> None:
        base = os.path.realpath(root) if root is not None else "/"
        self.base = base
        self.host = None
        if base != "/":  # only under a recorded root: pinning.util.proc is not paid live
            from pinning.probe.root import HostRoot

            self.host = HostRoot(Path(base))
        self.tops = tuple(dict.fromkeys((os.path.abspath(root), base))) if root else ()

    def real(self, path: Path | str) -> str:
        """The real path of ``path`` (absolute, links resolved). Raises ``OSError``
        (``ELOOP``) for a loop of links under a root.
        """
        if self.host is not None:
            full = os.path.abspath(path)
            for top in self.tops:
                if inside(full, top):
                    return str(self.host.path("/" + full[len(top):].lstrip("/")))
        return os.path.realpath(path)

    def show(self, real: str) -> str:
        """A real path as a message names it: the host's path (``/...``) under a root."""
        if self.host is not None and inside(real, self.base):
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
    return any(cache is not None and os.path.dirname(path) == folder and is_temp_of(name, cache)
               for path, cache in skipped.items())


def with_model_files(lock: Lockfile, tree: ModelTree | None) -> Lockfile:
    """``lock`` with its ``[model]`` files as :func:`read_model_dir` or
    :func:`~pinning.probe.hubcache.read_hub_model` read them (``tree``): every file whose
    bytes check out with its size and sha256, the content hash, and in ``missing`` each file
    with a problem (listed for the revision but not there, half-downloaded, a cache blob whose
    bytes do not match its name, unreadable): never a guessed digest. A tree with no file
    gives ``files-unknown`` with its reason; ``None`` (not read) leaves the lock as it is.
    Unchanged when the lock has no model. Raises ``LockfileError`` (exit 5) only if the
    amended lock does not validate.
    """
    from pinning.lockfile.io import amend

    model = lock.model
    if model is None or tree is None:
        return lock
    bad = {p.path for p in tree.problems
           if not (p.kind == "incomplete" and p.path.startswith("blobs/"))}
    files = [f for f in tree.files if f.path not in bad]
    keep = {"id": model.id, "revision": model.revision, "path": model.path,
            "origin": model.origin}
    if files:
        new = Model(**keep, files=files, missing=sorted(bad),
                    content_hash=model_content_hash(files))
    else:
        why = tree.reason or ("no file could be read: " + "; ".join(
            f"{p.path} ({p.kind})" for p in tree.problems[:5]) if tree.problems
            else "the model folder holds no file")
        new = Model(**keep, missing=sorted(bad),
                    files_unknown=printable(why.rstrip("."), newlines=False))
    return amend(lock, model=new)
