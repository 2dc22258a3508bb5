"""Parsers for the per-GPU ``amd-smi`` outputs: ``firmware`` and ``static``.

Formats and samples: ROCm/amdsmi@0ceca28 (docs/how-to/using-AMD-SMI-CLI-tool.md) and the dumps
of ROCm/ROCm#5231; GPU identity by PCI device ID (pciutils/pciids@c1c1254:pci.ids). Every parser
is pure and tolerant: unknown lines are ignored, missing fields are ``None``;
:class:`~pinning.errors.FormatError` only when nothing of the format is present.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import norm_pci_id
from pinning.util.jsonread import load_json
from pinning.util.models import Strict

__all__ = [
    "AmdSmiStatic",
    "GpuFirmware",
    "parse_amd_smi_firmware",
    "parse_amd_smi_static",
]

_NA = {"", "n/a", "na", "none", "not supported", "[n/a]"}


# -------------------------------------------------------------------------- firmware


class GpuFirmware(Strict):
    """One GPU of ``amd-smi firmware``: ``firmware`` maps FW_ID -> FW_VERSION.

    Versions are opaque strings as printed (decimal, dotted hex, dotted decimal).
    """

    gpu: int
    firmware: dict[str, str] = Field(default_factory=dict)


def _load_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return load_json(stripped, FormatError, label="amd-smi --json")
    except FormatError:
        return None


def _gpu_records(data: Any, marker: str) -> list[dict[str, Any]]:
    """Find the list of per-GPU dicts in amd-smi ``--json`` output (list or dict-wrapped)."""
    if isinstance(data, dict):
        if "gpu" in data or marker in data:
            return [data]
        for value in data.values():
            found = _gpu_records(value, marker)
            if found:
                return found
        return []
    if isinstance(data, list):
        recs = [d for d in data if isinstance(d, dict) and ("gpu" in d or marker in d)]
        if recs:
            return recs
        for value in data:
            found = _gpu_records(value, marker)
            if found:
                return found
    return []


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = re.fullmatch(r"(?:gpu[\s:_]*)?(\d{1,9})", value.strip(), re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _firmware_from_json(data: Any) -> list[GpuFirmware] | None:
    recs = _gpu_records(data, "fw_list")
    if not recs:
        return None
    out: list[GpuFirmware] = []
    for pos, rec in enumerate(recs):
        gpu = _as_int(rec.get("gpu"))
        fw_list = rec.get("fw_list", rec.get("FW_LIST", []))
        if isinstance(fw_list, dict):
            fw_list = list(fw_list.values())
        firmware: dict[str, str] = {}
        if isinstance(fw_list, list):
            for entry in fw_list:
                if not isinstance(entry, dict):
                    continue
                low = {str(k).lower(): v for k, v in entry.items()}
                fw_id = _scalar(low.get("fw_id", low.get("fw_name")))
                fw_ver = _scalar(low.get("fw_version"))
                if fw_id is not None and fw_ver is not None:
                    firmware[fw_id] = fw_ver
        out.append(GpuFirmware(gpu=gpu if gpu is not None else pos, firmware=firmware))
    return out


_GPU_LINE = re.compile(r"^\s*GPU\s*:\s*(\d{1,9})\s*$")
_KV_LINE = re.compile(r"^(\s*)([A-Za-z0-9_][A-Za-z0-9_ ]*):(.*)$")


def parse_amd_smi_firmware(text: str, *, source: str = "amd-smi firmware") -> list[GpuFirmware]:
    """Parse ``amd-smi firmware`` (alias ``ucode``), text or ``--json``.

    Text: ``GPU: N`` blocks holding ``FW N:`` / ``FW_N:`` entries with ``FW_ID`` and
    ``FW_VERSION`` lines. JSON: a list of ``{"gpu": N, "fw_list": [{"fw_id", "fw_version"}]}``
    (also found inside a wrapping dict). Returns one :class:`GpuFirmware` per GPU, in order.
    Raises ``FormatError`` naming ``source`` when neither shape is present.
    """
    data = _load_json(text)
    if data is not None:
        parsed = _firmware_from_json(data)
        if parsed is not None:
            return parsed
    gpus: list[GpuFirmware] = []
    current: int | None = None
    firmware: dict[str, str] = {}
    pending_id: str | None = None
    seen_fw = False
    for line in text.splitlines():
        m = _GPU_LINE.match(line)
        if m:
            if current is not None:
                gpus.append(GpuFirmware(gpu=current, firmware=firmware))
            current, firmware, pending_id = int(m.group(1)), {}, None
            continue
        stripped = line.strip()
        if stripped.startswith("FW_ID:"):
            pending_id = stripped[6:].strip()
            seen_fw = True
        elif stripped.startswith("FW_VERSION:"):
            seen_fw = True
            if pending_id is not None:
                if current is None:
                    current = 0
                firmware[pending_id] = stripped[11:].strip()
                pending_id = None
    if current is not None:
        gpus.append(GpuFirmware(gpu=current, firmware=firmware))
    if not seen_fw and not any(g.firmware for g in gpus):
        raise FormatError(
            f"{source}: no 'FW_ID:' / 'FW_VERSION:' entries found "
            "(expected `amd-smi firmware` text or --json output)"
        )
    return gpus


# ---------------------------------------------------------------------------- static


class AmdSmiStatic(Strict):
    """One GPU of ``amd-smi static`` (ROCm/amdsmi@0ceca28).

    IDs (``vendor_id``, ``device_id``, ``subsystem_id``) are lowercase ``0x%04x``;
    ``vram_mib`` is VRAM SIZE in MiB (amd-smi's "MB"); other values are as printed, with
    ``N/A`` read as ``None``. ``vbios_*`` also reads the ``IFWI`` section of newer amd-smi.
    """

    gpu: int
    market_name: str | None = None
    vendor_id: str | None = None
    device_id: str | None = None
    subsystem_id: str | None = None
    target_graphics_version: str | None = None
    vbios_name: str | None = None
    vbios_version: str | None = None
    vbios_build_date: str | None = None
    vbios_part_number: str | None = None
    driver_name: str | None = None
    driver_version: str | None = None
    vram_type: str | None = None
    vram_mib: int | None = None
    product_name: str | None = None


_STATIC_MAP: dict[tuple[str, str], str] = {
    ("asic", "market_name"): "market_name",
    ("asic", "vendor_id"): "vendor_id",
    ("asic", "device_id"): "device_id",
    ("asic", "subsystem_id"): "subsystem_id",
    ("asic", "target_graphics_version"): "target_graphics_version",
    ("vbios", "name"): "vbios_name",
    ("vbios", "version"): "vbios_version",
    ("vbios", "build_date"): "vbios_build_date",
    ("vbios", "part_number"): "vbios_part_number",
    ("ifwi", "name"): "vbios_name",
    ("ifwi", "version"): "vbios_version",
    ("ifwi", "build_date"): "vbios_build_date",
    ("ifwi", "part_number"): "vbios_part_number",
    ("driver", "name"): "driver_name",
    ("driver", "version"): "driver_version",
    ("vram", "type"): "vram_type",
    ("vram", "size"): "vram_mib",
    ("board", "product_name"): "product_name",
}
_ID_FIELDS = {"vendor_id", "device_id", "subsystem_id"}
_UNIT_MIB = {"b": 1 / (1024 * 1024), "kb": 1 / 1024, "kib": 1 / 1024, "mb": 1, "mib": 1,
             "gb": 1024, "gib": 1024, "tb": 1024 * 1024, "tib": 1024 * 1024}


def _mib(value: Any, unit: Any = None) -> int | None:
    if isinstance(value, dict):
        return _mib(value.get("value"), value.get("unit"))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        num = float(value)
        unit_s = str(unit or "MB").strip().lower()
    else:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)", str(value).strip())
        if not m:
            return None
        num = float(m.group(1))
        unit_s = (m.group(2) or str(unit or "MB")).lower()
    factor = _UNIT_MIB.get(unit_s)
    if factor is None or num > 1e15:
        return None
    return int(num * factor)


def _static_value(attr: str, value: Any) -> str | int | None:
    if attr == "vram_mib":
        return _mib(value)
    s = _scalar(value)
    if s is None:
        return None
    s = s.strip()
    if s.lower() in _NA:
        return None
    if attr in _ID_FIELDS:
        return norm_pci_id(s) or s
    return s


def _static_from_json(data: Any) -> list[AmdSmiStatic] | None:
    recs = _gpu_records(data, "asic")
    if not recs:
        return None
    out: list[AmdSmiStatic] = []
    for pos, rec in enumerate(recs):
        gpu = _as_int(rec.get("gpu"))
        values: dict[str, Any] = {}
        for section, body in rec.items():
            if not isinstance(body, dict):
                continue
            for key, value in body.items():
                attr = _STATIC_MAP.get((str(section).lower(), str(key).lower()))
                if attr is not None and attr not in values:
                    values[attr] = _static_value(attr, value)
        out.append(AmdSmiStatic(gpu=gpu if gpu is not None else pos, **values))
    return out


# Line-oriented parser: one branch per section and key shape of amd-smi static.
def parse_amd_smi_static(text: str, *, source: str = "amd-smi static") -> list[AmdSmiStatic]:  # noqa: C901
    """Parse ``amd-smi static`` text or ``--json`` output.

    Text: ``GPU: N`` blocks, 4-space-indented sections (``ASIC``, ``VBIOS``/``IFWI``,
    ``DRIVER``, ``VRAM``, ``BOARD``; others ignored) of ``KEY: value`` lines. JSON: a list of
    ``{"gpu": N, "asic": {...}, "vram": {"size": {"value": N, "unit": "MB"}}, ...}``.
    Returns one :class:`AmdSmiStatic` per GPU. Raises ``FormatError`` naming ``source``
    when there is no ``GPU: N`` block with a known section.
    """
    data = _load_json(text)
    if data is not None:
        parsed = _static_from_json(data)
        if parsed is not None:
            return parsed
    out: list[AmdSmiStatic] = []
    gpu: int | None = None
    values: dict[str, Any] = {}
    stack: list[tuple[int, str]] = []
    known_section = False
    for line in text.splitlines():
        m = _GPU_LINE.match(line)
        if m:
            if gpu is not None:
                out.append(AmdSmiStatic(gpu=gpu, **values))
            gpu, values, stack = int(m.group(1)), {}, []
            continue
        if gpu is None:
            continue
        kv = _KV_LINE.match(line)
        if not kv:
            continue
        indent = len(kv.group(1).expandtabs(4))
        key = kv.group(2).strip().lower().replace(" ", "_")
        value = kv.group(3).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not value:
            stack.append((indent, key))
            if len(stack) == 1 and any(k[0] == key for k in _STATIC_MAP):
                known_section = True
            continue
        if len(stack) != 1:
            continue
        attr = _STATIC_MAP.get((stack[0][1], key))
        if attr is not None and attr not in values:
            values[attr] = _static_value(attr, value)
    if gpu is not None:
        out.append(AmdSmiStatic(gpu=gpu, **values))
    if not known_section:
        raise FormatError(
            f"{source}: no 'GPU: N' block with an ASIC/VBIOS/DRIVER/VRAM/BOARD section found "
            "(expected `amd-smi static` text or --json output)"
        )
    return out
