"""Resolve on AMD: walk ROCm releases newest first; the first whose targets, frameworks and
OS fit is chosen, with its OS set, firmware rows and amdgpu/KMD set.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pinning.lockfile.status import StatusReason
from pinning.matrix.load import LoadedFile, Matrix, ReleaseRef
from pinning.matrix.models import FirmwareRow, GpuIdentity, OsRestriction, Release
from pinning.matrix.names import os_matches
from pinning.resolve.candidates import (
    framework_in_release,
    gpu_restricted,
    os_verdict,
    overruled,
)
from pinning.resolve.constraints import Constraints
from pinning.resolve.result import ChosenFramework, Considered, NoCandidate, Resolution
from pinning.util.versions import match_entry


def resolve_amd(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None,
                gpus: list[GpuIdentity], target: str) -> Resolution:
    """The newest ROCm release that validates ``target`` with every requested framework (and
    ``--rocm`` / ``--os``); ``gpu`` is ``None`` when a shared gfx target named the GPU.

    Raises :class:`~pinning.resolve.result.NoCandidate` with every candidate considered when
    none fits (the resolver turns it into exit 4 with a diagnosis).
    """
    considered: list[Considered] = []
    chosen: tuple[ReleaseRef, list[ChosenFramework]] | None = None
    for rr in matrix.releases(as_of=c.as_of):
        r = rr.release
        if r.vendor != "amd":
            continue
        reasons, fws = _judge_release(matrix, c, gpu, target, rr)
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
        raise NoCandidate(considered)
    rr, fws = chosen
    r = rr.release
    os_allowed, os_chosen = _os_sets(matrix, c, gpu, target, r)
    fw_rows = [row for row, _ in matrix.firmware(r.version, gpu.family if gpu else None,
                                                  as_of=c.as_of)]
    kmd_allowed = fw_rows[0].kmd if fw_rows else r.kmd
    kmd_ref = "release notes" if fw_rows else rr.ref
    _wheel_variants(matrix, c, r, fws)
    return Resolution(
        constraints=c, vendor="amd", gpu=gpu, gpu_candidates=gpus, target=target,
        runtime="rocm", runtime_version=r.version, release=rr, wheels=[], frameworks=fws,
        considered=considered, os_allowed=os_allowed, os_unknown=r.unknown.get("os"),
        os_chosen=os_chosen, kmd_allowed=kmd_allowed,
        kmd_unknown=None if kmd_allowed else r.unknown.get("kmd"), kmd_ref=kmd_ref,
        firmware=fw_rows, firmware_unknown=_firmware_unknown(fw_rows, gpu, target, r),
        driver_constraint=None, driver_ref=None, toolkit_driver=None,
        notes=list(r.notes) + _framework_notes(r, fws) + _tested_user_space_note(r)
        + _restriction_notes(matrix, gpu, target, r, os_allowed)
        + _weighed_notes(matrix, gpu, target, r, os_chosen),
        unconfirmed=_targets_unstated(r, fws, target)
        + _restrictions_unstated(matrix, gpu, target, rr, os_allowed, c),
    )


def _framework_notes(r: Release, fws: list[ChosenFramework]) -> list[str]:
    """The release's notes about the frameworks asked for (not about the others)."""
    return [n for fw in fws for n in r.framework_notes.get(fw.name, [])]


def _tested_user_space_note(r: Release) -> list[str]:
    """Explain AMD's ``Tested user space versions`` row (copies up to ROCm 6.3) in the lock."""
    if not r.tested_user_space:
        return []
    return [f"ROCm {r.version}: AMD's matrix lists the user-space series tested with this "
            f"release's kernel driver (KFD): {', '.join(r.tested_user_space)}. That is not the "
            "set of drivers this user space allows; AMD states KMD and user space are "
            "compatible for +/- 2 releases (footnote kfd_support)."]


def _targets_unstated(r: Release, fws: list[ChosenFramework], target: str
                      ) -> list[StatusReason]:
    """Unconfirmed reasons for frameworks validated on a release whose source names GPU targets only
    through other rows (ROCm 10.0.0: gfx942 and gfx950 only through vLLM's row).
    """
    if r.targets_complete:
        return []
    out: list[StatusReason] = []
    for fw in fws:
        entry = next((e for e in r.frameworks if e.name == fw.name), None)
        if entry is not None and entry.targets is None:
            out.append(StatusReason(
                reason=f"ROCm {r.version}: the source does not state the GPU targets {fw.name} "
                       f"is validated on; {target} is named for this release only through other "
                       f"rows ({', '.join(r.targets or [])}). Treat {fw.name} on {target} as "
                       "not confirmed by AMD.",
                settled_by=f"AMD's compatibility matrix stating the GPU targets of {fw.name} "
                           f"with ROCm {r.version} (pin read: {r.source}"
                           + (f", {r.url}" if r.url else "") + f", {r.date})"))
    return out


