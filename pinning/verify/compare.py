"""Lock x host facts x matrix -> findings (pure). ``pin verify`` and ``pin freeze`` use it.

Each locked fact is compared with what the host shows: an exact value frozen from a trial
host (``origin = "host"``) must match; a value the matrix allows (``allowed`` /
``constraint``) must lie inside it. The lock-free rules of :mod:`pinning.guards.checks` (CUDA driver
minimum, gfx target validated, Triton and torch hazards) run as well. The result is a
:class:`VerifyReport`; the CLI maps it to exit 0 (match) or 6 (drift).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from pinning.guards.checks import (
    HAZARDS_SOURCE,
    Finding,
    Severity,
    Status,
    run_checks,
    version_at_least,
    view_from_facts,
)
from pinning.lockfile.models import Lockfile, Pinned
from pinning.matrix.load import Matrix
from pinning.matrix.names import (
    DATACENTER_NVIDIA,
    FRAMEWORK_DISTRIBUTIONS,
    TRITON_DISTRIBUTIONS,
    os_matches,
)
from pinning.probe.models import NOT_JUDGED_ENV, GpuFacts, HostFacts, Reading
from pinning.util.models import Strict
from pinning.util.versions import normalize_name

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


def torch_build_label(kind: str, cuda: str | None, hip: str | None) -> str:
    """``cu130`` for CUDA 13.0, ``rocm6.3`` for HIP ``6.3.42131-...``, else ``cpu`` / kind."""
    if kind == "cuda" and cuda:
        return "cu" + cuda.replace(".", "")
    if kind == "rocm" and hip:
        m = re.match(r"(\d+)\.(\d+)", hip)
        if m:
            return f"rocm{m.group(1)}.{m.group(2)}"
    return kind


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


SEVERITY: dict[Status, Severity] = {
    "match": "info",
    "mismatch": "error",
    "missing": "error",
    "not-probed": "warning",
    "outside-validated": "error",
    "not-locked": "info",
    "cannot-compare": "warning",
    "hazard": "error",
}


def host_os_key(facts: HostFacts) -> tuple[str, str] | None:
    """``('ubuntu', '24.04.3')`` from os-release: ``ID`` and the dotted number that starts
    ``VERSION`` (which carries Ubuntu's point release), else ``VERSION_ID``.
    """
    os_id, vid = facts.os.id.value, facts.os.version_id.value
    if not os_id or not vid:
        return None
    version = facts.os.version.value or ""
    m = re.match(r"(\d+(?:\.\d+)*)", version)
    if m and m.group(1).startswith(vid):
        vid = m.group(1)
    return os_id.lower(), vid


def host_os_text(facts: HostFacts) -> str | None:
    """The host OS in the matrix's spelling (``ubuntu-24.04.3``), or ``None``."""
    key = host_os_key(facts)
    return f"{key[0]}-{key[1]}" if key else None


def _or_later(entry: str) -> tuple[str, bool]:
    """``'01.25.05.00 (or later)'`` -> ``('01.25.05.00', True)``."""
    m = re.match(r"\s*(.*?)\s*\(or later\)\s*$", entry)
    return (m.group(1), True) if m else (entry.strip(), False)


def allowed_contains(allowed: Iterable[str], value: str) -> bool:
    """True when ``value`` is one of ``allowed``: equal, inside an ``x``-series
    (``6.4.x``), or at/above an ``(or later)`` entry.
    """
    for entry in allowed:
        base, later = _or_later(entry)
        if value == base:
            return True
        if base.endswith(".x") and value.startswith(base[:-1]):
            return True
        if re.fullmatch(r"\d+\.\d+", base) and value.startswith(base + "."):
            return True  # a two-part series entry ("2.7") holds every 2.7.x release
        if later and version_at_least(value, base):
            return True
    return False


def constraint_bounds(constraint: str) -> tuple[str | None, str | None]:
    """``(">=" bound, "<" bound)`` of a constraint such as ``>=525,<580`` (either may be
    ``None``); clauses of other shapes are ignored.
    """
    low = high = None
    for clause in constraint.split(","):
        m = re.fullmatch(r"\s*(>=|<)\s*([0-9][0-9.]*)\s*", clause)
        if m and m.group(1) == ">=":
            low = m.group(2)
        elif m:
            high = m.group(2)
    return low, high


def constraint_holds(constraint: str, value: str) -> bool | None:
    """Whether dotted ``value`` meets the lower bound of ``constraint`` (``>=580``);
    ``None`` if there is none or ``value`` is not numeric. The upper bound is separate.
    """
    low, _high = constraint_bounds(constraint)
    return version_at_least(value, low) if low else None


class _Verifier:
    """Collects findings for one lock and one host."""

    def __init__(self, lock: Lockfile, facts: HostFacts, matrix: Matrix) -> None:
        self.lock, self.facts = lock, facts
        self.findings: list[Finding] = []
        self.rows = {r.ref: r for r in lock.matrix.rows}

    def source_of(self, pinned: Pinned) -> str | None:
        """Source text for a pinned value: the matrix row (with its date) or the host freeze."""
        if pinned.origin == "host":
            snap = self.lock.frozen.snapshot if self.lock.frozen else "a host snapshot"
            return f"frozen from the trial host ({snap})"
        row = self.rows.get(pinned.ref or "")
        if row is None:
            return pinned.ref
        date = row.published or row.checked
        return f"{row.source} ({date}); row {row.ref}" if date else f"{row.source}; row {row.ref}"

    def add(self, code: str, fact: str, status: Status, message: str, *,
            expected: str | None = None, actual: str | None = None, gpu: int | None = None,
            source: str | None = None, severity: Severity | None = None) -> None:
        self.findings.append(Finding(
            code=code, fact=fact, status=status, severity=severity or SEVERITY[status],
            message=message, expected=expected, actual=actual, gpu=gpu, source=source))

    def compare(self, fact: str, label: str, pinned: Pinned, reading: Reading | None,
                *, gpu: int | None = None, comparable: bool = True) -> None:
        """Compare one pinned value with one reading (see the module docstring)."""
        src = self.source_of(pinned)
        where = f" (GPU {gpu})" if gpu is not None else ""
        if reading is None or not reading.known:
            if pinned.value is None and not (pinned.allowed or pinned.constraint):
                self.add("not-locked", fact, "not-locked", f"{label}{where}: the lock leaves it "
                         f"open ({pinned.reason or 'unknown'}); not probed either.", gpu=gpu)
                return
            why = reading.reason if reading is not None else "not probed"
            if reading is not None and reading.absent:
                self.add("missing", fact, "missing", f"{label}{where} is locked but absent on "
                         f"the host: {why}.", expected=pinned.value or _allowed_text(pinned),
                         gpu=gpu, source=src)
                return
            self.add("not-probed", fact, "not-probed", f"{label}{where} could not be read: {why}.",
                     expected=pinned.value or _allowed_text(pinned), gpu=gpu, source=src)
            return
        actual = reading.value or ""
        if pinned.value is not None:
            if actual == pinned.value:
                self.add("match", fact, "match", f"{label}{where} is {actual}.",
                         expected=pinned.value, actual=actual, gpu=gpu, source=src)
            else:
                self.add("mismatch", fact, "mismatch",
                         f"{label}{where} is {actual}, the lock has {pinned.value}.",
                         expected=pinned.value, actual=actual, gpu=gpu, source=src)
            if pinned.origin == "host":
                self._inside_matrix(fact, label, pinned, actual, gpu, comparable)
            return
        if pinned.allowed or pinned.constraint:
            self._inside_matrix(fact, label, pinned, actual, gpu, comparable, report_match=True)
            return
        self.add("not-locked", fact, "not-locked",
                 f"{label}{where} is {actual}; the lock leaves it open "
                 f"({pinned.reason or 'unknown'}).", actual=actual, gpu=gpu)

    def _inside_matrix(self, fact: str, label: str, pinned: Pinned, actual: str,
                       gpu: int | None, comparable: bool, report_match: bool = False) -> None:
        where = f" (GPU {gpu})" if gpu is not None else ""
        src = self.source_of(Pinned(origin="matrix", ref=pinned.ref, reason="-"))
        expected = _allowed_text(pinned)
        if not comparable:
            tail = ("the frozen value is compared exactly instead." if pinned.origin == "host"
                    else "freeze the host to pin the exact value.")
            self.add("cannot-compare", fact, "cannot-compare", f"{label}{where} is {actual}; "
                     f"the matrix lists {expected} in another numbering and no public table maps "
                     f"one to the other: {tail}",
                     expected=expected, actual=actual, gpu=gpu, source=src,
                     severity="info" if pinned.origin == "host" else None)
            return
        ok: bool | None = None
        if pinned.allowed:
            ok = allowed_contains(pinned.allowed, actual)
        elif pinned.constraint:
            ok = constraint_holds(pinned.constraint, actual)
            high = constraint_bounds(pinned.constraint)[1]
            if ok and high and version_at_least(actual, high):
                self.add("above-range", fact, "outside-validated",
                         f"{label}{where} {actual} is at or above {high}, the end of the range "
                         f"listed for {self._context(pinned.ref)}; drivers are backward "
                         "compatible, so this is a warning.", expected=expected, actual=actual,
                         gpu=gpu, source=src, severity="warning")
                return
        if ok is None:
            return
        if ok:
            if report_match:
                self.add("match", fact, "match", f"{label}{where} {actual} is within {expected}.",
                         expected=expected, actual=actual, gpu=gpu, source=src)
            return
        floor = _floor(pinned)
        if floor and version_at_least(actual, floor) is False:
            what = f"is below {floor}, the lowest"
        else:
            what = f"is not among {expected},"
        self.add("outside-validated", fact, "outside-validated",
                 f"{label}{where} {actual} {what} listed for {self._context(pinned.ref)}.",
                 expected=expected, actual=actual, gpu=gpu, source=src)

    def _context(self, ref: str | None = None) -> str:
        """``"Instinct MI300X with ROCm 7.1.1"``: the runtime named by the matrix row ``ref``
        (the row the allowed set came from), else the lock's runtime.
        """
        lock = self.lock
        gpu = lock.target.gpu.value or lock.request.gpu
        rt = "CUDA" if lock.runtime.name == "cuda" else "ROCm"
        row = (ref or "").partition(":")[2]  # "<file>:rocm-7.1.1/MI300X" -> "rocm-7.1.1/MI300X"
        m = re.match(r"(rocm|cuda)-([0-9][0-9.]*[0-9])", row)
        version = m.group(2) if m and m.group(1) == lock.runtime.name else None
        if version is None and lock.runtime.version.origin != "host":
            version = lock.runtime.version.value
        return f"{gpu} with {rt} {version}" if version else gpu

    # -- facts ----------------------------------------------------------------------------

    def target(self) -> None:
        lock, facts = self.lock, self.facts
        gpus = [g for g in facts.gpus if g.vendor == lock.target.vendor]
        if not gpus:
            found = ", ".join(sorted({g.vendor for g in facts.gpus})) or "no GPU"
            self.add("gpu-missing", "target.gpu", "missing",
                     f"The lock is for {lock.target.gpu.value or lock.request.gpu} "
                     f"({lock.target.vendor}); the host has {found}.",
                     expected=lock.target.gpu.value, actual=found)
            return
        ids = set(lock.target.pci_device_ids)
        for g in gpus:
            if ids and g.pci_device_id not in ids:
                self.add("gpu-mismatch", "target.gpu", "mismatch",
                         f"GPU {g.index} is PCI device {g.pci_device_id or '(unknown)'}"
                         + (f" ({g.name.value})" if g.name.value else "") + ", "
                         f"not one of {', '.join(sorted(ids))} "
                         f"({lock.target.gpu.value}).", expected=", ".join(sorted(ids)),
                         actual=g.pci_device_id, gpu=g.index,
                         source=self.source_of(lock.target.gpu))
            elif ids:
                self.add("gpu", "target.gpu", "match",
                         f"GPU {g.index} is {lock.target.gpu.value} ({g.pci_device_id}).",
                         expected=lock.target.gpu.value, actual=g.pci_device_id, gpu=g.index)
            if lock.target.gfx_target is not None:
                self.compare("target.gfx_target", "gfx target", lock.target.gfx_target,
                             g.gfx_target, gpu=g.index)
            if lock.target.compute_capability is not None:
                self.compare("target.compute_capability", "compute capability",
                             lock.target.compute_capability, g.compute_capability, gpu=g.index)
        if lock.target.count is not None:
            self.compare("target.count", f"number of {lock.target.vendor.upper()} GPUs",
                         lock.target.count, Reading.of(str(len(gpus)), "/sys/bus/pci/devices"))

    def firmware(self) -> None:
        fw = self.lock.firmware
        label = {"pldm-bundle": "PLDM bundle", "vbios": "VBIOS", "ifwi": "IFWI",
                 "bkc": "BKC"}.get(fw.kind, fw.kind)
        for g in self._locked_gpus():
            reading = g.pldm_bundle if fw.kind == "pldm-bundle" else g.vbios
            # AMD's IFWI / BKC / MU / "VBIOS D3430401-037" labels are not what the host's VBIOS
            # string shows; only PLDM bundles and NVIDIA VBIOS strings compare with the matrix.
            comparable = fw.kind == "pldm-bundle" or (
                fw.kind == "vbios" and self.lock.target.vendor == "nvidia")
            self.compare("firmware.version", label, fw.version, reading, gpu=g.index,
                         comparable=comparable)
            if fw.vbios is not None:
                self.compare("firmware.vbios", "VBIOS/IFWI", fw.vbios, g.vbios, gpu=g.index)
            if fw.blocks:
                self._blocks(fw.blocks, g)

    def _blocks(self, blocks: dict[str, str], g: GpuFacts) -> None:
        src = self.source_of(Pinned(origin="host", reason="-"))
        changed = [(k, v, g.firmware.get(k)) for k, v in blocks.items() if g.firmware.get(k) != v]
        if not g.firmware:
            self.add("not-probed", "firmware.blocks", "not-probed",
                     f"Firmware blocks (GPU {g.index}) could not be read (no sysfs fw_version "
                     "and no amd-smi firmware).", gpu=g.index, source=src)
        elif changed:
            text = ", ".join(f"{k} {have or 'absent'} (lock {want})" for k, want, have in changed)
            self.add("firmware-blocks", "firmware.blocks", "mismatch",
                     f"Firmware blocks (GPU {g.index}) differ: {text}.",
                     expected=", ".join(f"{k}={w}" for k, w, _ in changed),
                     actual=", ".join(f"{k}={h}" for k, _, h in changed), gpu=g.index,
                     source=src)
        else:
            self.add("firmware-blocks", "firmware.blocks", "match",
                     f"{len(blocks)} firmware blocks (GPU {g.index}) match.", gpu=g.index)

    def _locked_gpus(self) -> list[GpuFacts]:
        return [g for g in self.facts.gpus if g.vendor == self.lock.target.vendor]

    def driver(self) -> None:
        kd = self.lock.kernel_driver
        facts = self.facts
        if kd.name == "amdgpu":
            reading = facts.amd.driver if facts.amd else Reading.missing(
                "no AMD GPU or amdgpu module on the host", absent=True)
            kind = facts.amd.driver_kind if facts.amd else None
            if kd.flavor is not None:
                self.compare("kernel_driver.flavor", "amdgpu flavor", kd.flavor,
                             Reading.of(kind, "/sys/module/amdgpu") if kind else None)
            if kind == "inbox" and kd.version.allowed:
                self.add("inbox-driver", "kernel_driver.version", "outside-validated",
                         f"amdgpu is the kernel's inbox driver ({reading.value}), not one of the "
                         f"AMD GPU Driver releases the matrix validates "
                         f"({_allowed_text(kd.version)}) for {self._context(kd.version.ref)}.",
                         expected=_allowed_text(kd.version), actual=f"inbox {reading.value}",
                         source=self.source_of(kd.version))
                return
            # Module versions (6.16.6) and AMD GPU Driver releases (30.20.0) are numbered apart.
            self.compare("kernel_driver.version", "amdgpu kernel driver", kd.version, reading,
                         comparable=False)
        else:
            reading = facts.nvidia.driver if facts.nvidia else Reading.missing(
                "no NVIDIA GPU or kernel module on the host", absent=True)
            before = len(self.findings)
            self.compare("kernel_driver.version", "NVIDIA driver", kd.version, reading)
            gpus = self._locked_gpus()
            if (facts.nvidia and facts.nvidia.cuda_compat and gpus
                    and all(g.product in DATACENTER_NVIDIA for g in gpus)):
                # Forward compatibility: cuda-compat on a Data Center GPU runs newer CUDA on
                # an older driver branch (NVIDIA CUDA Compatibility; FACTS.md §1.12).
                for i in range(before, len(self.findings)):
                    f = self.findings[i]
                    if f.status == "outside-validated":
                        self.findings[i] = f.model_copy(update={
                            "severity": "warning",
                            "message": f.message + " cuda-compat is present "
                                       f"({facts.nvidia.cuda_compat}) on a Data Center GPU, "
                                       "which NVIDIA supports."})
            if kd.flavor is not None:
                flavor = facts.nvidia.module_kind if facts.nvidia else None
                self.compare("kernel_driver.flavor", "NVIDIA kernel module", kd.flavor,
                             Reading.of(flavor, "/proc/driver/nvidia/version") if flavor
                             else Reading.missing("module kind not shown"))

    def os_and_kernel(self) -> None:
        facts = self.facts
        os_text = host_os_text(facts)
        os_reading = Reading.of(os_text, "/etc/os-release") if os_text else facts.os.id
        pinned = self.lock.os
        if os_text and pinned.allowed and pinned.origin == "host":
            # Exact value first, then the matrix's set with its series semantics (ol-9, ...).
            self.compare("os", "OS", pinned.model_copy(update={"allowed": None}), os_reading)
            pinned = pinned.model_copy(update={"origin": "matrix", "value": None})
        if os_text and pinned.allowed:
            key = host_os_key(facts)
            assert key is not None
            ok = any(os_matches(key, entry) for entry in pinned.allowed)
            if ok:
                if self.lock.os.origin != "host":
                    self.add("os", "os", "match", f"OS {os_text} is validated.",
                             expected=_allowed_text(pinned), actual=os_text)
            else:
                self.add("os", "os", "outside-validated",
                         f"OS {os_text} is not one the matrix validates for "
                         f"{self._context(pinned.ref)} "
                         f"({_allowed_text(pinned)}).", expected=_allowed_text(pinned),
                         actual=os_text, source=self.source_of(pinned))
        else:
            self.compare("os", "OS", pinned, os_reading)
        self.compare("kernel", "kernel", self.lock.kernel, facts.os.kernel)

    def runtime(self) -> None:
        rt = self.lock.runtime
        facts = self.facts
        if rt.name == "rocm":
            reading = facts.amd.rocm if facts.amd else Reading.missing(
                "no AMD GPU or ROCm on the host", absent=True)
            self.compare("runtime.version", "ROCm user space", rt.version, reading)
            return
        if rt.toolkit is not None:
            toolkit = facts.nvidia.cuda_toolkit if facts.nvidia else Reading.missing(
                "no CUDA toolkit on the host", absent=True)
            self.compare("runtime.toolkit", "CUDA toolkit", rt.toolkit, toolkit)
        torch = facts.python.torch
        if torch is None or torch.cuda is None or rt.version.value is None:
            reading = facts.nvidia.cuda_toolkit if facts.nvidia else Reading.missing(
                "no NVIDIA GPU, CUDA build of torch or CUDA toolkit on the host", absent=True)
            self.compare("runtime.version", "CUDA", rt.version, reading)
            return
        # A CUDA wheel carries its CUDA runtime; torch.version.cuda is major.minor.
        want = ".".join(rt.version.value.split(".")[:2])
        if torch.cuda == want:
            self.add("runtime", "runtime.version", "match",
                     f"torch is built with CUDA {torch.cuda} (lock: {rt.version.value}).",
                     expected=rt.version.value, actual=torch.cuda)
        else:
            self.add("runtime", "runtime.version", "mismatch",
                     f"torch is built with CUDA {torch.cuda}, the lock has {rt.version.value}.",
                     expected=rt.version.value, actual=torch.cuda,
                     source=self.source_of(rt.version))

    def frameworks(self) -> None:
        python = self.facts.python
        for fw in self.lock.frameworks:
            dist = FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name)
            installed = python.version_of(dist)
            fact = f"frameworks.{fw.name}.version"
            if installed is None and (python.reason or not python.distributions):
                why = python.reason or "no Python distributions found in " + (
                    ", ".join(python.site_packages) or "any Python environment")
                self.add("framework-missing", fact, "missing",
                         f"{fw.name} ({dist}) is locked but no Python environment with it was "
                         f"found: {why}.", expected=fw.version.value or _allowed_text(fw.version))
                continue
            if installed is None:
                self.add("framework-missing", fact, "missing",
                         f"{fw.name} ({dist}) is locked but not installed in "
                         f"{', '.join(python.site_packages)}.",
                         expected=fw.version.value or _allowed_text(fw.version))
                continue
            public, _, local = installed.partition("+")
            pinned = fw.version
            if pinned.origin != "host" and pinned.value and len(pinned.value.split(".")) < 3:
                # A matrix series such as "2.7": any 2.7.x release is inside it.
                pinned = pinned.model_copy(update={"value": None,
                                                   "allowed": [pinned.value + ".x"]})
            self.compare(fact, fw.name, pinned, Reading.of(public, "dist-info"))
            self._build(fw.name, dist, installed, local, fw.build)

    def _build(self, name: str, dist: str, installed: str, local: str, build: Pinned) -> None:
        """The framework build: the local version label (``rocm6.3``, ``cu130``), or for torch
        without one, its kind from ``torch/version.py`` (``cpu``, ``rocm``, ``cuda``).
        """
        fact = f"frameworks.{name}.build"
        if build.origin == "unknown" and build.value is None:
            # The lock only lists what upstream publishes: a hint, not a validated set.
            shown = local or "no local version label"
            self.add("not-locked", fact, "not-locked",
                     f"{name} build is {shown}; the lock leaves it open "
                     f"({build.reason or 'unknown'}).", actual=local or None)
            return
        torch = self.facts.python.torch
        if local:
            reading = Reading.of(local, "dist-info local version")
        elif dist == "torch" and torch is not None and torch.kind != "unknown":
            # No local label (PyPI's default wheel, a source build): name the build the way
            # the wheel indexes do, from torch.version.cuda / .hip (FACTS.md §2.8).
            reading = Reading.of(torch_build_label(torch.kind, torch.cuda, torch.hip),
                                 f"{torch.source} (no local version label)")
        else:
            reading = Reading.missing(f"{dist} {installed} has no local version label")
        self.compare(fact, f"{name} build", build, reading)

    def packages(self) -> None:
        locked = self.lock.packages
        if locked is None:
            return
        python = self.facts.python
        if not python.distributions:
            self.add("packages-missing", "packages", "missing",
                     f"{len(locked)} Python packages are locked but none were found: "
                     f"{python.reason or 'empty site-packages'}.",
                     source=self.source_of(Pinned(origin="host", reason="-")))
            return
        installed = {normalize_name(d.name): d.version for d in python.distributions}
        src = self.source_of(Pinned(origin="host", reason="-"))
        locked_tritons = {n: v for n, v in locked.items() if n in TRITON_DISTRIBUTIONS}
        host_tritons = {n: v for n, v in installed.items() if n in TRITON_DISTRIBUTIONS}
        if locked_tritons and not host_tritons:
            exp = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items()))
            self.add("triton-missing", "packages.triton", "missing",
                     f"Triton ({exp}) is locked but no Triton distribution is installed.",
                     expected=exp, source=src)
        elif locked_tritons != host_tritons:
            exp = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items())) or "none"
            act = ", ".join(f"{n}=={v}" for n, v in sorted(host_tritons.items())) or "none"
            self.add("triton-swapped", "packages.triton", "mismatch",
                     f"Triton is {act}, the lock has {exp}: the distribution that provides "
                     "`import triton` was replaced (AMD's AITER does this unless "
                     "AITER_USE_SYSTEM_TRITON=1; a dependency can pull CUDA Triton).",
                     expected=exp, actual=act, source=src)
        elif locked_tritons:
            text = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items()))
            self.add("triton", "packages.triton", "match", f"Triton is {text}.",
                     expected=text, actual=text)
        changed, gone, extra = [], [], []
        for name, version in sorted(locked.items()):
            if name in TRITON_DISTRIBUTIONS:
                continue
            have = installed.get(name)
            if have is None:
                gone.append(f"{name}=={version}")
            elif have != version:
                changed.append((name, version, have))
        for name, version in sorted(installed.items()):
            if name not in locked and name not in TRITON_DISTRIBUTIONS:
                extra.append(f"{name}=={version}")
        for name, version, have in changed:
            self.add("package-changed", f"packages.{name}", "mismatch",
                     f"{name} is {have}, the lock has {version}.", expected=version, actual=have,
                     source=src)
        for item in gone:
            self.add("package-missing", f"packages.{item.split('==')[0]}", "missing",
                     f"{item} is locked but not installed.", expected=item, source=src)
        if extra:
            self.add("package-extra", "packages", "mismatch",
                     f"Installed but not in the lock: {', '.join(extra[:10])}"
                     + (f" and {len(extra) - 10} more" if len(extra) > 10 else "") + ".",
                     actual=", ".join(extra), source=src, severity="warning")
        if not (changed or gone or extra):
            self.add("packages", "packages", "match",
                     f"All {len(locked)} locked Python packages match.")

    def model(self) -> None:
        model = self.lock.model
        if model is None:
            return
        cached = self.facts.model
        if cached is None or cached.id != model.id:
            self.add("not-probed", "model.revision", "not-probed",
                     f"The Hugging Face cache was not probed for {model.id}; run `pin probe "
                     "--lock LOCK` or `pin verify` live.", expected=model.revision)
        elif model.revision in cached.revisions:
            self.add("model", "model.revision", "match",
                     f"{model.id} revision {model.revision} is in the cache.",
                     expected=model.revision, actual=model.revision)
        elif not cached.revisions:
            self.add("model-missing", "model.revision", "missing",
                     f"{model.id}: {(cached.reason or 'not cached').rstrip('.')}.",
                     expected=model.revision)
        else:
            self.add("model-mismatch", "model.revision", "mismatch",
                     f"{model.id} is cached at {', '.join(cached.revisions)}, the lock has "
                     f"{model.revision}.", expected=model.revision,
                     actual=", ".join(cached.revisions))

    def image(self) -> None:
        image = self.lock.image
        container = self.facts.container
        if image.digest.value is None or not container.inside:
            return
        self.compare("image.digest", "container image", image.digest, container.image_digest)

    def environment(self) -> None:
        host_env = self.facts.environment
        for name, value in sorted(self.lock.environment.items()):
            have = host_env.get(name)
            if have == value:
                self.add("env", f"environment.{name}", "match", f"{name}={value}.",
                         expected=value, actual=have)
            else:
                now = f"is {have!r}" if have is not None else "is not set"
                self.add("env-mismatch", f"environment.{name}", "mismatch" if have else "missing",
                         f"{name} {now} on the host, the lock has {value!r}.",
                         expected=value, actual=have)
        if self.lock.frozen is None:
            return
        for name, value in sorted(host_env.items()):
            if name in self.lock.environment or name in NOT_JUDGED_ENV:
                continue
            self.add("env-extra", f"environment.{name}", "mismatch",
                     f"{name}={value} is set on the host but not in the lock; it changes kernels "
                     "or numerics.", actual=value, source=HAZARDS_SOURCE)


