"""``pin freeze``: write a trial host's exact values into a lock (pure; the CLI writes).

Frozen values get ``origin = "host"``; the matrix's ``allowed`` / ``constraint`` stay beside
them so ``pin verify`` can still say when a later host leaves the validated set. The lock
records the snapshot hash it was frozen from (``[frozen]``) and the host's exact Python
distributions (``[packages]``). A host outside what the lock validated is refused
(:class:`~pinning.errors.DriftError`, exit 6) unless ``force``, which records each deviation.
"""

from __future__ import annotations

from typing import Any

from pinning import __version__
from pinning.checks import Finding
from pinning.errors import DriftError
from pinning.lockfile.io import lock_json, seal
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import (
    RUN_SCOPED_ENV,
    HostFacts,
    Reading,
    normalize_name,
    snapshot_hash,
)
from pinning.verify import FRAMEWORK_DISTRIBUTIONS, host_os_text, verify


def _frozen_facts(lock: Lockfile) -> set[str]:
    facts = set()
    if lock.firmware.version.origin == "host":
        facts.add("firmware.version")
    if lock.kernel_driver.version.origin == "host":
        facts.add("kernel_driver.version")
    for name, pinned in (("os", lock.os), ("kernel", lock.kernel),
                         ("runtime.version", lock.runtime.version)):
        if pinned.origin == "host":
            facts.add(name)
    for fw in lock.frameworks:
        if fw.version.origin == "host":
            facts.add(f"frameworks.{fw.name}.version")
        if fw.build.origin == "host":
            facts.add(f"frameworks.{fw.name}.build")
    return facts


def deviations(lock: Lockfile, facts: HostFacts, matrix: Matrix) -> list[Finding]:
    """Error findings that put ``facts`` outside what ``lock`` validated; values previously
    frozen, packages and environment are not counted (a freeze replaces them).
    """
    report = verify(lock, facts, matrix, lock_name="lock", host_name="host")
    replaced = _frozen_facts(lock)
    return [
        f for f in report.findings
        if f.severity == "error"
        and f.fact not in replaced
        and not f.fact.startswith(("packages", "environment"))
    ]


def _set(pinned: dict[str, Any], reading: Reading | str | None) -> bool:
    value = reading.value if isinstance(reading, Reading) else reading
    if not value:
        return False
    pinned["value"] = value
    pinned["origin"] = "host"
    pinned.pop("reason", None)
    return True


def freeze(lock: Lockfile, facts: HostFacts, matrix: Matrix, *, host_label: str,
           force: bool = False) -> tuple[Lockfile, list[Finding], list[str]]:
    """Return ``(frozen lock, deviations, facts left unfrozen)``.

    Raises :class:`DriftError` (exit 6) when the host deviates and ``force`` is false.
    """
    found = deviations(lock, facts, matrix)
    if found and not force:
        lines = "\n".join(f"  - {f.fact}: {f.message}" for f in found)
        raise DriftError(
            f"This host is outside what the lock validated; nothing was written.\n{lines}",
            hint="Fix the host, resolve a lock that fits it, or pass --force to record the "
                 "deviations in the lock.",
        )
    data = lock_json(lock)
    unfrozen: list[str] = []
    gpus = [g for g in facts.gpus if g.vendor == lock.target.vendor]

    fw_kind = lock.firmware.kind
    readings = [g.pldm_bundle if fw_kind == "pldm-bundle" else g.vbios for g in gpus]
    values = sorted({r.value for r in readings if r is not None and r.value})
    if len(values) == 1:
        _set(data["firmware"]["version"], values[0])
    else:
        why = "GPUs report different values: " + ", ".join(values) if values else "not probed"
        unfrozen.append(f"firmware.version ({why})")

    if lock.kernel_driver.name == "amdgpu":
        driver = facts.amd.driver if facts.amd else None
    else:
        driver = facts.nvidia.driver if facts.nvidia else None
    if not _set(data["kernel-driver"]["version"], driver):
        unfrozen.append("kernel_driver.version (not probed)")
    if not _set(data["os"], host_os_text(facts)):
        unfrozen.append("os (no os-release)")
    if not _set(data["kernel"], facts.os.kernel):
        unfrozen.append("kernel (not probed)")
    if lock.runtime.name == "rocm" and facts.amd is not None:
        _set(data["runtime"]["version"], facts.amd.rocm)

    for fw_data, fw in zip(data["frameworks"], lock.frameworks, strict=True):
        dist = FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name)
        installed = facts.python.version_of(dist)
        if installed is None:
            unfrozen.append(f"frameworks.{fw.name} ({dist} not installed)")
            continue
        public, _, local = installed.partition("+")
        _set(fw_data["version"], public)
        if local:
            _set(fw_data["build"], local)

    if facts.python.distributions:
        data["packages"] = {normalize_name(d.name): d.version
                            for d in facts.python.distributions}
    else:
        unfrozen.append(f"packages ({facts.python.reason or 'no Python distributions found'})")
    data["environment"] = {k: v for k, v in sorted(facts.environment.items())
                           if k not in RUN_SCOPED_ENV}
    data["frozen"] = {
        "snapshot": snapshot_hash(facts),
        "host": host_label,
        "probed-by": facts.probe.tool,
        "forced": bool(found),
        "deviations": [f"{f.fact}: {f.message}" for f in found],
    }
    notes = [n for n in data.get("notes", []) if not n.startswith("Frozen from ")]
    notes.append(f"Frozen from {host_label} by pin {__version__}"
                 + (f"; not frozen: {'; '.join(unfrozen)}" if unfrozen else "") + ".")
    data["notes"] = notes
    data.pop("content-hash", None)
    return seal(data), found, unfrozen
