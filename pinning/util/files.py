"""Small file helpers shared by every reader and writer: atomic, locked writes (the lock is
:mod:`pinning.util.locks`'), bounded reads of regular files and standard input, TOML, content
hashes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pinning.errors import PinError
from pinning.util.locks import LOCK_WAIT_S, WriteConflict, remove_orphans, target_lock


class TargetChanged(WriteConflict):
    """The target's bytes are no longer those the caller read (``if_unchanged``): another
    writer replaced it in between; nothing was written.
    """


STDIO = "-"
"""The path that names standard input (for a reader) or standard output (for a writer)."""


def is_stdio(path: Path | str) -> bool:
    """True when ``path`` is ``-``: standard input to the readers here, standard output to
    :func:`atomic_write_bytes`. A file named ``-`` is reached as ``./-`` only when the caller
    keeps it apart (:func:`pinning.cli.options.cli_path` makes it absolute).
    """
    return str(path) == STDIO


def atomic_write_bytes(path: Path, data: bytes, *, if_unchanged: bytes | None = None,
                       wait: float = LOCK_WAIT_S, new_mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` so that nothing is destroyed and nothing is torn.

    What ``path`` names decides how:

    * ``-``: standard output (``if_unchanged`` does not apply).
    * a symbolic link (or a chain of them): the final target is written as below and the
      link is kept; a loop of links is ``OSError`` (``ELOOP``).
    * a character device or a FIFO: the bytes are written to it as a stream (opened for
      writing, never created, truncated or renamed over), so ``-o /dev/null`` writes nothing
      anywhere; a FIFO no process reads is refused (``ENXIO``) instead of waiting forever.
    * a directory, a block device or a socket: refused with ``OSError`` (``EISDIR``,
      ``EPERM``) naming the path; nothing is written.
    * a regular file or nothing: a temporary file in the target's folder, written and
      fsynced, then renamed over the target, so a reader (or a writer killed with SIGKILL
      at any moment) leaves the old file or the new one, never a torn one. An existing
      file keeps its permission bits; a new one gets ``new_mode`` (0644; 0600 for a
      secret: the temporary file is 0600 while it is written).

    A regular write holds the target's advisory lock (:func:`target_lock`), so writers of
    one target take turns; under it, temporary files that killed writers left next to the
    target are removed first (:func:`remove_orphans`). The temporary file is ``.<name>.<pid>.
    <random>.tmp``. With ``if_unchanged`` (the bytes the caller read earlier) the write
    happens only if the target still holds exactly those bytes, checked under the lock.

    Raises :class:`TargetChanged` when it does not, :class:`WriteConflict` when another
    writer holds the lock longer than ``wait`` seconds, and ``OSError`` from the file system
    (both are ``OSError`` too); callers wrap them in their own ``PinError``.
    """
    if is_stdio(path):
        _write_stdout(data)
        return
    target = _final_target(Path(path))
    if _is_stream(target):
        _write_stream(target, data, if_unchanged=if_unchanged)
        return
    with target_lock(target, wait=wait):
        mode = _writable_mode(target, new_mode)
        if if_unchanged is not None and not holds_bytes(target, if_unchanged):
            raise TargetChanged(f"{path} changed since it was read")
        remove_orphans(target)
        _replace(target, data, mode)


