"""Parser for legacy ``rocm-smi`` outputs.

One parser reads any mix of ``--version``, the concise default table (ROCm 6.4 layout with
two header rows, the ROCm 6.0-6.3 ``[Model : Revision]`` layout and the older
``GPU Temp (DieEdge) AvgPwr ...`` layout), ``--showfw``/``--showfwinfo``,
``--showdriverversion``, ``--showvbios`` and ``--showtoponuma``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import norm_pci_id
from pinning.util.models import Strict

__all__ = ["RocmSmiGpu", "RocmSmiReport", "RocmSmiVersion", "parse_rocm_smi"]


class RocmSmiVersion(Strict):
    """``rocm-smi --version``: ``smi`` is ``ROCM-SMI version``, ``lib`` ``ROCM-SMI-LIB version``."""

    smi: str | None = None
    lib: str | None = None


class RocmSmiGpu(Strict):
    """One GPU as seen by rocm-smi, merged over every section of the text.

    ``telemetry`` holds the concise-table columns as printed, keyed ``temp_junction``,
    ``temp_edge``, ``temp_memory``, ``power_socket``, ``avg_power``, ``sclk``, ``mclk``,
    ``fan``, ``perf``, ``power_cap``, ``vram_used_pct``, ``gpu_busy_pct``. ``partitions``
    maps ``memory``/``compute``/``id``. ``firmware`` maps the block name as printed (``MEC``,
    ``TA RAS``, ``SOS``) to the version as printed; unsupported blocks are omitted.
    ``device_id`` is lowercase ``0x%04x``. ``name`` is the device-name row of the 6.0-6.3
    table; ``fields`` keeps every other ``GPU[i] : Label: value`` line as printed.
    """

    index: int
    node: int | None = None
    device_id: str | None = None
    guid: str | None = None
    name: str | None = None
    telemetry: dict[str, str] = Field(default_factory=dict)
    partitions: dict[str, str] | None = None
    numa_node: int | None = None
    numa_affinity: int | None = None
    vbios: str | None = None
    firmware: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)


class RocmSmiReport(Strict):
    """Everything read from one rocm-smi text: tool versions, driver version, GPUs by index."""

    version: RocmSmiVersion | None = None
    driver_version: str | None = None
    gpus: list[RocmSmiGpu] = Field(default_factory=list)


# Values are captured whole and stripped by the caller: `(.*?)\s*$` is quadratic on a long
# run of spaces.
_GPU_LINE = re.compile(r"^\s*GPU\[(\d{1,9})\]\s*:\s*(\S.*|)$")
_SMI_VERSION = re.compile(r"^\s*ROCM-SMI version\s*:\s*(\S.*)$", re.IGNORECASE)
_LIB_VERSION = re.compile(r"^\s*ROCM-SMI-LIB version\s*:\s*(\S.*)$", re.IGNORECASE)
_DRIVER = re.compile(r"^\s*Driver version\s*:\s*(\S.*|)$", re.IGNORECASE)
_RULER = re.compile(r"^\s*=+")
_BANNER = "rocm system management interface"

_COLUMN_KEYS = {
    "sclk": "sclk",
    "mclk": "mclk",
    "fan": "fan",
    "perf": "perf",
    "pwrcap": "power_cap",
    "vram%": "vram_used_pct",
    "gpu%": "gpu_busy_pct",
    "avgpwr": "avg_power",
}


def _int(value: str) -> int | None:
    value = value.strip()
    return int(value) if re.fullmatch(r"\d{1,9}", value) else None


# Maps the column titles of three rocm-smi generations, one branch each.
def _column_key(name: str, qualifier: str) -> str:  # noqa: C901
    base = name.strip().lower()
    qual = qualifier.strip().strip("()").lower()
    if base in ("device", "gpu"):
        return "index"
    if base == "node":
        return "node"
    if base.startswith("ids") or base.startswith("[model") or base == "did":
        return "ids"
    if base.startswith("partitions"):
        return "partitions"
    if base.startswith("temp"):
        if "junction" in qual:
            return "temp_junction"
        if "edge" in qual:
            return "temp_edge"
        if "mem" in qual:
            return "temp_memory"
        return "temp"
    if base.startswith("power") or base == "pwr":
        if "socket" in qual:
            return "power_socket"
        if "avg" in qual:
            return "avg_power"
        return "power"
    if base in _COLUMN_KEYS:
        return _COLUMN_KEYS[base]
    return re.sub(r"[^a-z0-9%]+", "_", base).strip("_") or "column"


def _split_columns(line: str) -> list[tuple[int, str]]:
    """Split a header row on runs of 2+ spaces, keeping each chunk's start column."""
    return [(m.start(), m.group(0)) for m in re.finditer(r"\S+(?: \S+)*", line)]