def _restrictions_unstated(matrix: Matrix, gpu: GpuIdentity | None, target: str,
                           rr: ReleaseRef, os_allowed: list[str] | None,
                           c: Constraints) -> list[StatusReason]:
    """Unconfirmed reasons for per-GPU OS restrictions whose source stops before release ``rr``.

    A restriction's kind (its file, mode and GPUs) is stated for some releases; for a newer
    release that its source does not cover (a dated copy of the page that does not list the
    release, or a hand-kept file whose ranges stop) and that no other restriction source
    covers after the last stated release, whether it still applies is unknown: a warning,
    never a refusal (ROCm 6.1.5, absent from the 2025-03-21 page; 6.4.x, newer than it; 7.2.0,
    whose page no longer holds per-GPU footnotes).
    """
    r = rr.release
    if r.os is None:
        return []  # the OS list itself is unknown, which the lock says
    v = Version(r.version)
    ids = {target} | ({gpu.id} if gpu else set())
    rows = [(row, f) for row, f in matrix.os_restrictions() if row.vendor == "amd"]
    applies = [row for row, _ in rows if _covers(row, v)]
    versions = sorted({Version(x.release.version) for x in matrix.releases(as_of=c.as_of)
                       if x.release.vendor == "amd" and x.file.family == rr.file.family}
                      | {v})
    coverage = _coverage(rows, versions)
    kinds: dict[tuple[str, str, tuple[str, ...]], list[OsRestriction]] = {}
    for row, f in rows:
        kinds.setdefault((f.name, row.mode, tuple(sorted(row.gpus))), []).append(row)
    out: list[StatusReason] = []
    for (fname, mode, gpus), krows in kinds.items():
        stated = [x for x in versions if any(_covers(k, x) for k in krows)]
        if not stated or v in stated or v < min(stated) or v in coverage[fname]:
            continue
        if any(v in cov or any(max(stated) < x < v for x in cov)
               for name, cov in coverage.items() if name != fname):
            continue  # another source speaks for this release or one after the last stated
        if any(a.mode == mode and set(a.gpus) == set(gpus) for a in applies):
            continue
        if not _relevant(krows, ids, gpu, target, os_allowed):
            continue
        fns = sorted({k.footnote for k in krows if k.footnote})
        oses = list(dict.fromkeys(o for k in krows for o in k.os))
        out.append(StatusReason(reason=f"ROCm {r.version}: AMD's per-GPU OS restriction ({mode}: "
                   f"{', '.join(gpus)}; {', '.join(oses)}"
                   + (f"; footnote {', '.join(fns)}" if fns else "")
                   + f") is stated for ROCm {', '.join(str(x) for x in stated)} "
                   f"({krows[-1].source}); no source pin holds covers ROCm {r.version}, so "
                   "whether it still applies is unknown. Check AMD's system requirements for "
                   "this release before relying on the OS.",
                   settled_by=f"AMD's system requirements (per-GPU OS support) for ROCm "
                   f"{r.version}; the restriction was last stated by {krows[-1].source}"
                   + (f", {krows[-1].url}" if krows[-1].url else "") + f" ({krows[-1].date})"))
    return out


def _covers(row: OsRestriction, v: Version) -> bool:
    """True when restriction ``row``'s ``runtimes`` cover version ``v``."""
    return SpecifierSet(row.runtimes).contains(v, prereleases=True)


def _coverage(rows: list[tuple[OsRestriction, LoadedFile]], versions: list[Version]
              ) -> dict[str, set[Version]]:
    """Per file holding restrictions, the releases its source speaks for: a dated page
    copy every release it lists (a release without a footnote there is stated free of it);
    a hand-kept file the releases its whole-list rows' ranges cover (a change row, such as
    "extends SLES 15 SP7 support to MI355X", speaks only for its own GPUs).
    """
    out: dict[str, set[Version]] = {}
    for row, f in rows:
        cov = out.setdefault(f.name, set())
        if row.change != "replace":
            continue
        if f.data.releases:
            cov |= {Version(x.version) for x in f.data.releases if x.vendor == "amd"}
        else:
            cov |= {x for x in versions if _covers(row, x)}
    return out


def _relevant(krows: list[OsRestriction], ids: set[str], gpu: GpuIdentity | None,
              target: str, os_allowed: list[str] | None) -> bool:
    """True when a restriction kind would matter to this GPU on the OS set offered."""
    row = krows[0]
    if row.mode == "only-these-gpus":
        return gpu is not None and target in row.targets and gpu.id not in row.gpus
    if row.mode != "os-only-on-gpus":
        return bool(ids & set(row.gpus))
    # "OS only on these GPUs" matters to a GPU outside the list that the OS is open to.
    open_os = [tuple(o.split("-", 1)) for o in os_allowed or [] if "-" in o]
    return not ids & set(row.gpus) and any(
        os_matches((a, b), x) for a, b in open_os for k in krows for x in k.os)


