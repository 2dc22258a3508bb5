"""Judging one candidate: is a framework validated in a release for a gfx target, is an
OS entry ruled out for a GPU by a footnote restriction.
"""

from __future__ import annotations

import datetime as dt

from packaging.version import Version

from pinning.matrix.load import Matrix, ReleaseRef
from pinning.matrix.models import FrameworkSupport, GpuIdentity
from pinning.matrix.names import OS_ID_VERSION
from pinning.matrix.restrictions import Verdict, in_effect, judge
from pinning.resolve.constraints import FrameworkRequest
from pinning.resolve.result import ChosenFramework
from pinning.util.versions import match_entry, pep440


def gpu_restricted(matrix: Matrix, gpu: GpuIdentity | None, target: str, version: str,
                    os_entry: str, as_of: dt.date | None) -> str | None:
    """Reason the OS entry is ruled out for this GPU by a footnote restriction, or ``None``.

    The restrictions in effect for ``version`` (:func:`pinning.matrix.restrictions.in_effect`:
    a whole list, or a list changed by a later source) apply whatever ``as_of``: a
    restriction never disappears because of ``--as-of`` while the release it restricts is
    visible. Where statements disagree the later-published wins, and the reason names every
    row weighed.
    """
    del as_of
    verdict = os_verdict(matrix, gpu, target, version, os_entry)
    if verdict is None or verdict.allowed or verdict.decided_by is None:
        return None
    s = verdict.decided_by
    notes = "".join(f"; {r.note}" for r, _ in s.rows if r.note)
    return (f"{os_entry} is restricted for this GPU ({s.mode}: {s.cite()}{notes})"
            + overruled(verdict))


def os_verdict(matrix: Matrix, gpu: GpuIdentity | None, target: str, version: str,
               os_entry: str) -> Verdict | None:
    """The restrictions' verdict on ``os_entry`` for the GPU on ``version`` (``None`` when
    the entry or the version cannot be read).
    """
    m = OS_ID_VERSION.match(os_entry)
    if not m or pep440(version) is None:
        return None
    return judge(in_effect(matrix, version), gpu.id if gpu else None, target,
                 (m.group(1), m.group(2)))


def overruled(verdict: Verdict) -> str:
    """``; weighed against ...`` naming the statements the decision overruled, or ``""``."""
    if not verdict.overruled or verdict.decided_by is None:
        return ""
    return ("; weighed against " + "; ".join(s.cite() for s in verdict.overruled)
            + ", which says the opposite: the later-published source wins for the releases "
            "it covers")


def framework_in_release(req: FrameworkRequest, rr: ReleaseRef, target: str
                         ) -> tuple[ChosenFramework | None, str | None]:
    """The framework ``req`` as the release ``rr`` validates it for ``target`` (the newest
    matching version over the release's entries), or ``None`` and the reasons it does not.
    """
    rel = rr.release
    entries = [fw for fw in rel.frameworks if fw.name == req.name]
    if not entries:
        said = " ".join(rel.framework_notes.get(req.name, []))
        return None, f"does not list {req.name}" + (f" ({said})" if said else "")
    reasons: list[str] = []
    best: tuple[Version, ChosenFramework] | None = None
    for fw in entries:
        why = entry_blocked(fw, rel.version, target)
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
        entry, locked = max(ok, key=lambda t: pep440(t[1]) or Version("0"))
        key = pep440(locked) or Version("0")
        choice = ChosenFramework(
            name=req.name, request=req.raw, version=locked,
            series=locked == entry and len((pep440(entry) or Version("0")).release) < 3,
            allowed=list(fw.versions), status=fw.status, notes=list(fw.notes),
        )
        if best is None or key > best[0]:
            best = (key, choice)
    if best is not None:
        return best[1], None
    return None, "; ".join(reasons)


def entry_blocked(fw: FrameworkSupport, version: str, target: str) -> str | None:
    """Why a release's framework entry does not apply to ``target`` at runtime ``version``
    (listed for other targets, or a minimum runtime), or ``None``.
    """
    if fw.targets is not None and target not in fw.targets:
        cited = [n for n in fw.notes if any(n.startswith(f"{v}: footnote ") for v in
                                            fw.versions or [])]
        return (f"{fw.name} {', '.join(fw.versions or [])} is listed only for "
                f"{', '.join(fw.targets)}" + (f" ({'; '.join(cited)})" if cited else ""))
    rv = pep440(version)
    if fw.min_runtime and rv is not None and rv < Version(fw.min_runtime):
        return f"{fw.name} needs runtime >= {fw.min_runtime}"
    need = fw.min_runtime_by_target.get(target)
    if need and rv is not None and rv < Version(need):
        return f"{fw.name} on {target} needs runtime >= {need}"
    return None
