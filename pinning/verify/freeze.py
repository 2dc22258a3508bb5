"""``pin freeze``: write a trial host's exact values into a lock (pure; the CLI writes).

Frozen values get ``origin = "host"``; the matrix's ``allowed`` / ``constraint`` stay beside
them so ``pin verify`` can still say when a later host leaves the validated set. What is
frozen: GPU count, firmware (PLDM bundle / VBIOS / IFWI, the VBIOS string and per-engine
microcode), kernel driver version and flavour, OS, kernel, the CUDA toolkit (NVIDIA), each
framework's exact version and build, every Python distribution (``[packages]``), the
lock's model files as the host holds them (``[model]``), the
compiled extensions the host shows (``[[extensions]]``: flash-attn, AITER, vLLM's kernels...;
:data:`~pinning.guards.serving.EXTENSION_SOURCES`) and the
variables that change kernels or numerics (``[environment]``). The ROCm / CUDA release stays
the matrix's: a host on another release is a deviation, not a new value.

A host outside what the lock validated is refused (:class:`~pinning.errors.DriftError`,
exit 6) unless ``force``, which records each deviation under ``[frozen]``.
"""

from __future__ import annotations

from typing import Any

from pinning import __version__
from pinning.errors import DriftError
from pinning.guards.serving import host_extensions
from pinning.guards.view import Finding
from pinning.lockfile.io import amend, lock_json
from pinning.lockfile.models import Lockfile, Model, Pinned, model_content_hash
from pinning.lockfile.serving import Extension
from pinning.matrix.load import Matrix
from pinning.matrix.names import FRAMEWORK_DISTRIBUTIONS
from pinning.probe.models import NOT_JUDGED_ENV, GpuFacts, HostFacts, Reading, snapshot_hash
from pinning.util.text import printable
from pinning.util.versions import normalize_name
from pinning.verify.compare import host_os_text
from pinning.verify.report import verify


def _frozen_facts(lock: Lockfile) -> set[str]:
    """Facts whose value a previous freeze set (``origin = "host"``)."""
    pinned: list[tuple[str, Pinned | None]] = [
        ("target.count", lock.target.count),
        ("firmware.version", lock.firmware.version),
        ("firmware.vbios", lock.firmware.vbios),
        ("kernel_driver.version", lock.kernel_driver.version),
        ("kernel_driver.flavor", lock.kernel_driver.flavor),
        ("os", lock.os),
        ("kernel", lock.kernel),
        ("runtime.toolkit", lock.runtime.toolkit),
    ]
    for fw in lock.frameworks:
        pinned += [(f"frameworks.{fw.name}.version", fw.version),
                   (f"frameworks.{fw.name}.build", fw.build)]
    out = {name for name, p in pinned if p is not None and p.origin == "host"}
    if lock.firmware.blocks is not None:
        out.add("firmware.blocks")
    if lock.packages is not None:
        out.add("packages")
    out |= {f"extensions.{e.name}" for e in lock.extensions or [] if e.origin == "host"}
    return out


def deviations(lock: Lockfile, facts: HostFacts, matrix: Matrix) -> list[Finding]:
    """Error findings that put ``facts`` outside what ``lock`` validated.

    A previous freeze's exact values do not count (a freeze replaces them), nor do changed
    packages, variables or the model (fetched later); whether the host is inside the matrix's
    sets, the runtime release, hazards (two Tritons, a torch for the other vendor) and
    absences always count.
    """
    report = verify(lock, facts, matrix, lock_name="lock", host_name="host")
    replaced = _frozen_facts(lock)
    return [
        f for f in report.findings
        if f.severity == "error"
        and not (f.status == "mismatch" and f.fact in replaced)
        and not (f.status != "hazard" and f.fact.startswith(("packages", "environment", "model")))
    ]


def _set(pinned: dict[str, Any], reading: Reading | str | None) -> bool:
    value = reading.value if isinstance(reading, Reading) else reading
    if not value:
        return False
    if pinned.get("origin") != "host":
        pinned.pop("reason", None)  # the reason said why it was open; a re-freeze keeps notes
    pinned["value"] = value
    pinned["origin"] = "host"
    return True


def _host_pinned(value: str) -> dict[str, Any]:
    return {"value": value, "origin": "host"}


def _common(values: list[str | None]) -> tuple[str | None, str | None]:
    """The one value all GPUs report, or ``(None, why)``."""
    known = sorted({v for v in values if v})
    if not values:
        return None, "no GPU of the lock's vendor"
    if not known:
        return None, "not probed"
    if not all(values):
        return None, "not probed on every GPU"
    if len(known) > 1:
        return None, "GPUs report different values: " + ", ".join(known)
    return known[0], None


def _common_blocks(gpus: list[GpuFacts]) -> tuple[dict[str, str], list[str]]:
    """Firmware blocks with the same version on every GPU, and the blocks that differ."""
    if not gpus:
        return {}, []
    names = sorted({k for g in gpus for k in g.firmware})
    same, differ = {}, []
    for k in names:
        values = [g.firmware.get(k) for g in gpus]
        if len(set(values)) == 1 and values[0] is not None:
            same[k] = values[0]
        else:
            differ.append(f"{k} " + "/".join(v or "absent" for v in values))
    return same, differ


