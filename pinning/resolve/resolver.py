"""Constraints + matrix -> the newest validated stack (pure; no I/O).

The resolver reads only a loaded :class:`~pinning.matrix.load.Matrix`. For AMD a candidate
is a ROCm release row of AMD's matrix; for NVIDIA it is an upstream CUDA wheel variant of
each framework (the pairing PyTorch builds and tests) plus NVIDIA's driver rule. Every
candidate is kept with the reasons it lost, so ``--explain`` and the exit-4 message can
show why.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pinning.errors import NoValidatedCombination, UsageError
from pinning.matrix.load import Matrix, ReleaseRef, version_key
from pinning.matrix.models import (
    CudaToolkit,
    DriverRule,
    FirmwareRow,
    FrameworkSupport,
    GpuIdentity,
    WheelVariant,
)
from pinning.matrix.names import OS_ID_VERSION, os_matches

#: Other names users type for a framework -> the matrix name.
FRAMEWORK_ALIASES: dict[str, str] = {
    "torch": "pytorch",
    "tf": "tensorflow",
    "tensorflow-rocm": "tensorflow",
    "onnx-runtime": "onnxruntime",
    "onnxruntime-rocm": "onnxruntime",
    "flash-attn": "flash-attention",
    "flash_attn": "flash-attention",
    "flashattention": "flash-attention",
    "jaxlib": "jax",
}

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*$")
_MODEL = re.compile(r"^([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{40})$")
_OS = OS_ID_VERSION


@dataclass(frozen=True)
class FrameworkRequest:
    """One ``--framework NAME[SPEC]``: matrix name, PEP 440 specifier, and the raw text."""

    name: str
    spec: SpecifierSet
    raw: str

    def __str__(self) -> str:
        return f"{self.name}{self.spec}" if str(self.spec) else self.name


@dataclass(frozen=True)
class ModelRef:
    """A model pinned by Hugging Face id and 40-hex commit revision."""

    id: str
    revision: str


@dataclass(frozen=True)
class Constraints:
    """Everything the user asked for. ``os`` is ``(id, version)`` in os-release terms."""

    gpu: str
    frameworks: tuple[FrameworkRequest, ...]
    rocm: SpecifierSet | None = None
    cuda: SpecifierSet | None = None
    os: tuple[str, str] | None = None
    model: ModelRef | None = None
    as_of: dt.date | None = None


def parse_framework(text: str, known: Sequence[str] = ()) -> FrameworkRequest:
    """Parse ``pytorch==2.13.0`` / ``pytorch>=2.12`` / ``jax~=0.10.0`` / ``pytorch``.

    ``known`` are the framework names of the matrix: an unknown name is a ``UsageError``
    with a "did you mean". A malformed specifier is a ``UsageError`` (exit 2).
    """
    m = _NAME.match(text)
    if not m:
        raise UsageError(
            f"--framework {text!r}: expected NAME[SPEC], for example pytorch==2.13.0, "
            "pytorch>=2.12 or jax~=0.10.0."
        )
    name = m.group(1).lower().replace("_", "-")
    name = FRAMEWORK_ALIASES.get(name, name)
    try:
        spec = SpecifierSet(m.group(2))
    except InvalidSpecifier as exc:
        hint = " Use `==` for an exact version." if re.match(r"^=[^=]", m.group(2)) else ""
        raise UsageError(
            f"--framework {text!r}: {m.group(2)!r} is not a PEP 440 version specifier.{hint}",
            hint="Examples: pytorch==2.13.0, pytorch>=2.12, jax~=0.10.0.",
        ) from exc
    if known and name not in known:
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
        mean = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(
            f"--framework {text!r}: no framework named {name!r} in the matrix.{mean}",
            hint=f"Known frameworks: {', '.join(known)}.",
        )
    return FrameworkRequest(name=name, spec=spec, raw=text)


def parse_runtime_spec(flag: str, text: str) -> SpecifierSet:
    """Parse ``--rocm``/``--cuda`` SPEC; a bare version means ``==VERSION``."""
    t = text.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)*", t):
        t = f"=={t}" if t.count(".") >= 2 else f"=={t}.*"
    try:
        return SpecifierSet(t)
    except InvalidSpecifier as exc:
        raise UsageError(
            f"{flag} {text!r}: not a PEP 440 version specifier.",
            hint=f"Examples: {flag} 7.2.0, {flag} '>=7.0', {flag} '<7'.",
        ) from exc


def parse_model(text: str) -> ModelRef:
    """Parse ``ORG/NAME@REVISION`` where REVISION is a 40-hex commit; else ``UsageError``."""
    m = _MODEL.match(text.strip())
    if not m:
        raise UsageError(
            f"--model {text!r}: expected ORG/NAME@REVISION with a 40-hex commit revision.",
            hint="Find the commit on the model's Hugging Face page (Files and versions -> "
            "History); a branch name such as `main` moves and cannot be locked.",
        )
    return ModelRef(id=m.group(1), revision=m.group(2))


def parse_os(text: str) -> tuple[str, str]:
    """Parse ``--os ID-VERSION`` (os-release ``ID`` and ``VERSION_ID``), e.g. ``ubuntu-24.04``."""
    m = _OS.match(text.strip().lower())
    if not m:
        raise UsageError(
            f"--os {text!r}: expected ID-VERSION as in /etc/os-release, e.g. ubuntu-24.04, "
            "rhel-9.6, sles-15.7, debian-12."
        )
    return m.group(1), m.group(2)




def _ver(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def match_entry(entry: str, spec: SpecifierSet) -> str | None:
    """The version to lock if the matrix ``entry`` satisfies ``spec``, else ``None``.

    ``2.9.1`` is one release; a two-part entry such as ``2.9`` is the whole 2.9 series: it
    matches when some 2.9.x satisfies ``spec``, and an exact ``==2.9.1`` request locks 2.9.1.
    """
    v = _ver(entry)
    if v is None:
        return entry if not str(spec) else None
    if len(v.release) >= 3:
        return entry if spec.contains(v, prereleases=True) else None
    probes = [v]
    exact: Version | None = None
    for s in spec:
        sv = _ver(s.version.removesuffix(".*"))
        if sv is not None and sv.release[: len(v.release)] == v.release:
            probes.append(sv)
            if s.operator in ("==", "===") and not s.version.endswith(".*"):
                exact = sv
    if exact is not None:
        return str(exact) if spec.contains(exact, prereleases=True) else None
    return entry if any(spec.contains(p, prereleases=True) for p in probes) else None


@dataclass
class ChosenFramework:
    """A framework as resolved: locked version (or ``None`` + reason), the set the row allows."""

    name: str
    request: str
    version: str | None
    series: bool
    allowed: list[str] | None
    status: str
    notes: list[str] = field(default_factory=list)
    unknown: str | None = None
    variant: str | None = None
    published_variants: list[str] = field(default_factory=list)


@dataclass
class Considered:
    """One candidate the resolver looked at: its identity, whether it was valid, and why not."""

    ref: str
    runtime: str
    version: str
    source: str
    date: dt.date
    valid: bool
    reasons: list[str] = field(default_factory=list)
    frameworks: list[ChosenFramework] = field(default_factory=list)
    verdict: str = ""


@dataclass
class Resolution:
    """The chosen stack and everything that decided it.

    ``gpu`` is the identity (``None`` when the GPU was given by a gfx target several products
    share; ``target`` is then that target). ``release`` is the AMD matrix row for ROCm;
    ``wheel`` the chosen CUDA wheel variant for NVIDIA.
    """

    constraints: Constraints
    vendor: str
    gpu: GpuIdentity | None
    gpu_candidates: list[GpuIdentity]
    target: str
    runtime: str
    runtime_version: str
    release: ReleaseRef | None
    wheels: list[WheelVariant]
    frameworks: list[ChosenFramework]
    considered: list[Considered]
    os_allowed: list[str] | None
    os_unknown: str | None
    os_chosen: str | None
    kmd_allowed: list[str] | None
    kmd_unknown: str | None
    kmd_ref: str | None
    firmware: list[FirmwareRow]
    firmware_unknown: str | None
    driver_constraint: str | None
    driver_ref: str | None
    toolkit_driver: str | None
    driver_rule: DriverRule | None = None
    toolkit: CudaToolkit | None = None
    toolkit_ref: str | None = None
    notes: list[str] = field(default_factory=list)


def _gpu_restricted(matrix: Matrix, gpu: GpuIdentity | None, target: str, version: str,
                    os_entry: str, as_of: dt.date | None) -> str | None:
    """Reason the OS entry is ruled out for this GPU by a footnote restriction, or ``None``."""
    m = _OS.match(os_entry)
    if not m:
        return None
    want = (m.group(1), m.group(2))
    ids = {target} | ({gpu.id} if gpu else set())
    v = _ver(version)
    for row, f in matrix.os_restrictions(as_of=as_of):
        if v is None or not SpecifierSet(row.runtimes).contains(v, prereleases=True):
            continue
        gpu_in = bool(ids & set(row.gpus))
        os_in = any(os_matches(want, x) for x in row.os)
        if (
            (row.mode == "only-these-os" and gpu_in and not os_in)
            or (row.mode == "not-these-os" and gpu_in and os_in)
            or (row.mode == "os-only-on-gpus" and os_in and not gpu_in)
        ):
            return f"{os_entry} is restricted for this GPU ({row.mode}, {f.name}: {row.source})"
    return None


def _framework_in_release(req: FrameworkRequest, rr: ReleaseRef, target: str
                          ) -> tuple[ChosenFramework | None, str | None]:
    rel = rr.release
    entries = [fw for fw in rel.frameworks if fw.name == req.name]
    if not entries:
        return None, f"does not list {req.name}"
    reasons: list[str] = []
    best: tuple[Version, ChosenFramework] | None = None
    for fw in entries:
        why = _entry_blocked(fw, rel.version, target)
        if why:
            reasons.append(why)
            continue
        if fw.versions is None:
            if str(req.spec):
                reasons.append(f"{req.name}: {fw.versions_unknown}; cannot validate {req}")
                continue
            choice = ChosenFramework(
                name=req.name, request=req.raw, version=None, series=False, allowed=None,
                status=fw.status, notes=list(fw.notes), unknown=fw.versions_unknown,
            )
            return choice, None
        hits = [(e, match_entry(e, req.spec)) for e in fw.versions]
        ok = [(e, v) for e, v in hits if v is not None]
        if not ok:
            reasons.append(f"{req.name} {req.spec} not among {', '.join(fw.versions)}")
            continue
        entry, locked = max(ok, key=lambda t: _ver(t[1]) or Version("0"))
        key = _ver(locked) or Version("0")
        choice = ChosenFramework(
            name=req.name, request=req.raw, version=locked,
            series=locked == entry and len((_ver(entry) or Version("0")).release) < 3,
            allowed=list(fw.versions), status=fw.status, notes=list(fw.notes),
        )
        if best is None or key > best[0]:
            best = (key, choice)
    if best is not None:
        return best[1], None
    return None, "; ".join(reasons)


def _entry_blocked(fw: FrameworkSupport, version: str, target: str) -> str | None:
    if fw.targets is not None and target not in fw.targets:
        return f"{fw.name} is listed only for {', '.join(fw.targets)}"
    rv = _ver(version)
    if fw.min_runtime and rv is not None and rv < Version(fw.min_runtime):
        return f"{fw.name} needs runtime >= {fw.min_runtime}"
    need = fw.min_runtime_by_target.get(target)
    if need and rv is not None and rv < Version(need):
        return f"{fw.name} on {target} needs runtime >= {need}"
    return None


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
    if vendor == "amd":
        return _resolve_amd(matrix, c, gpu, gpus, target, diagnose)
    return _resolve_nvidia(matrix, c, gpu, gpus, target, diagnose)


def _resolve_amd(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None,
                 gpus: list[GpuIdentity], target: str, diagnose: bool) -> Resolution:
    considered: list[Considered] = []
    chosen: tuple[ReleaseRef, list[ChosenFramework]] | None = None
    for rr in matrix.releases(as_of=c.as_of):
        r = rr.release
        if r.vendor != "amd":
            continue
        reasons: list[str] = []
        if c.rocm is not None and not c.rocm.contains(Version(r.version), prereleases=True):
            reasons.append(f"outside --rocm {c.rocm}")
        if r.targets is None:
            reasons.append(f"GPU targets unknown: {r.unknown.get('targets', '')}")
        elif target not in r.targets:
            partial = "" if r.targets_complete else " (the source names only some targets)"
            reasons.append(f"{target} is not among its GPU targets{partial}")
        fws: list[ChosenFramework] = []
        for req in c.frameworks:
            fw, why = _framework_in_release(req, rr, target)
            if fw is None:
                reasons.append(why or f"{req} not validated")
            else:
                fws.append(fw)
        if c.os is not None:
            os_text = f"{c.os[0]}-{c.os[1]}"
            if r.os is None:
                reasons.append(f"OS list unknown ({r.unknown.get('os', '')}); cannot validate "
                               f"--os {os_text}")
            else:
                hits = [o for o in r.os if os_matches(c.os, o)]
                if not hits:
                    reasons.append(f"--os {os_text} is not among its operating systems")
                else:
                    blocked = [_gpu_restricted(matrix, gpu, target, r.version, o, c.as_of)
                               for o in hits]
                    if all(blocked):
                        reasons.append(str(blocked[0]))
        ok = not reasons
        entry = Considered(ref=rr.ref, runtime="rocm", version=r.version, source=r.source,
                           date=r.date, valid=ok, reasons=reasons, frameworks=fws)
        if ok and chosen is None:
            chosen = (rr, fws)
            entry.verdict = "chosen"
        elif ok:
            entry.verdict = f"valid, older than ROCm {chosen[0].release.version}" if chosen else ""
        else:
            entry.verdict = "rejected"
        considered.append(entry)
    if chosen is None:
        if not diagnose:
            raise NoValidatedCombination("no candidate")
        raise _no_combination(matrix, c, "amd", target, gpu, considered)
    rr, fws = chosen
    r = rr.release
    # OS set allowed for this GPU with this release.
    os_allowed: list[str] | None = None
    os_chosen: str | None = None
    if r.os is not None:
        os_allowed = [o for o in r.os
                      if not _gpu_restricted(matrix, gpu, target, r.version, o, c.as_of)]
        if c.os is not None:
            os_chosen = next((o for o in os_allowed if os_matches(c.os, o)), None)
    fw_rows = [row for row, _ in matrix.firmware(r.version, gpu.family if gpu else None,
                                                  as_of=c.as_of)]
    firmware_unknown: str | None = None
    if not fw_rows:
        if "firmware" in r.unknown:
            firmware_unknown = r.unknown["firmware"]
        elif gpu is None:
            firmware_unknown = (f"the GPU was given by gfx target {target}, which several "
                                "products share; firmware is listed per product")
        else:
            firmware_unknown = (f"the matrix has no firmware table for ROCm {r.version} and "
                                f"{gpu.name} (AMD's release notes list firmware from ROCm 7.0)")
    kmd_allowed = fw_rows[0].kmd if fw_rows else r.kmd
    kmd_ref = "release notes" if fw_rows else rr.ref
    notes = list(r.notes)
    for fw in fws:
        fw.published_variants = sorted(
            {w.tag for w, _ in matrix.wheels(fw.name, as_of=c.as_of)
             if w.accelerator == "rocm" and fw.version
             and match_entry(w.series, SpecifierSet(f"=={fw.version}")) is not None},
        )
        rocm_tags = fw.published_variants
        if fw.name == "pytorch" and fw.version:
            if any(t == f"rocm{'.'.join(r.version.split('.')[:2])}" for t in rocm_tags):
                fw.variant = f"rocm{'.'.join(r.version.split('.')[:2])}"
            else:
                fw.unknown = (
                    f"AMD's matrix names no wheel build for PyTorch {fw.version} with ROCm "
                    f"{r.version}; PyTorch publishes "
                    + (", ".join(rocm_tags) if rocm_tags else "no ROCm wheel")
                    + " for that release. Freeze the exact build from the trial host."
                )
    return Resolution(
        constraints=c, vendor="amd", gpu=gpu, gpu_candidates=gpus, target=target,
        runtime="rocm", runtime_version=r.version, release=rr, wheels=[], frameworks=fws,
        considered=considered, os_allowed=os_allowed, os_unknown=r.unknown.get("os"),
        os_chosen=os_chosen, kmd_allowed=kmd_allowed,
        kmd_unknown=None if kmd_allowed else r.unknown.get("kmd"), kmd_ref=kmd_ref,
        firmware=fw_rows, firmware_unknown=firmware_unknown, driver_constraint=None,
        driver_ref=None, toolkit_driver=None, notes=notes,
    )


def _resolve_nvidia(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None,
                    gpus: list[GpuIdentity], target: str, diagnose: bool) -> Resolution:
    versions = sorted({w.accelerator_version for w, _ in matrix.wheels(as_of=c.as_of)
                       if w.accelerator == "cuda"}, key=version_key, reverse=True)
    considered: list[Considered] = []
    Rank = tuple[tuple[Version, ...], bool, tuple[int, ...]]
    valid: list[tuple[Rank, str, list[ChosenFramework], list[WheelVariant]]] = []
    for cuda in versions:
        reasons: list[str] = []
        fws: list[ChosenFramework] = []
        wheels: list[WheelVariant] = []
        for req in c.frameworks:
            cands = [(w, f) for w, f in matrix.wheels(req.name, as_of=c.as_of)
                     if w.accelerator == "cuda" and w.accelerator_version == cuda]
            if not cands:
                reasons.append(f"no {req.name} wheel for CUDA {cuda}")
                continue
            best: tuple[Version, WheelVariant, str] | None = None
            why: list[str] = []
            for w, _f in cands:
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
                key = _ver(locked) or Version("0")
                if best is None or key > best[0]:
                    best = (key, w, locked)
            if best is None:
                reasons.append("; ".join(dict.fromkeys(why)) or f"{req} not validated")
                continue
            _, w, locked = best
            wheels.append(w)
            fws.append(ChosenFramework(
                name=req.name, request=req.raw, version=locked,
                series=locked == w.series, allowed=[w.series], status=w.status,
                variant=w.tag, published_variants=sorted(
                    {x.tag for x, _ in matrix.wheels(req.name, as_of=c.as_of)
                     if x.series == w.series and x.accelerator == "cuda"}),
            ))
        ok = not reasons
        ref = f"pytorch-wheels:cuda-{cuda}"
        date = max((w.date for w in wheels), default=dt.date.min)
        src = wheels[0].source if wheels else "upstream wheel variants"
        considered.append(Considered(ref=ref, runtime="cuda", version=cuda, source=src,
                                     date=date, valid=ok, reasons=reasons, frameworks=fws))
        if ok:
            stable = all(w.status == "stable" for w in wheels)
            rank = (tuple(_ver(f.version or "0") or Version("0") for f in fws), stable,
                    version_key(cuda))
            valid.append((rank, cuda, fws, wheels))
    if not valid:
        if not diagnose:
            raise NoValidatedCombination("no candidate")
        raise _no_combination(matrix, c, "nvidia", target, gpu, considered)
    valid.sort(key=lambda t: t[0], reverse=True)
    _, cuda, fws, wheels = valid[0]
    for entry in considered:
        if entry.version == cuda:
            entry.verdict = "chosen"
        elif entry.valid:
            entry.verdict = "valid, ranked lower (older framework, experimental or older CUDA)"
        else:
            entry.verdict = "rejected"
    build = next((w.build for w in wheels if w.build), None) or cuda
    major = build.split(".")[0]
    rule = next(((r, f) for r, f in matrix.driver_rules()
                 if r.cuda_major == major and r.cuda_minor is None), None)
    driver_constraint = None
    driver_ref = None
    if rule is not None:
        driver_constraint = f">={rule[0].min_driver}"
        if rule[0].max_driver_below:
            driver_constraint += f",<{rule[0].max_driver_below}"
        driver_ref = f"{rule[1].name}:cuda-{major}.x"
    tk_hit = next(((t, f) for t, f in matrix.cuda_toolkits(as_of=c.as_of) if t.version == build),
                  None)
    toolkit = tk_hit[0] if tk_hit else None
    notes = []
    if any(w.status == "experimental" for w in wheels):
        notes.append("The chosen CUDA build is experimental in PyTorch's release matrix.")
    return Resolution(
        constraints=c, vendor="nvidia", gpu=gpu, gpu_candidates=gpus, target=target,
        runtime="cuda", runtime_version=build, release=None, wheels=wheels, frameworks=fws,
        considered=considered, os_allowed=None,
        os_unknown="the matrix holds no NVIDIA OS support table; freeze the OS from the trial host",
        os_chosen=f"{c.os[0]}-{c.os[1]}" if c.os else None,
        kmd_allowed=None, kmd_unknown=None, kmd_ref=None, firmware=[],
        firmware_unknown="the matrix holds no NVIDIA VBIOS/firmware requirements; freeze the "
        "VBIOS from the trial host",
        driver_constraint=driver_constraint, driver_ref=driver_ref,
        toolkit_driver=toolkit.bundled_driver if toolkit else None, notes=notes,
        driver_rule=rule[0] if rule else None, toolkit=toolkit,
        toolkit_ref=f"{tk_hit[1].name}:cuda-{tk_hit[0].version}" if tk_hit else None,
    )


def _no_combination(matrix: Matrix, c: Constraints, vendor: str, target: str,
                    gpu: GpuIdentity | None, considered: list[Considered]
                    ) -> NoValidatedCombination:
    """Build the exit-4 error: the constraint that failed and the nearest alternatives."""
    who = gpu.name if gpu else target
    lines: list[str] = []
    # Which constraint empties the set: drop them one at a time, in a fixed order.
    failing = _failing_constraint(matrix, c)
    req_text = ", ".join(str(f) for f in c.frameworks)
    lines.append(f"No validated combination for {who} ({target}) with {req_text}"
                 + (f", ROCm {c.rocm}" if c.rocm else "") + (f", CUDA {c.cuda}" if c.cuda else "")
                 + (f", OS {c.os[0]}-{c.os[1]}" if c.os else "")
                 + (f", as of {c.as_of}" if c.as_of else "") + f": {failing}.")
    # Alternatives 1: versions of each framework validated for this GPU.
    for req in c.frameworks:
        per: list[str] = []
        if vendor == "amd":
            for rr in matrix.releases(as_of=c.as_of):
                r = rr.release
                if r.vendor != "amd" or not r.targets or target not in r.targets:
                    continue
                for fw in r.frameworks:
                    if fw.name == req.name and fw.versions and not _entry_blocked(fw, r.version,
                                                                                  target):
                        per.append(f"{', '.join(fw.versions)} with ROCm {r.version} "
                                   f"({rr.file.name}, {r.date})")
        else:
            for w, f in matrix.wheels(req.name, as_of=c.as_of):
                if w.accelerator == "cuda" and w.targets and target in w.targets:
                    per.append(f"{w.series} with CUDA {w.build or w.accelerator_version} "
                               f"[{w.status}] ({f.name}, {w.date})")
        if per:
            lines.append(f"{req.name} versions validated for {who}: " + "; ".join(per[:6])
                         + ("; ..." if len(per) > 6 else ""))
        else:
            lines.append(f"No {req.name} version is validated for {who} in the matrix.")
        # Alternatives 2: runtimes validating the requested version (any GPU).
        if str(req.spec):
            rts: list[str] = []
            if vendor == "amd":
                for rr in matrix.releases(as_of=c.as_of):
                    for fw in rr.release.frameworks:
                        if fw.name == req.name and fw.versions and any(
                                match_entry(e, req.spec) for e in fw.versions):
                            rts.append(f"ROCm {rr.release.version} ({rr.file.name}, "
                                       f"{rr.release.date}; targets "
                                       f"{', '.join(fw.targets or rr.release.targets or [])})")
            else:
                for w, f in matrix.wheels(req.name, as_of=c.as_of):
                    if w.accelerator == "cuda" and match_entry(w.series, req.spec):
                        rts.append(f"CUDA {w.build or w.accelerator_version} ({f.name}, {w.date})")
            if rts:
                lines.append(f"Runtimes that validate {req}: " + "; ".join(dict.fromkeys(rts[:6])))
    return NoValidatedCombination("\n".join(lines))


def _failing_constraint(matrix: Matrix, c: Constraints) -> str:
    """Name the first constraint, in the order GPU, frameworks, runtime, OS, that leaves no
    candidate when added to the ones before it.
    """
    from dataclasses import replace

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
                resolve(matrix, partial, diagnose=False)
        except NoValidatedCombination:
            return text
    return "the combined constraints exclude every candidate"
