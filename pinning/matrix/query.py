"""Finding matrix rows by what a user types (``pin matrix show WHAT``), each with whether it
is in effect on an ``--as-of`` date.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from pinning.errors import UsageError
from pinning.matrix.load import LoadedFile, Matrix
from pinning.matrix.models import (
    CudaToolkit,
    DriverRule,
    FirmwareRow,
    GpuIdentity,
    KmdModule,
    OsRestriction,
    Release,
    WheelVariant,
)
from pinning.matrix.provenance import Provenance

#: Row kinds as ``pin matrix show`` names them, in the order a file's rows are printed.
KINDS = ("release", "gpu", "firmware", "os-restriction", "driver-rule", "cuda-toolkit", "wheel",
         "kmd-module")


@dataclass(frozen=True)
class ShownRow:
    """One row as ``pin matrix show`` prints it.

    ``ref`` is ``file:key``; ``kind`` one of :data:`KINDS`; ``in_effect`` whether the
    resolver reads this row on the ``--as-of`` date asked (every date when none was);
    ``effect`` says why in words: in effect, superseded by another stored copy of the same
    release, published after the date, or a restriction that applies at every date.
    """

    ref: str
    kind: str
    row: Provenance
    in_effect: bool
    effect: str


def show_rows(m: Matrix, what: str, *, as_of: dt.date | None = None,
              gpu: str | None = None) -> list[ShownRow]:
    """The rows ``WHAT`` names: a release (``rocm-7.2.0``, ``cuda-13.4.2``, ``10.0.0``; with
    its firmware rows and every stored copy) or a release prefix (``rocm-7.1``, ``7.1``:
    every release of that series), ``gpus``, ``cuda`` (toolkits and driver rules), a data
    file's name (every row of the file, whatever its kind), or a GPU by name or alias. Each
    row says whether it is in effect on ``as_of``: of two stored copies of one release, the
    newest published on or before ``as_of`` is.

    ``gpu`` (a name, alias, target or PCI ID, as ``--gpu`` takes) keeps only the rows about
    that GPU (:func:`about_gpu`).

    Raises :class:`~pinning.errors.UsageError` (did-you-mean over file names, release
    names and GPUs) when nothing matches and ``what`` is no known GPU, or when ``gpu`` is
    no known GPU.
    """
    wanted = _gpus(m, gpu) if gpu is not None else None
    rows = _rows_named(m, what, _Judge(m, as_of))
    if wanted is None:
        return rows
    return [r for r in rows if about_gpu(r.row, wanted)]


def _gpus(m: Matrix, query: str) -> list[GpuIdentity]:
    """The identities ``--gpu query`` names (several for a shared target or a series)."""
    found = m.find_gpu(query)
    return found if isinstance(found, list) else [found]


def about_gpu(row: Provenance, gpus: list[GpuIdentity]) -> bool:
    """Whether ``row`` concerns one of ``gpus``: a release or wheel whose targets hold
    their target (or that states none), a firmware row of their release-note family, an
    OS restriction naming them or their target, the identity itself; rows of no GPU
    (CUDA toolkits, driver rules, kmd modules) are kept for the vendor of ``gpus``.
    """
    ids = {g.id for g in gpus}
    targets = {g.target for g in gpus}
    vendors = {g.vendor for g in gpus}
    if isinstance(row, GpuIdentity):
        return row.id in ids
    if isinstance(row, Release):
        return row.vendor in vendors and (row.targets is None or bool(targets & set(row.targets)))
    if isinstance(row, WheelVariant):
        runtime = {"amd": "rocm", "nvidia": "cuda"}
        return (row.accelerator in {runtime[v] for v in vendors}
                and (row.targets is None or bool(targets & set(row.targets))))
    if isinstance(row, FirmwareRow):
        return row.gpu in {g.family for g in gpus}
    if isinstance(row, OsRestriction):
        return bool(ids & set(row.gpus)) or bool(targets & set(row.targets))
    if isinstance(row, (CudaToolkit, DriverRule)):
        return "nvidia" in vendors
    return "amd" in vendors  # KmdModule


def _rows_named(m: Matrix, what: str, judge: _Judge) -> list[ShownRow]:
    """:func:`show_rows` before the ``--gpu`` filter."""
    w = what.strip().lower()
    if w == "gpus":
        return [judge(f"gpus:{g.id}", "gpu", g) for g in m.gpus]
    if w == "cuda":
        rows = [judge(f"{f.name}:cuda-{t.version}", "cuda-toolkit", t, f)
                for t, f in m.cuda_toolkits()]
        return rows + [judge(f"{f.name}:{r.key}", "driver-rule", r, f)
                       for r, f in m.driver_rules()]
    file = next((f for f in m.files if f.name == w), None)
    if file is not None:
        return [judge(ref, kind, row, file) for ref, kind, row in file_rows(file)]
    rows = _release_rows(m, w, judge) or _release_rows(m, w, judge, prefix=True)
    if rows:
        return rows
    try:
        found = m.find_gpu(what)
    except UsageError as exc:
        raise _unknown_name(m, what, w) from exc
    return [judge(f"gpus:{g.id}", "gpu", g)
            for g in (found if isinstance(found, list) else [found])]


def release_names(m: Matrix) -> list[str]:
    """Every release key the matrix holds (``rocm-7.2.0``, ``cuda-13.0.2``), sorted."""
    keys = {r.key for f in m.files for r in f.data.releases}
    keys |= {f"cuda-{t.version}" for f in m.files for t in f.data.cuda_toolkits}
    return sorted(keys)


def _unknown_name(m: Matrix, what: str, w: str) -> UsageError:
    """The usage error for a ``pin matrix show`` name that matches nothing."""
    names = sorted({"gpus", "cuda", *(f.name for f in m.files)})
    close = difflib.get_close_matches(w, [*names, *release_names(m)], n=3, cutoff=0.6)
    return UsageError(
        f"pin matrix show {what!r}: no data file, release (rocm-7.2.0, cuda-13.0, 7.2.0, "
        "or a series such as rocm-7.1) or GPU of that name."
        + (f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""),
        hint="Names it takes: " + ", ".join(names) + ", a release, a GPU; `pin matrix list` "
        "lists the releases, `pin matrix gpus` the GPUs.")


def file_rows(f: LoadedFile) -> Iterator[tuple[str, str, Provenance]]:
    """Every row of one data file as ``(file:key, kind, row)``, kinds in :data:`KINDS` order."""
    d = f.data
    for r in d.releases:
        yield f"{f.name}:{r.key}", "release", r
    for g in d.gpus:
        yield f"{f.name}:{g.id}", "gpu", g
    for fw in d.firmware:
        yield f"{f.name}:rocm-{fw.runtime_version}/{fw.gpu}", "firmware", fw
    for i, o in enumerate(d.os_restrictions, start=1):
        yield f"{f.name}:os-restriction-{i}", "os-restriction", o
    for dr in d.driver_rules:
        yield f"{f.name}:{dr.key}", "driver-rule", dr
    for t in d.cuda_toolkits:
        yield f"{f.name}:cuda-{t.version}", "cuda-toolkit", t
    for w in d.wheels:
        yield f"{f.name}:{w.framework}-{w.series}-{w.tag}", "wheel", w
    for k in d.kmd_modules:
        yield f"{f.name}:amdgpu-{k.module}/rocm-{k.rocm}", "kmd-module", k


class _Judge:
    """Builds :class:`ShownRow` values: knows which release copies are in effect on a date."""

    def __init__(self, m: Matrix, as_of: dt.date | None) -> None:
        self.as_of = as_of
        self.effective = {rr.ref for rr in m.releases(as_of=as_of)}
        self.by_key = {(rr.file.family, rr.release.vendor, rr.release.key): rr.ref
                       for rr in m.releases(as_of=as_of)}

    def __call__(self, ref: str, kind: str, row: Provenance, f: LoadedFile | None = None
                 ) -> ShownRow:
        when = f" on {self.as_of}" if self.as_of else ""
        if isinstance(row, (OsRestriction, FirmwareRow, DriverRule)):
            return ShownRow(ref, kind, row, True, "in effect: a restriction applies at every date")
        if isinstance(row, (GpuIdentity, KmdModule)):
            return ShownRow(ref, kind, row, True, "in effect: not dated by --as-of")
        if not row.visible_on(self.as_of):
            return ShownRow(ref, kind, row, False,
                            f"not in effect: published {row.published}, after --as-of "
                            f"{self.as_of}")
        if isinstance(row, Release) and f is not None and ref not in self.effective:
            other = self.by_key.get((f.family, row.vendor, row.key))
            return ShownRow(ref, kind, row, False,
                            f"not in effect{when}: superseded by {other}")
        undated = f" (publication date unknown: {row.undated})" if row.undated else ""
        return ShownRow(ref, kind, row, True, f"in effect{when}{undated}")


def _release_rows(m: Matrix, w: str, judge: _Judge, *, prefix: bool = False
                  ) -> list[ShownRow]:
    """Release (every stored copy), firmware and CUDA toolkit rows of the release ``w``
    (``rocm-7.2.0`` or a bare version such as ``7.2.0``); with ``prefix``, of every release
    whose version starts with ``w``'s (``rocm-7.1`` is 7.1, 7.1.0 and 7.1.1; never 7.10).
    """
    runtime, _, version = w.partition("-") if w.startswith(("rocm-", "cuda-")) else ("", "", w)
    if not version:
        return []

    def hit(rt: str, v: str) -> bool:
        if runtime and rt != runtime:
            return False
        return v == version or (prefix and v.startswith(version + "."))

    rows: list[ShownRow] = []
    for f in m.files:
        for r in f.data.releases:
            if hit(r.runtime, r.version):
                rows.append(judge(f"{f.name}:{r.key}", "release", r, f))
        for fw in f.data.firmware:
            if hit("rocm", fw.runtime_version):
                rows.append(judge(f"{f.name}:rocm-{fw.runtime_version}/{fw.gpu}", "firmware",
                                  fw, f))
        for t in f.data.cuda_toolkits:
            if hit("cuda", t.version):
                rows.append(judge(f"{f.name}:cuda-{t.version}", "cuda-toolkit", t, f))
    return rows
