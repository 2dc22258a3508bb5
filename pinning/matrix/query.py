"""Finding matrix rows by what a user types (``pin matrix show WHAT``)."""

from __future__ import annotations

from pinning.matrix.load import Matrix
from pinning.util.models import Strict


def show_rows(m: Matrix, what: str) -> list[tuple[str, Strict]]:
    """The rows ``WHAT`` names, each with its ``file:key`` reference: a release
    (``rocm-7.2.0``, ``cuda-13.4.2``, ``10.0.0``; with its firmware rows), ``gpus``,
    ``cuda`` (toolkits and driver rules), a data file's name, or a GPU by name or alias.

    Raises :class:`~pinning.errors.UsageError` (did-you-mean) when nothing matches and
    ``what`` is no known GPU.
    """
    w = what.strip().lower()
    rows: list[tuple[str, Strict]] = []
    if w == "gpus":
        rows = [(f"gpus:{g.id}", g) for g in m.gpus]
    elif w == "cuda":
        rows = [(f"{f.name}:cuda-{t.version}", t) for t, f in m.cuda_toolkits()]
        rows += [(f"{f.name}:{r.key}", r) for r, f in m.driver_rules()]
    elif any(f.name == w for f in m.files):
        f = next(f for f in m.files if f.name == w)
        rows = [(f"{f.name}:{r.key}", r) for r in f.data.releases]
        rows += [(f"{f.name}:{g.id}", g) for g in f.data.gpus]
    else:
        rows = _release_rows(m, w)
        if not rows:
            found = m.find_gpu(what)
            for g in (found if isinstance(found, list) else [found]):
                rows.append((f"gpus:{g.id}", g))
    return rows


def _release_rows(m: Matrix, w: str) -> list[tuple[str, Strict]]:
    """Release, firmware and CUDA toolkit rows of the release ``w`` (``rocm-7.2.0`` or a
    bare version such as ``7.2.0``).
    """
    rows: list[tuple[str, Strict]] = []
    key = w if w.startswith(("rocm-", "cuda-")) else None
    for f in m.files:
        for r in f.data.releases:
            if r.key == key or r.version == w:
                rows.append((f"{f.name}:{r.key}", r))
        for fw in f.data.firmware:
            if key == f"rocm-{fw.runtime_version}" or fw.runtime_version == w:
                rows.append((f"{f.name}:rocm-{fw.runtime_version}/{fw.gpu}", fw))
        for t in f.data.cuda_toolkits:
            if key == f"cuda-{t.version}" or t.version == w:
                rows.append((f"{f.name}:cuda-{t.version}", t))
    return rows