def _table_columns(header: str, second: str | None) -> list[str]:
    cols = _split_columns(header)
    quals = [""] * len(cols)
    for i, (_, name) in enumerate(cols):
        start = name.find("(")
        if start >= 0 and name.endswith(")"):
            cols[i] = (cols[i][0], name[:start].rstrip())
            quals[i] = name[start:]
    if second is not None:
        for pos, chunk in _split_columns(second):
            best = 0
            for i, (start, _) in enumerate(cols):
                if start <= pos + 1:
                    best = i
            quals[best] = (quals[best] + " " + chunk).strip()
    return [_column_key(name, qual) for (_, name), qual in zip(cols, quals, strict=True)]


def _row_values(line: str) -> list[str]:
    """Tokens of a table row; ``a, b`` lists and ``[x : y]`` groups stay one value."""
    values: list[str] = []
    joining = False
    bracket = False
    for tok in line.split():
        if (joining or bracket) and values:
            values[-1] = values[-1] + " " + tok
        else:
            values.append(tok)
        if tok.startswith("["):
            bracket = True
        if bracket and tok.endswith("]"):
            bracket = False
        joining = tok.endswith(",")
    return values


class _Gpu:
    __slots__ = ("data", "fields", "firmware", "telemetry")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.telemetry: dict[str, str] = {}
        self.firmware: dict[str, str] = {}
        self.fields: dict[str, str] = {}


def _apply_row(gpu: _Gpu, columns: list[str], values: list[str]) -> None:
    if len(values) == len(columns):
        pairs = list(zip(columns, values, strict=True))
    else:
        head = min(2, len(values), len(columns))
        tail = min(len(values), len(columns)) - head
        pairs = list(zip(columns[:head], values[:head], strict=True))
        if tail > 0:
            pairs += list(zip(columns[-tail:], values[-tail:], strict=True))
    for key, value in pairs:
        if key == "index":
            continue
        if key == "node":
            gpu.data["node"] = _int(value)
        elif key == "ids":
            parts = [p.strip() for p in re.split(r"[,:\[\]]", value) if p.strip()]
            if parts:
                gpu.data["device_id"] = norm_pci_id(parts[0]) or parts[0]
            if len(parts) > 1 and value.lstrip().startswith("0x") and "," in value:
                gpu.data["guid"] = parts[1]
        elif key == "partitions":
            parts = [p.strip() for p in value.split(",")]
            gpu.data["partitions"] = {
                k: v for k, v in zip(("memory", "compute", "id"), parts, strict=False) if v
            }
        else:
            gpu.telemetry[key] = value


