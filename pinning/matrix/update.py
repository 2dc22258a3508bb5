"""``pin matrix update``'s plan (pure apart from the importers' temporary files): the
vendor files fetched (:mod:`pinning.matrix.fetch`) are imported by the same importers as
``pin matrix import-*`` (:mod:`pinning.matrix.importers.build`), validated as a written
file would be, and compared with the matrix in effect; :func:`write_plan` then stores them
as the user's copy (:mod:`pinning.matrix.userdata`).

The comparison is between the matrix in effect before and after (shipped data, user copy
and overlays, as :func:`~pinning.matrix.load.load_matrix` combines them), so it shows what
``pin resolve`` will see differently: release rows added, changed (GPU targets, OS, framework
versions, other fields) or removed, wheel variants and firmware rows.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning.errors import MatrixError, PinError
from pinning.matrix.fetch import Fetched
from pinning.matrix.load import LoadedFile, Matrix, combine
from pinning.matrix.models import MatrixFile
from pinning.matrix.userdata import Manifest, SourceRecord, UserFile

__all__ = ["Plan", "RowChange", "build_files", "diff_matrices", "plan_update", "with_copy",
           "write_plan"]

_PROVENANCE = {"source", "url", "published", "published_unknown", "checked"}
HEADER = ("Written by `pin matrix update` from the vendor files named in update.json: do "
          "not edit by hand; `pin matrix update --reset` goes back to the shipped data.")


@dataclass(frozen=True)
class RowChange:
    """One difference between the matrix in effect before and after: ``kind`` (``release``,
    ``wheel``, ``firmware``), ``key`` (``rocm-7.2.0``, ``pytorch-2.9-cu128``,
    ``7.1.1 MI300X``), ``change`` (``added``, ``changed``, ``removed``) and, for a change,
    ``details`` (``gpu +gfx950``, ``os -rhel-9.4``, ``pytorch +2.9.1``, ``hip: a -> b``).
    """

    kind: str
    key: str
    change: str
    details: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "key", "change", "details"}``."""
        return {"kind": self.kind, "key": self.key, "change": self.change,
                "details": list(self.details)}