def _restriction_notes(matrix: Matrix, gpu: GpuIdentity | None, target: str, r: Release,
                       os_allowed: list[str] | None) -> list[str]:
    """The notes of the restriction rows that touch this GPU on release ``r`` (what AMD's
    footnote says that the rule cannot express: "for single-node functionality", "[6.8
    HWE]"), whichever copy of the page the release row itself comes from.
    """
    v = Version(r.version)
    ids = {target} | ({gpu.id} if gpu else set())
    out: list[str] = []
    for row, _ in matrix.os_restrictions():
        if row.vendor != "amd" or not row.note or not _covers(row, v):
            continue
        open_os = [tuple(o.split("-", 1)) for o in os_allowed or [] if "-" in o]
        touches = bool(ids & set(row.gpus)) and (row.mode != "os-only-on-gpus" or any(
            os_matches((a, b), x) for a, b in open_os for x in row.os))
        text = f"ROCm {r.version}: footnote {row.footnote}: {row.note}" if row.footnote \
            else f"ROCm {r.version}: {row.note}"
        if touches and text not in out:
            out.append(text)
    return out


def _weighed_notes(matrix: Matrix, gpu: GpuIdentity | None, target: str, r: Release,
                   os_chosen: str | None) -> list[str]:
    """For the OS ``--os`` picked: the restriction rows weighed when sources disagree on it
    (the later-published source allowed it over an older row that excluded it).
    """
    if os_chosen is None:
        return []
    verdict = os_verdict(matrix, gpu, target, r.version, os_chosen)
    if verdict is None or not verdict.allowed or not verdict.overruled or \
            verdict.decided_by is None:
        return []
    return [f"ROCm {r.version}: {os_chosen} is allowed for this GPU by "
            f"{verdict.decided_by.cite()}" + overruled(verdict)]


def _judge_release(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None, target: str,
                   rr: ReleaseRef) -> tuple[list[str], list[ChosenFramework]]:
    """Why one ROCm release does not fit (empty when it does), and the frameworks it gives."""
    r = rr.release
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
        fw, why = framework_in_release(req, rr, target)
        if fw is None:
            reasons.append(why or f"{req} not validated")
        else:
            fws.append(fw)
    if c.os is not None:
        reasons += _os_reasons(matrix, c, gpu, target, r)
    return reasons, fws


def _os_reasons(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None, target: str,
                r: Release) -> list[str]:
    """Why ``--os`` does not fit release ``r`` for this GPU (empty when it does)."""
    assert c.os is not None
    os_text = f"{c.os[0]}-{c.os[1]}"
    if r.os is None:
        return [f"OS list unknown ({r.unknown.get('os', '')}); cannot validate --os {os_text}"]
    hits = [o for o in r.os if os_matches(c.os, o)]
    if not hits:
        return [f"--os {os_text} is not among its operating systems"]
    blocked = [gpu_restricted(matrix, gpu, target, r.version, o, c.as_of) for o in hits]
    return [str(blocked[0])] if all(blocked) else []


def _os_sets(matrix: Matrix, c: Constraints, gpu: GpuIdentity | None, target: str,
             r: Release) -> tuple[list[str] | None, str | None]:
    """The OS set the release allows for this GPU, and the entry ``--os`` picked from it."""
    if r.os is None:
        return None, None
    allowed = [o for o in r.os if not gpu_restricted(matrix, gpu, target, r.version, o, c.as_of)]
    chosen = None
    if c.os is not None:
        want = c.os
        chosen = next((o for o in allowed if os_matches(want, o)), None)
    return allowed, chosen


def _firmware_unknown(fw_rows: list[FirmwareRow], gpu: GpuIdentity | None, target: str,
                      r: Release) -> str | None:
    """Why no firmware rows were found for the release and GPU (``None`` when some were)."""
    if fw_rows:
        return None
    if "firmware" in r.unknown:
        return r.unknown["firmware"]
    if gpu is None:
        return (f"the GPU was given by gfx target {target}, which several products share; "
                "firmware is listed per product")
    return (f"the matrix has no firmware table for ROCm {r.version} and {gpu.name} (AMD's "
            "release notes list firmware from ROCm 7.0)")


def _wheel_variants(matrix: Matrix, c: Constraints, r: Release,
                    fws: list[ChosenFramework]) -> None:
    """Record the ROCm wheel variants upstream publishes for each chosen framework version;
    for PyTorch, the variant of this ROCm series when one exists, else why it is unknown.
    """
    series = f"rocm{'.'.join(r.version.split('.')[:2])}"
    for fw in fws:
        fw.published_variants = sorted(
            {w.tag for w, _ in matrix.wheels(fw.name, as_of=c.as_of)
             if w.accelerator == "rocm" and fw.version
             and match_entry(w.series, SpecifierSet(f"=={fw.version}")) is not None},
        )
        rocm_tags = fw.published_variants
        if fw.name == "pytorch" and fw.version:
            if any(t == series for t in rocm_tags):
                fw.variant = series
            else:
                fw.unknown = (
                    f"AMD's matrix names no wheel build for PyTorch {fw.version} with ROCm "
                    f"{r.version}; PyTorch publishes "
                    + (", ".join(rocm_tags) if rocm_tags else "no ROCm wheel")
                    + " for that release. Freeze the exact build from the trial host."
                )
