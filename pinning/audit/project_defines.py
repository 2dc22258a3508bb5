"""What a project's own build defines for an AMD (ROCm) build: the shape that the build-file
readers (:mod:`pinning.audit.setup_defines`, :mod:`pinning.audit.cmake_defines`) produce,
:class:`~pinning.audit.model.Context` carries and the platform guards
(:mod:`pinning.audit.preproc`) consume. Pure data; imports nothing of pin.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = ["CUDA_ONLY", "EVERY", "NEVER", "ROCM", "UNKNOWN", "BuildScope", "ProjectDefine",
           "merge", "scope_of"]

BuildScope = str
"""Which builds set a define: one of the five names below."""

EVERY = "every build"
ROCM = "ROCm builds"
CUDA_ONLY = "CUDA builds only"
NEVER = "no build"
"""Under a condition no build meets (``if False:``): the readers drop it."""
UNKNOWN = "unknown builds"
"""Under a condition pin cannot decide."""


@dataclass(frozen=True)
class ProjectDefine:
    """One macro the project's build defines: ``name``, its integer ``value`` when the build
    gives one (``-DX=2``; ``None`` for ``-DX`` or a value that is not an integer), ``rocm``
    whether an AMD build has it (``True`` defined, ``False`` set only for CUDA builds, ``None``
    under a condition pin cannot decide), ``scope`` (:data:`BuildScope`) and ``source``, where
    it was read (``setup.py:78``, ``CMakeLists.txt:12``).
    """

    name: str
    value: int | None
    rocm: bool | None
    scope: BuildScope
    source: str

    @property
    def platform(self) -> bool:
        """True when the build sets it on one platform only (a ROCm or CUDA build on
        purpose), like ``USE_ROCM``.
        """
        return self.scope in (ROCM, CUDA_ONLY)

    def note(self) -> str:
        """One clause naming where the build sets it: ``USE_ROCM is defined for ROCm builds
        by setup.py:78``.
        """
        if self.rocm is False:
            return f"{self.name} is defined only for CUDA builds, by {self.source}"
        return f"{self.name} is defined for {self.scope} by {self.source}"


def scope_of(rocm: bool | None, cuda: bool | None) -> tuple[bool | None, BuildScope]:
    """``(rocm, scope)`` of a define made under a condition that is ``rocm`` on an AMD build
    and ``cuda`` on a CUDA build (``None``: unknown).
    """
    if rocm is True:
        return True, EVERY if cuda is True else ROCM
    if rocm is False:
        return False, NEVER if cuda is False else CUDA_ONLY
    return None, UNKNOWN


def merge(defines: Iterable[ProjectDefine]) -> tuple[ProjectDefine, ...]:
    """One define per name, sorted by name: the first that an AMD build has (``rocm`` true),
    else the first undecided one, else the first set only for CUDA builds. A name set both
    unconditionally and for CUDA only is defined for AMD; one set for ROCm builds in one
    place and for CUDA builds in another is set for every build.
    """
    best: dict[str, ProjectDefine] = {}
    cuda: set[str] = set()
    rank = {True: 0, None: 1, False: 2}
    for define in defines:
        held = best.get(define.name)
        if define.scope in (EVERY, CUDA_ONLY):
            cuda.add(define.name)
        if held is None or rank[define.rocm] < rank[held.rocm]:
            best[define.name] = define
    return tuple(replace(best[name], scope=EVERY) if best[name].scope == ROCM and name in cuda
                 else best[name] for name in sorted(best))
