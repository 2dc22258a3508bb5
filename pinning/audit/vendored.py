"""Vendored CUDA libraries inside a project: a copy of CUTLASS / CuTe, CUB or Thrust under
``csrc/``, ``third_party/``, ``external/`` or a submodule is one item of the bill, not
thousands.

Owns the recognition of such a tree (its layout: the library's marker header, e.g.
``include/cutlass/cutlass.h``, carrying NVIDIA's copyright in its license header), its
version (read from the library's version header when it is there; unknown otherwise, never
guessed), and the one finding that stands for it, naming the ROCm counterpart and the public
source that names it. The files of such a tree are not read unless ``--include-vendored``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pinning.audit.files import read_bytes
from pinning.audit.kernel_rules import COMPOSABLE_KERNEL, ROCM_LIBRARIES
from pinning.audit.model import Citation, Finding, Kind, Skip, Verdict

HEAD_BYTES = 8192
"""How much of a marker or version header is read (its license header and defines)."""


@dataclass(frozen=True)
class _Library:
    """A vendorable library: ``key`` (rule id suffix), ``name``, its ``marker`` header as
    ``<folder>/<file>``, the headers its version is read from, the ROCm ``counterpart``, the
    verdict of the tree and the ``citation`` naming the counterpart.
    """

    key: str
    name: str
    marker: str
    version_headers: tuple[str, ...]
    counterpart: str
    verdict: Verdict
    citation: Citation


_LIBRARIES = (
    _Library("cutlass", "CUTLASS", "cutlass/cutlass.h", ("cutlass/version.h", "cutlass/cutlass.h"),
             "Composable Kernel (a rewrite of the kernels that use it, not a swap)",
             Verdict.BLOCKED, COMPOSABLE_KERNEL),
    _Library("cute", "CuTe", "cute/tensor.hpp", ("cutlass/version.h",),
             "Composable Kernel (a rewrite of the kernels that use it, not a swap)",
             Verdict.BLOCKED, COMPOSABLE_KERNEL),
    _Library("cub", "CUB", "cub/cub.cuh", ("cub/version.cuh",), "hipCUB / rocPRIM",
             Verdict.SWAP, ROCM_LIBRARIES),
    _Library("thrust", "Thrust", "thrust/version.h", ("thrust/version.h",), "rocThrust",
             Verdict.SWAP, ROCM_LIBRARIES),
)

_WRAPPERS = frozenset({"include", "cutlass", "cub", "thrust", "cccl", "cute"})
"""Folder names a library's header folder sits in inside its own repository layout
(``cutlass/include/cutlass``, ``cub/cub``): the vendored tree is the outermost of them."""

_PACKED = re.compile(r"#\s*define\s+(CUB|THRUST)_VERSION\s+(\d+)\b")
_CUTLASS = re.compile(r"#\s*define\s+CUTLASS_(MAJOR|MINOR|PATCH)\s+(\d+)\b")


@dataclass(frozen=True)
class Vendored:
    """A vendored tree: its ``root`` (``/``-separated, relative to the audited folder), the
    library, its ``version`` (``None`` when no version header says it) and the ``files`` pin
    reads under it.
    """

    root: str
    library: _Library
    version: str | None
    files: int = 0


def _version(text: str) -> str | None:
    """The version a CUTLASS, CUB or Thrust version header defines (``3.5.1``), or ``None``.
    CUB and Thrust pack it as ``major * 100000 + minor * 100 + patch`` (their headers'
    ``*_MAJOR_VERSION`` / ``*_MINOR_VERSION`` / ``*_SUBMINOR_VERSION`` macros).
    """
    packed = _PACKED.search(text)
    if packed:
        v = int(packed.group(2))
        return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"
    parts = {m.group(1): m.group(2) for m in _CUTLASS.finditer(text)}
    if {"MAJOR", "MINOR", "PATCH"} <= parts.keys():
        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
    return None


def _root(header_dir: str) -> str:
    """The vendored tree a library's header folder belongs to: the folder itself, or the
    outermost of the folders of the library's own layout around it (``csrc/cutlass`` for
    ``csrc/cutlass/include/cutlass``).
    """
    root = posixpath.dirname(header_dir)
    top = header_dir
    while root and posixpath.basename(root) in _WRAPPERS:
        top, root = root, posixpath.dirname(root)
    return top


def find_vendored(rels: Iterable[str], head: Callable[[str], str | None]) -> list[Vendored]:
    """The vendored trees among the files ``rels`` (``/``-separated paths relative to the
    audited folder or archive); ``head(rel)`` gives the start of a file (``None`` when it
    cannot be read). A marker header whose head does not name NVIDIA (the library's license
    header) is the project's own file; a tree inside another (CuTe in CUTLASS) is part of it.
    """
    rels = list(rels)
    names = set(rels)
    found: dict[str, Vendored] = {}
    for lib in _LIBRARIES:  # CUTLASS before CuTe: a CUTLASS tree holds its CuTe
        for rel in rels:
            if rel != lib.marker and not rel.endswith("/" + lib.marker):
                continue
            base = rel[: -len(lib.marker)]
            root = _root(base + lib.marker.split("/")[0])
            text = head(rel)
            if root in found or text is None or "nvidia" not in text.lower():
                continue
            version = None
            for header in lib.version_headers:
                body = head(base + header) if base + header in names else None
                version = version or (_version(body) if body else None)
            found[root] = Vendored(root=root, library=lib, version=version)
    roots = sorted(found, key=len)
    outer = [r for i, r in enumerate(roots)
             if not any(r.startswith(o + "/") for o in roots[:i])]
    counts = {r: sum(1 for rel in rels if rel.startswith(r + "/")) for r in outer}
    return [Vendored(found[r].root, found[r].library, found[r].version, counts[r])
            for r in sorted(outer)]


def inside(rel: str, trees: list[Vendored]) -> bool:
    """Whether the file ``rel`` lies in one of ``trees``."""
    return any(rel.startswith(t.root + "/") for t in trees)


def head_of(path: Path) -> str | None:
    """The first :data:`HEAD_BYTES` of the file ``path`` as text, or ``None`` when it cannot
    be read (through :func:`pinning.audit.files.read_bytes`, so archive members too).
    """
    try:
        return read_bytes(path)[:HEAD_BYTES].decode("utf-8", "replace")
    except Skip:
        return None


def head_under(base: str, rel: str) -> str | None:
    """:func:`head_of` the file ``rel`` (``/``-separated) under the folder ``base``."""
    return head_of(Path(f"{base}/{rel}"))


def set_apart(rels: list[str], head: Callable[[str], str | None],
              display: Callable[[str], str],
              include: bool) -> tuple[list[Vendored], list[Finding]]:
    """The vendored trees among ``rels`` (:func:`find_vendored`) whose files are not to be
    read (none when ``include``), and the one finding per tree, shown at ``display(root)``.
    """
    trees = find_vendored(rels, head)
    items = [vendored_finding(t, display(t.root), shown=include) for t in trees]
    return ([] if include else trees), items


def vendored_finding(tree: Vendored, display: str, *, shown: bool) -> Finding:
    """The one item that stands for ``tree`` (shown at ``display``): ``vendored.<library>``,
    kind ``library``, the library's verdict, its ROCm counterpart and the source naming it;
    ``shown`` says whether its files' findings are on the bill too (``--include-vendored``).
    """
    lib = tree.library
    name = f"vendored {lib.name} {tree.version or '(version unknown)'}"
    apart = ("its files' findings are listed too (--include-vendored)" if shown else
             f"its {tree.files} files are not read and not counted (--include-vendored "
             "reads them)")
    return Finding(
        kind=Kind.LIBRARY, rule=f"vendored.{lib.key}", verdict=lib.verdict, subject=name,
        path=display,
        why=f"A copy of NVIDIA's {lib.name} lives inside the project; it is CUDA-only and is "
            f"one porting item, not one per line: {apart}.",
        todo=f"Replace it with its ROCm counterpart, {lib.counterpart}, and port the code "
             "that uses it.",
        replacement=lib.counterpart.split(" (")[0], citation=lib.citation)