@dataclass
class _Reader:
    """The rocm-smi reader's state: versions, GPUs by index, the concise table's columns and
    the row last read (whose name may follow on the next line).
    """

    lines: list[str]
    smi: str | None = None
    lib: str | None = None
    driver: str | None = None
    gpus: dict[int, _Gpu] = field(default_factory=dict)
    recognised: bool = False
    columns: list[str] | None = None
    last_row: _Gpu | None = None
    i: int = 0

    def run(self) -> None:
        """Read every line: a key line, or a line of the concise table."""
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            if not self._key_line(line):
                self._table_line(line)

    def _key_line(self, line: str) -> bool:
        """The banner, a version or driver line, or a ``GPU[i] : ...`` line; True if taken."""
        low = line.lower()
        if _BANNER in low or "end of rocm smi log" in low:
            self.columns = None
        elif (m := _SMI_VERSION.match(line)) is not None:
            self.smi = m.group(1).strip()
        elif (m := _LIB_VERSION.match(line)) is not None:
            self.lib = m.group(1).strip()
        elif (m := _DRIVER.match(line)) is not None:
            self.driver = m.group(1).strip() or None
        elif (m := _GPU_LINE.match(line)) is not None:
            # Warnings such as `GPU[0] : PowerPlay not enabled` may sit between the table's
            # header and its rows (ROCm 1.x), so the table's columns are kept.
            _gpu_line(self.gpus.setdefault(int(m.group(1)), _Gpu()), m.group(2).strip())
        else:
            return False
        self.recognised = True
        return True

    def _table_line(self, line: str) -> None:
        """The concise table's header (one or two lines), a row, or a row's name line."""
        stripped = line.strip()
        head = stripped.split()[:1]
        if head and head[0] in ("Device", "GPU") and len(stripped.split()) >= 3 and (
            "Temp" in stripped or "Node" in stripped or "SCLK" in stripped
        ):
            nxt = self.lines[self.i] if self.i < len(self.lines) else ""
            second = None
            if nxt[:1].isspace() and nxt.strip() and not (
                    _RULER.match(nxt) or nxt.strip()[:1].isdigit()):
                second = nxt
                self.i += 1
            self.columns = _table_columns(line, second)
            self.last_row, self.recognised = None, True
        elif self.columns is None or not stripped or _RULER.match(line):
            return
        elif re.match(r"^\d+\s", stripped + " "):
            # ROCm 1.x indents the rows (`  0   37c ...`); later releases do not.
            values = _row_values(stripped)
            index = _int(values[0])
            if index is not None:
                self.last_row = self.gpus.setdefault(index, _Gpu())
                _apply_row(self.last_row, self.columns, values)
        elif line[:1].isspace() and self.last_row is not None \
                and "name" not in self.last_row.data:
            self.last_row.data["name"] = stripped


def parse_rocm_smi(text: str, *, source: str = "rocm-smi") -> RocmSmiReport:
    """Parse any mix of rocm-smi outputs into one :class:`RocmSmiReport`.

    Recognises ``ROCM-SMI version:`` / ``ROCM-SMI-LIB version:``, ``Driver version: x``,
    ``GPU[i]<TAB><TAB>: ...`` lines (firmware, VBIOS, NUMA, anything else into ``fields``)
    and the concise table. GPUs are merged by index and returned sorted. Raises
    ``FormatError`` naming ``source`` when none of these (nor the rocm-smi banner) appear.
    """
    reader = _Reader(text.splitlines())
    reader.run()
    smi, lib, driver, gpus = reader.smi, reader.lib, reader.driver, reader.gpus
    if not reader.recognised:
        raise FormatError(
            f"{source}: no rocm-smi output found (expected 'ROCM-SMI version:', "
            "'GPU[i] : ...' lines, 'Driver version:' or the concise table)"
        )
    version = RocmSmiVersion(smi=smi, lib=lib) if (smi or lib) else None
    return RocmSmiReport(
        version=version,
        driver_version=driver,
        gpus=[
            RocmSmiGpu(
                index=idx,
                telemetry=g.telemetry,
                firmware=g.firmware,
                fields=g.fields,
                **g.data,
            )
            for idx, g in sorted(gpus.items())
        ],
    )


def _firmware_line(rest: str) -> tuple[str, str] | None:
    """``("ASD", "0x00000000")`` from ``ASD firmware version: 0x00000000``; ``None`` for
    other lines. The name is what precedes `` firmware version`` (any case), whitespace kept.
    """
    head, sep, value = rest.partition(":")
    if not sep:
        return None
    words = head.rstrip()
    suffix = "firmware version"
    if not words.lower().endswith(suffix):
        return None
    name = words[: -len(suffix)]
    if not name[-1:].isspace() or not name.strip():
        return None
    return name.strip(), value.strip()


def _gpu_line(gpu: _Gpu, rest: str) -> None:
    if "not supported" in rest.lower() and rest.lower().startswith("get_"):
        return
    fw = _firmware_line(rest)
    if fw is not None:
        name, value = fw
        if value and "not supported" not in value.lower():
            gpu.firmware[name] = value
        return
    label, sep, value = rest.partition(":")
    if not sep:
        return
    label = label.strip()
    value = value.strip()
    key = label.lower()
    if key == "(topology) numa node":
        gpu.data["numa_node"] = _int(value)
    elif key == "(topology) numa affinity":
        gpu.data["numa_affinity"] = _int(value)
    elif key == "vbios version":
        gpu.data["vbios"] = value or None
    elif label:
        gpu.fields[label] = value
