"""The verify report: severities, what counts as drift, and :func:`verify` itself, which runs
every fact group and the lock-free rules and returns a :class:`VerifyReport` (pure). The CLI
maps it to exit 0 (match) or 6 (drift).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pinning.guards.checks import run_checks
from pinning.guards.engine import GuardContext, guard_findings
from pinning.guards.view import Finding, view_from_facts
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts, snapshot_hash
from pinning.util.models import Strict
from pinning.verify.hardware import HardwareFacts
from pinning.verify.software import SoftwareFacts

REPORT_VERSION: Literal[1] = 1


class VerifyReport(Strict):
    """The result of ``pin verify`` (schema ``schemas/verify-report.schema.json``).

    ``result`` is ``match`` when no finding has severity ``error`` (with ``strict``, also no
    ``warning``), else ``drift``. ``counts`` maps each status to how many findings have it.
    Errors: a changed or missing locked value, a value outside the matrix's set, a hazard, a
    behaviour variable set that the lock does not have. Warnings: a locked fact that could
    not be read, packages installed beyond the lock, an amdgpu module an unfrozen lock
    cannot compare, a driver above the range NVIDIA lists.
    """

    report_version: Literal[1] = REPORT_VERSION
    lock: str
    lock_hash: str
    host: str
    host_hash: str
    strict: bool = False
    result: Literal["match", "drift"]
    counts: dict[str, int]
    findings: list[Finding] = Field(default_factory=list)

    @property
    def drift(self) -> list[Finding]:
        """The findings that make the result ``drift``."""
        return [f for f in self.findings if is_drift(f, self.strict)]


def is_drift(finding: Finding, strict: bool) -> bool:
    """Errors are drift; with ``strict``, warnings too."""
    return finding.severity == "error" or (strict and finding.severity == "warning")


# Lock-free rules kept beside a lock comparison of the same fact: they explain the cause
# (the driver minimum of the CUDA build, a CUDA Triton shadowing ROCm's, a torch for the other
# vendor, an amdgpu module older than the user space). Other rule findings
# on a fact the comparison already judged are left out as duplicates.
EXPLAINING_RULES = frozenset({"driver-too-old-for-cuda", "cuda-triton-with-rocm-torch",
                              "multiple-triton-distributions", "kmd-older-than-user-space",
                              "cuda-torch-on-amd", "rocm-torch-on-nvidia",
                              "driver-below-cuda-with-compat"})


def verify(lock: Lockfile, facts: HostFacts, matrix: Matrix, *, lock_name: str, host_name: str,
           strict: bool = False) -> VerifyReport:
    """Compare ``lock`` with ``facts`` (see the module docstring); pure.

    ``lock_name`` / ``host_name`` label the report. With ``strict``, warnings (see
    :class:`VerifyReport`) also count as drift.
    """
    v = Verifier(lock, facts, matrix)
    v.target()
    v.firmware()
    v.driver()
    v.os_and_kernel()
    v.runtime()
    v.runtime_components()
    v.frameworks()
    v.packages()
    v.model()
    v.image()
    v.environment()
    view = view_from_facts(facts)
    rule_findings = run_checks(view, matrix)
    rule_findings += guard_findings(
        # The host's own runtime (view.rocm_version), not the lock's: the rules judge the host.
        GuardContext(view=view, gpu_ids=[g.product for g in facts.gpus if g.product],
                     platform="linux"),
        "verify", include_skipped=True)
    # A rule finding repeats the comparison when that already judged the fact (changed,
    # missing, outside the matrix); it stays when the comparison could not judge it.
    judged = {(f.fact, f.gpu) for f in v.findings
              if f.status in ("mismatch", "missing", "outside-validated")}
    findings = v.findings + [
        f for f in rule_findings
        if (f.fact, f.gpu) not in judged or f.code in EXPLAINING_RULES
    ]
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.status] = counts.get(f.status, 0) + 1
    result: Literal["match", "drift"] = (
        "drift" if any(is_drift(f, strict) for f in findings) else "match"
    )
    return VerifyReport(
        lock=lock_name, lock_hash=lock.content_hash, host=host_name,
        host_hash=snapshot_hash(facts), strict=strict, result=result,
        counts=dict(sorted(counts.items())), findings=findings,
    )


class Verifier(HardwareFacts, SoftwareFacts):
    """Every fact group over one lock and one host."""
