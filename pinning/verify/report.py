"""The verify report: severities, what counts as drift, and :func:`verify` itself, which runs
every fact group and the lock-free rules and returns a :class:`VerifyReport` (pure). The CLI
maps it to exit 0 (match) or 6 (drift).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from pinning.errors import UsageError
from pinning.guards.checks import run_checks
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import guard_findings
from pinning.guards.serving import with_lock_serving
from pinning.guards.view import Finding, view_from_facts
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import StatusValue, status_value
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts, snapshot_hash
from pinning.util.envelope import unwrap
from pinning.util.models import Strict
from pinning.verify.compare import LockPlan
from pinning.verify.hardware import HardwareFacts
from pinning.verify.model import ModelGroup
from pinning.verify.software import SoftwareFacts
from pinning.verify.status import status_finding
from pinning.verify.target import LockTarget

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
    lock_status: StatusValue | None = Field(
        default=None, description="The lock's status: `validated`, `unconfirmed` (a warning "
        "finding `lock-unconfirmed`, drift with --strict) or `not-recorded` (a lock written "
        "before pin recorded it); absent in reports of an older pin.")
    result: Literal["match", "drift"]
    counts: dict[str, int]
    findings: list[Finding] = Field(default_factory=list)
    hidden_rules: int = Field(
        default=0, ge=0,
        description="Guard rules left out because they do not apply here: a fact they need "
                    "is not known for this lock and host (e.g. no [serving] quantization); "
                    "pin verify -v lists them.")
    audited: bool = Field(
        default=False, description="True when a `pin audit --format json` report was given "
                                   "(--audit), so the code rules judged the audited code.")
    scope: Literal["all", "node"] = Field(
        default="all", description="`node` when only what a node provides beneath its "
                                   "containers was judged (pin verify --node-only): GPUs, "
                                   "firmware, kernel driver, kernel and OS.")
    target: LockTarget | None = Field(
        default=None, description="For a multi-target lock (lock-version 2): the target "
                                  "checked and how it was chosen; absent for a "
                                  "single-target lock.")

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
           strict: bool = False, verbose: bool = False,
           device_strings: list[str] | None = None) -> VerifyReport:
    """Compare ``lock`` with ``facts`` (see the module docstring); pure.

    ``lock_name`` / ``host_name`` label the report. With ``strict``, warnings (see
    :class:`VerifyReport`) also count as drift. The guard rules also judge the lock's
    ``[serving]`` and ``[[extensions]]``; rules that do not apply (a fact they need is not
    known) are counted in ``hidden-rules`` and listed only with ``verbose``.
    ``device_strings`` are those a ``pin audit`` report found (:func:`audit_device_strings`);
    ``None`` when the code was not audited.
    """
    findings, hidden = verify_findings(lock, facts, matrix, verbose=verbose,
                                       device_strings=device_strings)
    return report_of(lock, facts, findings, hidden, lock_name=lock_name, host_name=host_name,
                     strict=strict, audited=device_strings is not None)


#: The lock-free rule findings of one host and how many rules were hidden:
#: ``(lock, facts, matrix, verbose, device_strings) -> (findings, hidden)``.
RuleJudge = Callable[[Lockfile, HostFacts, Matrix, bool, list[str] | None],
                     tuple[list[Finding], int]]


def verify_findings(lock: Lockfile, facts: HostFacts, matrix: Matrix, *, verbose: bool = False,
                    device_strings: list[str] | None = None, plan: LockPlan | None = None,
                    judge: RuleJudge | None = None) -> tuple[list[Finding], int]:
    """The findings of :func:`verify` in report order, and the number of guard rules hidden
    (0 with ``verbose``). ``plan`` is the lock's shared :class:`LockPlan` and ``judge`` a
    stand-in for :func:`rule_findings` (a cache of it: ``pin fleet verify``); both must
    give what the defaults give.
    """
    v = Verifier(lock, facts, matrix, plan=plan)
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
    v.extensions()
    rule_found, hidden = (judge or rule_findings)(lock, facts, matrix, verbose, device_strings)
    # A rule finding repeats the comparison when that already judged the fact (changed,
    # missing, outside the matrix); it stays when the comparison could not judge it.
    judged = {(f.fact, f.gpu) for f in v.findings
              if f.status in ("mismatch", "missing", "outside-validated")}
    status = status_finding(lock)
    return ([status] if status is not None else []) + v.findings + [
        f for f in rule_found
        if (f.fact, f.gpu) not in judged or f.code in EXPLAINING_RULES
    ], hidden


def rule_findings(lock: Lockfile, facts: HostFacts, matrix: Matrix, verbose: bool,
                  device_strings: list[str] | None) -> tuple[list[Finding], int]:
    """The lock-free rules (:func:`~pinning.guards.checks.run_checks`) and the guard rules
    of the verify phase over ``facts`` with the lock's serving choices, and how many guard
    rules were hidden because they do not apply (0 with ``verbose``: they are listed).
    Depends on ``facts`` only through :func:`~pinning.guards.view.view_from_facts` and the
    GPU products.
    """
    # The host's own runtime (view.rocm_version), not the lock's: the rules judge the host;
    # the serving choices (quantization, attention, extension targets) come from the lock.
    ctx = with_lock_serving(
        GuardContext(view=view_from_facts(facts), platform="linux",
                     gpu_ids=[g.product for g in facts.gpus if g.product],
                     device_strings=device_strings),
        lock, lock_packages=False)
    found = run_checks(ctx.view, matrix)
    guarded = guard_findings(ctx, "verify", include_skipped=True)
    hidden = 0 if verbose else sum(1 for f in guarded if f.status == "not-probed")
    found += [f for f in guarded if verbose or f.status != "not-probed"]
    return found, hidden


def report_of(lock: Lockfile, facts: HostFacts, findings: list[Finding], hidden: int, *,
              lock_name: str, host_name: str, strict: bool, audited: bool) -> VerifyReport:
    """The :class:`VerifyReport` of ``findings`` (from :func:`verify_findings`)."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.status] = counts.get(f.status, 0) + 1
    result: Literal["match", "drift"] = (
        "drift" if any(is_drift(f, strict) for f in findings) else "match"
    )
    return VerifyReport(
        lock=lock_name, lock_hash=lock.content_hash, host=host_name,
        host_hash=snapshot_hash(facts), strict=strict, result=result,
        lock_status=status_value(lock.status),
        counts=dict(sorted(counts.items())), findings=findings, hidden_rules=hidden,
        audited=audited,
    )


