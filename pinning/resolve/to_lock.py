"""Turn a :class:`~pinning.resolve.resolver.Resolution` into a sealed :class:`Lockfile` (pure)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from pinning import __version__
from pinning.errors import UsageError
from pinning.lockfile.io import amend, seal
from pinning.lockfile.models import Lockfile
from pinning.lockfile.serving import Extension, Serving
from pinning.matrix.load import Matrix
from pinning.matrix.models import WheelVariant
from pinning.matrix.names import FIRMWARE_KIND
from pinning.matrix.provenance import Provenance
from pinning.resolve.constraints import Constraints
from pinning.resolve.result import Resolution
from pinning.util.text import control_chars

FREEZE = "freeze it from the trial host (pin freeze)"
MODEL_FILES_NOT_READ = ("the model's files were not read; run `pin lock model LOCK` where the "
                        "model is downloaded, or freeze it from the trial host (pin freeze)")


def regenerate_command(request: dict[str, Any], overlays: Sequence[str]) -> str:
    """The ``pin resolve`` command line that reproduces a lock: built from the canonical
    ``request`` (:func:`canonical_request`) and the overlays, quoted. It names no output
    path, so a lock's bytes do not depend on where it was written.
    """
    argv = ["pin", "resolve", "--gpu", request["gpu"]]
    for fw in request["frameworks"]:
        argv += ["--framework", fw]
    for key in ("rocm", "cuda", "os", "model", "as-of"):
        if request.get(key) is not None:
            argv += [f"--{key}", request[key]]
    for o in overlays:
        argv += ["--matrix", o]
    return shlex.join(argv)


def canonical_gpu(res: Resolution, matrix: Matrix) -> str:
    """The GPU of the request in one spelling: the matrix id (``mi300x`` for ``MI300X``,
    ``Instinct MI300X``, ``0x74a1``); for a query that names several products, their gfx
    target or compute capability when that names the same set, else the query in lower
    case with runs of space as one.
    """
    if res.gpu is not None:
        return res.gpu.id
    ids = sorted(g.id for g in res.gpu_candidates)
    try:
        found = matrix.find_gpu(res.target)
    except UsageError:
        found = []
    if isinstance(found, list) and sorted(g.id for g in found) == ids:
        return res.target.lower()
    return " ".join(res.constraints.gpu.split()).lower()


def canonical_request(res: Resolution, matrix: Matrix) -> dict[str, Any]:
    """``[request]`` in canonical spelling (absent flags left out): the GPU id
    (:func:`canonical_gpu`), frameworks by matrix name with a normalised specifier
    (``torch == 2.13.0`` -> ``pytorch==2.13.0``) sorted by name, runtime specifiers as
    ``packaging`` prints them, ``--os`` as ``id-version``.
    """
    c = res.constraints
    return {k: v for k, v in {
        "gpu": canonical_gpu(res, matrix),
        "frameworks": sorted(str(f) for f in c.frameworks),
        "rocm": str(c.rocm) if c.rocm is not None else None,
        "cuda": str(c.cuda) if c.cuda is not None else None,
        "os": f"{c.os[0]}-{c.os[1]}" if c.os else None,
        "model": c.model.text if c.model else None,
        "as-of": c.as_of.isoformat() if c.as_of else None,
    }.items() if v is not None}


def with_build_steps(lock: Lockfile, steps: Sequence[str]) -> Lockfile:
    """``lock`` with shell ``steps`` to run after the locked install (``--build-step``),
    recorded in ``build-steps`` and in the regenerate command; unchanged when there are none.

    Raises :class:`~pinning.errors.UsageError` for a step of more than one line or with
    another control character (ESC, NUL...; a tab is kept).
    """
    if any("\n" in s or "\r" in s for s in steps):
        raise UsageError("--build-step must be one line; give several --build-step flags.")
    if any(control_chars(s, allow="\t") for s in steps):
        raise UsageError("--build-step must be text without control characters (ESC, NUL...).")
    if not steps:
        return lock
    command = lock.generator.command + "".join(f" --build-step {shlex.quote(s)}" for s in steps)
    return amend(lock, build_steps=list(steps),
                 generator=lock.generator.model_copy(update={"command": command}))


def with_serving(lock: Lockfile, serving: Serving | None, extensions: Sequence[Extension]
                 ) -> Lockfile:
    """``lock`` with the serving choices (``[serving]``, ``[[extensions]]``) of ``pin
    resolve --quantization / --attention / --head-dim / --dtype / --extension``, also written
    into the regenerate command; unchanged when there are none. Parse the flags with
    :func:`pinning.guards.serving.serving_from_flags`.
    """
    if serving is None and not extensions:
        return lock
    from pinning.guards.serving import serving_flags

    flags = serving_flags(serving, extensions)
    command = lock.generator.command + " " + shlex.join(flags)
    return amend(lock, serving=serving, extensions=list(extensions) or None,
                 generator=lock.generator.model_copy(update={"command": command}))


def _row(ref: str, p: Provenance) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": ref, "source": p.source}
    if p.url:
        out["url"] = p.url
    if p.published:
        out["published"] = p.published.isoformat()
    elif p.undated:
        out["published-unknown"] = p.undated
    if p.checked:
        out["checked"] = p.checked.isoformat()
    return out


def _pin(value: str | None, origin: str, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"value": value, "origin": origin}
    out.update({k: v for k, v in kw.items() if v is not None})
    return out


def lock_from_resolution(
    res: Resolution, matrix: Matrix, *, overlays: Sequence[str] = ()
) -> Lockfile:
    """Build the lock for ``res``. ``overlays`` are the overlay paths as the user gave them
    (recorded in the lock and the regenerate command). The same request in any spelling,
    written anywhere, gives the same lock (:func:`canonical_request`; no output path).
    ``[status]`` is ``validated``, or ``unconfirmed`` with ``res.unconfirmed`` as reasons.
    """
    c = res.constraints
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    release = res.release
    target = _target(res, matrix, rows)
    if release is not None:
        rows.append(_row(release.ref, release.release))
    # Each section appends the matrix rows it used, in this order.
    firmware, kmd_ref = _firmware(res, matrix, rows, notes)
    kernel_driver = _kernel_driver(res, kmd_ref, rows)
    runtime = _runtime(res, matrix, rows)
    frameworks = _frameworks(res, matrix, rows)
    if release is not None and release.release.unknown:
        unknown = ", ".join(k for k in ("os", "kmd", "firmware") if k in release.release.unknown)
        if unknown:
            notes.insert(0, f"ROCm {res.runtime_version}: the matrix source does not state "
                         f"{unknown}; those fields must be frozen from the trial host "
                         "(pin freeze) before this lock can be verified.")
    notes.extend(res.notes)
    request = canonical_request(res, matrix)
    data: dict[str, Any] = {
        "generator": {"name": "pin", "version": __version__,
                      "command": regenerate_command(request, overlays)},
        "request": request,
        "matrix": _provenance(matrix, c, overlays, rows),
        "target": target,
        "firmware": firmware,
        "kernel-driver": kernel_driver,
        "os": _os(res),
        "kernel": _pin(None, "unknown", reason=f"the matrix does not bind a kernel version; "
                       f"{FREEZE}"),
        "runtime": runtime,
        "frameworks": frameworks,
        "image": {
            "base": _pin(None, "unknown", reason="no base image chosen yet; pin build records it"),
            "base-digest": _pin(None, "unknown", reason="set with the base image by pin build"),
            "digest": _pin(None, "unknown", reason="not built yet; pin build records the "
                           "manifest digest"),
        },
        "environment": {},
        "notes": notes,
        "status": res.status.model_dump(mode="json", by_alias=True),
    }
    if c.model is not None:
        data["model"] = {k: v for k, v in {
            "id": c.model.id, "revision": c.model.revision, "path": c.model.path,
            "origin": "user", "files-unknown": MODEL_FILES_NOT_READ}.items() if v is not None}
    return seal(data)


def _provenance(matrix: Matrix, c: Constraints, overlays: Sequence[str],
                rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The matrix hash, its files (overlays with the path the user gave) and the rows used,
    each once, in the order first used.
    """
    seen: set[str] = set()
    uniq_rows = []
    for row in rows:
        if row["ref"] not in seen:
            seen.add(row["ref"])
            uniq_rows.append(row)
    overlay_iter = iter(overlays)
    return {
        "sha256": matrix.sha256,
        **({"as-of": c.as_of.isoformat()} if c.as_of else {}),
        "sources": [
            {"name": f.name, "sha256": f.sha256, "overlay": f.overlay,
             **({"path": next(overlay_iter, str(f.path))} if f.overlay else {})}
            for f in matrix.files
        ],
        "rows": uniq_rows,
    }


