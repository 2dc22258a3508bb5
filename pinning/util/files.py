"""Small file helpers shared by every writer: atomic, locked writes and content hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pinning.errors import PinError

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


class TargetChanged(WriteConflict):
    """The target's bytes are no longer those the caller read (``if_unchanged``): another
    writer replaced it in between; nothing was written.
    """


def atomic_write_bytes(path: Path, data: bytes, *, if_unchanged: bytes | None = None,
                       wait: float = LOCK_WAIT_S) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename.

    A reader never sees a half-written file and a failure leaves the old file intact. The
    write holds the target's advisory lock (:func:`target_lock`), so writers of one target
    take turns; under it, temporary files that killed writers left next to the target are
    removed first (:func:`remove_orphans`). The temporary file is ``.<name>.<pid>.<random>
    .tmp``. With ``if_unchanged`` (the bytes the caller read earlier) the write happens only
    if ``path`` still holds exactly those bytes, checked under the lock.

    Raises :class:`TargetChanged` when it does not, :class:`WriteConflict` when another
    writer holds the lock longer than ``wait`` seconds, and ``OSError`` from the file system
    (both are ``OSError`` too); callers wrap them in their own ``PinError``.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    with target_lock(path, wait=wait):
        if if_unchanged is not None and not _holds(path, if_unchanged):
            raise TargetChanged(f"{path} changed since it was read")
        remove_orphans(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _holds(path: Path, expected: bytes) -> bool:
    """True when ``path`` is a regular file whose bytes are exactly ``expected`` (reads at
    most ``len(expected) + 1`` bytes; never blocks on a FIFO).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(expected):
            return False
        chunks: list[bytes] = []
        left = len(expected) + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks) == expected
    finally:
        os.close(fd)


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


def sha256_hex(data: bytes) -> str:
    """Return ``sha256:<64 hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


MAX_INPUT_BYTES = 64 * 1024 * 1024  # lockfiles, matrix files, snapshots, recordings, CSVs
MAX_KEY_BYTES = 1024 * 1024  # a PEM key is a few hundred bytes; 1 MiB is generous


def _size_text(limit: int) -> str:
    """``64 MiB``, ``1 MiB`` or ``512 bytes``."""
    mib = 1024 * 1024
    return f"{limit // mib} MiB" if limit % mib == 0 else f"{limit} bytes"


def read_regular_bytes(path: Path, error: type[PinError], *, label: str,
                       hint: str | None = None, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` bytes (default 64 MiB).

    The file is opened without blocking and checked on the open descriptor, so nothing can
    swap it between the check and the read: a FIFO (whose open or read would block
    forever), a device (``/dev/zero`` never ends), a directory or a socket is refused, and
    at most ``limit + 1`` bytes are ever read, whatever the file grows to. Symbolic links
    are followed; a loop of them is an unreadable file. Raises ``error`` (a ``PinError``
    subclass) naming ``label`` when the file is absent, unreadable, not a regular file or
    larger than ``limit``; ``hint`` becomes the error's hint.
    """
    try:
        fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{label}: not a regular file ({_file_kind(st.st_mode)}).", hint=hint)
        if st.st_size > limit:
            raise error(f"{label}: larger than {_size_text(limit)}.", hint=hint)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise error(f"{label}: larger than {_size_text(limit)}.", hint=hint)
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    finally:
        os.close(fd)


def sha256_file(path: Path, error: type[PinError], *, label: str,
                hint: str | None = None) -> str:
    """The bare 64-hex sha256 of the regular file ``path`` (as pip's ``--hash=sha256:``
    writes it), read in 1 MiB pieces (a 4 GB wheel
    is hashed without being held in memory). Opened without blocking and checked on the
    descriptor, as :func:`read_regular_bytes` does: raises ``error`` naming ``label`` for a
    file that is absent, unreadable or not a regular file (a FIFO would block forever,
    ``/dev/zero`` never ends).
    """
    try:
        fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{label}: not a regular file ({_file_kind(st.st_mode)}).", hint=hint)
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1024 * 1024):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO``, ``a directory``, ...)."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "not a plain file")


def read_toml(
    path: Path,
    error: type[PinError],
    *,
    label: str,
    unreadable_hint: str | None = None,
    syntax_hint: str | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Read ``path`` and parse it as TOML; return the raw bytes and the parsed table.

    ``label`` starts every message (``"Matrix file x.toml"``). Raises ``error`` (a
    ``PinError`` subclass) when the file cannot be read (see :func:`read_regular_bytes`) or
    is not UTF-8 TOML, naming the line and column tomllib reports; a number too long for
    ``int()`` or nesting too deep for the parser is invalid TOML too.
    """
    raw = read_regular_bytes(path, error, label=label, hint=unreadable_hint)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{label}: not valid TOML: {exc}.", hint=syntax_hint) from exc
    except RecursionError as exc:
        raise error(f"{label}: not valid TOML: nested too deeply.", hint=syntax_hint) from exc
    except ValueError as exc:  # an integer int() refuses (over 4,300 digits)
        raise error(f"{label}: not valid TOML: a number too long to read.",
                    hint=syntax_hint) from exc
    return raw, data