def _write_stdout(data: bytes) -> None:
    """Write ``data`` to standard output (its binary buffer when it has one) and flush."""
    import sys

    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (a test's StringIO)
        out.write(data.decode("utf-8", "replace"))
        out.flush()


def _final_target(path: Path) -> Path:
    """The file ``path`` finally names, symbolic links resolved (the folders too); ``OSError``
    (``ELOOP``) for a loop of links.
    """
    target = Path(os.path.realpath(path))
    if target.is_symlink():  # realpath stops, unresolved, at a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    return target


def _is_stream(target: Path) -> bool:
    """True when ``target`` is a character device or a FIFO (written as a stream)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)


def _writable_mode(target: Path, new_mode: int = 0o644) -> int:
    """The permission bits the new file gets: those of the regular file ``target``,
    ``new_mode`` for a new one. ``OSError`` naming ``target`` when it is a directory, a
    block device or a socket (or a stream that replaced a regular file since it was looked
    at).
    """
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return new_mode
    if stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    raise PermissionError(errno.EPERM, f"{_file_kind(st.st_mode)}, not a file pin writes "
                          "(a regular file, a character device or a FIFO)", str(target))


def _write_stream(target: Path, data: bytes, *, if_unchanged: bytes | None) -> None:
    """Write ``data`` to the character device or FIFO ``target``: opened for writing without
    creating or truncating; refused when it turned into something else since it was looked
    at (then nothing is written).
    """
    fifo = stat.S_ISFIFO(os.stat(target).st_mode)
    try:
        # A FIFO is opened without blocking: with no reader the open fails at once (ENXIO)
        # rather than hang pin; once open, writes block as usual while the reader reads.
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
                     | (os.O_NONBLOCK if fifo else 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO with no reader; nothing was written, start "
                          "the reader first", str(target)) from exc
        raise
    try:
        if fifo:
            os.set_blocking(fd, True)
        st = os.fstat(fd)
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise OSError(errno.EAGAIN, "replaced while pin opened it; nothing was written",
                          str(target))
        if if_unchanged is not None:
            raise TargetChanged(f"{target} is {_file_kind(st.st_mode)}, not the file read")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


_CHUNK = 1024 * 1024


def _replace(target: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a temporary file beside ``target`` (fsynced, ``mode``), rename it
    over ``target`` and fsync the folder; the temporary file is removed on any failure.
    """
    import tempfile  # with shutil, lzma, bz2: paid by commands that write, not by readers

    parent = target.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp",
                               dir=parent)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view[:_CHUNK]):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # durability across a crash; not needed to be atomic
        dfd = os.open(parent, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def holds_bytes(path: Path, expected: bytes) -> bool:
    """True when ``path`` is a regular file whose bytes are exactly ``expected`` (reads at
    most ``len(expected) + 1`` bytes; never blocks on a FIFO). Raises ``OSError`` other
    than a missing file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(expected):
            return False
        return _read_upto(fd, len(expected) + 1) == expected
    finally:
        os.close(fd)


def _read_upto(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes read from ``fd`` in 1 MiB pieces (fewer at its end)."""
    chunks: list[bytes] = []
    while limit > 0 and (chunk := os.read(fd, min(limit, _CHUNK))):
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


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

    ``-`` is standard input (:func:`read_stdin_bytes`), read to at most ``limit + 1`` bytes.
    """
    if is_stdio(path):
        return read_stdin_bytes(error, label=label, hint=hint, limit=limit)
    with _regular_fd(path, error, label, hint) as (fd, st):
        if st.st_size > limit:
            raise error(f"{label}: larger than {_size_text(limit)}.", hint=hint)
        data = _read_upto(fd, limit + 1)
    if len(data) > limit:
        raise error(f"{label}: larger than {_size_text(limit)}.", hint=hint)
    return data


@contextlib.contextmanager
def _regular_fd(path: Path, error: type[PinError], label: str,
                hint: str | None) -> Iterator[tuple[int, os.stat_result]]:
    """The descriptor and stat of the regular file ``path``, opened without blocking and
    checked on the descriptor, closed after the block; raises ``error`` naming ``label``
    when it is absent, unreadable (also while read in the block) or not a regular file.
    """
    try:
        fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{label}: not a regular file ({_file_kind(st.st_mode)}).", hint=hint)
        yield fd, st
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
    finally:
        os.close(fd)


_stdin_read: list[tuple[object, bytes]] = []  # [(the stdin buffer read, its bytes)]


def read_stdin_bytes(error: type[PinError], *, label: str, hint: str | None = None,
                     limit: int = MAX_INPUT_BYTES) -> bytes:
    """All of standard input, at most ``limit`` bytes (default 64 MiB).

    Standard input is read once: a second call in the same process (a command that reads
    its input twice, to hash the bytes and to parse them) gets the same bytes. Raises
    ``error`` naming ``label`` when it cannot be read or is larger than ``limit``.
    """
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise error(f"{label}: standard input cannot be read (none is open).", hint=hint)
    cached = [data for seen, data in _stdin_read if seen is stream]
    if cached:
        data = cached[0]
    else:
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc
        _stdin_read[:] = [(stream, data)]
    if len(data) > limit:
        raise error(f"{label}: larger than {_size_text(limit)}.", hint=hint)
    return bytes(data)


def sha256_file(path: Path, error: type[PinError], *, label: str,
                hint: str | None = None) -> str:
    """The bare 64-hex sha256 of the regular file ``path`` (as pip's ``--hash=sha256:``
    writes it), read in 1 MiB pieces (a 4 GB wheel
    is hashed without being held in memory). Opened without blocking and checked on the
    descriptor, as :func:`read_regular_bytes` does: raises ``error`` naming ``label`` for a
    file that is absent, unreadable or not a regular file (a FIFO would block forever,
    ``/dev/zero`` never ends).
    """
    with _regular_fd(path, error, label, hint) as (fd, _):
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO``, ``a directory``, ...)."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "not a plain file")


def decode_utf8(raw: bytes, error: type[PinError], *, label: str,
                hint: str | None = None) -> str:
    """``raw`` as UTF-8 text; raises ``error`` naming ``label`` and the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{label}: not UTF-8 text (byte {exc.start}).", hint=hint) from exc


def json_lines(text: str, error: type[PinError], *, label: str,
               hint: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for every non-blank line of ``text`` (JSON lines),
    numbered from 1. Raises ``error`` naming ``label`` and the line when one is not JSON,
    is nested too deeply or holds a number too long to read
    (:func:`pinning.util.jsonread.load_json`).
    """
    from pinning.util.jsonread import load_json

    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        yield n, load_json(line, error, label=f"{label} line {n}", hint=hint)


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
    return raw, parse_toml(raw, error, label=label, syntax_hint=syntax_hint)


def parse_toml(raw: bytes, error: type[PinError], *, label: str,
               syntax_hint: str | None = None) -> dict[str, Any]:
    """``raw`` parsed as UTF-8 TOML; ``error`` as :func:`read_toml` says when it is not."""
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{label}: not valid TOML: {exc}.", hint=syntax_hint) from exc
    except RecursionError as exc:
        raise error(f"{label}: not valid TOML: nested too deeply.", hint=syntax_hint) from exc
    except ValueError as exc:  # an integer int() refuses (over 4,300 digits)
        raise error(f"{label}: not valid TOML: a number too long to read.",
                    hint=syntax_hint) from exc
