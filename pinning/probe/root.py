"""The host's filesystem as pin reads it: :class:`HostRoot` over a root directory, and
:func:`run_tool`, the one way probes run a command (through a :class:`~pinning.util.proc.Runner`).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from pinning.util.proc import CommandResult, Runner

MAX_READ_BYTES = 16 * 1024 * 1024  # larger files are read only this far
_MAX_LINKS = 40


def _read_bounded(path: Path) -> bytes:
    """At most :data:`MAX_READ_BYTES` of ``path``, in 64 KiB reads (procfs and sysfs refuse
    one huge read). Raises ``OSError``.
    """
    chunks: list[bytes] = []
    total = 0
    # Opened without blocking and checked on the descriptor: a FIFO swapped in after the
    # caller's check cannot block the probe.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        while total < MAX_READ_BYTES:
            chunk = fh.read(min(65536, MAX_READ_BYTES - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    return b"".join(chunks)


class HostRoot:
    """Read-only view of a host's filesystem rooted at ``root``.

    ``read("/etc/os-release")`` reads ``<root>/etc/os-release``. Symbolic links are followed
    inside the root: an absolute target (``/etc/x``) means ``<root>/etc/x``, never this
    machine's file. Only regular files are read (a FIFO or device reads as absent), at most
    :data:`MAX_READ_BYTES`, as UTF-8 with undecodable bytes replaced. Nothing raises: an
    absent or unreadable file reads as ``None`` and :meth:`why` says which.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.live = root.resolve() == Path("/")

    def path(self, abs_path: str) -> Path:
        """The real path of host path ``abs_path``, links resolved inside the root.

        Raises ``OSError`` (ELOOP) after 40 links.
        """
        if "\x00" in abs_path:
            raise OSError(errno.EINVAL, "path contains a NUL byte", abs_path.replace("\x00", "\\0"))
        if self.live:
            return Path("/" + abs_path.lstrip("/"))
        parts = [x for x in abs_path.split("/") if x not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            name = parts.pop(0)
            if name == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = self.root.joinpath(*resolved, name)
            if candidate.is_symlink():
                hops += 1
                if hops > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", abs_path)
                target = os.readlink(candidate)
                if target.startswith("/"):
                    resolved = []
                parts = [x for x in target.split("/") if x not in ("", ".")] + parts
            else:
                resolved.append(name)
        return self.root.joinpath(*resolved)

    def why(self, abs_path: str) -> str:
        """Why ``abs_path`` reads as ``None``: absent, not a regular file, a link loop, ..."""
        try:
            st = self.path(abs_path).stat()
        except FileNotFoundError:
            return f"{abs_path} is absent"
        except OSError as exc:
            return f"{abs_path} cannot be read ({exc.strerror or exc})"
        if not stat.S_ISREG(st.st_mode):
            return f"{abs_path} is not a regular file"
        return f"{abs_path} cannot be read"

    def read(self, abs_path: str) -> str | None:
        """Text of ``abs_path``, or ``None`` (see the class docstring)."""
        try:
            real = self.path(abs_path)
            if not stat.S_ISREG(real.stat().st_mode):
                return None
            data = _read_bounded(real)
        except OSError:
            return None
        return data.decode("utf-8", errors="replace")

    def read_line(self, abs_path: str) -> str | None:
        """First non-empty line of ``abs_path`` stripped, or ``None`` when absent or empty."""
        text = self.read(abs_path)
        if not text or not text.strip():
            return None
        return text.strip().splitlines()[0].strip() or None

    def show(self, real: Path) -> str:
        """How a real path under the root is reported: as an absolute path on the host."""
        if self.live:
            return str(real)
        try:
            return "/" + str(real.relative_to(self.root)).lstrip("/")
        except ValueError:
            return str(real)

    def exists(self, abs_path: str) -> bool:
        """True when ``abs_path`` exists under the root."""
        try:
            return self.path(abs_path).exists()
        except OSError:
            return False

    def is_dir(self, abs_path: str) -> bool:
        """True when ``abs_path`` is a directory under the root."""
        try:
            return self.path(abs_path).is_dir()
        except OSError:
            return False

    def glob(self, pattern: str) -> list[str]:
        """Host paths matching ``pattern`` (``*``, ``?``, ``[...]`` per component), sorted."""
        found = ["/"]
        for part in [x for x in pattern.split("/") if x]:
            nxt: list[str] = []
            for base in found:
                prefix = base.rstrip("/")
                if not any(ch in part for ch in "*?["):
                    nxt.append(f"{prefix}/{part}")
                    continue
                try:
                    names = sorted(os.listdir(self.path(base)))
                except OSError:
                    continue
                nxt += [f"{prefix}/{n}" for n in names if fnmatch.fnmatchcase(n, part)]
            found = nxt
        return sorted(f for f in found if self.exists(f))


def run_tool(runner: Runner, argv: Sequence[str]) -> tuple[CommandResult | None, str]:
    """Run and describe: the result (``None`` if the tool is absent) and a reason text."""
    result = runner.run(argv)
    if result is None:
        cmd = " ".join(a for a in argv[:2] if not a.startswith("--query"))
        return None, f"`{cmd}` is not available (tool not installed, or not in the recording)"
    if not result.ok:
        return None, result.describe()
    return result, ""

