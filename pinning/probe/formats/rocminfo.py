"""Parser for ``rocminfo`` (and ``rocminfo --support``) output.

Reads the ``ROCk module`` line, ``HSA System Attributes`` and every agent block of
``HSA Agents`` (delimited by ``*******`` rulers and ``Agent N`` lines). Also reads agent
blocks pasted alone, with reflowed spacing and without the ``Agent N`` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
def _rock_state(line: str) -> tuple[str | None, RockState | None]:
    """``(version, state)`` of a ``ROCk module ...`` line; ``None`` for what it does not say."""
    m = _ROCK_VERSION.search(line)
    if m:
        return m.group(1), "loaded"
    states: tuple[tuple[str, RockState], ...] = (
        ("NOT live", "not-live"), ("NOT loaded", "not-loaded"), ("is loaded", "loaded"))
    for words, state in states:
        if words in line:
            return None, state
    return None, None


@dataclass
class _Reader:
    """The rocminfo reader's state: system attributes, agents read, the agent being read."""

    rock_version: str | None = None
    rock_state: RockState | None = None
    system: dict[str, str] = field(default_factory=dict)
    agents: list[RocminfoAgent] = field(default_factory=list)
    current: _Agent | None = None
    in_agents: bool = False
    recognised: bool = False

    def close(self) -> None:
        """End the agent being read (kept when it holds anything)."""
        if self.current is not None and not self.current.empty():
            self.agents.append(self.current.build())
        self.current = None

    def feed(self, line: str) -> None:
        """Read one line: the ROCk line, a ruler or agent start, or a ``Key: value`` line."""
        stripped = line.strip()
        if "ROCk module" in line:
            self.recognised = True
            version, state = _rock_state(line)
            self.rock_version = version or self.rock_version
            self.rock_state = state or self.rock_state
        elif _DONE.match(line) or _STAR_RULER.match(line):
            self.close()
            self.in_agents = not _DONE.match(line)
        elif _AGENT.match(line) or stripped == "HSA Agents":
            self.close()
            self.current = _Agent() if _AGENT.match(line) else None
            self.in_agents = self.recognised = True
        elif stripped == "HSA System Attributes":
            self.recognised = True
        elif m := _KV.match(line):
            self._key_value(len(m.group(1).expandtabs(8)), m.group(2).strip(),
                            m.group(3).strip())

    def _key_value(self, indent: int, key: str, value: str) -> None:
        """A ``Key: value`` line: a system attribute, or a line of the agent being read."""
        low = key.lower()
        self.in_agents = self.in_agents or low == "name"
        if self.in_agents:
            if self.current is None:
                self.current = _Agent()
            self.current.add(indent, key, value)
            self.recognised = True
        else:
            self.system.setdefault(key, value)
            if low in ("runtime version", "runtime ext version"):
                self.recognised = True


def parse_rocminfo(text: str, *, source: str = "rocminfo") -> Rocminfo:
    """Parse rocminfo output into a :class:`Rocminfo`.

    Key lines are ``Key:  value`` (``Packet Processor uCode::`` has two colons); agents
    start at ``Agent N`` or after a ``****`` ruler, and ``Pool Info``/``ISA Info``/
    ``Cache Info`` sub-blocks are told apart by indentation. Raises ``FormatError`` naming
    ``source`` when there is no ROCk line, no HSA attribute and no agent.
    """
    reader = _Reader()
    for line in text.splitlines():
        reader.feed(line)
    reader.close()
    if not reader.recognised:
        raise FormatError(
            f"{source}: no rocminfo output found (expected 'ROCk module ...', "
            "'HSA System Attributes' or an agent block with 'Name:')"
        )
    system = reader.system
    return Rocminfo(
        rock_module_version=reader.rock_version,
        rock_module_state=reader.rock_state,
        runtime_version=system.get("Runtime Version"),
        runtime_ext_version=system.get("Runtime Ext Version"),
        system=system,
        agents=reader.agents,
    )
