"""The file side of ``pin audit``: which scanner reads which file (:func:`scanners_for`), the
walk over folders and in-memory archives (:func:`scan_paths`), and the :class:`Collector` that
deduplicates what the scanners return. :mod:`pinning.audit.run` orchestrates the rest.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache, partial
from importlib import import_module
from pathlib import Path

from pinning.audit.archive import is_archive
from pinning.audit.build_defines import archive_defines, folder_defines
from pinning.audit.files import walk
from pinning.audit.model import (
    Context,
    DeclaredPackage,
    FileScan,
    Finding,
    Skip,
    Skipped,
)
from pinning.audit.vendored import head_under, inside, set_apart

__all__ = ["MAX_FILES", "Collector", "scan_file", "scan_paths", "scanners_for"]

MAX_FILES = 1_000_000
"""At most this many files are scanned per run; the rest are reported as skipped."""

_CUDA_SUFFIXES = (".cu", ".cuh")
_CPP_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inl",
                 ".ipp", ".tpp")

# (glob on the lower-cased file name, "module:function") in match order; a file takes every
# scanner whose glob matches (setup.py: declared packages and Python rules).
_SCANNERS: tuple[tuple[str, str], ...] = (
    ("*.cu", "kernels:scan_source"), ("*.cuh", "kernels:scan_source"),
    *((f"*{s}", "kernels:scan_source") for s in _CPP_SUFFIXES),
    ("cmakelists.txt", "cmake:scan_cmake"), ("*.cmake", "cmake:scan_cmake"),
    ("*.py", "python_rules:scan_python"),
    ("setup.py", "sources.setup:scan_setup_py"), ("setup.cfg", "sources.setup:scan_setup_cfg"),
    ("pyproject.toml", "sources.pyproject:scan_pyproject"),
    ("*requirements*.txt", "sources.requirements:scan_requirements"),
    ("requirements*.in", "sources.requirements:scan_requirements"),
    ("constraints*.txt", "sources.requirements:scan_requirements"),
    ("uv.lock", "sources.locks:scan_uv_lock"),
    ("pylock.toml", "sources.locks:scan_pylock"), ("pylock.*.toml", "sources.locks:scan_pylock"),
    ("poetry.lock", "sources.locks:scan_poetry_lock"),
    ("environment*.yml", "sources.conda:scan_environment_yml"),
    ("environment*.yaml", "sources.conda:scan_environment_yml"),
    ("dockerfile", "sources.dockerfile:scan_dockerfile"),
    ("dockerfile.*", "sources.dockerfile:scan_dockerfile"),
    ("*.dockerfile", "sources.dockerfile:scan_dockerfile"),
    ("containerfile", "sources.dockerfile:scan_dockerfile"),
    ("*.so", "elf:scan_elf"), ("*.so.*", "elf:scan_elf"),
)

_EXACT: dict[str, list[str]] = {}
_BY_SUFFIX: dict[str, list[str]] = {}
_GLOBS: list[tuple[str, str]] = []
for _pattern, _target in _SCANNERS:
    if not any(ch in _pattern for ch in "*?["):
        _EXACT.setdefault(_pattern, []).append(_target)
    elif _pattern.startswith("*.") and not any(ch in _pattern[2:] for ch in "*?[."):
        _BY_SUFFIX.setdefault(_pattern[1:], []).append(_target)
    else:
        _GLOBS.append((_pattern, _target))


_ORDER = {target: i for i, (_p, target) in reversed(list(enumerate(_SCANNERS)))}
"""Each target's first place in :data:`_SCANNERS`: the order a file's scanners run in."""


@lru_cache(maxsize=4096)
def _targets(key: str) -> tuple[str, ...]:
    """The ``module:function`` targets for a lower-cased file name, in :data:`_SCANNERS`
    order (exact names and plain ``*.ext`` patterns by dictionary, the rest by glob);
    remembered, since a tree repeats its file names and suffixes.
    """
    found = list(_EXACT.get(key, ()))
    dot = key.rfind(".")
    if dot >= 0:
        found += _BY_SUFFIX.get(key[dot:], ())
    found += [t for pattern, t in _GLOBS if fnmatch.fnmatchcase(key, pattern)]
    return tuple(sorted(set(found), key=_ORDER.__getitem__))


_loaded: dict[str, Callable[[Path, str, Context], FileScan]] = {}


def scanners_for(name: str) -> list[Callable[[Path, str, Context], FileScan]]:
    """The scanners for a file called ``name`` (matched case-insensitively), in order; empty
    for a file pin does not read.
    """
    out = []
    for target in _targets(name.lower()):
        func = _loaded.get(target)
        if func is None:
            module, attr = target.split(":")
            func = getattr(import_module(f"pinning.audit.{module}"), attr)
            _loaded[target] = func
        out.append(func)
    return out


def _wanted(name: str) -> bool:
    """Whether pin reads a file called ``name``."""
    return bool(scanners_for(name))


def _held(name: str) -> bool:
    """Whether an archive member called ``name`` is kept in memory: a file pin reads, or a
    text file a requirements file may include (``-r extra.txt``).
    """
    return _wanted(name) or name.lower().endswith((".txt", ".in"))


def _display(root: str, rel: str) -> str:
    """The path shown for ``rel`` under the root typed as ``root`` (``./`` dropped)."""
    joined = posixpath.join(root, rel) if rel else root
    return posixpath.normpath(joined).removeprefix("./")


class Collector:
    """Everything the scanners returned, deduplicated; ``files`` counts the files read."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.packages: dict[tuple[str, str | None, int | None, str], DeclaredPackage] = {}
        self.skipped: list[Skipped] = []
        self.kernel_lines: dict[str, int] = {}
        self.files = 0
        self._seen_findings: set[tuple[str, str | None, int | None, str]] = set()

    def add(self, display: str, scan: FileScan) -> None:
        """Add what a scanner found in ``display`` (a finding once per rule, path, line and
        subject; a package once per name, path, line and requirement text).
        """
        for f in scan.findings:
            key = (f.rule, f.path, f.line, f.subject)
            if key not in self._seen_findings:
                self._seen_findings.add(key)
                self.findings.append(f)
        for p in scan.packages:
            self.packages.setdefault((p.name, p.path, p.line, p.raw), p)
        self.skipped += scan.skipped
        if scan.kernel_lines:
            self.kernel_lines[display] = self.kernel_lines.get(display, 0) + scan.kernel_lines


