"""``pin audit PATH``: find device strings ROCm builds of PyTorch do not accept.

ROCm builds keep ``torch.cuda``: the HIP device is ``"cuda"``, and ``"rocm"`` / ``"hip"`` are
not valid device strings (PyTorch HIP notes). The scan parses Python sources
with :mod:`ast` (nothing is imported or run) and reports each call that passes such a string
as a device: ``torch.device("rocm")``, ``x.to("hip")``, ``device="rocm:0"``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pinning.audit.python_rules import device_string_calls
from pinning.errors import PinError, UsageError
from pinning.util.files import read_regular_bytes

SOURCE = "pytorch/pytorch@0180055:docs/source/notes/hip.rst"
_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "site-packages"}


@dataclass(frozen=True)
class AuditHit:
    """One offending device string: file, 1-based line and column, and the call."""

    path: str
    line: int
    column: int
    text: str


def audit_source(text: str, path: str) -> list[AuditHit]:
    """Offending device strings in Python source ``text``; the rule is
    :func:`pinning.audit.python_rules.device_string_calls`. Raises ``SyntaxError`` /
    ``ValueError`` / ``RecursionError`` for source that does not parse
    (:func:`audit_paths` lists such files as not scanned).
    """
    tree = ast.parse(text, filename=path)
    return [AuditHit(path, call.lineno, call.col_offset + 1, f'{value!r} as a device')
            for call, value in device_string_calls(tree)]


MAX_SOURCE_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 100
"""The deepest folder level under a scanned root whose files are scanned (root = 0)."""


def _walk(root: Path, problems: list[str]) -> Iterator[Path]:
    """The ``*.py`` names under the folder ``root``, in ``os.walk`` order (top-down, sorted),
    without recursion: a tree of any depth cannot exhaust the stack. Symbolic links to
    folders are not followed; folders deeper than :data:`MAX_DEPTH` and folders that cannot
    be listed are added to ``problems``.
    """
    import os

    stack: list[tuple[str, int]] = [(str(root), 0)]
    while stack:
        base, depth = stack.pop()
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(f"{exc.filename or base}: cannot be listed ({exc.strerror or exc})")
            continue
        dirs: list[str] = []
        for entry in entries:
            if entry.is_dir():
                if entry.name not in _SKIP_DIRS and not entry.is_symlink():
                    dirs.append(entry.path)
            elif entry.name.endswith(".py"):
                yield Path(entry.path)
        if dirs and depth >= MAX_DEPTH:
            problems.append(f"{base}: folders below it are more than {MAX_DEPTH} levels deep; "
                            "not scanned")
            continue
        stack.extend((d, depth + 1) for d in reversed(dirs))


def python_files(root: Path, problems: list[str]) -> Iterator[Path]:
    """Regular ``*.py`` files under ``root`` (or ``root`` itself), skipping virtualenvs and
    caches. What cannot be scanned (an unreadable folder, a FIFO, a dangling link, a file
    over 10 MiB, folders more than :data:`MAX_DEPTH` levels deep) is added to ``problems``
    instead of stopping the scan.
    """
    candidates = _walk(root, problems) if root.is_dir() else iter([root])
    for path in candidates:
        try:
            if not path.is_file():
                problems.append(f"{path}: not a regular file; not scanned")
                continue
            if path.stat().st_size > MAX_SOURCE_BYTES:
                problems.append(f"{path}: larger than 10 MiB; not scanned")
                continue
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}; not scanned")
            continue
        yield path


@dataclass(frozen=True)
class AuditResult:
    """What a scan found: the ``hits`` and, per file that could not be scanned, a line
    saying why (``unparsed``).
    """

    hits: list[AuditHit]
    unparsed: list[str]


def audit_paths(paths: list[Path]) -> AuditResult:
    """Scan every Python file under ``paths`` (files or folders). Files that are not valid
    Python (a syntax error, or nesting too deep for the parser) or cannot be read are listed
    in ``unparsed``, not fatal; raises nothing.
    """
    hits: list[AuditHit] = []
    unparsed: list[str] = []
    for root in paths:
        for path in python_files(root, unparsed):
            try:
                # Opened without blocking and read to at most 10 MiB, even if the file was
                # swapped for a FIFO or grew since it was listed.
                raw = read_regular_bytes(path, UsageError, label=str(path),
                                         limit=MAX_SOURCE_BYTES)
                hits += audit_source(raw.decode("utf-8", "replace"), str(path))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                unparsed.append(f"{path}: not valid Python; not scanned")
            except PinError as exc:
                unparsed.append(f"{exc.message.rstrip('.')}; not scanned")
    return AuditResult(hits=hits, unparsed=unparsed)