def freeze(lock: Lockfile, facts: HostFacts, matrix: Matrix, *, host_label: str,
           force: bool = False) -> tuple[Lockfile, list[Finding], list[str]]:
    """Return ``(frozen lock, deviations, facts left unfrozen)``.

    Raises :class:`DriftError` (exit 6), writing nothing, when the host deviates from what
    the lock validated, or when a value a previous freeze set cannot be read on this host;
    with ``force`` both are recorded in ``[frozen]`` instead (an unreadable value keeps its
    previous value).
    """
    found = deviations(lock, facts, matrix)
    data = lock_json(lock)
    unfrozen: list[str] = []
    _freeze_hardware(lock, facts, data, unfrozen)
    _freeze_system(lock, facts, data, unfrozen)
    _freeze_frameworks(lock, facts, data, unfrozen)
    if facts.python.distributions:
        data["packages"] = {normalize_name(d.name): d.version
                            for d in facts.python.distributions}
    else:  # a previous freeze's packages stay only with --force (see `lost` below)
        unfrozen.append(f"packages ({facts.python.reason or 'no Python distributions found'})")

    model, model_found = _freeze_model(lock, facts, unfrozen)
    found += model_found
    still = _frozen_facts(lock)
    lost = sorted(f for f in still if any(u.startswith(f + " ") for u in unfrozen))
    lost_findings = [
        Finding(code="not-refrozen", fact=f, status="not-probed", severity="error",
                message=f"{f} was frozen before but cannot be read on this host; keeping the "
                        "old value would credit it to the new snapshot.")
        for f in lost
    ]
    found += lost_findings
    if found and not force:
        lines = "\n".join(f"  - {f.fact}: {f.message}" for f in found)
        raise DriftError(
            f"This host is outside what the lock validated; nothing was written.\n{lines}",
            hint="Fix the host, resolve a lock that fits it, or pass --force to record the "
                 "deviations in the lock.",
        )

    extensions = _freeze_extensions(lock, facts)
    environment = {k: v for k, v in sorted(facts.environment.items())
                   if k not in NOT_JUDGED_ENV}
    frozen = {
        "snapshot": snapshot_hash(facts),
        "host": host_label,
        "probed-by": facts.probe.tool,
        "forced": bool(found),
        "deviations": [f"{f.fact}: {f.message}" for f in found],
    }
    notes = [n for n in lock.notes if not n.startswith("Frozen from ")]
    notes.append(f"Frozen from {host_label} by pin {__version__}"
                 + (f"; not frozen: {'; '.join(unfrozen)}" if unfrozen else "") + ".")
    frozen_lock = amend(
        lock, target=data["target"], firmware=data["firmware"],
        kernel_driver=data["kernel-driver"], os=data["os"], kernel=data["kernel"],
        runtime=data["runtime"], frameworks=data["frameworks"], packages=data.get("packages"),
        environment=environment, frozen=frozen, notes=notes, extensions=extensions,
        model=model)
    return frozen_lock, found, unfrozen


def _freeze_model(lock: Lockfile, facts: HostFacts, unfrozen: list[str]
                  ) -> tuple[Model | None, list[Finding]]:
    """The lock's ``[model]`` with the files the trial host holds (``origin = "host"``, the
    content hash set), and error findings for what must not be frozen: a cache blob whose
    bytes do not match its name (left out of ``files``, listed in ``missing``), or files a
    previous freeze pinned that this host lacks. A model the host lacks gets ``files-unknown``
    with the reason, never guessed files; files the host could not read go to ``missing``.
    The lock's model is kept as it is when the host's files were not read (a snapshot
    without them), noted in ``unfrozen``.
    """
    model = lock.model
    if model is None:
        return None, []
    seen = facts.model
    if seen is None or seen.source is None or (seen.id, seen.path) != (model.id, model.path):
        unfrozen.append("model.files (the host's files of the model were not read; freeze "
                        "live, on a --root tree, or from a snapshot `pin probe --lock LOCK` "
                        "wrote)")
        return model, []
    found = [Finding(code="model-blob-mismatch", fact=f"model.files[{p.path}]",
                     status="mismatch", severity="error",
                     message=printable(f"the cache blob's bytes do not match its name "
                                       f"({p.detail}); not frozen", newlines=False))
             for p in seen.problems if p.kind == "blob-mismatch"]
    missing = sorted({p.path for p in seen.problems if not (
        p.kind == "incomplete" and p.path.startswith("blobs/"))})
    keep = {"id": model.id, "revision": model.revision, "path": model.path}
    if seen.files:
        frozen = Model(**keep, origin="host", files=seen.files, missing=missing,
                       content_hash=model_content_hash(seen.files))
        return frozen, found
    why = printable((seen.reason or "no file could be read").rstrip("."), newlines=False)
    unfrozen.append(f"model.files ({why})")
    if model.origin == "host" and model.files:
        found.append(Finding(code="not-refrozen", fact="model.files", status="missing",
                             severity="error",
                             message=f"{model.label}'s files were frozen before but are not on "
                                     f"this host ({why})."))
        return model, found
    return Model(**keep, origin="host", missing=missing,
                 files_unknown=f"not on the trial host: {why}"), found