def scan_file(path: Path, display: str, ctx: Context, out: Collector,
              name: str | None = None) -> None:
    """Run every scanner for ``path`` (a file called ``name``, by default its own name) and
    add what they found to ``out``; a scanner's :class:`Skip` becomes a skipped entry (once
    per file).
    """
    out.files += 1
    for scanner in scanners_for(name or path.name):
        try:
            out.add(display, scanner(path, display, ctx))
        except Skip as exc:
            out.skipped.append(Skipped(path=display, reason=exc.reason))
            return
        except (RecursionError, MemoryError):
            out.skipped.append(Skipped(path=display, reason="too deeply nested or too large "
                                       "to read"))
            return


def scan_paths(typed_paths: list[str], ctx: Context, out: Collector,
                say: Callable[[str], None], include_vendored: bool = False) -> list[Path]:
    """Scan every file under the typed paths into ``out``; returns the CUDA sources seen."""
    cuda_files: list[Path] = []
    for typed in typed_paths:
        root = Path(typed)
        if root.is_dir():
            say(f"scanning {typed}")
            found = list(walk(root, out.skipped, ctx, wanted=_wanted))
            trees, items = set_apart([rel for _path, rel in found], partial(head_under, typed),
                                     partial(_display, typed), include_vendored)
            out.findings += items
            own = [(path, rel) for path, rel in found if not (trees and inside(rel, trees))]
            rctx = replace(ctx, build_defines=folder_defines(own, partial(_display, typed)))
            for path, rel in found:
                if trees and inside(rel, trees):
                    continue
                if out.files >= MAX_FILES:
                    out.skipped.append(Skipped(path=_display(typed, rel), reason=f"more than "
                                               f"{MAX_FILES} files; the rest not scanned"))
                    break
                scan_file(path, _display(typed, rel), rctx, out)
                if path.suffix in _CUDA_SUFFIXES:
                    cuda_files.append(path)
                if out.files % 1000 == 0:
                    say(f"{out.files} files scanned")
        elif is_archive(root.name) and not root.is_dir():
            say(f"reading the archive {typed}")
            _scan_archive(typed, ctx, out, include_vendored)
        elif not (root.exists() or root.is_symlink()):
            out.skipped.append(Skipped(path=typed, reason="does not exist"))
        elif scanners_for(root.name):
            scan_file(root, _display(typed, ""), ctx, out)
            if root.suffix in _CUDA_SUFFIXES:
                cuda_files.append(root)
        else:
            out.skipped.append(Skipped(path=typed, reason="not a file kind pin audits "
                                       "(requirements, pyproject, locks, Dockerfile, "
                                       "C/C++/CUDA, Python, ELF, sdists and wheels)"))
    return cuda_files


def _scan_archive(typed: str, ctx: Context, out: Collector, include_vendored: bool) -> None:
    """Scan the members of the sdist or wheel ``typed`` in memory (shown ``typed!member``):
    text through :func:`~pinning.audit.files.memory_tree`, ELF files through an in-memory
    file. A member's includes are read only inside the archive.
    """
    from pinning.audit.archive import memory_file, read_archive
    from pinning.audit.files import memory_tree

    shown = _display(typed, "")
    try:
        archive = read_archive(Path(typed), shown, _held)
    except Skip as exc:
        out.skipped.append(Skipped(path=shown, reason=exc.reason))
        return
    out.skipped += archive.skipped
    root = f"{Path(typed).resolve()}!"
    inner = replace(ctx, roots=(Path(root),),
                    build_defines=archive_defines(archive.members, shown))
    with memory_tree(root, archive.members):
        rels = sorted(r for r in archive.members if _wanted(posixpath.basename(r)))
        trees, items = set_apart(rels, partial(head_under, root), partial("{}!{}".format, shown),
                                 include_vendored)
        out.findings += items
        for rel in rels:
            name, display, data = posixpath.basename(rel), f"{shown}!{rel}", archive.members[rel]
            if trees and inside(rel, trees):
                continue
            if not fnmatch.fnmatchcase(name.lower(), "*.so*"):
                scan_file(Path(f"{root}/{rel}"), display, inner, out)
                continue
            try:
                with memory_file(data) as path:
                    scan_file(path, display, inner, out, name=name)
            except Skip as exc:
                out.skipped.append(Skipped(path=display, reason=exc.reason))
    _fold_member_copies(shown, archive.members, rels, out)


def _fold_member_copies(shown: str, members: dict[str, bytes], rels: list[str],
                        out: Collector) -> None:
    """Count byte-identical members of the archive ``shown`` once (an sdist that ships its
    kernel sources twice): the copies' findings and kernel lines leave ``out``, the member
    kept lists them in ``copies``.
    """
    import hashlib

    from pinning.audit.narrow import fold_copies

    digests = {f"{shown}!{rel}": hashlib.sha256(members[rel]).hexdigest() for rel in rels}
    out.findings, gone = fold_copies(out.findings, digests)
    for display in gone:
        out.kernel_lines.pop(display, None)