@dataclass
class Plan:
    """What an update would do: the new copy's ``files`` (name -> validated file and its
    TOML bytes), the ``manifest`` to write, the matrices ``before`` and ``after``, the
    ``changes`` between them and ``notes`` (sources skipped, and why).
    """

    files: dict[str, tuple[LoadedFile, bytes]]
    manifest: Manifest
    before: Matrix
    after: Matrix
    changes: list[RowChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _text(f: Fetched) -> str:
    """The UTF-8 text of a fetched file; ``MatrixError`` (exit 3) naming its URL."""
    assert f.raw is not None
    try:
        return f.raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(f"{f.url}: not UTF-8 text ({exc}).") from exc


def build_files(fetched: Sequence[Fetched], *, published: dt.date, today: dt.date,
                notes: list[str]) -> list[MatrixFile]:
    """The matrix files the fetched sources make, through the importers of ``pin matrix
    import-amd`` / ``import-pytorch``: the AMD copy dated ``published`` and PyTorch's wheel
    rows read ``today``. An optional source absent, or release notes with no firmware table
    (6.x notes), is skipped with a line in ``notes``. Raises ``MatrixError`` (exit 3) naming
    the URL for a file the importers refuse.
    """
    from pinning.matrix.importers.build import amd_matrix_file, pytorch_wheels_file

    by_id = {f.source.id: f for f in fetched}
    out: list[MatrixFile] = []
    with tempfile.TemporaryDirectory(prefix="pin-update-") as tmp:
        paths: dict[str, Path] = {}
        for f in fetched:
            if f.raw is None:
                notes.append(f"{f.source.id}: {f.url} is not in the mirror; skipped")
                continue
            text = _text(f)
            if f.source.id == "amd-notes" and "pldm bundle" not in text.lower():
                notes.append(f"amd-notes: {f.url} has no firmware table (ROCm 6.x notes have "
                             "none); no firmware rows from it")
                continue
            paths[f.source.id] = Path(tmp) / f"{f.source.id}-{Path(f.source.path).name}"
            paths[f.source.id].write_text(text, encoding="utf-8")
        try:
            if "amd-csv" in paths:
                out.append(_cited(amd_matrix_file(
                    paths["amd-csv"], page=paths.get("amd-page"),
                    release_notes=[paths["amd-notes"]] if "amd-notes" in paths else [],
                    published=published), by_id["amd-csv"]))
            if "pytorch" in paths:
                out.append(_cited(pytorch_wheels_file(paths["pytorch"], checked=today),
                                  by_id["pytorch"]))
        except PinError as err:
            msg = err.message
            for sid, p in paths.items():
                msg = msg.replace(str(p), by_id[sid].url)
            raise MatrixError(msg, hint=err.hint) from err
    return out


def _cited(mf: MatrixFile, f: Fetched) -> MatrixFile:
    """``mf`` with each row's ``url`` the file actually read (the blob at its commit when
    known) and its ``source`` naming that copy: the importers cite the copies pin ships.
    """
    where = (f"https://github.com/{f.source.repo}/blob/{f.commit}/{f.source.path}"
             if f.commit else f.url)
    read = (f"{f.source.repo}@{f.commit}" if f.commit else
            f"{f.url}" + (f", ETag {f.etag}" if f.etag else ""))

    def fix(row: Any) -> Any:
        return row.model_copy(update={"url": where,
                                      "source": f"{row.source}; read by pin matrix update: "
                                                f"{read}"})

    return mf.model_copy(update={
        "releases": [fix(r) for r in mf.releases],
        "os_restrictions": [fix(r) for r in mf.os_restrictions],
        "wheels": [fix(w) for w in mf.wheels],
    })


def plan_update(fetched: Sequence[Fetched], before: Matrix, *, published: dt.date,
                today: dt.date, folder: Path) -> Plan:
    """Import ``fetched``, validate each file as written (dumped and read back as pin reads
    a matrix file), and compare the matrix ``before`` with the matrix that holds the new
    copy (files in ``folder``) instead of any earlier one. Firmware rows ``before`` already
    holds for a release and GPU are not repeated. Raises ``MatrixError`` (exit 3).
    """
    from pinning.matrix.dump import dump_matrix_file
    from pinning.matrix.filecache import validated
    from pinning.util.digests import sha256_digest

    notes: list[str] = []
    shipped = [f for f in before.files if not f.user and not f.overlay]
    files: dict[str, tuple[LoadedFile, bytes]] = {}
    for mf in build_files(fetched, published=published, today=today, notes=notes):
        kept = [f for f in shipped if f.name != mf.name]
        held = {(r.runtime_version, r.gpu) for f in kept for r in f.data.firmware}
        mf = mf.model_copy(update={"firmware": [r for r in mf.firmware
                                                if (r.runtime_version, r.gpu) not in held]})
        raw = dump_matrix_file(mf, header=[HEADER]).encode()
        path = folder / f"{mf.name}.toml"
        files[mf.name] = (LoadedFile(mf.name, path, sha256_digest(raw), False,
                                     validated(path, raw), user=True), raw)
    after = with_copy(before, [lf for lf, _ in files.values()])
    manifest = Manifest(
        fetched=today,
        files=[UserFile(name=n, sha256=lf.sha256) for n, (lf, _) in files.items()],
        sources=[SourceRecord(id=f.source.id, url=f.url, commit=f.commit, etag=f.etag,
                              fetched=today, sha256=sha256_digest(f.raw), bytes=len(f.raw))
                 for f in fetched if f.raw is not None])
    return Plan(files=files, manifest=manifest, before=before, after=after,
                changes=diff_matrices(before, after), notes=notes)


def with_copy(m: Matrix, copy: Sequence[LoadedFile]) -> Matrix:
    """``m`` with the user's copy ``copy`` in place of any it held (same shipped files and
    overlays). Raises ``MatrixError`` (exit 3) when an overlay takes a name of the copy.
    """
    return combine([f for f in m.files if not f.user and not f.overlay], copy,
                   [f for f in m.files if f.overlay])


def write_plan(plan: Plan) -> Path:
    """Store the plan's copy in the user's data folder (:func:`userdata.write_copy`, atomic);
    returns the folder. Raises ``MatrixError`` (exit 3) when it cannot be written.
    """
    from pinning.matrix.userdata import write_copy

    return write_copy({n: raw for n, (_, raw) in plan.files.items()}, plan.manifest)


def _content(row: Any) -> dict[str, Any]:
    """A row's values without its provenance (what a change of copy may change alone)."""
    out: dict[str, Any] = row.model_dump(mode="json", by_alias=True, exclude=_PROVENANCE)
    return out


def _keyed(m: Matrix) -> dict[tuple[str, str], dict[str, Any]]:
    """Every row ``pin resolve`` sees in ``m``, by (kind, key), as values."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rr in m.releases():
        out[("release", rr.release.key)] = _content(rr.release)
    for w, _ in m.wheels():
        out[("wheel", f"{w.framework}-{w.series}-{w.tag}")] = _content(w)
    for f in m.files:
        for fw in f.data.firmware:
            out.setdefault(("firmware", f"{fw.runtime_version} {fw.gpu}"), _content(fw))
    return out


def diff_matrices(before: Matrix, after: Matrix) -> list[RowChange]:
    """Rows added, changed and removed from ``before`` to ``after`` (see :class:`RowChange`),
    releases first, in key order.
    """
    old, new = _keyed(before), _keyed(after)
    out: list[RowChange] = []
    for k in sorted(old.keys() | new.keys()):
        if k not in old:
            out.append(RowChange(k[0], k[1], "added", _summary(new[k])))
        elif k not in new:
            out.append(RowChange(k[0], k[1], "removed"))
        elif old[k] != new[k]:
            out.append(RowChange(k[0], k[1], "changed", _details(old[k], new[k])))
    return out


def _summary(row: dict[str, Any]) -> tuple[str, ...]:
    """A new row in a few words: its GPU targets, OS and frameworks."""
    parts = []
    if row.get("targets"):
        parts.append("gpu " + ", ".join(row["targets"]))
    if row.get("os"):
        parts.append("os " + ", ".join(row["os"]))
    for fw in row.get("frameworks") or []:
        parts.append(f"{fw['name']} {', '.join(fw.get('versions') or ['?'])}")
    return tuple(parts)


def _set_diff(label: str, a: Sequence[str] | None, b: Sequence[str] | None) -> list[str]:
    """``label +x, -y`` for the items added to and removed from a list, or nothing."""
    sa, sb = set(a or ()), set(b or ())
    items = [f"+{x}" for x in sorted(sb - sa)] + [f"-{x}" for x in sorted(sa - sb)]
    return [f"{label} {', '.join(items)}"] if items else []


def _details(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, ...]:
    """What changed in a row: GPU targets, OS, each framework's versions, other fields."""
    out = _set_diff("gpu", a.get("targets"), b.get("targets"))
    out += _set_diff("os", a.get("os"), b.get("os"))
    fa = {fw["name"]: fw.get("versions") for fw in a.get("frameworks") or []}
    fb = {fw["name"]: fw.get("versions") for fw in b.get("frameworks") or []}
    for name in sorted(fa.keys() | fb.keys()):
        if name not in fb:
            out.append(f"framework -{name}")
        elif name not in fa:
            out.append(f"framework +{name} {', '.join(fb[name] or ['?'])}")
        else:
            out += _set_diff(name, fa[name], fb[name])
    for key in sorted((a.keys() | b.keys()) - {"targets", "os", "frameworks"}):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {_short(a.get(key))} -> {_short(b.get(key))}")
    return tuple(out)


def _short(value: Any) -> str:
    """A value as a change line shows it (at most 80 characters)."""
    text = "-" if value is None else str(value)
    return text if len(text) <= 80 else text[:77] + "..."
