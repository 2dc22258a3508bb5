"""Explain an empty result (exit 4): the constraint that empties the set, found by adding
constraints one at a time, and the nearest validated alternatives with their sources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix
from pinning.matrix.models import (
    GpuIdentity,
)
from pinning.resolve.candidates import entry_blocked
from pinning.resolve.constraints import Constraints, FrameworkRequest
from pinning.resolve.result import Considered
from pinning.util.versions import match_entry


def no_combination(matrix: Matrix, c: Constraints, vendor: str, target: str,
                   gpu: GpuIdentity | None, considered: list[Considered], *,
                   attempt: Callable[[Constraints], object]) -> NoValidatedCombination:
    """Build the exit-4 error: the constraint that failed and the nearest alternatives.

    ``attempt`` resolves a partial set of constraints, raising
    :class:`~pinning.errors.NoValidatedCombination` when it has no candidate.
    """
    who = gpu.name if gpu else target
    lines: list[str] = []
    # Which constraint empties the set: drop them one at a time, in a fixed order.
    failing = failing_constraint(c, attempt)
    req_text = ", ".join(str(f) for f in c.frameworks)
    lines.append(f"No validated combination for {who} ({target}) with {req_text}"
                 + (f", ROCm {c.rocm}" if c.rocm else "") + (f", CUDA {c.cuda}" if c.cuda else "")
                 + (f", OS {c.os[0]}-{c.os[1]}" if c.os else "")
                 + (f", as of {c.as_of}" if c.as_of else "") + f": {failing}.")
    for req in c.frameworks:
        per = _validated_for_gpu(matrix, c, vendor, target, req)
        if per:
            lines.append(f"{req.name} versions validated for {who}: " + "; ".join(per[:6])
                         + ("; ..." if len(per) > 6 else ""))
        else:
            lines.append(f"No {req.name} version is validated for {who} in the matrix.")
        rts = _runtimes_validating(matrix, c, vendor, req) if str(req.spec) else []
        if rts:
            lines.append(f"Runtimes that validate {req}: " + "; ".join(dict.fromkeys(rts[:6])))
    return NoValidatedCombination("\n".join(lines))


def failing_constraint(c: Constraints, attempt: Callable[[Constraints], object]) -> str:
    """Name the first constraint, in the order GPU, frameworks, runtime, OS, that leaves no
    candidate when added to the ones before it.
    """
    steps: list[tuple[str, Constraints]] = []
    base = replace(c, frameworks=(), rocm=None, cuda=None, os=None)
    for i, req in enumerate(c.frameworks):
        steps.append((f"{req} is not validated for this GPU" if i == 0 else
                      f"{req} is not validated with the same runtime as "
                      f"{', '.join(str(x) for x in c.frameworks[:i])}",
                      replace(base, frameworks=c.frameworks[: i + 1])))
    if c.rocm is not None or c.cuda is not None:
        flag = f"--rocm {c.rocm}" if c.rocm is not None else f"--cuda {c.cuda}"
        steps.append((f"no runtime in {flag} validates it",
                      replace(base, frameworks=c.frameworks, rocm=c.rocm, cuda=c.cuda)))
    if c.os is not None:
        steps.append((f"--os {c.os[0]}-{c.os[1]} is not validated for that stack", c))
    for text, partial in steps:
        try:
            if partial.frameworks:
                attempt(partial)
        except NoValidatedCombination:
            return text
    return "the combined constraints exclude every candidate"


def _validated_for_gpu(matrix: Matrix, c: Constraints, vendor: str, target: str,
                       req: FrameworkRequest) -> list[str]:
    """Alternatives 1: the versions of ``req``'s framework validated for this GPU, with the
    runtime and source of each.
    """
    per: list[str] = []
    if vendor == "amd":
        for rr in matrix.releases(as_of=c.as_of):
            r = rr.release
            if r.vendor != "amd" or not r.targets or target not in r.targets:
                continue
            for fw in r.frameworks:
                if fw.name == req.name and fw.versions and not entry_blocked(fw, r.version,
                                                                             target):
                    per.append(f"{', '.join(fw.versions)} with ROCm {r.version} "
                               f"({rr.file.name}, {r.date})")
        return per
    for w, f in matrix.wheels(req.name, as_of=c.as_of):
        if w.accelerator == "cuda" and w.targets and target in w.targets:
            per.append(f"{w.series} with CUDA {w.build or w.accelerator_version} "
                       f"[{w.status}] ({f.name}, {w.date})")
    return per


def _runtimes_validating(matrix: Matrix, c: Constraints, vendor: str,
                         req: FrameworkRequest) -> list[str]:
    """Alternatives 2: the runtimes that validate the requested version (on any GPU)."""
    rts: list[str] = []
    if vendor == "amd":
        for rr in matrix.releases(as_of=c.as_of):
            for fw in rr.release.frameworks:
                if fw.name == req.name and fw.versions and any(
                        match_entry(e, req.spec) for e in fw.versions):
                    rts.append(f"ROCm {rr.release.version} ({rr.file.name}, "
                               f"{rr.release.date}; targets "
                               f"{', '.join(fw.targets or rr.release.targets or [])})")
        return rts
    for w, f in matrix.wheels(req.name, as_of=c.as_of):
        if w.accelerator == "cuda" and match_entry(w.series, req.spec):
            rts.append(f"CUDA {w.build or w.accelerator_version} ({f.name}, {w.date})")
    return rts
