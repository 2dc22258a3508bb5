"""Reading an sdist or a wheel the user names (``.tar.gz``, ``.tgz``, ``.zip``, ``.whl``) in
memory, without unpacking it to disk.

Owns the limits that make an archive safe to read: the bytes decompressed in all, the ratio of
decompressed to compressed bytes (a decompression bomb is refused as a whole, exit 2), the
members and member bytes held in memory; and the members never read (``../``, absolute
names, links, devices), each a skipped entry naming ``archive!member``. The standard library's
``tarfile`` and ``zipfile`` read the formats; the bounds are ours because neither library
bounds what an archive decompresses to.
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pinning.audit.model import Skip, Skipped
from pinning.errors import UsageError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".whl")
"""The archive names read (matched case-insensitively)."""


@dataclass(frozen=True)
class Limits:
    """How much of an archive is read. ``unpacked``: the most bytes decompressed in all (a
    tar stream) or declared by the members (a zip); ``ratio``: the most decompressed bytes per
    compressed byte, checked once ``ratio_floor`` bytes are decompressed (real sdists and
    wheels stay under 20, bombs go past 1000); ``held``: the most member bytes kept in memory;
    ``member``: the largest member read (bytes); ``members``: the most members looked at.
    """

    unpacked: int = 8 * 1024**3
    ratio: int = 100
    ratio_floor: int = 16 * 1024**2
    held: int = 512 * 1024**2
    member: int = 256 * 1024**2
    members: int = 200_000


LIMITS = Limits()
"""The limits :func:`read_archive` applies unless given others."""


@dataclass
class Archive:
    """The members of an archive that pin reads: ``members`` maps each member's normalised
    ``/``-separated path to its bytes; ``skipped`` names each member not read and why.
    """

    members: dict[str, bytes] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)


def is_archive(name: str) -> bool:
    """Whether the file name ``name`` is an archive pin reads (:data:`ARCHIVE_SUFFIXES`)."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def _bomb(display: str, why: str) -> UsageError:
    return UsageError(f"{display}: {why}; refused as a decompression bomb, nothing of it "
                      "was read.", hint="Audit the unpacked tree instead, if you trust it.")


class _Bounded(io.RawIOBase):
    """A decompressed stream that raises :class:`UsageError` (a bomb) once it has given more
    than ``limits.unpacked`` bytes, or more than ``limits.ratio`` times the compressed bytes
    read from ``raw`` (past ``limits.ratio_floor``).
    """

    def __init__(self, inner: gzip.GzipFile, raw: BinaryIO, display: str,
                 limits: Limits) -> None:
        super().__init__()
        self._inner, self._raw, self._display, self._limits = inner, raw, display, limits
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = self._inner.readinto(buffer)
        self.total += n
        limits = self._limits
        if self.total > limits.unpacked:
            raise _bomb(self._display, f"decompresses to more than {limits.unpacked} bytes")
        if (self.total > limits.ratio_floor
                and self.total > limits.ratio * max(self._raw.tell(), 1)):
            raise _bomb(self._display, f"decompresses to more than {limits.ratio} times its "
                                       "compressed size")
        return n


