"""Constraints + matrix -> the newest validated stack (pure; no I/O).

The resolver reads only a loaded :class:`~pinning.matrix.load.Matrix`. For AMD a candidate
is a ROCm release row of AMD's matrix; for NVIDIA it is an upstream CUDA wheel variant of
each framework (the pairing PyTorch builds and tests) plus NVIDIA's driver rule. Every
candidate is kept with the reasons it lost, so ``--explain`` and the exit-4 message can
show why.
"""

from __future__ import annotations

from pinning.errors import NoValidatedCombination, UsageError
from pinning.matrix.load import Matrix
from pinning.resolve.amd import resolve_amd
from pinning.resolve.constraints import Constraints
from pinning.resolve.diagnose import no_combination
from pinning.resolve.nvidia import resolve_nvidia
from pinning.resolve.result import NoCandidate, Resolution


def resolve(matrix: Matrix, c: Constraints, *, diagnose: bool = True) -> Resolution:
    """Resolve constraints ``c`` against ``matrix`` to the newest validated combination.

    Deterministic: candidates are ordered by runtime version (newest first), then by file
    order (shipped before overlays). Raises ``UsageError`` for an unknown GPU or a flag that
    does not fit the vendor, and ``NoValidatedCombination`` (exit 4) naming the constraint
    that failed and the nearest validated alternatives (``diagnose=False`` skips building
    that message; used internally to test partial constraint sets).
    """
    found = matrix.find_gpu(c.gpu)
    gpus = found if isinstance(found, list) else [found]
    gpu = None if isinstance(found, list) else found
    vendor = gpus[0].vendor
    target = gpus[0].target
    if vendor == "amd" and c.cuda is not None:
        raise UsageError(f"--cuda was given but {c.gpu!r} is an AMD GPU; use --rocm SPEC.")
    if vendor == "nvidia" and c.rocm is not None:
        raise UsageError(f"--rocm was given but {c.gpu!r} is an NVIDIA GPU; use --cuda SPEC.")
    if not c.frameworks:
        raise UsageError("give at least one --framework NAME[SPEC], e.g. pytorch==2.13.0.")
    try:
        if vendor == "amd":
            return resolve_amd(matrix, c, gpu, gpus, target)
        return resolve_nvidia(matrix, c, gpu, gpus, target)
    except NoCandidate as empty:
        if not diagnose:
            raise NoValidatedCombination("no candidate") from None
        raise no_combination(matrix, c, vendor, target, gpu, empty.considered,
                             attempt=lambda partial: resolve(matrix, partial, diagnose=False)
                             ) from None

