"""Load, validate and query the compatibility matrix (shipped data plus site overlays).

Files are read with :mod:`tomllib` (fast) and validated by the pydantic models in
:mod:`pinning.matrix.models`; any problem is a ``MatrixError`` (exit 3) naming the file
and the field path. Writing is :mod:`pinning.matrix.dump`'s.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pinning.errors import MatrixError, UsageError
from pinning.matrix.filecache import validated
from pinning.matrix.models import (
    CudaToolkit,
    DriverRule,
    FirmwareRow,
    GpuIdentity,
    KmdModule,
    MatrixFile,
    OsRestriction,
    Release,
    WheelVariant,
)
from pinning.matrix.names import GPU_SERIES
from pinning.util.digests import sha256_digest
from pinning.util.files import read_regular_bytes
from pinning.util.versions import sort_key

DATA_DIR = Path(__file__).with_name("data")
OVERLAY_ENV = "PIN_MATRIX"


@dataclass(frozen=True)
class LoadedFile:
    """A validated matrix file with where it came from and the sha256 of its bytes."""

    name: str
    path: Path
    sha256: str
    overlay: bool
    data: MatrixFile
    user: bool = False
    """A file of the user's copy (``pin matrix update``), not shipped, not an overlay."""

    @property
    def family(self) -> str:
        """Revision family: rows of one family supersede each other by date."""
        return self.data.family or self.data.name


@dataclass(frozen=True)
class ReleaseRef:
    """A release row together with the file it came from."""

    release: Release
    file: LoadedFile

    @property
    def ref(self) -> str:
        """Stable row reference used in lockfiles: ``<file>:<runtime>-<version>``."""
        return f"{self.file.name}:{self.release.key}"


def load_file(path: Path, *, overlay: bool = False, user: bool = False) -> LoadedFile:
    """Read and validate one matrix TOML file (a file validated before, with the same bytes
    and the same model code, is read back from pin's cache:
    :func:`~pinning.matrix.filecache.validated`).

    Raises ``MatrixError`` (exit 3) when the file is missing, is not TOML (with the line
    and column), or breaks the schema (with the field path and what is wrong).
    """
    path = Path(path)
    raw = read_regular_bytes(path, MatrixError, label=f"Matrix file {path}",
                             hint="Check the path given to --matrix or PIN_MATRIX.")
    model = validated(path, raw)
    return LoadedFile(
        name=model.name,
        path=path,
        sha256=sha256_digest(raw),
        overlay=overlay,
        data=model,
        user=user,
    )



_TARGET_ID = re.compile(r"^(gfx[0-9a-f]+)((?::[a-z][a-z0-9-]*[+-])+)$", re.IGNORECASE)


def strip_target_features(text: str) -> str:
    """``gfx942:sramecc+:xnack-`` -> ``gfx942``: an AMD target ID (LLVM AMDGPU "target ID",
    https://llvm.org/docs/AMDGPUUsage.html#target-id) without its feature settings; any
    other text unchanged.
    """
    m = _TARGET_ID.match(text.strip())
    return m.group(1).lower() if m else text


def _norm_name(text: str) -> str:
    text = text.lower()
    text = re.sub(r"\b(amd|nvidia|instinct|tesla|geforce)\b", "", text)
    return re.sub(r"[\s_\-\[\]()]+", "", text)


