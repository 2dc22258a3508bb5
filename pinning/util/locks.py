"""Writers taking turns: the advisory lock of a target (:func:`target_lock`, a sidecar
``.<name>.lock`` held with ``fcntl.flock``) and the removal of temporary files that killed
writers left (:func:`remove_orphans`). :func:`pinning.util.files.atomic_write_bytes` uses both.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

ORPHAN_AGE_S = 600.0
"""Seconds after which a writer's temporary file is an orphan even if its pid still runs."""

LOCK_WAIT_S = 30.0
"""Seconds a writer waits for another writer of the same target before giving up."""

_POLL_S = 0.01
_TMP_MIDDLE = re.compile(r"(?:([0-9]{1,10})\.)?[a-z0-9_]{8}")  # [<pid>.]<mkstemp's 8 chars>


class WriteConflict(OSError):
    """Another writer of the same target held its lock longer than the wait.

    An ``OSError``, so a caller that reports write failures reports this one too; a caller
    that can say "re-run" catches it first.
    """


def lock_path_of(path: Path) -> Path:
    """The sidecar lock file of ``path``: ``.<name>.lock`` in the same folder (never the
    target itself, which a write replaces by rename).
    """
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def target_lock(path: Path, *, wait: float = LOCK_WAIT_S) -> Iterator[Path]:
    """Hold the exclusive advisory lock (``fcntl.flock``) of the target ``path`` for the
    ``with`` block; yields the sidecar lock file (:func:`lock_path_of`).

    The sidecar is created when absent and removed on release, so none is left behind; a
    writer that locked a sidecar another writer removed meanwhile locks the new one. Waits
    at most ``wait`` seconds for another holder, then raises :class:`WriteConflict`;
    ``OSError`` when the sidecar cannot be created (a read-only or missing folder).
    """
    import fcntl

    lock_file = lock_path_of(path)
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise WriteConflict(
                            f"another process is writing {path} (it holds {lock_file} "
                            f"longer than {wait:g} s)") from None
                    time.sleep(_POLL_S)
            if _same_file(fd, lock_file):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder before us removed this sidecar: lock the current one
    try:
        yield lock_file
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock_file)
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open as ``fd``."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def remove_orphans(path: Path, *, max_age: float = ORPHAN_AGE_S) -> list[Path]:
    """Remove the temporary files writers of ``path`` left behind when killed mid-write:
    regular files ``.<name>.<pid>.<random>.tmp`` (or ``.<name>.<random>.tmp``, written
    before the pid was named) whose pid no longer runs, or older than ``max_age`` seconds.
    Returns those removed. Call it holding :func:`target_lock`: then no cooperating writer
    of ``path`` is mid-write. Never raises for a folder it cannot list or a file it cannot
    remove.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    prefix, suffix = f".{path.name}.", ".tmp"
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        m = _TMP_MIDDLE.fullmatch(name[len(prefix):-len(suffix)])
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if m is None or not stat.S_ISREG(st.st_mode):
            continue
        pid = int(m.group(1)) if m.group(1) else None
        gone = pid is not None and pid != os.getpid() and not _pid_runs(pid)
        if gone or now - st.st_mtime > max_age:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _pid_runs(pid: int) -> bool:
    """True when process ``pid`` exists (or cannot be told apart from one that does)."""
    if not 0 < pid < 2**31:
        return True  # not a pid this kernel hands out: leave the file to the age rule
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs as another user
        return True
    return True
