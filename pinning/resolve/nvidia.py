"""Resolve on NVIDIA: rank the upstream CUDA wheel variants whose compute-capability list
holds the GPU, then add the CUDA-major driver rule and the toolkit's bundled driver.
"""

from __future__ import annotations

import datetime as dt

from packaging.version import Version

from pinning.matrix.load import LoadedFile, Matrix
from pinning.matrix.models import CudaToolkit, DriverRule, GpuIdentity, WheelVariant
from pinning.matrix.provenance import Provenance
from pinning.resolve.constraints import Constraints, FrameworkRequest
from pinning.resolve.result import ChosenFramework, Considered, NoCandidate, Resolution
from pinning.util.versions import match_entry, pep440, sort_key

Rank = tuple[tuple[Version, ...], bool, tuple[int, ...]]
"""How CUDA candidates are ordered: framework versions, all-stable, CUDA release."""


def resolve_nvidia(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None,
                   gpus: list[GpuIdentity], target: str) -> Resolution:
    """The best CUDA build for compute capability ``target``: newest frameworks first, then
    stable over experimental, then the newer CUDA; with its driver rule and toolkit.

    Raises :class:`~pinning.resolve.result.NoCandidate` with every candidate considered when
    none fits.
    """
    versions = sorted({w.accelerator_version for w, _ in matrix.wheels(as_of=c.as_of)
                       if w.accelerator == "cuda"}, key=sort_key, reverse=True)
    considered: list[Considered] = []
    valid: list[tuple[Rank, str, list[ChosenFramework], list[WheelVariant]]] = []
    for cuda in versions:
        entry, wheels = _judge_cuda(matrix, c, cuda, target)
        considered.append(entry)
        if entry.valid:
            stable = all(w.status == "stable" for w in wheels)
            rank = (tuple(pep440(f.version or "0") or Version("0") for f in entry.frameworks),
                    stable, sort_key(cuda))
            valid.append((rank, cuda, entry.frameworks, wheels))
    if not valid:
        raise NoCandidate(considered)
    _, cuda, fws, wheels = max(valid, key=lambda t: t[0])
    lower = "valid, ranked lower (older framework, experimental or older CUDA)"
    for entry in considered:
        entry.verdict = "chosen" if entry.version == cuda else lower if entry.valid else "rejected"
    build = next((w.build for w in wheels if w.build), None) or cuda
    rule = _driver_rule(matrix, build)
    tk_hit = _toolkit(matrix, c, build)
    toolkit = tk_hit[0] if tk_hit else None
    return Resolution(
        constraints=c, vendor="nvidia", gpu=gpu, gpu_candidates=gpus, target=target,
        runtime="cuda", runtime_version=build, release=None, wheels=wheels, frameworks=fws,
        considered=considered, os_allowed=None,
        os_unknown="the matrix holds no NVIDIA OS support table; freeze the OS from the trial host",
        os_chosen=f"{c.os[0]}-{c.os[1]}" if c.os else None,
        kmd_allowed=None, kmd_unknown=None, kmd_ref=None, firmware=[],
        firmware_unknown="the matrix holds no NVIDIA VBIOS/firmware requirements; freeze the "
        "VBIOS from the trial host",
        driver_constraint=_driver_constraint(rule[0]) if rule else None,
        driver_ref=f"{rule[1].name}:cuda-{rule[0].cuda_major}.x" if rule else None,
        toolkit_driver=toolkit.bundled_driver if toolkit else None,
        notes=_notes(c, wheels, toolkit), driver_rule=rule[0] if rule else None, toolkit=toolkit,
        toolkit_ref=f"{tk_hit[1].name}:cuda-{tk_hit[0].version}" if tk_hit else None,
    )


