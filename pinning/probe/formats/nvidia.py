"""Parsers for NVIDIA outputs: ``nvidia-smi --query-gpu`` CSV, the ``nvidia-smi`` banner,
and ``/proc/driver/nvidia/version`` (formats as nvidia-smi
prints them; GPU identity by PCI device ID, pciutils/pciids@c1c1254:pci.ids).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import norm_pci_id
from pinning.util.models import Strict

__all__ = [
    "NvidiaKernelModule",
    "NvidiaSmiGpu",
    "parse_nvidia_smi_banner",
    "parse_nvidia_smi_query",
    "parse_proc_driver_nvidia_version",
]


class NvidiaSmiGpu(Strict):
    """One row of ``nvidia-smi --query-gpu=... --format=csv``.

    ``device_id`` is the PCI device ID as lowercase ``0x%04x`` (``0x233510DE`` -> ``0x2335``);
    ``memory_mib`` is ``memory.total`` in MiB; ``[N/A]`` values are ``None``; other values
    as printed. ``fields`` keeps every queried field's raw value (units included).
    """

    index: int
    name: str | None = None
    driver_version: str | None = None
    vbios_version: str | None = None
    compute_cap: str | None = None
    pci_bus_id: str | None = None
    device_id: str | None = None
    uuid: str | None = None
    memory_mib: int | None = None
    fields: dict[str, str] = Field(default_factory=dict)


_FIELD_ALIASES = {
    "name": "name",
    "gpu_name": "name",
    "driver_version": "driver_version",
    "vbios_version": "vbios_version",
    "compute_cap": "compute_cap",
    "pci.bus_id": "pci_bus_id",
    "gpu_bus_id": "pci_bus_id",
    "pci.device_id": "device_id",
    "memory.total": "memory_mib",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
    "index": "index",
}
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_.]*$")
_NONE_VALUES = {
    "", "[n/a]", "n/a", "[not supported]", "[unknown error]", "[insufficient permissions]"
}
_UNIT_MIB = {"mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0, "kib": 1 / 1024, "kb": 1 / 1024}


def _header_name(cell: str) -> tuple[str, str | None]:
    """``("memory.total", "MiB")`` from the CSV header cell ``memory.total [MiB]``."""
    text = cell.strip()
    start = text.rfind("[")
    if start > 0 and text.endswith("]") and "]" not in text[start:-1]:
        name, unit = text[:start].rstrip(), text[start + 1:-1]
        if name and not any(c.isspace() for c in name):
            return name.lower(), unit
    return text.lower(), None


def _memory(value: str, unit: str | None) -> int | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)", value.strip())
    if not m:
        return None
    factor = _UNIT_MIB.get((m.group(2) or unit or "MiB").lower())
    if factor is None or len(m.group(1)) > 15:
        return None
    return int(float(m.group(1)) * factor)


def parse_nvidia_smi_query(
    text: str,
    *,
    fields: Sequence[str] | None = None,
    source: str = "nvidia-smi --query-gpu",
) -> list[NvidiaSmiGpu]:
    """Parse ``nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]``.

    With a header (``name, memory.total [MiB]``) the field names come from it; with
    ``noheader`` pass ``fields`` (the ``--query-gpu`` list), else ``FormatError``. Known
    fields: name, driver_version, vbios_version, compute_cap, pci.bus_id, pci.device_id,
    memory.total, uuid, index (and the ``gpu_*`` aliases). Rows without ``index`` are
    numbered in order. Raises ``FormatError`` naming ``source`` on empty input.
    """
    try:
        rows = [
            [c.strip() for c in row]
            for row in csv.reader(line for line in text.splitlines() if line.strip())
        ]
    except csv.Error as exc:
        raise FormatError(f"{source}: not CSV output of nvidia-smi --query-gpu ({exc})") from None
    rows = [r for r in rows if any(r)]
    if not rows:
        raise FormatError(f"{source}: empty output (expected CSV rows of nvidia-smi --query-gpu)")
    names, units, data = _query_columns(text, rows, fields, source)
    out: list[NvidiaSmiGpu] = []
    for pos, row in enumerate(data):
        values, raw = _query_row(row, names, units)
        index = values.pop("index", None)
        out.append(NvidiaSmiGpu(index=index if index is not None else pos, fields=raw, **values))
    return out


def _query_columns(text: str, rows: list[list[str]], fields: Sequence[str] | None, source: str
                   ) -> tuple[list[str], list[str | None], list[list[str]]]:
    """``(field names, units, data rows)``: from the CSV header when ``rows`` start with one
    (``fields``, when given, renames its columns), else from ``fields``. Raises
    ``FormatError`` naming ``source`` when neither names a known ``--query-gpu`` field.
    """
    first = [_header_name(c) for c in rows[0]]
    looks_header = all(_FIELD_NAME.match(name) for name, _ in first) and any(
        name in _FIELD_ALIASES for name, _ in first
    )
    units: list[str | None]
    if looks_header:
        names = [name for name, _ in first]
        units = [unit for _, unit in first]
        data = rows[1:]
        if fields is not None:
            names = [f.strip().lower() for f in fields] or names
    elif fields is not None:
        names = [f.strip().lower() for f in fields]
        units = [None] * len(names)
        data = rows
    else:
        raise FormatError(
            f"{source}: line 1: no CSV header naming --query-gpu fields "
            f"(got {text.strip().splitlines()[0][:80]!r}); pass the field list for "
            "--format=csv,noheader output"
        )
    if not any(n in _FIELD_ALIASES for n in names):
        raise FormatError(
            f"{source}: none of the fields {names[:8]} is a known --query-gpu field "
            f"({', '.join(sorted(set(_FIELD_ALIASES)))})"
        )
    return names, units, data


def _query_row(row: list[str], names: list[str], units: list[str | None]
               ) -> tuple[dict[str, Any], dict[str, str]]:
    """``(model values, raw cells by field name)`` of one CSV row; one branch per field shape."""
    values: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for col, cell in enumerate(row[:len(names)]):
        name = names[col]
        raw[name] = cell
        attr = _FIELD_ALIASES.get(name)
        if attr is None or attr in values:
            continue
        unit = units[col] if col < len(units) else None
        if cell.lower() in _NONE_VALUES:
            values[attr] = None
        elif attr == "memory_mib":
            values[attr] = _memory(cell, unit)
        elif attr == "index":
            values[attr] = int(cell) if re.fullmatch(r"\d{1,9}", cell) else None
        elif attr == "device_id":
            values[attr] = norm_pci_id(cell) or cell
        else:
            values[attr] = cell
    return values, raw


class NvidiaKernelModule(Strict):
    """``/proc/driver/nvidia/version``.

    ``version`` is the driver version (``550.54.14``); ``kind`` is ``open`` for the "Open
    Kernel Module", else ``proprietary``; ``arch`` the CPU architecture named in the NVRM
    line (``x86_64``, ``aarch64``); ``gcc`` the compiler version of the ``GCC version:``
    line (``12.3.0``), or the whole value when no version number is found.
    """

    version: str
    kind: Literal["proprietary", "open"]
    arch: str | None = None
    gcc: str | None = None


def parse_proc_driver_nvidia_version(
    text: str, *, source: str = "/proc/driver/nvidia/version"
) -> NvidiaKernelModule:
    """Parse ``/proc/driver/nvidia/version``.

    The version is the first whitespace token after ``Module`` that starts with a digit and
    contains a dot. Raises ``FormatError`` naming ``source`` (and the line) when there is no
    ``NVRM version:`` line or it holds no version.
    """
    lines = text.splitlines()
    module: NvidiaKernelModule | None = None
    gcc: str | None = None
    for lineno, line in enumerate(lines, 1):
        if "NVRM version" in line and module is None:
            _, sep, tail = line.partition("Module")
            version = None
            if sep:
                version = next(
                    (t for t in tail.split() if t[:1].isdigit() and "." in t), None
                )
            if version is None:
                raise FormatError(
                    f"{source}: line {lineno}: no driver version after 'Kernel Module' "
                    f"in {line.strip()[:100]!r}"
                )
            kind: Literal["proprietary", "open"] = (
                "open" if "open kernel module" in line.lower() else "proprietary"
            )
            m = re.search(r"Open Kernel Module for (\S+)", line) or re.search(
                r"NVIDIA UNIX (\S+) Kernel Module", line
            )
            module = NvidiaKernelModule(
                version=version, kind=kind, arch=m.group(1) if m else None
            )
        elif line.strip().startswith("GCC version") and gcc is None:
            value = line.split(":", 1)[1].strip() if ":" in line else ""
            m = re.search(r"gcc version\s+(\S+)", value)
            gcc = m.group(1) if m else (value or None)
    if module is None:
        raise FormatError(
            f"{source}: no 'NVRM version: NVIDIA UNIX ... Kernel Module <version>' line found"
        )
    return module.model_copy(update={"gcc": gcc})


def parse_nvidia_smi_banner(
    text: str, *, source: str = "nvidia-smi"
) -> tuple[str | None, str | None]:
    """Return ``(driver_version, cuda_version)`` from the plain ``nvidia-smi`` banner.

    Reads ``| NVIDIA-SMI 575.51.03   Driver Version: 575.51.03   CUDA Version: 12.9 |``
    or the ``nvidia-smi -q`` ``Driver Version : x`` lines. The CUDA version is
    the highest the driver supports, not the installed toolkit. Raises ``FormatError``
    naming ``source`` when neither version is present.
    """
    driver = cuda = smi = None
    for line in text.splitlines():
        if driver is None and (m := re.search(r"Driver Version\s*:\s*([0-9][\w.\-]*)", line)):
            driver = m.group(1)
        if cuda is None and (m := re.search(r"CUDA Version\s*:\s*([0-9][\w.\-]*)", line)):
            cuda = m.group(1)
        if smi is None and (m := re.search(r"NVIDIA-SMI\s+([0-9][\w.\-]*)", line)):
            smi = m.group(1)
    if driver is None:
        driver = smi
    if driver is None and cuda is None:
        raise FormatError(
            f"{source}: no 'Driver Version:' / 'CUDA Version:' banner found "
            "(expected the table header of plain `nvidia-smi`)"
        )
    return driver, cuda
