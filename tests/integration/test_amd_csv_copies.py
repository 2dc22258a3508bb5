"""``pin``'s AMD importer on every public copy of AMD's historical compatibility CSV found
(issue 32, section 1).

The copies are listed in ``tests/data/amd-csv-copies/copies.csv`` (commit date, repository,
commit, path, sha256, what pin does with it, where the copy was found). The copies themselves
are held in ``tests/data/amd-csv-copies/copies.tar.xz`` (21 KB: AMD's published data files,
one member per sha256, each checked against the table; the public commit the table names
serves the same bytes at raw.githubusercontent.com), so the test needs no network. A copy pin
imports is
compared cell by cell with a second reading of the file written here with Python's ``csv``
module (not pin's table reader): every data cell of a row pin imports appears in the imported
release of its column. The few copies AMD committed with a data row short of cells or a
footnote reference without its closing ``_`` are refused, naming the line.

Where the copies were found: ``ROCm/ROCm``'s history (every branch; the stored snapshot ends
on 2025-03-21) and, for commits not in that snapshot (2025-03-17 to 2026-01-21), the history
of ``alanina/ROCm``, a fork of ``ROCm/ROCm`` that carries upstream's commits. The forks ``peterjunpark/ROCm``,
``prbasyal-amd/ROCm`` and ``steqeq/0000`` hold no version of the file that is not listed;
``hanzoai/ROCm`` and ``ROCm/legacy-rocm-build`` also carry the file but had no snapshot to
compare byte for byte, so they are not listed.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import hashlib
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.matrix.importers.amd_csv import import_amd_copy
from pinning.matrix.models import Release
from tests.support.paths import DATA

TABLE = DATA / "amd-csv-copies" / "copies.csv"
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Copy:
    """One row of the table of copies."""

    date: dt.date
    repo: str
    commit: str
    path: str
    sha256: str
    expect: str
    found: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"


def _copies() -> list[Copy]:
    with TABLE.open(encoding="utf-8", newline="") as f:
        return [Copy(date=dt.date.fromisoformat(r["date"]), repo=r["repo"], commit=r["commit"],
                     path=r["path"], sha256=r["sha256"], expect=r["expect"], found=r["found"])
                for r in csv.DictReader(f)]


COPIES = _copies()


ARCHIVE = DATA / "amd-csv-copies" / "copies.tar.xz"


@functools.cache
def _held() -> dict[str, bytes]:
    """The held copies by sha256 (the archive's member names)."""
    out: dict[str, bytes] = {}
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        for member in tar.getmembers():
            f = tar.extractfile(member) if member.isfile() else None
            if f is not None and member.size <= MAX_BYTES:
                out[Path(member.name).stem] = f.read()
    return out


def _fetch(copy: Copy) -> str:
    """The copy's text from the held archive, after checking its sha256 is the pinned one."""
    data = _held().get(copy.sha256)
    assert data is not None, f"{copy.url}: not held in {ARCHIVE.name}"
    digest = hashlib.sha256(data).hexdigest()
    assert digest == copy.sha256, f"{copy.url}: sha256 {digest}, pinned {copy.sha256}"
    return data.decode("utf-8")


# --- the independent reading -------------------------------------------------------------

_FN = re.compile(r"\s*\[#[^\]]*\]_")
_LABEL = re.compile(r"^(?::\w+:)?`([^`<]*?)\s*(?:<[^>]*>)?`_*")
_FRAMEWORKS = {"pytorch": "pytorch", "tensorflow": "tensorflow", "jax": "jax",
               "onnx runtime": "onnxruntime", "verl": "verl", "dgl": "dgl",
               "megablocks": "megablocks", "ray": "ray", "flashinfer": "flashinfer",
               "llama.cpp": "llama.cpp", "stanford megatron-lm": "stanford-megatron-lm"}
_COMPONENTS = {"hipblaslt": "hipblaslt", "rocblas": "rocblas", "miopen": "miopen",
               "rccl": "rccl", "composable kernel": "composable-kernel", "amd smi": "amd-smi",
               "rocm smi": "rocm-smi"}
_KMD = {"amd gpu driver", "amd gpu driver versions", "kmd versions"}
_OS_FAMILY = {"ubuntu": "ubuntu", "rhel": "rhel", "sles": "sles", "oracle linux": "ol",
              "debian": "debian", "azure linux": "azurelinux", "rocky linux": "rocky",
              "rocky": "rocky", "centos": "centos"}


def _label(cell: str) -> str:
    text = _FN.sub("", cell).strip()
    m = _LABEL.match(text)
    return (m.group(1) if m else text).strip().lower()


def _values(cell: str) -> list[str]:
    parts = _FN.sub("", cell).replace("|br|", ",").split(",")
    return [p.strip() for p in parts if p.strip() and p.strip().upper() != "N/A"]


def _os_ids(cell: str) -> list[str]:
    """``RHEL 9.6, 9.4`` -> ``rhel-9.6, rhel-9.4``; ``SLES 15 SP6, SP5`` -> ``sles-15.6, ...``."""
    items = _values(cell)
    family = next(f for f in sorted(_OS_FAMILY, key=len, reverse=True)
                  if items[0].lower().startswith(f + " "))
    os_id, out, major = _OS_FAMILY[family], [], ""
    for item in items:
        ver = item[len(family):].strip() if item.lower().startswith(family + " ") else item
        if os_id == "sles":
            head, _, sp = ver.rpartition("SP")
            major = head.strip() or major
            out.append(f"sles-{major}.{sp}")
        else:
            out.append(f"{os_id}-{ver}")
    return out


def _imported(rel: Release, label: str) -> tuple[list[str], str]:
    """What ``rel`` holds for the row ``label``, and the notes that may name a dropped value."""
    if label in _FRAMEWORKS:
        name = _FRAMEWORKS[label]
        held = [v for fw in rel.frameworks if fw.name == name
                for v in [*(fw.versions or []), *(fw.builds or [])]]
        return held, " ".join(rel.framework_notes.get(name, []))
    if label in _COMPONENTS:
        value = rel.components.get(_COMPONENTS[label])
        return ([value] if value else []), ""
    fields: dict[str, list[str] | None] = {
        "operating systems & kernels": rel.os, "gpu / llvm target": rel.targets,
        "tested user space versions": rel.tested_user_space,
        "hip": [rel.hip] if rel.hip else None}
    return list((rel.kmd if label in _KMD else fields.get(label)) or []), ""


def _compare(text: str, releases: list[Release]) -> int:
    """Every data cell of a row pin imports, read here with ``csv``, is in the release of its
    column; the number of cells compared.
    """
    rows = list(csv.reader(text.splitlines()))
    headers = [h.strip() for h in rows[0][1:]]
    by_header = {h: [r for r in releases if (r.column or r.version) == h] for h in headers}
    compared, label = 0, ""
    for lineno, row in enumerate(rows[1:], start=2):
        if row and row[0].strip():
            label = _label(row[0])
        for header, cell in zip(headers, row[1:], strict=False):
            if not _values(cell) or cell.strip().startswith(".. _"):
                continue
            if label == "operating systems & kernels":
                expected = _os_ids(cell)
            elif label in {"gpu / llvm target", "hip"} or label in _COMPONENTS:
                expected = [_FN.sub("", cell).strip()]
            elif label in _FRAMEWORKS or label in _KMD or label == "tested user space versions":
                expected = _values(cell)
            else:
                continue  # a row pin does not import
            assert by_header[header], f"line {lineno}: no release for column {header}"
            for rel in by_header[header]:
                held, notes = _imported(rel, label)
                for value in expected:
                    assert value in held or value in notes, (
                        f"line {lineno}, column {header}, row {label!r}: {value!r} not in "
                        f"the imported {held}")
                    compared += 1
    return compared


@pytest.mark.parametrize("copy", COPIES, ids=[f"{c.date}-{c.commit[:9]}" for c in COPIES])
def test_every_public_copy_imports_cell_exact_or_is_refused_naming_the_line(copy: Copy) -> None:
    text = _fetch(copy)
    name = f"{copy.repo}@{copy.commit[:9]}"
    if copy.expect.startswith("refused:"):
        line = copy.expect.removeprefix("refused:")
        with pytest.raises(MatrixError, match=rf"^{re.escape(name)}, line {line}: ") as exc:
            import_amd_copy(text, published=copy.date, name=name)
        assert exc.value.hint or "cannot read" in str(exc.value)
        return
    assert copy.expect == "imports", copy.expect
    result = import_amd_copy(text, published=copy.date, name=name)
    columns = {h.strip() for h in next(csv.reader(text.splitlines()))[1:]}
    assert {r.column or r.version for r in result.releases} == columns
    assert _compare(text, result.releases) > 100


def test_the_table_lists_distinct_copies_with_their_source() -> None:
    assert len({c.sha256 for c in COPIES}) == len(COPIES)
    assert len({c.commit for c in COPIES}) == len(COPIES)
    for c in COPIES:
        assert re.fullmatch(r"[0-9a-f]{40}", c.commit) and re.fullmatch(r"[0-9a-f]{64}",
                                                                         c.sha256)
        assert c.expect == "imports" or re.fullmatch(r"refused:\d+", c.expect), c.expect
        assert c.found and c.repo in c.found
