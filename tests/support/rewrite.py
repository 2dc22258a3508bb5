"""A writer that changes a file while pin hashes it, at a chosen moment: after pin's read of
a piece of it (through the read seam of :mod:`pinning.util.digests`), so a test decides
exactly how many of pin's reads of the file see it change.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pinning.util import digests


@dataclass
class Rewriter:
    """Rewrites ``path`` with ``change(n)`` (``n``: 1 for the first rewrite) right after pin
    has read the first piece of it, in at most ``times`` of pin's reads of the file.
    ``reads`` counts pin's reads of the whole file (their first pieces), ``rewrites`` the
    rewrites done.
    """

    path: Path
    change: Callable[[int], None]
    times: int
    reads: int = 0
    rewrites: int = 0

    def after_read(self, f: io.FileIO, got: int) -> None:
        if not got:
            return
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return
        st = os.fstat(f.fileno())
        if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
            return  # another file, or the one a rename replaced
        if f.tell() != got:
            return  # not the first piece of this read of the file
        self.reads += 1
        if self.rewrites >= self.times:
            return
        self.rewrites += 1
        self.change(self.rewrites)


def rewrite_while_hashing(monkeypatch: pytest.MonkeyPatch, path: Path,
                          change: Callable[[int], None], *, times: int) -> Rewriter:
    """Patch pin's read seam so that ``path`` is rewritten (``change``) once in each of the
    first ``times`` reads pin makes of it, after their first piece."""
    rewriter = Rewriter(path, change, times)
    real = digests._read_into

    def read(f: io.FileIO, buf: bytearray) -> int:
        got = real(f, buf)
        rewriter.after_read(f, got)
        return got

    monkeypatch.setattr(digests, "_read_into", read)
    return rewriter


def grow(path: Path, prefix: bytes = b"v") -> Callable[[int], None]:
    """A change that writes ``path`` anew, one byte longer each time (``v1...``, ``v22...``):
    a writer that is still appending."""
    base = path.read_bytes()

    def change(n: int) -> None:
        path.write_bytes(prefix + str(n).encode() * n + base)
    return change


def replace_by_rename(path: Path, data: Callable[[int], bytes]) -> Callable[[int], None]:
    """A change that writes a new file next to ``path`` and renames it over ``path``, as
    download tools and ``torch.save`` wrappers do: the open file never changes, the name
    points to another one."""
    def change(n: int) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data(n))
        os.replace(tmp, path)
    return change
