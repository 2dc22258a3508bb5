"""Explain an empty result (exit 4): the constraint that empties the set, found by adding
constraints one at a time, and the nearest validated alternatives with their sources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from packaging.specifiers import SpecifierSet

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix
from pinning.matrix.models import GpuIdentity
from pinning.matrix.provenance import Provenance
from pinning.resolve.candidates import entry_blocked
from pinning.resolve.constraints import Constraints, FrameworkRequest, close_os
from pinning.resolve.result import Considered, Resolution
from pinning.util.versions import match_entry, sort_key

_LABEL = {"amd": "AMD ROCm", "nvidia": "NVIDIA CUDA"}


def no_combination(matrix: Matrix, c: Constraints, vendor: str, target: str,
                   gpu: GpuIdentity | None, considered: list[Considered], *,
                   attempt: Callable[[Constraints], object]) -> NoValidatedCombination:
    """Build the exit-4 error: the constraint that failed and the nearest alternatives.

    ``attempt`` resolves a partial set of constraints, raising
    :class:`~pinning.errors.NoValidatedCombination` when it has no candidate.
    """
    who = gpu.name if gpu else target
    before = no_data_as_of(matrix, c, vendor)
    if before:
        return NoValidatedCombination(
            before, hint="Give a later --as-of, or add rows your team validated with a site "
            "overlay (--matrix FILE).")
    lines: list[str] = []
    # Which constraint empties the set: drop them one at a time, in a fixed order.
    failing = failing_constraint(
        c, attempt, framework_gap=lambda req: unlisted_targets(matrix, c, vendor, req))
    req_text = ", ".join(str(f) for f in c.frameworks)
    lines.append(f"No validated combination for {who} ({target}) with {req_text}"
                 + (f", ROCm {c.rocm}" if c.rocm else "") + (f", CUDA {c.cuda}" if c.cuda else "")
                 + (f", OS {c.os[0]}-{c.os[1]}" if c.os else "")
                 + (f", as of {c.as_of}" if c.as_of else "") + f": {failing}.")
    if failing.startswith("--os "):
        lines += _restriction_lines(c, considered)
        lines += _os_lines(c, vendor, who, attempt)
    lines += _wildcard_lines(c, attempt)
    lines += _runtime_name_lines(matrix, c, vendor)
    lines += footnote_lines(matrix, c, vendor)
    for req in c.frameworks:
        per = _validated_for_gpu(matrix, c, vendor, target, req)
        if per:
            lines.append(f"{req.name} versions validated for {who}: " + "; ".join(per[:6])
                         + ("; ..." if len(per) > 6 else ""))
        else:
            lines.append(f"No {req.name} version is validated for {who} in the matrix.")
        found = _runtimes_validating(matrix, c, vendor, req, target) if str(req.spec) else []
        rts = [text for text, _ in found]
        if rts:
            lines.append(f"Runtimes that validate {req}: " + "; ".join(dict.fromkeys(rts[:6])))
        # Why the entry excludes this GPU (a footnote such as tf-mi350), once per reason.
        lines += list(dict.fromkeys(why for _, why in found if why))
    return NoValidatedCombination("\n".join(lines))


def footnote_lines(matrix: Matrix, c: Constraints, vendor: str) -> list[str]:
    """Why a release in ``--rocm`` that lists a requested framework does not validate it: the
    footnote the release row keeps for it (DGL 2.4.0 in column ``7.0.1/7.0.0``, footnote
    ``dgl_compat``), with the row's source, the copy read and its date (at most four lines).
    """
    if vendor != "amd":
        return []
    out: list[str] = []
    for req in c.frameworks:
        for rr in matrix.releases(as_of=c.as_of):
            r = rr.release
            if r.vendor != "amd" or (c.rocm is not None
                                     and not c.rocm.contains(r.version, prereleases=True)):
                continue
            for note in r.framework_notes.get(req.name, []):
                out.append(f"ROCm {r.version}: {note} Source: {r.source}"
                           + (f" <{r.url}>" if r.url else "")
                           + (f"; read from {r.read_from}" if r.read_from else "")
                           + f" ({_when(r)}; {rr.file.name}).")
    return list(dict.fromkeys(out))[:4]


def _restriction_lines(c: Constraints, considered: list[Considered]) -> list[str]:
    """For an ``--os`` failure: the footnote restrictions that ruled the OS out, per release
    in ``--rocm`` / ``--cuda`` (at most four), so the user sees which source excludes it.
    """
    out: list[str] = []
    spec = c.rocm if c.rocm is not None else c.cuda
    for cand in considered:
        if spec is not None and not spec.contains(cand.version, prereleases=True):
            continue
        for why in cand.reasons:
            if "is restricted for this GPU" in why and len(out) < 4:
                out.append(f"{cand.runtime.upper() if cand.runtime == 'cuda' else 'ROCm'} "
                           f"{cand.version}: {why}")
    return list(dict.fromkeys(out))


def _os_lines(c: Constraints, vendor: str, who: str,
              attempt: Callable[[Constraints], object]) -> list[str]:
    """For an ``--os`` failure: the operating systems validated for the stack without
    ``--os``, per runtime release that validates it (the newest three), and a did-you-mean
    over them for the ``--os`` given.
    """
    assert c.os is not None
    if vendor != "amd":
        return []
    try:
        res = attempt(replace(c, os=None))
    except NoValidatedCombination:
        return []
    valid = [x for x in getattr(res, "considered", []) if x.valid][:3]
    out: list[str] = []
    known: list[str] = []
    for cand in valid:
        try:
            one = attempt(replace(c, os=None, rocm=SpecifierSet(f"=={cand.version}")))
        except NoValidatedCombination:
            continue
        if not isinstance(one, Resolution):
            continue
        if one.os_allowed is None:
            out.append(f"Operating systems validated for {who} with ROCm {cand.version}: "
                       f"unknown ({one.os_unknown or 'the source lists none'}).")
            continue
        known += one.os_allowed
        out.append(f"Operating systems validated for {who} with ROCm {cand.version}: "
                   + (", ".join(one.os_allowed) or "none") + f" ({cand.ref}).")
    close = close_os(f"{c.os[0]}-{c.os[1]}", list(dict.fromkeys(known)), n=1)
    if close:
        out.append(f"Did you mean --os {close[0]}?")
    return out


def _runtime_name_lines(matrix: Matrix, c: Constraints, vendor: str) -> list[str]:
    """For ``--rocm ==X`` / ``--cuda ==X`` naming a release the matrix does not hold at
    all: that fact, with the nearest release versions it holds (did-you-mean).
    """
    import difflib

    spec, name = (c.rocm, "ROCm") if vendor == "amd" else (c.cuda, "CUDA")
    clauses = list(spec) if spec is not None else []
    if len(clauses) != 1 or clauses[0].operator != "==" or clauses[0].version.endswith(".*"):
        return []
    runtime = "rocm" if vendor == "amd" else "cuda"
    held = sorted({r.version for f in matrix.files for r in f.data.releases
                   if r.runtime == runtime}
                  | ({t.version for f in matrix.files for t in f.data.cuda_toolkits}
                     if runtime == "cuda" else set()))
    want = clauses[0].version
    if want in held:
        return []
    close = difflib.get_close_matches(want, held, n=3, cutoff=0.6)
    return [f"The matrix holds no {name} {want} release."
            + (f" Did you mean {', '.join(close)}?" if close else "")]


def _wildcard_lines(c: Constraints, attempt: Callable[[Constraints], object]) -> list[str]:
    """For a request ``NAME==X.Y`` (exactly X.Y, that is X.Y.0, in PEP 440) that resolves
    as ``NAME==X.Y.*``: the hint to ask for the series, with the version it would lock.
    """
    out: list[str] = []
    for i, req in enumerate(c.frameworks):
        clauses = list(req.spec)
        if len(clauses) != 1 or clauses[0].operator != "==" or clauses[0].version.endswith(
                ".*") or clauses[0].version.count(".") > 1:
            continue
        series = FrameworkRequest(req.name, SpecifierSet(f"=={clauses[0].version}.*"), req.raw)
        frameworks = (*c.frameworks[:i], series, *c.frameworks[i + 1:])
        try:
            res = attempt(replace(c, frameworks=frameworks))
        except NoValidatedCombination:
            continue
        chosen = [f.version for f in getattr(res, "frameworks", []) if f.name == req.name]
        locks = f" (it resolves to {req.name} {chosen[0]})" if chosen and chosen[0] else ""
        out.append(f"{req} asks for exactly {clauses[0].version} (PEP 440: "
                   f"{clauses[0].version}.0); did you mean {series}?{locks}")
    return out


def no_data_as_of(matrix: Matrix, c: Constraints, vendor: str) -> str | None:
    """The exit-4 text when ``--as-of`` is earlier than every dated candidate row the matrix
    holds for ``vendor`` (or for a requested framework on it), naming the earliest date
    held; ``None`` otherwise. Rows of unknown publication date are visible at every date and
    do not count as dated data; the text says how many were considered.
    """
    if c.as_of is None:
        return None
    label = _LABEL.get(vendor, vendor)
    for name in (None, *(req.name for req in c.frameworks)):
        first = matrix.earliest_published(vendor, name)
        if first is None or first[0] <= c.as_of:
            continue
        what = f"{label} data" + (f" for {name}" if name else "")
        undated = _undated_candidates(matrix, c, vendor, name)
        return (f"The matrix holds no {what} published on or before {c.as_of} (--as-of): the "
                f"earliest it holds was published {first[0]} ({first[1]})."
                + (f" {undated} row(s) of unknown publication date were considered and do "
                   "not validate the request." if undated else ""))
    return None


def _undated_candidates(matrix: Matrix, c: Constraints, vendor: str, name: str | None) -> int:
    """How many candidate rows of unknown publication date ``--as-of`` kept."""
    if vendor == "nvidia":
        return sum(1 for w, _ in matrix.wheels(name, as_of=c.as_of)
                   if w.accelerator == "cuda" and w.published is None)
    return sum(1 for rr in matrix.releases(as_of=c.as_of)
               if rr.release.vendor == vendor and rr.release.published is None
               and (name is None or any(fw.name == name for fw in rr.release.frameworks)))


def unlisted_targets(matrix: Matrix, c: Constraints, vendor: str, req: FrameworkRequest
                     ) -> str | None:
    """On NVIDIA, the gap in the source for ``req``: no CUDA wheel rows at all for the
    framework, or no compute-capability list on every row matching it (PyTorch's RELEASE.md
    gives one only for its newest series); else ``None``.
    """
    if vendor != "nvidia":
        return None
    rows = [w for w, _ in matrix.wheels(req.name, as_of=c.as_of) if w.accelerator == "cuda"]
    if not rows:
        return (f"the matrix holds no NVIDIA CUDA data for {req.name} (pin's NVIDIA rows are "
                "PyTorch's published wheel variants); add the builds your team validated with "
                "a site overlay")
    hits = [w for w in rows if match_entry(w.series, req.spec) is not None]
    if not hits or any(w.targets is not None for w in hits):
        return None
    series = sorted({w.series for w in hits}, key=sort_key)
    why = next((w.unknown["targets"] for w in hits if "targets" in w.unknown), "")
    return (f"the source gives no compute-capability list for {req.name} "
            f"{', '.join(series)}" + (f" ({why})" if why else "")
            + "; pin cannot tell whether it is built for this GPU")


def _when(row: Provenance) -> str:
    """``published 2026-03-18``, or that the publication date is unknown."""
    return f"published {row.published}" if row.published else "publication date unknown"


def failing_constraint(c: Constraints, attempt: Callable[[Constraints], object], *,
                       framework_gap: Callable[[FrameworkRequest], str | None] | None = None
                       ) -> str:
    """Name the first constraint, in the order GPU, frameworks, runtime, OS, that leaves no
    candidate when added to the ones before it. ``framework_gap`` may name a gap in the
    source for the first framework (used instead of "not validated for this GPU").
    """
    steps: list[tuple[str, Constraints]] = []
    base = replace(c, frameworks=(), rocm=None, cuda=None, os=None)
    for i, req in enumerate(c.frameworks):
        gap = framework_gap(req) if framework_gap and i == 0 else None
        steps.append((gap or f"{req} is not validated for this GPU" if i == 0 else
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
                attempt(partial)
        except NoValidatedCombination:
            return text
    return "the combined constraints exclude every candidate"


def _validated_for_gpu(matrix: Matrix, c: Constraints, vendor: str, target: str,
                       req: FrameworkRequest) -> list[str]:
    """Alternatives 1: the versions of ``req``'s framework validated for this GPU, with the
    runtime and source of each.
    """
    per: list[str] = []
    if vendor == "amd":
        for rr in matrix.releases(as_of=c.as_of):
            r = rr.release
            if r.vendor != "amd" or not r.targets or target not in r.targets:
                continue
            for fw in r.frameworks:
                if fw.name == req.name and fw.versions and not entry_blocked(fw, r.version,
                                                                             target):
                    per.append(f"{', '.join(fw.versions)} with ROCm {r.version} "
                               f"({rr.file.name}, {_when(r)})")
        return per
    for w, f in matrix.wheels(req.name, as_of=c.as_of):
        if w.accelerator == "cuda" and w.targets and target in w.targets:
            per.append(f"{w.series} with CUDA {w.build or w.accelerator_version} "
                       f"[{w.status}] ({f.name}, {_when(w)})")
    return per


def _runtimes_validating(matrix: Matrix, c: Constraints, vendor: str,
                         req: FrameworkRequest, target: str) -> list[tuple[str, str | None]]:
    """Alternatives 2: the runtimes that validate the requested version (on any GPU), each
    with why its entry excludes ``target`` (a footnote such as ``tf-mi350``) or ``None``.
    """
    rts: list[tuple[str, str | None]] = []
    if vendor == "amd":
        for rr in matrix.releases(as_of=c.as_of):
            for fw in rr.release.frameworks:
                if fw.name == req.name and fw.versions and any(
                        match_entry(e, req.spec) for e in fw.versions):
                    blocked = entry_blocked(fw, rr.release.version, target)
                    rts.append((f"ROCm {rr.release.version} ({rr.file.name}, "
                                f"{_when(rr.release)}; targets "
                                f"{', '.join(fw.targets or rr.release.targets or [])})",
                                f"Not on {target}: {blocked}" if blocked else None))
        return rts
    for w, f in matrix.wheels(req.name, as_of=c.as_of):
        if w.accelerator == "cuda" and match_entry(w.series, req.spec):
            rts.append((f"CUDA {w.build or w.accelerator_version} ({f.name}, {_when(w)})", None))
    return rts