def _target(res: Resolution, matrix: Matrix, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``[target]``: vendor, GPU (or the products sharing a target), gfx target or compute
    capability, PCI device IDs.
    """
    gpu = res.gpu
    gpu_ref: str | None = None
    if gpu is not None:
        gpu_file = next((f.name for f in matrix.files if gpu in f.data.gpus), "gpus")
        gpu_ref = f"{gpu_file}:{gpu.id}"
        rows.append(_row(gpu_ref, gpu))
        gpu_pin = _pin(gpu.name, "user", ref=gpu_ref)
    else:
        names = [g.name for g in res.gpu_candidates]
        gpu_pin = _pin(None, "user", allowed=names, reason=(
            f"given by {'gfx target' if res.vendor == 'amd' else 'compute capability'} "
            f"{res.target}, shared by {', '.join(names)}; {FREEZE}"))
    target: dict[str, Any] = {"vendor": res.vendor, "gpu": gpu_pin}
    tkey = "gfx-target" if res.vendor == "amd" else "compute-capability"
    target[tkey] = _pin(res.target, "matrix" if gpu else "user", ref=gpu_ref)
    target["pci-device-ids"] = list(gpu.pci_device_ids) if gpu else []
    return target


def _firmware(res: Resolution, matrix: Matrix, rows: list[dict[str, Any]], notes: list[str]
              ) -> tuple[dict[str, Any], str | None]:
    """``[firmware]`` and the matrix row the amdgpu/KMD set comes from (AMD's firmware table
    when there is one, else the release row).
    """
    rel_ref = res.release.ref if res.release else None
    if res.vendor != "amd":
        return {"kind": "vbios", "version": _pin(None, "unknown",
                                                 reason=res.firmware_unknown)}, None
    fam = res.gpu.family if res.gpu else None
    kind = res.firmware[0].firmware_kind if res.firmware else FIRMWARE_KIND.get(
        fam or "", "firmware")
    if not res.firmware:
        return {"kind": kind, "version": _pin(None, "unknown",
                                              reason=f"{res.firmware_unknown}")}, rel_ref
    fwr = res.firmware[0]
    fw_file = next(f.name for f in matrix.files if fwr in f.data.firmware)
    ref = f"{fw_file}:rocm-{fwr.runtime_version}/{fwr.gpu}"
    rows.append(_row(ref, fwr))
    allowed = [v.value + (" (or later)" if v.or_later else "") for v in fwr.firmware]
    notes.extend(fwr.notes)
    return {"kind": kind, "version": _pin(None, "matrix", ref=ref, allowed=allowed,
                                          reason=FREEZE)}, ref


def _kernel_driver(res: Resolution, kmd_ref: str | None, rows: list[dict[str, Any]]
                   ) -> dict[str, Any]:
    """``[kernel-driver]``: the amdgpu/KMD set, or NVIDIA's driver constraint."""
    if res.vendor == "amd":
        if res.kmd_allowed:
            drv = _pin(None, "matrix", ref=kmd_ref, allowed=list(res.kmd_allowed), reason=FREEZE)
        else:
            drv = _pin(None, "unknown", reason=res.kmd_unknown or "not stated by the matrix")
        return {"name": "amdgpu", "version": drv}
    if res.driver_rule is not None and res.driver_ref:
        rows.append(_row(res.driver_ref, res.driver_rule))
    return {"name": "nvidia", "version": _pin(
        None, "matrix" if res.driver_constraint else "unknown",
        ref=res.driver_ref,
        constraint=res.driver_constraint,
        reason=FREEZE if res.driver_constraint else "no driver rule for this CUDA major")}


def _os(res: Resolution) -> dict[str, Any]:
    """``os``: the entry ``--os`` picked from the allowed set, the set, or unknown."""
    c = res.constraints
    rel_ref = res.release.ref if res.release else None
    if res.os_allowed is not None:
        return _pin(res.os_chosen, "user" if res.os_chosen else "matrix", ref=rel_ref,
                    allowed=res.os_allowed, reason=None if res.os_chosen else FREEZE)
    if c.os is not None:
        return _pin(f"{c.os[0]}-{c.os[1]}", "user", reason=f"not validated: {res.os_unknown}")
    return _pin(None, "unknown", reason=res.os_unknown or "not stated by the matrix")


def _wheel_ref(matrix: Matrix, w: WheelVariant) -> str:
    """``<file>:<framework>-<series>-<tag>`` of a wheel variant row."""
    wfile = next(f.name for f in matrix.files if w in f.data.wheels)
    return f"{wfile}:{w.framework}-{w.series}-{w.tag}"


def _runtime(res: Resolution, matrix: Matrix, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``[runtime]``: the ROCm release and HIP version, or the CUDA release (and the
    toolkit's bundled driver).
    """
    runtime: dict[str, Any] = {"name": res.runtime}
    release = res.release
    if res.vendor == "amd" and release is not None:
        r = release.release
        runtime["version"] = _pin(res.runtime_version, "matrix", ref=release.ref)
        runtime["hip"] = (_pin(r.hip, "matrix", ref=release.ref) if r.hip else
                          _pin(None, "unknown", reason=r.unknown.get("hip", "not stated")))
        if r.components:
            runtime["components"] = {k: _pin(v, "matrix", ref=release.ref)
                                     for k, v in sorted(r.components.items())}
        return runtime
    wref = _wheel_ref(matrix, res.wheels[0]) if res.wheels else None
    runtime["version"] = _pin(res.runtime_version, "matrix", ref=wref)
    if res.toolkit is not None and res.toolkit_driver and res.toolkit_ref:
        rows.append(_row(res.toolkit_ref, res.toolkit))
        runtime["toolkit-driver"] = _pin(res.toolkit_driver, "matrix", ref=res.toolkit_ref)
    return runtime


def _frameworks(res: Resolution, matrix: Matrix, rows: list[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """``[[frameworks]]``: each framework's version (release or series) and build."""
    rel_ref = res.release.ref if res.release else None
    frameworks: list[dict[str, Any]] = []
    for fw in res.frameworks:
        if fw.version is None:
            ver = _pin(None, "unknown", ref=rel_ref, reason=f"{fw.unknown}; {FREEZE}")
        elif fw.series:
            ver = _pin(fw.version, "matrix", ref=rel_ref, allowed=fw.allowed,
                       reason=f"the matrix validates the {fw.version} series; freeze the exact "
                       "release from the trial host")
        else:
            ver = _pin(fw.version, "matrix", ref=rel_ref, allowed=fw.allowed)
        if res.vendor == "nvidia":
            w = next(x for x in res.wheels if x.framework == fw.name)
            wref = _wheel_ref(matrix, w)
            rows.append(_row(wref, w))
            ver = {**ver, "ref": wref}
            build = _pin(fw.variant, "matrix", ref=wref, allowed=fw.published_variants or None)
        elif fw.variant:
            build = _pin(fw.variant, "matrix", allowed=fw.published_variants or None)
        else:
            build = _pin(None, "unknown", allowed=fw.published_variants or None,
                         reason=(fw.unknown if fw.version and fw.unknown else
                                 f"the matrix names no build of {fw.name}; {FREEZE}"))
        frameworks.append({"name": fw.name, "version": ver, "build": build,
                           "status": fw.status, "notes": list(fw.notes)})
    return sorted(frameworks, key=lambda f: str(f["name"]))