def _freeze_extensions(lock: Lockfile, facts: HostFacts) -> list[Extension] | None:
    """The ``[[extensions]]`` after a freeze: each extension the host shows installed
    (:func:`~pinning.guards.serving.host_extensions`: the known kernel-carrying distributions
    and those the lock names), then the lock's other entries unchanged (one the host lacks is
    a deviation that ``force`` keeps). ``None`` when there is none.
    """
    seen = host_extensions(facts.python.distributions, lock.extensions or [])
    names = {e.name for e in seen}
    kept = [e for e in lock.extensions or [] if e.name not in names]
    return sorted([*seen, *kept], key=lambda e: e.name) or None


def _freeze_hardware(lock: Lockfile, facts: HostFacts, data: dict[str, Any],
                     unfrozen: list[str]) -> None:
    """Record the GPU count and the firmware common to all GPUs of the lock's vendor (PLDM
    bundle or VBIOS, the VBIOS string, per-engine blocks) into ``data`` (the lock's JSON
    form); what cannot be read goes to ``unfrozen`` with why.
    """
    gpus = [g for g in facts.gpus if g.vendor == lock.target.vendor]

    if gpus:
        data["target"]["count"] = _host_pinned(str(len(gpus)))
    else:
        unfrozen.append("target.count (no GPU of this vendor)")

    fw = data["firmware"]
    kind = lock.firmware.kind
    main = [g.pldm_bundle.value if kind == "pldm-bundle" and g.pldm_bundle else g.vbios.value
            for g in gpus]
    value, why = _common(main)
    if not _set(fw["version"], value):
        unfrozen.append(f"firmware.version ({why})")
    if kind == "pldm-bundle":
        vbios, why = _common([g.vbios.value for g in gpus])
        if vbios:
            fw["vbios"] = _host_pinned(vbios)
        else:
            unfrozen.append(f"firmware.vbios ({why})")
    blocks, differ = _common_blocks(gpus)
    if differ:
        unfrozen.append("firmware blocks that differ between GPUs (left out of the lock): "
                        + ", ".join(differ))
    if blocks:
        fw["blocks"] = blocks
    elif lock.firmware.blocks is not None:
        unfrozen.append("firmware.blocks (not probed)")


def _freeze_system(lock: Lockfile, facts: HostFacts, data: dict[str, Any],
                   unfrozen: list[str]) -> None:
    """Record the kernel driver (version, flavour), OS, kernel and CUDA toolkit."""
    kd = data["kernel-driver"]
    flavor: str | None
    if lock.kernel_driver.name == "amdgpu":
        driver = facts.amd.driver if facts.amd else None
        flavor = facts.amd.driver_kind if facts.amd else None
    else:
        driver = facts.nvidia.driver if facts.nvidia else None
        flavor = facts.nvidia.module_kind if facts.nvidia else None
    if not _set(kd["version"], driver):
        unfrozen.append("kernel_driver.version (not probed)")
    if flavor and flavor != "not-loaded":
        kd["flavor"] = _host_pinned(flavor)
    if not _set(data["os"], host_os_text(facts)):
        unfrozen.append("os (no os-release)")
    if not _set(data["kernel"], facts.os.kernel):
        unfrozen.append("kernel (not probed)")
    if lock.runtime.name == "cuda" and facts.nvidia and facts.nvidia.cuda_toolkit.known:
        data["runtime"]["toolkit"] = _host_pinned(str(facts.nvidia.cuda_toolkit.value))


def _freeze_frameworks(lock: Lockfile, facts: HostFacts, data: dict[str, Any],
                       unfrozen: list[str]) -> None:
    """Record each framework's exact version (the requested release or series kept as the
    allowed set) and its build (local version label).
    """
    for fw_data, fwk in zip(data["frameworks"], lock.frameworks, strict=True):
        dist = FRAMEWORK_DISTRIBUTIONS.get(fwk.name, fwk.name)
        installed = facts.python.version_of(dist)
        if installed is None:
            unfrozen.append(f"frameworks.{fwk.name}.version ({dist} not installed)")
            continue
        public, _, local = installed.partition("+")
        if fwk.version.origin != "host" and fwk.version.value:
            # Keep what was asked (a release, or a series such as "2.7") as the allowed set.
            fw_data["version"]["allowed"] = [fwk.version.value]
        _set(fw_data["version"], public)
        if local and _set(fw_data["build"], local) and fwk.build.origin == "unknown":
            # The upstream variants were a hint, not a validated set: keep them as a note.
            upstream = ", ".join(fwk.build.allowed or [])
            fw_data["build"].pop("allowed", None)
            if upstream:
                fw_data["build"]["reason"] = f"frozen from the host; upstream publishes {upstream}"
