"""Find every known tool output in one pasted file (:func:`split_dump`) and parse each with
the parser of its kind (:func:`parse_section`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pinning.errors import FormatError
from pinning.probe.formats.collect_env import PURE_RULER, parse_collect_env
from pinning.probe.formats.packages import (
    CONDA_HEADER,
    TREE_BRANCH,
    conda_json_kind,
    is_tree_node,
    parse_conda_list,
    parse_conda_list_json,
    parse_dep_tree,
    parse_pip_inspect,
)
from pinning.probe.formats.pip_list import PIP_HEADER, PIP_RULER, parse_pip_list
from pinning.probe.formats.sglang import parse_sglang_check_env
from pinning.util.models import Strict

DumpKind = Literal[
    "collect_env",
    "sglang_check_env",
    "pip_list",
    "amd_smi_version",
    "amd_smi_firmware",
    "amd_smi_static",
    "rocm_smi",
    "rocminfo",
    "nvidia_smi_query",
    "nvidia_smi",
    "nvidia_proc_version",
    "conda_list",
    "conda_list_json",
    "pip_inspect",
    "dep_tree",
]


class DumpSection(Strict):
    """One tool output found by :func:`split_dump`: its kind, text, and 1-based first line."""

    kind: DumpKind
    text: str
    first_line: int


_QUERY_FIELDS = {
    "name", "gpu_name", "driver_version", "vbios_version", "compute_cap", "pci.bus_id",
    "gpu_bus_id", "pci.device_id", "memory.total", "uuid", "gpu_uuid", "index", "serial",
    "pstate", "memory.used", "memory.free", "temperature.gpu", "utilization.gpu",
    "power.draw", "power.limit", "clocks.sm", "clocks.max.sm", "count",
}
_DIRECT_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])? @ \S+\.whl$")
"""A pip freeze direct reference to a wheel (``torch @ https://.../torch-2.5.1...whl``)."""
_PIP_LIKE = re.compile(
    r"^[A-Za-z][A-Za-z0-9._-]*(?:\s*===?\s*[0-9]\S*|\s+[0-9][^\s]*(?:\s+\S.*)?)\s*$"
)
_DATE_LINE = re.compile(r"^\w{3} \w{3}\s+\d{1,2} \d\d:\d\d:\d\d \d{4}\s*$")
_NV_RULER = re.compile(r"^\+[-=+]+\+\s*$")
_CONDA_ROW = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*\s+[0-9]")
_TREE_TOP = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?(?:==| v)[0-9]\S*")


def _query_header(line: str) -> bool:
    cells = [c.strip() for c in line.split(",")]
    if len(cells) < 2:
        return False
    names = [re.sub(r"\[[^\][]*\]$", "", c).rstrip().lower() for c in cells]
    return all(re.fullmatch(r"[a-z][a-z0-9_.]*", n) for n in names) and any(
        n in _QUERY_FIELDS for n in names
    )


class _Splitter:
    """Line-by-line state machine behind :func:`split_dump`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.starts: list[tuple[int, DumpKind]] = []
        self.kind: DumpKind | None = None
        self.ended = True
        self.flags: set[str] = set()
        self.absorb = False
        self.json_end = -1

    def start(self, idx: int, kind: DumpKind, *flags: str) -> None:
        if self.starts and idx <= self.starts[-1][0]:
            idx = self.starts[-1][0] + 1
        self.starts.append((idx, kind))
        self.kind, self.ended, self.flags, self.absorb = kind, False, set(flags), False

    def next_nonblank(self, idx: int) -> str:
        for line in self.lines[idx + 1 : idx + 6]:
            if line.strip():
                return line
        return ""

    def idle(self) -> bool:
        return self.kind is None or self.ended

    def run(self) -> list[tuple[int, DumpKind]]:
        offsets: list[int] = []
        pos = 0
        for line in self.text.splitlines(keepends=True):
            offsets.append(pos)
            pos += len(line)
        for i, line in enumerate(self.lines):
            if i <= self.json_end:
                if i == self.json_end:
                    self.ended = True
                continue
            self.step(i, line, offsets[i])
        return self.starts

    # The splitter's state machine: one handler per tool family, each taking the lines that
    # begin, continue or end its dumps; their order is the markers' precedence, top to bottom.
    def step(self, i: int, line: str, offset: int) -> None:
        """Read line ``i`` (at ``offset`` in the text): the first handler that takes it decides."""
        s = line.strip()
        low = s.lower()
        handlers = (self._absorbed, self._python_env, self._rocminfo, self._smi, self._json,
                    self._nvidia, self._packages, self._lists)
        for handler in handlers:
            if handler(i, line, s, low, offset):
                return

    def _absorbed(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """A topology table inside collect_env / check_env: kept in that dump."""
        if self.absorb:
            if ("end of rocm smi log" in low or low == "environment variables"
                    or re.match(r"^(hypervisor vendor|ulimit soft)\s*:", low)):
                self.absorb = False
            return True
        if self.kind in ("collect_env", "sglang_check_env") and re.match(
                r"^(gpu|amd|nvidia) topology\s*:", low):
            self.absorb = True
            return True
        return False

    def _python_env(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """collect_env (banner, ``PyTorch version``, vLLM's ``System Info``) and SGLang's
        check_env (``Python:``, ``CUDA/ROCM available:``).
        """
        kind = self.kind
        if "collecting environment information" in low:
            self.start(i, "collect_env")
        elif re.match(r"^pytorch version\b", low) and not s.startswith("PyTorch:"):
            if kind == "collect_env" and "torch" not in self.flags and not self.ended:
                self.flags.add("torch")
            else:
                titled = i >= 3 and self.lines[i - 2].strip().lower() == "system info" \
                    and PURE_RULER.match(self.lines[i - 3])
                self.start(i - 3 if titled else i, "collect_env", "torch")
        elif low == "system info" and i + 1 < len(self.lines) \
                and PURE_RULER.match(self.lines[i + 1]):
            if not (kind == "collect_env" and not self.flags):
                self.start(self._ruled(i), "collect_env", "system")
            else:
                self.flags.add("system")
        elif re.match(r"^python: \d", low):
            self.start(i, "sglang_check_env", "python")
        elif re.match(r"^(cuda|rocm) available\s*:", low):
            if kind == "sglang_check_env" and "avail" not in self.flags:
                self.flags.add("avail")
            else:
                self.start(i, "sglang_check_env", "avail")
        else:
            return False
        return True

    def _ruled(self, i: int) -> int:
        """``i - 1`` when a ruler of ``=`` stands above line ``i``, else ``i``."""
        return i - 1 if i >= 1 and PURE_RULER.match(self.lines[i - 1]) else i

    def _rocminfo(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """rocminfo: ``ROCk module``, ``HSA System Attributes``, an agent ruler, ``done``."""
        kind = self.kind
        if "ROCk module" in s:
            self.start(i, "rocminfo", "rock")
        elif s == "HSA System Attributes":
            if kind == "rocminfo" and "hsa" not in self.flags and not self.ended:
                self.flags.add("hsa")
            else:
                self.start(self._ruled(i), "rocminfo", "hsa")
        elif re.match(r"^\*+\s*done\s*\*+$", low):
            self.ended = self.ended or kind == "rocminfo"
        elif re.match(r"^\*{3,}$", s):
            if kind != "rocminfo" or self.ended:
                nxt = self.next_nonblank(i).strip()
                if re.match(r"^Agent\s+\d+$", nxt) or re.match(r"^Name\s*:", nxt):
                    self.start(i, "rocminfo")
        else:
            return False
        return True

    def _smi(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """rocm-smi (version lines, banner, end of log) and amd-smi (version, ``GPU: N``)."""
        kind = self.kind
        if re.match(r"^rocm-smi version\s*:", low):
            self.start(i, "rocm_smi", "smiver")
        elif re.match(r"^rocm-smi-lib version\s*:", low):
            if kind != "rocm_smi" or self.ended:
                self.start(i, "rocm_smi", "smiver")
        elif "rocm system management interface" in low:
            if kind == "rocm_smi" and "banner" not in self.flags and not self.ended:
                self.flags.add("banner")
            else:
                self.start(i, "rocm_smi", "banner")
        elif "end of rocm smi log" in low:
            self.ended = self.ended or kind == "rocm_smi"
        elif re.search(r"amdsmi tool\s*:", low) or (
                low.startswith("amd system management interface") and "|" in s):
            self.start(i, "amd_smi_version")
            self.ended = True
        elif m := re.match(r"^GPU\s*:\s*(\d+)\s*$", s):
            nxt = self.next_nonblank(i).strip()
            sub: DumpKind | None = None
            if nxt.startswith(("FW_LIST", "UCODE_LIST", "FW ", "FW_")):
                sub = "amd_smi_firmware"
            elif re.fullmatch(r"[A-Z][A-Z0-9_]*\s*:", nxt):
                sub = "amd_smi_static"
            if sub is not None and not (kind == sub and not self.ended and m.group(1) != "0"):
                self.start(i, sub)
        else:
            return False
        return True

    def _nvidia(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """``/proc/driver/nvidia/version``; the ``nvidia-smi`` banner with its ruler and date."""
        if "NVRM version" in s:
            self.start(i, "nvidia_proc_version", "nvrm")
            return True
        if not ("NVIDIA-SMI" in s and "Driver Version" in s):
            return False
        start = i
        for back in (1, 2):
            j = i - back
            if j < 0 or (self.starts and j <= self.starts[-1][0] and not self.idle()):
                break
            prev = self.lines[j].strip()
            if not (_NV_RULER.match(prev) or _DATE_LINE.match(prev)):
                break
            start = j
        self.start(start, "nvidia_smi")
        return True

    def _lists(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """``pip list`` / ``pip freeze``, the ``--query-gpu`` CSV and ``GPU[i] :`` lines:
        starts, and the lines that end a running one.
        """
        kind, running = self.kind, not self.ended
        if PIP_HEADER.match(s):
            self.start(i, "pip_list")
        elif self.idle() and _query_header(s):
            self.start(i, "nvidia_smi_query")
        elif kind == "nvidia_proc_version" and running:
            self.ended = low.startswith("gcc version")
        elif kind == "nvidia_smi_query" and running:
            self.ended = bool(s) and "," not in s
        elif kind == "pip_list" and running:
            self.ended = bool(s) and not (
                _PIP_LIKE.match(s) or PIP_RULER.match(s) or "==" in s or " @ " in s
                or s.startswith(("#", "-e ")))
        elif self.idle() and _DIRECT_REF.match(s):
            self.start(i, "pip_list")
        elif self.idle() and _PIP_LIKE.match(s) and not re.match(r"^GPU\b", s):
            nxt = self.next_nonblank(i).strip()
            if "==" in s or _PIP_LIKE.match(nxt):
                self.start(i, "pip_list")
        elif self.idle() and re.match(r"^GPU\[\d+\]\s*:", s):
            self.start(i, "rocm_smi")
        else:
            return False
        return True

    def _packages(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """``conda list`` and dependency trees (``uv tree``, ``pipdeptree``): a start, or a
        line that continues or ends one. True when the line was taken.
        """
        kind = self.kind
        if CONDA_HEADER.match(s):
            if kind != "conda_list" or self.ended:
                self.start(i, "conda_list")
            return True
        if kind == "conda_list" and not self.ended:
            if s and not (s.startswith("#") or _CONDA_ROW.match(s)):
                self.ended = True
                return False
            return True
        if kind == "dep_tree" and not self.ended:
            if s and not (TREE_BRANCH.match(line) or _TREE_TOP.match(s)):
                self.ended = True
                return False
            return True
        if kind == "pip_list" and not self.ended and TREE_BRANCH.match(self.lines[i]):
            # pipdeptree prints leaf packages as `name==version` lines before the first branch.
            self.starts[-1] = (self.starts[-1][0], "dep_tree")
            self.kind = "dep_tree"
            return True
        if self.idle() and (is_tree_node(line) or (_TREE_TOP.match(s) and TREE_BRANCH.match(
                self.next_nonblank(i)))):  # a root and its branch, or a fragment's branch
            self.start(i, "dep_tree")
            return True
        return False

    def _json(self, i: int, line: str, s: str, low: str, offset: int) -> bool:
        """A JSON document (amd-smi ``--json``, ``conda list --json``, ``pip inspect``)."""
        if line[:1] not in ("[", "{") or not self.idle():
            return False
        try:
            data, end = json.JSONDecoder().raw_decode(self.text, offset)
        except (ValueError, RecursionError):
            return False
        blob = json.dumps(data)[:200000].lower()
        kind: DumpKind | None = conda_json_kind(data)
        if kind is None and '"fw_list"' in blob:
            kind = "amd_smi_firmware"
        elif kind is None and ('"asic"' in blob or '"vram"' in blob or '"vbios"' in blob):
            kind = "amd_smi_static"
        if kind is None:
            return False
        self.start(i, kind)
        self.json_end = self.text.count("\n", 0, max(offset, end - 1))
        if self.json_end <= i:
            self.ended = True
        return True


def split_dump(text: str, *, source: str = "dump") -> list[DumpSection]:
    """Find every known tool output in one pasted file, in order.

    Start markers: collect_env banner / ``PyTorch version`` / vLLM ``System Info``; SGLang
    ``Python:`` / ``ROCM available:``; ``ROCk module`` / ``HSA System Attributes`` / an
    agent ruler (rocminfo); ``ROCM-SMI version:`` / the rocm-smi banner / ``GPU[i] :``;
    ``AMDSMI Tool:`` or the amd-smi banner; ``GPU: N`` + ``FW_LIST`` (firmware) or a section
    (static) and amd-smi ``--json``; ``NVRM version``; the ``NVIDIA-SMI`` banner; a
    ``--query-gpu`` CSV header; ``pip list``/``pip freeze`` lines (``uv pip list`` and
    ``uv pip freeze`` too); the ``conda list`` header; ``conda list --json`` and ``pip
    inspect`` JSON; a ``uv tree`` / ``pipdeptree`` top line and branch, or a branch naming a
    package (a fragment: ``uv tree | grep jax``). Topology tables stay in their dump; a section
    runs to the next start. Raises ``FormatError`` naming ``source`` when nothing is recognised.
    """
    starts = _Splitter(text).run()
    if not starts:
        raise FormatError(
            f"{source}: no known tool output found (expected collect_env, sglang check_env, "
            "pip list / freeze / inspect, uv pip list / freeze, uv tree, pipdeptree, conda list, "
            "amd-smi, rocm-smi, rocminfo or nvidia-smi output)"
        )
    lines = text.splitlines()
    out: list[DumpSection] = []
    for n, (idx, kind) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        out.append(DumpSection(kind=kind, text="\n".join(lines[idx:end]), first_line=idx + 1))
    return out


def parse_section(section: DumpSection, *, source: str | None = None) -> Any:
    """Parse one :class:`DumpSection` with the parser of its kind; returns that parser's model.

    ``source`` defaults to ``"<kind> at line N"``.
    """
    from pinning.probe.formats.amd_smi import parse_amd_smi_version
    from pinning.probe.formats.amd_smi_gpu import parse_amd_smi_firmware, parse_amd_smi_static
    from pinning.probe.formats.nvidia import (
        parse_nvidia_smi_banner,
        parse_nvidia_smi_query,
        parse_proc_driver_nvidia_version,
    )
    from pinning.probe.formats.rocm_smi import parse_rocm_smi
    from pinning.probe.formats.rocminfo import parse_rocminfo

    parsers: dict[str, Callable[..., Any]] = {
        "collect_env": parse_collect_env,
        "sglang_check_env": parse_sglang_check_env,
        "pip_list": parse_pip_list,
        "amd_smi_version": parse_amd_smi_version,
        "amd_smi_firmware": parse_amd_smi_firmware,
        "amd_smi_static": parse_amd_smi_static,
        "rocm_smi": parse_rocm_smi,
        "rocminfo": parse_rocminfo,
        "nvidia_smi_query": parse_nvidia_smi_query,
        "nvidia_smi": parse_nvidia_smi_banner,
        "nvidia_proc_version": parse_proc_driver_nvidia_version,
        "conda_list": parse_conda_list,
        "conda_list_json": parse_conda_list_json,
        "pip_inspect": parse_pip_inspect,
        "dep_tree": parse_dep_tree,
    }
    src = source or f"{section.kind} at line {section.first_line}"
    return parsers[section.kind](section.text, source=src)
