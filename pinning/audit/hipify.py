"""HIPIFY's published CUDA->HIP API tables, imported into ``pinning/audit/data/hipify.json``,
and the lookup the kernel scanner classifies CUDA identifiers with.

The tables (HIPIFY's ``docs/reference/tables/``, one per CUDA API, each row a CUDA name, its
HIP equivalent or an empty cell, and the versions each was added, deprecated or removed in)
are imported by :mod:`pinning.audit.hipify_tables`.

The shipped JSON (regenerated with :func:`write_data`) holds a table list and one dict from
CUDA identifier to its compact row(s); :func:`lookup` answers from it after one cached load.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from pinning.audit.hipify_tables import (
    FORMAT,
    REGENERATE,
    ROW_FIELDS,
    dump_data,
    import_tables,
)
from pinning.audit.model import Citation
from pinning.errors import MatrixError

DATA_FILE = Path(__file__).resolve().parent / "data" / "hipify.json"
"""The shipped, generated data file (``make``-regenerated from HIPIFY's tables)."""


@dataclass(frozen=True)
class ApiEntry:
    """One row of a HIPIFY table.

    ``cuda``: the CUDA identifier; ``hip``: its HIP equivalent (``None``: the HIP cell is
    empty, no equivalent; in the cuDNN table the MIOpen name); ``hip_added`` /
    ``hip_deprecated`` / ``hip_removed``: HIP versions from the HIP A/D/R cells;
    ``cuda_deprecated`` / ``cuda_removed``: CUDA versions; ``experimental``: the E cell is set;
    ``table``: the table's file name; ``section``: the section title (``Device Management``);
    ``citation``: the table's source and date. ``cuda_added`` / ``cuda_changed`` /
    ``hip_changed``: the A and C cells (``cuda_changed`` may list several versions, ``13.1,
    13.2``); ``unsupported_cuda``: the CUDA versions the mapping is not valid for (U cell);
    ``experimental_in``: the HIP version in the E cell; ``target``: ``HIP`` or ``MIOPEN``, the
    name of the table's target column. Versions are the cells' dotted strings.
    """

    cuda: str
    hip: str | None
    hip_added: str | None
    hip_deprecated: str | None
    hip_removed: str | None
    cuda_deprecated: str | None
    cuda_removed: str | None
    experimental: bool
    table: str
    section: str
    citation: Citation
    cuda_added: str | None = None
    cuda_changed: str | None = None
    hip_changed: str | None = None
    unsupported_cuda: tuple[str, ...] = ()
    experimental_in: str | None = None
    target: str = "HIP"


def write_data(src_folder: Path, out_path: Path) -> None:
    """Import ``src_folder``'s tables and write the shipped JSON to ``out_path`` (the
    regeneration step: ``make`` calls it with ``python -c``). Raises MatrixError as
    :func:`import_tables` does.
    """
    text = dump_data(import_tables(src_folder))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out_path)


# -- the shipped data --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Table:
    file: str
    target: str
    sections: tuple[str, ...]
    citation: Citation


@dataclass(frozen=True)
class _Data:
    tables: tuple[_Table, ...]
    rows: dict[str, str | list[str]]


def _bad_data(path: Path, what: str) -> MatrixError:
    return MatrixError(f"{path}: {what}.",
                       hint=f"Reinstall pin, or regenerate the file: {REGENERATE}")


def load_data(path: Path) -> _Data:
    """Read and check a data file written by :func:`write_data` (the table list is
    validated; rows are checked when looked up). Raises MatrixError (exit 3) when it is
    unreadable, not JSON, or not of :data:`FORMAT`.
    """
    from pinning.util.jsonread import load_json

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _bad_data(path, f"cannot read the HIPIFY data ({exc})") from None
    raw = load_json(data, MatrixError, label=str(path),
                    hint=f"Reinstall pin, or regenerate the file: {REGENERATE}")
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise _bad_data(path, f"not a HIPIFY data file of format {FORMAT}")
    tables, rows = raw.get("tables"), raw.get("rows")
    if not isinstance(tables, list) or not isinstance(rows, dict):
        raise _bad_data(path, "`tables` must be a list and `rows` an object")
    out = []
    try:
        for t in tables:
            citation = Citation(source=t["source"], published=t.get("published"),
                                published_unknown=t.get("published-unknown"))
            sections = t["sections"]
            if not isinstance(sections, list) or not all(isinstance(s, str) for s in sections):
                raise ValueError("sections must be a list of strings")
            out.append(_Table(str(t["file"]), str(t["target"]), tuple(sections), citation))
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad_data(path, f"invalid table entry ({exc})") from None
    return _Data(tuple(out), rows)


@functools.cache
def _data() -> _Data:
    return load_data(DATA_FILE)


def _entry(data: _Data, name: str, row: object) -> ApiEntry:
    if not isinstance(row, str):
        raise _bad_data(DATA_FILE, f"row of {name} is not a string")
    f = row.split("|")
    try:
        if len(f) != ROW_FIELDS:
            raise ValueError
        table = data.tables[int(f[0])]
        section = table.sections[int(f[1])]
    except (ValueError, IndexError):
        raise _bad_data(DATA_FILE, f"malformed row of {name}: {row!r}") from None

    def cell(value: str) -> str | None:
        return value or None

    return ApiEntry(
        cuda=name, hip=cell(f[2]), hip_added=cell(f[7]), hip_deprecated=cell(f[8]),
        hip_removed=cell(f[10]), cuda_deprecated=cell(f[4]), cuda_removed=cell(f[6]),
        experimental=bool(f[12]), table=table.file, section=section, citation=table.citation,
        cuda_added=cell(f[3]), cuda_changed=cell(f[5]), hip_changed=cell(f[9]),
        unsupported_cuda=tuple(f[11].split()), experimental_in=cell(f[12]),
        target=table.target)


@functools.lru_cache(maxsize=4096)
def lookup_all(identifier: str) -> tuple[ApiEntry, ...]:
    """Every table row for the CUDA ``identifier`` (exact, case-sensitive), in
    :data:`~pinning.audit.hipify_tables.PRIORITY` order; empty when no table lists it.
    Raises MatrixError (exit 3) when the shipped data file is invalid.
    """
    data = _data()
    found = data.rows.get(identifier)
    if found is None:
        return ()
    rows = found if isinstance(found, list) else [found]
    return tuple(_entry(data, identifier, row) for row in rows)


def lookup(identifier: str) -> ApiEntry | None:
    """The table row for the CUDA ``identifier`` (exact, case-sensitive), or ``None`` when no
    table lists it. Loads the data once. Raises ``MatrixError`` (exit 3) when the shipped
    data file is invalid. An identifier in several tables answers with the first in
    :data:`~pinning.audit.hipify_tables.PRIORITY` order (see :func:`lookup_all` for all of them).
    """
    found = lookup_all(identifier)
    return found[0] if found else None


@functools.cache
def identifiers() -> frozenset[str]:
    """Every CUDA identifier the tables list (for scanners that test tokens against them).
    Raises MatrixError (exit 3) when the shipped data file is invalid.
    """
    return frozenset(_data().rows)
