"""Parser for ``rocminfo`` (and ``rocminfo --support``) output.

Reads the ``ROCk module`` line, ``HSA System Attributes`` and every agent block of
``HSA Agents`` (delimited by ``*******`` rulers and ``Agent N`` lines). Also reads agent
blocks pasted alone, with reflowed spacing and without the ``Agent N`` line.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import norm_pci_id
from pinning.util.models import Strict

__all__ = ["Rocminfo", "RocminfoAgent", "gfx_from_isa", "parse_rocminfo"]


class RocminfoAgent(Strict):
    """One HSA agent (CPU or GPU) of rocminfo.

    ``name`` is the agent Name (``gfx942`` or the CPU model); ``chip_id`` the PCI device ID
    as lowercase ``0x%04x`` (from ``29877(0x74b5)``); ``isa`` the full target IDs of
    ``ISA Info`` (``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``); ``queue`` maps
    ``max_queue_number``/``min_size``/``max_size``/``type`` to values as printed
    (``128(0x80)``); ``gfx_target`` is the bare target (Name when it starts with ``gfx``,
    else from the first ISA). ``fields`` keeps every agent-level ``Key: value`` as printed.
    """

    name: str | None = None
    uuid: str | None = None
    marketing_name: str | None = None
    vendor_name: str | None = None
    device_type: str | None = None
    feature: str | None = None
    profile: str | None = None
    node: int | None = None
    chip_id: str | None = None
    compute_units: int | None = None
    isa: list[str] = Field(default_factory=list)
    queue: dict[str, str] = Field(default_factory=dict)
    packet_processor_ucode: str | None = None
    sdma_ucode: str | None = None
    gfx_target: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)


RockState = Literal["loaded", "not-live", "not-loaded"]


class Rocminfo(Strict):
    """A whole rocminfo output: ROCk module line, runtime versions, agents in order.

    ``rock_module_version`` is the amdgpu DKMS version of ``ROCk module version X is
    loaded`` (``None`` for ``ROCk module is loaded``, the inbox-driver form). ``system``
    keeps every ``HSA System Attributes`` pair as printed.
    """

    rock_module_version: str | None = None
    rock_module_state: RockState | None = None
    runtime_version: str | None = None
    runtime_ext_version: str | None = None
    system: dict[str, str] = Field(default_factory=dict)
    agents: list[RocminfoAgent] = Field(default_factory=list)

    @property
    def gpus(self) -> list[RocminfoAgent]:
        """The agents whose Device Type is GPU, in order."""
        return [a for a in self.agents if (a.device_type or "").upper() == "GPU"]


def gfx_from_isa(isa: str) -> str | None:
    """Bare gfx target of a (full) target ID: text before the first ``:``, minus the triple.

    ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`` -> ``gfx942``; ``gfx90a:xnack-`` ->
    ``gfx90a``; ``None`` when no ``gfx`` target is present.
    """
    head = isa.split(":", 1)[0].strip()
    head = head.rsplit("--", 1)[-1]
    m = re.search(r"(gfx[0-9a-z-]+)", head, re.IGNORECASE)
    return m.group(1).lower() if m else None


_KV = re.compile(r"^(\s*)([^:\s][^:]*)::?(?:\s|$)(.*)$")
_ROCK_VERSION = re.compile(r"ROCk module version\s+(\S+)\s+is loaded", re.IGNORECASE)
_STAR_RULER = re.compile(r"^\s*\*{3,}\s*$")
_DONE = re.compile(r"^\s*\*+\s*Done\s*\*+\s*$", re.IGNORECASE)
_AGENT = re.compile(r"^\s*Agent\s+\d+\s*$")
_SUBSECTIONS = {"pool info", "isa info", "cache info"}
_QUEUE = {
    "max queue number": "max_queue_number",
    "queue min size": "min_size",
    "queue max size": "max_size",
    "queue type": "type",
}
_STR_FIELDS = {
    "name": "name",
    "uuid": "uuid",
    "marketing name": "marketing_name",
    "vendor name": "vendor_name",
    "device type": "device_type",
    "feature": "feature",
    "profile": "profile",
    "packet processor ucode": "packet_processor_ucode",
    "sdma engine ucode": "sdma_ucode",
}


def _chip_id(value: str) -> str | None:
    m = re.search(r"\(0x([0-9a-fA-F]{1,8})\)", value)
    if m:
        return norm_pci_id(m.group(1))
    m = re.fullmatch(r"\s*(\d{1,9})\s*", value)
    if m:
        return norm_pci_id(int(m.group(1)))
    return None


def _leading_int(value: str) -> int | None:
    m = re.match(r"\s*(\d{1,9})\b", value)
    return int(m.group(1)) if m else None


class _Agent:
    __slots__ = ("data", "fields", "indent", "isa", "queue", "sub", "sub_indent")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.fields: dict[str, str] = {}
        self.queue: dict[str, str] = {}
        self.isa: list[str] = []
        self.indent: int | None = None
        self.sub: str | None = None
        self.sub_indent = 0

    def empty(self) -> bool:
        return not (self.data or self.fields or self.queue or self.isa)

    def build(self) -> RocminfoAgent:
        name = self.data.get("name")
        gfx: str | None = None
        if isinstance(name, str) and name.lower().startswith("gfx"):
            gfx = gfx_from_isa(name)
        if gfx is None and self.isa:
            gfx = gfx_from_isa(self.isa[0])
        return RocminfoAgent(
            fields=self.fields, queue=self.queue, isa=self.isa, gfx_target=gfx, **self.data
        )

    def add(self, indent: int, key: str, value: str) -> None:
        low = " ".join(key.lower().split())
        if self.indent is None:
            self.indent = indent
        if self.sub is not None and indent <= self.sub_indent:
            self.sub = None
        if self.sub is not None:
            if self.sub == "isa info" and low == "name" and value:
                self.isa.append(value)
            return
        if low in _SUBSECTIONS and not value:
            self.sub, self.sub_indent = low, indent
            return
        self.fields.setdefault(key, value)
        if low in _STR_FIELDS:
            self.data.setdefault(_STR_FIELDS[low], value or None)
        elif low in _QUEUE:
            self.queue.setdefault(_QUEUE[low], value)
        elif low == "node":
            self.data.setdefault("node", _leading_int(value))
        elif low == "chip id":
            self.data.setdefault("chip_id", _chip_id(value))
        elif low == "compute unit":
            self.data.setdefault("compute_units", _leading_int(value))


# Line-oriented parser of rocminfo's agent blocks; one branch per key shape, in output order.
def parse_rocminfo(text: str, *, source: str = "rocminfo") -> Rocminfo:  # noqa: C901,PLR0915
    """Parse rocminfo output into a :class:`Rocminfo`.

    Key lines are ``Key:  value`` (``Packet Processor uCode::`` has two colons); agents
    start at ``Agent N`` or after a ``****`` ruler, and ``Pool Info``/``ISA Info``/
    ``Cache Info`` sub-blocks are told apart by indentation. Raises ``FormatError`` naming
    ``source`` when there is no ROCk line, no HSA attribute and no agent.
    """
    rock_version: str | None = None
    rock_state: RockState | None = None
    system: dict[str, str] = {}
    agents: list[RocminfoAgent] = []
    current: _Agent | None = None
    in_agents = False
    recognised = False

    def close() -> None:
        nonlocal current
        if current is not None and not current.empty():
            agents.append(current.build())
        current = None

    for line in text.splitlines():
        if "ROCk module" in line:
            recognised = True
            m = _ROCK_VERSION.search(line)
            if m:
                rock_version, rock_state = m.group(1), "loaded"
            elif "NOT live" in line:
                rock_state = "not-live"
            elif "NOT loaded" in line:
                rock_state = "not-loaded"
            elif "is loaded" in line:
                rock_state = "loaded"
            continue
        stripped = line.strip()
        if _DONE.match(line):
            close()
            in_agents = False
            continue
        if _STAR_RULER.match(line):
            close()
            in_agents = True
            continue
        if _AGENT.match(line):
            close()
            current = _Agent()
            in_agents = True
            recognised = True
            continue
        if stripped == "HSA Agents":
            close()
            in_agents = True
            recognised = True
            continue
        if stripped == "HSA System Attributes":
            recognised = True
            continue
        m = _KV.match(line)
        if not m:
            continue
        indent = len(m.group(1).expandtabs(8))
        key, value = m.group(2).strip(), m.group(3).strip()
        low = key.lower()
        if not in_agents and low == "name":
            in_agents = True
        if in_agents:
            if current is None:
                current = _Agent()
            current.add(indent, key, value)
            recognised = True
        else:
            system.setdefault(key, value)
            if low in ("runtime version", "runtime ext version"):
                recognised = True
    close()
    if not recognised:
        raise FormatError(
            f"{source}: no rocminfo output found (expected 'ROCk module ...', "
            "'HSA System Attributes' or an agent block with 'Name:')"
        )
    return Rocminfo(
        rock_module_version=rock_version,
        rock_module_state=rock_state,
        runtime_version=system.get("Runtime Version"),
        runtime_ext_version=system.get("Runtime Ext Version"),
        system=system,
        agents=agents,
    )