def _refusal(name: str) -> str | None:
    """Why the member called ``name`` is never read, or ``None`` when it may be."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute member name; not read"
    if ".." in name.replace("\\", "/").split("/"):
        return "a member name that climbs out of the archive (../); not read"
    return None


class _Reader:
    """Collects members under the limits; ``wanted`` says whether a base name is read."""

    def __init__(self, display: str, wanted: Callable[[str], bool], limits: Limits) -> None:
        self.display, self.wanted, self.limits = display, wanted, limits
        self.out = Archive()
        self.held = 0
        self.seen = 0

    def skip(self, name: str, reason: str) -> None:
        self.out.skipped.append(Skipped(path=f"{self.display}!{name}", reason=reason))

    def admit(self, name: str, *, link: bool, regular: bool, size: int) -> str | None:
        """The normalised member path to read, or ``None`` (noted when it matters)."""
        self.seen += 1
        reason = _refusal(name)
        if reason is None and link:
            reason = "a link member; not followed"
        if reason is not None:
            self.skip(name, reason)
            return None
        rel = posixpath.normpath(name.removeprefix("./"))
        if not regular or rel in (".", "") or not self.wanted(posixpath.basename(rel)):
            return None
        if rel in self.out.members:
            self.skip(rel, "a second member of the same name; the first was read")
            return None
        if size > self.limits.member:
            self.skip(rel, f"larger than {self.limits.member} bytes; not read")
            return None
        if self.held + size > self.limits.held:
            self.skip(rel, f"the members read would hold more than {self.limits.held} bytes "
                           "in memory; not read")
            return None
        return rel

    def keep(self, rel: str, data: bytes) -> None:
        self.held += len(data)
        self.out.members[rel] = data


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened without blocking; :class:`Skip` unless a readable regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise Skip(f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Skip("not a regular file")
    return os.fdopen(fd, "rb")


def _read_tar(raw: BinaryIO, reader: _Reader) -> None:
    stream = _Bounded(gzip.GzipFile(fileobj=raw, mode="rb"), raw, reader.display,
                      reader.limits)
    with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tar:
        for info in tar:
            if reader.seen >= reader.limits.members:
                reader.skip(info.name, f"more than {reader.limits.members} members; the "
                                       "rest not read")
                break
            if info.ischr() or info.isblk() or info.isfifo():
                reader.skip(info.name, "a device or FIFO member; not read")
                continue
            rel = reader.admit(info.name, link=info.issym() or info.islnk(),
                               regular=info.isfile(), size=info.size)
            member = tar.extractfile(info) if rel is not None else None
            if rel is not None and member is not None:
                reader.keep(rel, member.read())


def _read_zip(raw: BinaryIO, reader: _Reader) -> None:
    compressed = os.fstat(raw.fileno()).st_size
    with zipfile.ZipFile(raw) as zf:
        infos = zf.infolist()
        declared = sum(i.file_size for i in infos)
        limits = reader.limits
        if declared > limits.unpacked:
            raise _bomb(reader.display, f"its members declare more than {limits.unpacked} "
                                        "bytes")
        if declared > limits.ratio_floor and declared > limits.ratio * max(compressed, 1):
            raise _bomb(reader.display, f"its members declare more than {limits.ratio} "
                                        "times its compressed size")
        for info in infos[:limits.members]:
            kind = stat.S_IFMT(info.external_attr >> 16)
            rel = reader.admit(info.filename, link=kind == stat.S_IFLNK,
                               regular=not info.is_dir() and kind in (0, stat.S_IFREG),
                               size=info.file_size)
            if rel is not None:
                with zf.open(info) as member:
                    reader.keep(rel, member.read(limits.member + 1))
        if len(infos) > limits.members:
            reader.skip(infos[limits.members].filename, f"more than {limits.members} "
                                                        "members; the rest not read")


def read_archive(path: Path, display: str, wanted: Callable[[str], bool],
                 limits: Limits | None = None) -> Archive:
    """The members of the archive ``path`` (shown as ``display``) whose base name
    ``wanted`` accepts, read in memory under ``limits`` (default :data:`LIMITS`).

    Members named with ``../`` or an absolute path, links and devices are never read: each
    is a skipped entry ``display!member``, as is a member over the size limits. Raises
    ``UsageError`` (exit 2) for a decompression bomb (more than ``limits.unpacked`` bytes,
    or a ratio over ``limits.ratio``); :class:`Skip` for a file that cannot be read or is
    not a valid archive of its kind.
    """
    reader = _Reader(display, wanted, limits or LIMITS)
    tar = not path.name.lower().endswith((".zip", ".whl"))
    with _open_regular(path) as raw:
        try:
            (_read_tar if tar else _read_zip)(raw, reader)
        except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError,
                ValueError, NotImplementedError, RuntimeError) as exc:
            kind = "tar.gz" if tar else "zip"
            raise Skip(f"not a readable {kind} archive ({type(exc).__name__}: "
                       f"{str(exc)[:200]})") from None
    return reader.out


@contextmanager
def memory_file(data: bytes) -> Iterator[Path]:
    """A path that reads as a regular file holding ``data``, kept in memory (an anonymous
    ``memfd``), for readers that open a path themselves (the ELF reader). Raises
    :class:`Skip` where the system has no in-memory files.
    """
    if not hasattr(os, "memfd_create"):
        raise Skip("an archive member that needs an in-memory file; this system has none")
    fd = os.memfd_create("pin-audit-member", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        yield Path(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