def _judge_cuda(matrix: Matrix, c: Constraints, cuda: str, target: str
                ) -> tuple[Considered, list[WheelVariant]]:
    """CUDA release ``cuda`` as a candidate: each requested framework's best wheel variant
    for ``target`` (:func:`_best_wheel`), or why there is none; valid when all have one.
    """
    reasons: list[str] = []
    fws: list[ChosenFramework] = []
    wheels: list[WheelVariant] = []
    for req in c.frameworks:
        picked, why = _best_wheel(matrix, c, req, cuda, target)
        if picked is None:
            reasons.append(why)
            continue
        w, locked = picked
        wheels.append(w)
        fws.append(ChosenFramework(
            name=req.name, request=req.raw, version=locked,
            series=locked == w.series, allowed=[w.series], status=w.status,
            variant=w.tag, published_variants=sorted(
                {x.tag for x, _ in matrix.wheels(req.name, as_of=c.as_of)
                 if x.series == w.series and x.accelerator == "cuda"}),
        ))
    date = max((w.date for w in wheels), default=dt.date.min)
    src = wheels[0].source if wheels else "upstream wheel variants"
    return Considered(ref=f"pytorch-wheels:cuda-{cuda}", runtime="cuda", version=cuda,
                      source=src, date=date, valid=not reasons, reasons=reasons,
                      frameworks=fws), wheels


def _driver_constraint(rule: DriverRule) -> str:
    """The driver range of a rule as a specifier: ``>=MIN`` (``,<BELOW`` when capped)."""
    below = f",<{rule.max_driver_below}" if rule.max_driver_below else ""
    return f">={rule.min_driver}{below}"


def _notes(c: Constraints, wheels: list[WheelVariant], toolkit: CudaToolkit | None
           ) -> list[str]:
    """Notes of an NVIDIA resolution: an experimental build; rows ``--as-of`` kept undated."""
    notes = []
    if any(w.status == "experimental" for w in wheels):
        notes.append("The chosen CUDA build is experimental in PyTorch's release matrix.")
    if c.as_of is not None:
        notes += undated_notes(c.as_of, [(f"{w.framework} {w.series} {w.tag} wheel row", w)
                                         for w in wheels]
                               + ([(f"CUDA {toolkit.version} toolkit row", toolkit)]
                                  if toolkit else []))
    return notes


def undated_notes(as_of: dt.date, rows: list[tuple[str, Provenance]]) -> list[str]:
    """One note per row a lock rests on whose publication date is unknown: ``--as-of``
    keeps such rows at every date, and the lock says so rather than hide it.
    """
    return [f"--as-of {as_of}: the {what} has no known publication date ({row.undated}); "
            "it is kept at every date." for what, row in rows if row.undated]


def _best_wheel(matrix: Matrix, c: Constraints, req: FrameworkRequest, cuda: str, target: str
                ) -> tuple[tuple[WheelVariant, str] | None, str]:
    """The newest wheel variant of ``req`` for CUDA ``cuda`` built for ``target`` (with the
    version to lock), or ``None`` and why none fits.
    """
    cands = [w for w, _ in matrix.wheels(req.name, as_of=c.as_of)
             if w.accelerator == "cuda" and w.accelerator_version == cuda]
    if not cands:
        return None, f"no {req.name} wheel for CUDA {cuda}"
    best: tuple[Version, WheelVariant, str] | None = None
    why: list[str] = []
    for w in cands:
        build = w.build or w.accelerator_version
        if c.cuda is not None and not c.cuda.contains(Version(build), prereleases=True):
            why.append(f"CUDA {build} outside --cuda {c.cuda}")
            continue
        locked = match_entry(w.series, req.spec)
        if locked is None:
            why.append(f"{req.name} {w.series} does not satisfy {req.spec}")
            continue
        if w.targets is None:
            why.append(f"{req.name} {w.series} {w.tag}: {w.unknown.get('targets', '')}")
            continue
        if target not in w.targets:
            why.append(f"{req.name} {w.series} {w.tag} is not built for compute "
                       f"capability {target}")
            continue
        key = pep440(locked) or Version("0")
        if best is None or key > best[0]:
            best = (key, w, locked)
    if best is None:
        return None, "; ".join(dict.fromkeys(why)) or f"{req} not validated"
    return (best[1], best[2]), ""


def _driver_rule(matrix: Matrix, build: str) -> tuple[DriverRule, LoadedFile] | None:
    """NVIDIA's driver rule for the CUDA major of ``build`` (the whole-major row)."""
    major = build.split(".")[0]
    return next(((r, f) for r, f in matrix.driver_rules()
                 if r.cuda_major == major and r.cuda_minor is None), None)


def _toolkit(matrix: Matrix, c: Constraints, build: str
             ) -> tuple[CudaToolkit, LoadedFile] | None:
    """The CUDA toolkit release ``build`` (for its bundled driver), if the matrix has it."""
    return next(((t, f) for t, f in matrix.cuda_toolkits(as_of=c.as_of) if t.version == build),
                None)