@dataclass
class Matrix:
    """The shipped matrix and any overlays, validated, with the queries the resolver needs.

    ``as_of`` (a date or ``None`` for "everything published") selects, within each file
    family, the newest revision of every release published on or before that date. The date
    compared is ``published`` (never ``checked``); a row whose publication date is unknown
    is seen at every date and says so (``Provenance.undated``). Restrictions (OS
    restriction rows, firmware rows, driver rules) apply at every date: a restriction never
    disappears because of ``--as-of`` while a release it covers is visible.
    """

    files: list[LoadedFile]
    _gpu_index: dict[str, GpuIdentity] = field(default_factory=dict, repr=False)
    _releases: dict[dt.date | None, list[ReleaseRef]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        seen: dict[str, LoadedFile] = {}
        for f in self.files:
            if f.name in seen:
                raise MatrixError(
                    f"Matrix files {seen[f.name].path} and {f.path} both use the name {f.name!r}.",
                    hint="Give every overlay its own `name`.",
                )
            seen[f.name] = f
            for gpu in f.data.gpus:
                for key in {gpu.id, _norm_name(gpu.name), *(_norm_name(a) for a in gpu.aliases)}:
                    self._gpu_index.setdefault(key, gpu)

    # -- provenance -------------------------------------------------------------------
    @property
    def sha256(self) -> str:
        """Hash of the data used: sha256 over each file's name and byte hash, in order."""
        return sha256_digest("".join(f"{f.name}={f.sha256}\n" for f in self.files).encode())

    # -- GPUs -----------------------------------------------------------------------------
    @property
    def gpus(self) -> list[GpuIdentity]:
        """All GPU identities, first definition of an id wins (shipped before overlays)."""
        out: dict[str, GpuIdentity] = {}
        for f in self.files:
            for g in f.data.gpus:
                out.setdefault(g.id, g)
        return list(out.values())

    def find_gpu(self, query: str) -> GpuIdentity | list[GpuIdentity]:
        """Find a GPU by marketing name or alias (any case or form), gfx target / compute
        capability, or PCI device ID (``0x74a1``, ``74a1``, ``1002:74a1``).

        A gfx target may carry LLVM target features (``gfx942:sramecc+:xnack-``, as
        ``rocminfo`` and ``amd-smi`` print the target ID): they are dropped, since the matrix
        validates the target (:func:`strip_target_features`).

        Returns one identity, or the list of identities when the query is a gfx target
        several products have or a product series (``MI350``: MI355X and MI350X). Raises
        ``UsageError`` (exit 2) with a "did you mean" when nothing matches.
        """
        q = strip_target_features(query.strip())
        key = _norm_name(q)
        if key in self._gpu_index:
            return self._gpu_index[key]
        series = [g for g in self.gpus if g.id in GPU_SERIES.get(key, ())]
        if series:  # `MI350` names the MI350 series (MI355X and MI350X), not one product
            return series
        pci = re.fullmatch(r"(?:(0x)?([0-9a-fA-F]{4}):)?(0x)?([0-9a-fA-F]{4})", q)
        if pci:
            dev = "0x" + pci.group(4).lower()
            ven = ("0x" + pci.group(2).lower()) if pci.group(2) else None
            hits = [
                g for g in self.gpus
                if dev in g.pci_device_ids and (ven is None or g.pci_vendor_id == ven)
            ]
            if len(hits) == 1:
                return hits[0]
            if hits:
                return hits
        by_target = [g for g in self.gpus if g.target.lower() == q.lower()]
        if len(by_target) == 1:
            return by_target[0]
        if by_target:
            return by_target
        names = sorted({g.name for g in self.gpus} | {g.id for g in self.gpus})
        close = difflib.get_close_matches(q, names, n=3, cutoff=0.5)
        if not close:
            close = difflib.get_close_matches(key, sorted(self._gpu_index), n=3, cutoff=0.5)
        suggestion = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(
            f"--gpu {query!r}: no GPU of that name, gfx target, compute capability or PCI "
            f"device ID in the matrix.{suggestion}",
            hint="`pin matrix gpus` lists the known GPUs.",
        )

    # -- releases --------------------------------------------------------------------------
    def releases(self, *, as_of: dt.date | None = None) -> list[ReleaseRef]:
        """Releases visible on ``as_of``: per (file family, release key) the newest revision
        published on or before ``as_of`` (rows of unknown publication date are visible at
        every date). Ordered newest release first, then by file. Computed once per date
        (the files do not change after load); callers get their own list.
        """
        if as_of not in self._releases:
            self._releases[as_of] = self._visible_releases(as_of)
        return list(self._releases[as_of])

    def _visible_releases(self, as_of: dt.date | None) -> list[ReleaseRef]:
        """:meth:`releases` computed from the files."""
        best: dict[tuple[str, str, str], ReleaseRef] = {}
        for f in self.files:
            for r in f.data.releases:
                if not r.visible_on(as_of):
                    continue
                k = (f.family, r.vendor, r.key)
                cur = best.get(k)
                if cur is None or r.date > cur.release.date:
                    best[k] = ReleaseRef(r, f)
        order = {f.name: i for i, f in enumerate(self.files)}
        return sorted(
            best.values(),
            key=lambda rr: (
                rr.release.vendor,
                tuple(-x for x in sort_key(rr.release.version)),
                order[rr.file.name],
            ),
        )

    def firmware(self, runtime_version: str, family: str | None, *, as_of: dt.date | None = None
                 ) -> list[tuple[FirmwareRow, LoadedFile]]:
        """Firmware rows for a ROCm version and a release-note GPU family (e.g. ``MI300X``).

        Firmware rows are requirements of their release: they apply at every ``as_of`` (the
        argument is accepted so callers need not know that).
        """
        del as_of  # a requirement never disappears because of --as-of
        if family is None:
            return []
        return [
            (row, f)
            for f in self.files
            for row in f.data.firmware
            if row.runtime_version == runtime_version and row.gpu == family
        ]

    def os_restrictions(self, *, as_of: dt.date | None = None
                        ) -> list[tuple[OsRestriction, LoadedFile]]:
        """Every OS restriction row, whatever ``as_of``: a restriction applies to every
        release its ``runtimes`` cover, so it never disappears because of ``--as-of`` while
        a release it restricts is visible (the argument is accepted for symmetry).
        """
        del as_of
        return [(row, f) for f in self.files for row in f.data.os_restrictions]

    def driver_rules(self) -> list[tuple[DriverRule, LoadedFile]]:
        """NVIDIA CUDA → driver rules (per major from 11, per release before)."""
        return [(row, f) for f in self.files for row in f.data.driver_rules]

    def driver_rule_for(self, cuda_version: str) -> tuple[DriverRule, LoadedFile] | None:
        """The most specific driver rule covering CUDA ``cuda_version``, or ``None``."""
        hits = [(r, f) for r, f in self.driver_rules() if r.applies_to(cuda_version)]
        hits.sort(key=lambda t: t[0].cuda_minor is None)
        return hits[0] if hits else None

    def gpu_by_pci(self, device_id: str) -> GpuIdentity | None:
        """The one GPU identity with PCI device ID ``device_id`` (``0x74a1``), else ``None``
        (unknown, or shared by several products such as MI250X/MI250 ``0x740c``).
        """
        hits = [g for g in self.gpus if device_id.lower() in g.pci_device_ids]
        return hits[0] if len(hits) == 1 else None

    def cuda_toolkits(self, *, as_of: dt.date | None = None
                      ) -> list[tuple[CudaToolkit, LoadedFile]]:
        """CUDA toolkit releases visible on ``as_of`` (by ``published``; rows of unknown
        publication date at every date), newest first.
        """
        rows = [
            (row, f) for f in self.files for row in f.data.cuda_toolkits
            if row.visible_on(as_of)
        ]
        return sorted(rows, key=lambda t: tuple(-x for x in sort_key(t[0].version)))

    def wheels(self, framework: str | None = None, *, as_of: dt.date | None = None
               ) -> list[tuple[WheelVariant, LoadedFile]]:
        """Upstream wheel variants, optionally of one framework, visible on ``as_of`` (by
        ``published``; rows of unknown publication date at every date).
        """
        return [
            (w, f) for f in self.files for w in f.data.wheels
            if (framework is None or w.framework == framework) and w.visible_on(as_of)
        ]

    def earliest_published(self, vendor: str, framework: str | None = None
                           ) -> tuple[dt.date, str] | None:
        """The earliest ``published`` date of a candidate row for ``vendor`` (and, when
        given, ``framework``), with its ``file:key`` reference; ``None`` when the matrix
        holds no dated row for them. Candidates are release rows for AMD and CUDA wheel
        variants for NVIDIA (the rows ``--as-of`` selects from).
        """
        found: list[tuple[dt.date, str]] = []
        for f in self.files:
            for r in f.data.releases:
                if (r.vendor == vendor and r.published is not None
                        and (framework is None
                             or any(fw.name == framework for fw in r.frameworks))):
                    found.append((r.published, f"{f.name}:{r.key}"))
            if vendor == "nvidia":
                found += [(w.published, f"{f.name}:{w.framework}-{w.series}-{w.tag}")
                          for w in f.data.wheels
                          if w.accelerator == "cuda" and w.published is not None
                          and (framework is None or w.framework == framework)]
        return min(found) if found else None

    def kmd_modules(self) -> list[tuple[KmdModule, LoadedFile]]:
        """Observed amdgpu module version <-> ROCm release pairings (oldest module first)."""
        rows = [(row, f) for f in self.files for row in f.data.kmd_modules]
        return sorted(rows, key=lambda t: sort_key(t[0].module))

    def framework_names(self) -> list[str]:
        """Every framework name any row mentions, sorted."""
        names = {fw.name for f in self.files for r in f.data.releases for fw in r.frameworks}
        names |= {w.framework for f in self.files for w in f.data.wheels}
        return sorted(names)


def shipped_paths() -> list[Path]:
    """The shipped data files, in a fixed order (sorted by file name)."""
    return sorted(DATA_DIR.glob("*.toml"))


def overlay_paths(explicit: Iterable[str | Path] = ()) -> list[Path]:
    """Overlays from ``--matrix`` (in order) or, when none is given, from ``PIN_MATRIX``
    (``os.pathsep``-separated).
    """
    paths = [Path(p) for p in explicit]
    if not paths and os.environ.get(OVERLAY_ENV):
        paths = [Path(p) for p in os.environ[OVERLAY_ENV].split(os.pathsep) if p]
    return paths


_CACHE: dict[tuple[str, ...], tuple[tuple[float, ...], Matrix]] = {}


def combine(shipped: Sequence[LoadedFile], user: Sequence[LoadedFile],
            overlays: Sequence[LoadedFile]) -> Matrix:
    """The matrix of shipped files, the user's copy and overlays, in that order: a file of
    the user's copy replaces the shipped file of its name; within a family the newest
    revision of a release wins whichever file holds it; an overlay comes last (an overlay
    naming a file already loaded is a ``MatrixError``, exit 3).
    """
    taken = {f.name for f in user}
    return Matrix([*(f for f in shipped if f.name not in taken), *user, *overlays])


def load_matrix(overlays: Iterable[str | Path] = (), *, shipped: Sequence[Path] | None = None,
                user: Sequence[Path] | None = None) -> Matrix:
    """Load the shipped matrix, the user's copy (``pin matrix update``; ``user`` overrides
    the data folder's, ``[]`` leaves it out) and overlays; cached per process on file paths
    and mtimes.

    Raises ``MatrixError`` for any invalid file, or a user copy changed since it was written.
    """
    from pinning.matrix.userdata import user_paths

    base = list(shipped) if shipped is not None else shipped_paths()
    mine = list(user) if user is not None else user_paths()
    extra = overlay_paths(overlays)
    key = (*(str(p) for p in [*base, *mine, *extra]), str(len(base)), str(len(mine)))
    try:
        stamp = tuple(p.stat().st_mtime for p in [*base, *mine, *extra])
    except OSError:
        stamp = ()
    hit = _CACHE.get(key)
    if hit and stamp and hit[0] == stamp:
        return hit[1]
    matrix = combine([load_file(p) for p in base], [load_file(p, user=True) for p in mine],
                     [load_file(p, overlay=True) for p in extra])
    if stamp:
        _CACHE[key] = (stamp, matrix)
    return matrix
