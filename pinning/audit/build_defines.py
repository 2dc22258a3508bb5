"""The prepass of ``pin audit`` over a project's build files: the macros its ``setup.py``,
``CMakeLists.txt`` and ``*.cmake`` define for an AMD (ROCm) build or for CUDA builds only
(:mod:`pinning.audit.setup_defines`, :mod:`pinning.audit.cmake_defines`), merged into one
tuple for :attr:`pinning.audit.model.Context.build_defines` before any source is scanned.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from pathlib import Path

from pinning.audit.cmake_defines import cmake_defines
from pinning.audit.files import read_text
from pinning.audit.model import Skip
from pinning.audit.project_defines import ProjectDefine, merge
from pinning.audit.setup_defines import setup_defines

__all__ = ["MAX_BUILD_FILES", "archive_defines", "folder_defines", "is_build_file"]

MAX_BUILD_FILES = 200
"""At most this many build files are read per folder or archive (the rest are not)."""


def is_build_file(name: str) -> bool:
    """Whether a file called ``name`` is one the prepass reads."""
    low = name.lower()
    return low in ("setup.py", "cmakelists.txt") or low.endswith(".cmake")


def _defines(name: str, text: str, display: str) -> list[ProjectDefine]:
    if name.lower() == "setup.py":
        return setup_defines(text, display)
    return cmake_defines(text, display)


def folder_defines(found: Iterable[tuple[Path, str]],
                   display: Callable[[str], str]) -> tuple[ProjectDefine, ...]:
    """The merged defines of the build files among ``found`` (``(path, path relative to the
    root)`` pairs of a folder walk), shown through ``display``. A file that cannot be read is
    left out (the scan proper reports it).
    """
    out: list[ProjectDefine] = []
    build = [(p, rel) for p, rel in found if is_build_file(p.name)][:MAX_BUILD_FILES]
    for path, rel in build:
        try:
            text = read_text(path)
        except Skip:
            continue
        out += _defines(path.name, text, display(rel))
    return merge(out)


def archive_defines(members: dict[str, bytes], shown: str) -> tuple[ProjectDefine, ...]:
    """The merged defines of the build files among an archive's ``members`` (path -> bytes),
    shown as ``shown!member`` (decoded as UTF-8, invalid bytes replaced).
    """
    out: list[ProjectDefine] = []
    build = sorted(r for r in members if is_build_file(posixpath.basename(r)))
    for rel in build[:MAX_BUILD_FILES]:
        text = members[rel].decode("utf-8", "replace")
        out += _defines(posixpath.basename(rel), text, f"{shown}!{rel}")
    return merge(out)