def _allowed_text(pinned: Pinned) -> str:
    if pinned.allowed:
        return ", ".join(pinned.allowed)
    if pinned.constraint:
        return pinned.constraint
    return pinned.value or "unknown"


def _floor(pinned: Pinned) -> str | None:
    """The lowest version an ``allowed`` list or ``>=`` constraint accepts, if numeric."""
    if pinned.constraint:
        return constraint_bounds(pinned.constraint)[0]
    bases = [_or_later(a)[0] for a in pinned.allowed or []]
    bases = [b for b in bases if re.fullmatch(r"[0-9]+(\.[0-9]+)+", b)]
    if not bases:
        return None
    return min(bases, key=lambda b: tuple(int(x) for x in b.split(".")))


def verify(lock: Lockfile, facts: HostFacts, matrix: Matrix, *, lock_name: str, host_name: str,
           strict: bool = False) -> VerifyReport:
    """Compare ``lock`` with ``facts`` (see the module docstring); pure.

    ``lock_name`` / ``host_name`` label the report. With ``strict``, warnings (see
    :class:`VerifyReport`) also count as drift.
    """
    from pinning.probe.models import snapshot_hash

    v = _Verifier(lock, facts, matrix)
    v.target()
    v.firmware()
    v.driver()
    v.os_and_kernel()
    v.runtime()
    v.frameworks()
    v.packages()
    v.model()
    v.image()
    v.environment()
    from pinning.guards.engine import GuardContext, guard_findings

    view = view_from_facts(facts)
    rule_findings = run_checks(view, matrix)
    rule_findings += guard_findings(
        # The host's own runtime (view.rocm_version), not the lock's: the rules judge the host.
        GuardContext(view=view, gpu_ids=[g.product for g in facts.gpus if g.product],
                     platform="linux"),
        "verify", {f.code for f in rule_findings}, include_skipped=True)
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
