"""Walking and reading the files of a scanned tree: bounded, non-blocking, binary refused.

Every scanner reads through :func:`read_text` (or :func:`read_bytes`), so a FIFO, a device, a
file that grows without end or a binary blob is a :class:`~pinning.audit.model.Skip` with its
reason, never a hang or a crash.

The members of an archive the user names (:mod:`pinning.audit.archive`) are read in memory:
while :func:`memory_tree` is active, a path under its root (``/abs/x.tar.gz!/member``) is
answered from the archive's bytes, never from the disk, so the scanners need no change.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from pinning.audit.model import Context, Skip, Skipped
from pinning.errors import PinError, UsageError
from pinning.util.files import read_regular_bytes

MAX_SOURCE_BYTES = 10 * 1024 * 1024
"""The largest text file scanned (10 MiB): larger sources are generated, not written."""

BINARY_PROBE = 8192
"""A text file with a NUL byte in its first 8 KiB is binary (git's and grep's heuristic)."""

SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules",
                       "site-packages", ".tox", ".nox", ".mypy_cache", ".ruff_cache",
                       ".pytest_cache", ".eggs"})
"""Folder names never entered: version control, virtual environments and caches."""

MAX_DEPTH = 100
"""The deepest folder level under a scanned root whose files are scanned (root = 0)."""

_TREE: ContextVar[tuple[str, Mapping[str, bytes]] | None] = ContextVar(
    "pin_audit_memory_tree", default=None)


@contextmanager
def memory_tree(root: str, members: Mapping[str, bytes]) -> Iterator[None]:
    """While the block runs, :func:`read_bytes` answers a path under ``root`` (an absolute
    path that names no folder on disk, e.g. ``/abs/x.tar.gz!``) from ``members`` (member
    path relative to ``root``, ``/``-separated -> its bytes); a path under ``root`` that is
    not a member is absent. Nothing is written anywhere.
    """
    token = _TREE.set((root.rstrip("/"), members))
    try:
        yield
    finally:
        _TREE.reset(token)


def _member(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` from the active :func:`memory_tree`; ``None`` when ``path`` is
    not under its root. Raises :class:`Skip` for a path under the root that is no member, or
    a member larger than ``limit``.
    """
    tree = _TREE.get()
    if tree is None:
        return None
    root, members = tree
    text = os.path.normpath(str(path))
    if not text.startswith(root + "/"):
        return None
    data = members.get(text[len(root) + 1:])
    if data is None:
        raise Skip("not a member of the archive")
    if len(data) > limit:
        raise Skip(f"larger than {limit} bytes")
    return data


def read_bytes(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); raises :class:`Skip`
    naming why it cannot be read (absent, FIFO, device, directory, too large, unreadable).
    """
    member = _member(path, limit)
    if member is not None:
        return member
    try:
        return read_regular_bytes(path, UsageError, label=str(path), limit=limit)
    except PinError as exc:
        reason = exc.message.removeprefix(f"{path}: ").rstrip(".")
        raise Skip(reason) from None


def read_text(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> str:
    """The text of ``path`` decoded as UTF-8 (invalid bytes replaced, a BOM dropped); raises
    :class:`Skip` for what :func:`read_bytes` refuses and for a binary file (a NUL byte in
    the first 8 KiB).
    """
    data = read_bytes(path, limit=limit)
    if b"\0" in data[:BINARY_PROBE]:
        raise Skip("binary file (NUL byte in the first 8 KiB)")
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def walk(root: Path, skipped: list[Skipped], ctx: Context | None = None, *,
         wanted: Callable[[str], bool] | None = None) -> Iterator[tuple[Path, str]]:
    """``(path, path relative to root)`` for every file under the folder ``root`` whose name
    ``wanted`` accepts (default: every file),
    sorted, without recursion (any depth is safe) and without following links to folders
    (no loops). A link to a file outside the audited folders (``ctx.roots``) is not followed:
    a ``requirements.txt`` that points at a credentials file must not put its lines in the
    report. Folders that cannot be listed, such links and folders deeper than
    :data:`MAX_DEPTH` are added to ``skipped``.
    """
    stack: list[tuple[str, str, int]] = [(str(root), "", 0)]
    while stack:
        base, rel, depth = stack.pop()
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(path=rel or ".", reason=f"cannot be listed "
                                   f"({exc.strerror or exc})"))
            continue
        dirs: list[tuple[str, str]] = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name not in SKIP_DIRS:
                    dirs.append((entry.path, child))
            elif entry.is_symlink() and _is_dir_link(entry.path):
                skipped.append(Skipped(path=child, reason="a link to a folder; not followed"))
            elif wanted is None or wanted(entry.name):
                if (ctx is not None and entry.is_symlink()
                        and not ctx.inside(Path(entry.path))):
                    skipped.append(Skipped(path=child, reason="a link to a file outside the "
                                           "audited folders; not followed"))
                    continue
                yield Path(entry.path), child
        if dirs and depth >= MAX_DEPTH:
            skipped.append(Skipped(path=rel or ".", reason=f"folders below it are more than "
                                   f"{MAX_DEPTH} levels deep; not scanned"))
            continue
        stack.extend((d, r, depth + 1) for d, r in reversed(dirs))


def _is_dir_link(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except OSError:
        return False
