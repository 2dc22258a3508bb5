"""``pin doctor``: read pasted environment dumps and say what is wrong with that environment.

Dumps (collect_env, vLLM's collect_env, SGLang's check_env, pip list / freeze / inspect, uv
pip list / freeze, uv tree, pipdeptree, conda list (text and ``--json``), amd-smi, rocm-smi,
rocminfo, nvidia-smi, ``/proc/driver/nvidia/version``; several per file) are split and
parsed by :mod:`pinning.probe.formats`, merged into one :class:`~pinning.guards.view.EnvView`
for the rules and one :class:`~pinning.doctor.facts.DoctorFacts` for the report, and judged
by the lock-free rules of :mod:`pinning.guards.checks` against the matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from pinning.doctor.facts import DoctorFacts, SectionFacts, flatten
from pinning.doctor.merge import Merger
from pinning.guards.checks import run_checks
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import guard_findings
from pinning.guards.view import EnvView, Finding
from pinning.matrix.load import Matrix
from pinning.util.models import Strict

REPORT_VERSION: Literal[1] = 1


class DumpInfo(Strict):
    """One recognised dump: file, kind and first line."""

    file: str
    kind: str
    first_line: int


class DoctorReport(Strict):
    """What ``pin doctor`` read and found.

    ``facts`` holds every fact parsed; ``environment`` the short summary the text form
    prints. ``judged`` is false when no rule had any input (no GPU, torch, package, driver,
    ROCm release or variable was read): then an empty ``findings`` means nothing was
    judged, not that nothing is wrong.
    """

    report_version: Literal[1] = REPORT_VERSION
    dumps: list[DumpInfo]
    facts: DoctorFacts = Field(default_factory=DoctorFacts)
    environment: dict[str, Any] = Field(default_factory=dict)
    judged: bool = True
    findings: list[Finding] = Field(default_factory=list)


def _judged(view: EnvView) -> bool:
    """True when some rule has an input: a GPU with a model, target or device ID, a torch
    version, a package, a driver, a ROCm release or an environment variable. A GPU known
    only by vendor and index (rocm-smi's NUMA table, amd-smi firmware) gives no rule an input
    on its own.
    """
    identified = any(g.name or g.gfx or g.device_id or g.compute_capability for g in view.gpus)
    return bool(identified or view.torch_version or view.packages or view.nvidia_driver
                or view.rocm_version or view.amdgpu_version or view.amdgpu_kind
                or view.environment)


def doctor(files: Sequence[tuple[str, str]], matrix: Matrix) -> DoctorReport:
    """Diagnose the dumps in ``files`` (``(name, text)`` pairs) against ``matrix``.

    The report carries every parsed fact; when no rule had an input it is returned with
    ``judged`` false and no findings (the CLI exits 14). Raises
    :class:`~pinning.errors.FormatError` (exit 7) naming the file when one contains no
    recognisable dump.
    """
    from pinning.probe.formats.split import parse_section, split_dump

    merger = Merger()
    dumps: list[DumpInfo] = []
    for name, text in files:
        for section in split_dump(text, source=name):
            parsed = parse_section(section, source=f"{name}:{section.first_line}")
            merger.add(section.kind, parsed)
            merger.facts.sections.append(SectionFacts(
                kind=section.kind, file=name, first_line=section.first_line,
                fields=flatten(parsed)))
            dumps.append(DumpInfo(file=name, kind=section.kind, first_line=section.first_line))
    view, facts = merger.finish()
    summary = {
        "gpus": [g.name or g.device_id or g.gfx or f"{(g.vendor or 'unknown').upper()} GPU"
                 for g in view.gpus],
        "torch": view.torch_version,
        "torch-build": view.torch_kind,
        "rocm": view.rocm_version,
        "amdgpu": view.amdgpu_version,
        "nvidia-driver": view.nvidia_driver,
        "packages": len(view.packages),
    }
    judged = _judged(view)
    findings = run_checks(view, matrix) if judged else []
    if judged:
        findings += guard_findings(GuardContext(view=view), "verify")
    return DoctorReport(
        dumps=dumps,
        facts=facts,
        environment={k: v for k, v in summary.items() if v not in (None, [], 0)},
        judged=judged,
        findings=findings,
    )