#: The top-level lock sections a node provides beneath its containers: the GPUs, their
#: firmware, the kernel driver, the kernel and the OS. ROCm / CUDA user space, frameworks,
#: packages, the model, the image and the environment come with a container image.
NODE_FACTS = frozenset({"target", "firmware", "kernel_driver", "kernel", "os"})


def node_scope(report: VerifyReport) -> VerifyReport:
    """``report`` restricted to :data:`NODE_FACTS` and the lock's ``status`` (``scope``
    ``node``): the findings on other facts, and the guard rules' (``guard.*``), are left
    out and the counts and
    result recomputed. For a node whose workloads bring their user space in images
    (Kubernetes): its own Python environment is not what the lock pins. Pure.
    """
    kept = [f for f in report.findings
            if f.fact.split(".", 1)[0] in NODE_FACTS or f.fact == "status"]
    counts: dict[str, int] = {}
    for f in kept:
        counts[f.status] = counts.get(f.status, 0) + 1
    result: Literal["match", "drift"] = (
        "drift" if any(is_drift(f, report.strict) for f in kept) else "match")
    return report.model_copy(update={"findings": kept, "counts": dict(sorted(counts.items())),
                                     "result": result, "scope": "node", "hidden_rules": 0})


# The device string a finding's subject quotes (`torch.device("rocm")`, `'hip:0' as a
# device`), or a bare hit device (`rocm`).
_AUDIT_DEVICE = re.compile(r"""'((?:rocm|hip)(?::[0-9]{1,9})?)'|"((?:rocm|hip)(?::[0-9]{1,9})?)"|"""
                           r"^((?:rocm|hip)(?::[0-9]{1,9})?)$")


def audit_device_strings(path: Path) -> list[str]:
    """The device strings a ``pin audit --format json`` report at ``path`` found (``rocm``,
    ``hip:0``): the quoted string of each ``device-string`` finding (``findings``), or of
    each hit of a report from pin before 0.2 (``hits``: ``device``, or the string its
    ``text`` quotes, ``'hip' as a device``). An empty list when the audit found none.

    Raises :class:`~pinning.errors.UsageError` (exit 2) naming ``--audit`` when the file
    cannot be read or is not such a report.
    """
    from pinning.util.files import read_regular_bytes
    from pinning.util.jsonread import load_json

    raw = read_regular_bytes(path, UsageError, label=f"--audit {path}", limit=64 * 1024 * 1024)
    try:
        data = load_json(raw, UsageError, label=f"--audit {path}")
    except UsageError:
        data = None  # said below: not a pin audit JSON report
    data = unwrap(data, "audit")  # `pin audit --format json > FILE` wrote the envelope
    findings = data.get("findings") if isinstance(data, dict) else None
    if isinstance(findings, list):
        items = [(i, f.get("subject")) for i, f in enumerate(findings)
                 if isinstance(f, dict) and f.get("kind") == "device-string"]
        key = "finding"
    else:
        hits = data.get("hits") if isinstance(data, dict) else None
        if not isinstance(hits, list):
            raise UsageError(f"--audit {path}: not a pin audit JSON report (no `findings` "
                             "list).", hint="Write one with: pin audit PATH --format json "
                                            "> audit.json")
        items = [(i, h.get("device") if isinstance(h.get("device"), str) else h.get("text"))
                 if isinstance(h, dict) else (i, None) for i, h in enumerate(hits)]
        key = "hit"
    out: list[str] = []
    for i, text in items:
        m = _AUDIT_DEVICE.search(text) if isinstance(text, str) else None
        if m is None:
            raise UsageError(f"--audit {path}: {key} {i} names no device string.",
                             hint="Write the report with: pin audit PATH --format json")
        out.append(m.group(1) or m.group(2) or m.group(3))
    return sorted(set(out))


class Verifier(HardwareFacts, SoftwareFacts, ModelGroup):
    """Every fact group over one lock and one host."""
