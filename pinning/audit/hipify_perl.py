"""``hipify-perl -examine``: HIPIFY's own statistics, added beside pin's findings when the
tool is on ``PATH`` (it is optional: pin's findings stand without it).

``-examine`` combines ``-no-output`` and ``-print-stats``; everything it reports goes to
stderr and it exits 0 even with warnings. The format, from the generator of the script
(``printStats`` in ``src/CUDA2HIP_Perl.cpp`` at
``ROCm/HIPIFY@a97a7c15ecc4aa98503ff546f723890a4c83bd05`` and at
``vjelic/HIPIFY-glog-fork@00918ed313342cc58922c414bbfe0241c500a928``), per file::

    [HIPIFY] info: file 'k.cu' statistics:
      CONVERTED refs count: 3
      TOTAL lines of code: 40
      WARNINGS: 1
    [HIPIFY] info: CONVERTED refs by names:
      cudaMalloc => hipMalloc: 1

then a ``file 'GLOBAL'`` block with the totals when several files were given. Warnings are
printed while scanning, before the file's block: in current scripts
``  FILE:LINE: warning: unsupported HIP identifier: NAME`` (also ``unsupported ROCm HIP
identifier``, ``unsupported ROC identifier``, ``deprecated CUDA identifier: NAME since CUDA V``,
``removed CUDA identifier: NAME since CUDA V``, ``experimental ROCm HIP identifier: NAME V``,
``unsupported device function "NAME": <line>``), in older ones
``  warning: FILE:LINE: unsupported identifier "NAME"`` and the like
(``ROCm/HIPIFY@0050fa27f2de01ecb24f19c81a42937b8b071da0:bin/hipify-perl``); both print
``  warning: FILE:#LINE : <line>`` for a leftover ``cuda[A-Z]...`` name.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from pinning.util.models import Strict

TOOL = "hipify-perl"
TIMEOUT_S = 120.0
"""Seconds one ``hipify-perl`` run may take (a regex script: large trees take a while)."""
MAX_STDERR_BYTES = 16 * 1024 * 1024
"""The most of its stderr read back (a bigger report is cut there and says so)."""
BATCH = 200
"""Files per run (keeps the argument list far below the system's limit)."""
_MAX_TEXT = 400  # characters of a warning's text kept

WarningKind = Literal["unsupported", "unsupported-device-function", "deprecated", "removed",
                      "experimental", "unconverted"]


class HipifyWarning(Strict):
    """One warning line: ``file`` and 1-based ``line`` as hipify-perl printed them, ``kind``,
    the identifier ``name`` (``None`` for an unconverted kernel launch), ``since`` (``CUDA
    10.0``, ``CUDNN 8.0.1``, ``HIP 7.0.0`` where the warning names a version) and ``text``,
    the message after ``warning:`` (at most 400 characters).
    """

    file: str
    line: int | None = Field(default=None, ge=1)
    kind: WarningKind
    name: str | None = None
    since: str | None = None
    text: str


class HipifyPerlFile(Strict):
    """The statistics block of one file: converted references, lines of code, the warning
    count hipify-perl printed, converted references per CUDA name (``cudaMalloc: 1``) and
    the HIP name each became (``cudaMalloc: hipMalloc``), and the warnings for the file.
    """

    file: str
    converted: int = Field(ge=0)
    lines: int = Field(ge=0)
    warnings: int = Field(ge=0)
    converted_by_name: dict[str, int] = Field(default_factory=dict)
    hip_names: dict[str, str] = Field(default_factory=dict)
    warning_list: list[HipifyWarning] = Field(default_factory=list)


class HipifyPerlStats(Strict):
    """What ``hipify-perl -examine`` reported: one entry per file with a statistics block
    (hipify-perl prints none for a file with nothing converted and no warning), the
    ``GLOBAL`` totals as printed (``None`` for a single file), every warning in order, and
    ``error`` when a run failed, timed out or its report was cut (one line; what was read
    before is kept).
    """

    files: list[HipifyPerlFile] = Field(default_factory=list)
    total: HipifyPerlFile | None = None
    warnings: list[HipifyWarning] = Field(default_factory=list)
    error: str | None = None


# -- parsing -----------------------------------------------------------------------------------

_HEADER = "[HIPIFY] info: file '"
_BY_NAMES = "[HIPIFY] info: CONVERTED refs by names:"
_COUNTS = {"CONVERTED refs count:": "converted", "TOTAL lines of code:": "lines",
           "WARNINGS:": "warnings"}
# "FILE:LINE: message" (older scripts, after "warning: "); the file may hold ":".
_OLD_LOCATION = re.compile(r"^(.+?):([0-9]{1,9}): (.*)")
_QUOTED = re.compile(r'"([^"]{1,300})"(.*)')
_LEFTOVER = re.compile(r"\bcuda[A-Z][A-Za-z0-9_]{0,200}")


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


def _classify(file: str, line: int | None, message: str) -> HipifyWarning | None:
    """The warning of one message (the text after ``FILE:LINE: warning: `` or ``warning:
    FILE:LINE: ``), or ``None`` when it is not one hipify-perl prints.
    """
    msg = message.strip()
    kind: WarningKind
    name: str | None
    since: str | None = None
    if msg.startswith("unsupported device function "):
        quoted = _QUOTED.match(msg, len("unsupported device function "))
        if quoted is None:
            return None
        kind, name = "unsupported-device-function", quoted.group(1)
    elif msg.startswith(("unsupported HIP identifier: ", "unsupported ROCm HIP identifier: ",
                         "unsupported ROC identifier: ")):
        kind, name = "unsupported", msg.rpartition(": ")[2].strip()
    elif msg.startswith(("deprecated CUDA identifier: ", "removed CUDA identifier: ")):
        kind = "deprecated" if msg.startswith("deprecated") else "removed"
        rest = msg.split(": ", 1)[1]
        name, sep, since_text = rest.partition(" since ")
        since = since_text.strip() if sep else None
    elif msg.startswith("experimental ROCm HIP identifier: "):
        kind = "experimental"
        name, _, version = msg.split(": ", 1)[1].partition(" ")
        since = f"HIP {version.strip()}" if version.strip() else None
    elif msg.startswith(("unsupported identifier ", "unsupported by ROC identifier ",
                         "deprecated identifier ", "removed identifier ",
                         "experimental identifier ")):
        start = msg.find('"')
        quoted = _QUOTED.match(msg, start) if start >= 0 else None
        if quoted is None:
            return None
        name, tail = quoted.group(1), quoted.group(2).strip()
        kind = ("unsupported" if msg.startswith("unsupported") else
                "deprecated" if msg.startswith("deprecated") else
                "removed" if msg.startswith("removed") else "experimental")
        if tail.startswith(("since ", "in ")):
            since = tail.partition(" ")[2].strip() or None
    else:
        return None
    name = name.strip() if name else None
    return HipifyWarning(file=file, line=line, kind=kind, name=name or None,
                         since=since, text=_clip(msg))


def _warning(line: str) -> HipifyWarning | None:
    """The warning a stripped stderr line holds, or ``None``."""
    if line.startswith("warning: "):
        rest = line[len("warning: "):]
        file, sep, tail = rest.partition(":#")
        if sep:  # "FILE:#LINE : <source line>": a leftover cuda* name or a kernel launch
            number_text, sep2, source = tail.partition(" : ")
            number = _int(number_text)
            if not sep2 or number is None or number < 1:
                return None
            leftover = _LEFTOVER.search(source)
            return HipifyWarning(file=file, line=number, kind="unconverted",
                                 name=leftover.group(0) if leftover else None,
                                 text=_clip(source.strip()))
        located = _OLD_LOCATION.match(rest)
        if located is None:
            return None
        number = _int(located.group(2))
        return _classify(located.group(1), number if number else None, located.group(3))
    where, sep, message = line.partition(": warning: ")
    if not sep:
        return None
    file, colon, number_text = where.rpartition(":")
    number = _int(number_text)
    if not colon or not file or number is None or number < 1:
        return None
    return _classify(file, number, message)


@dataclass
class _Block:
    file: str
    counts: dict[str, int] = field(
        default_factory=lambda: {"converted": 0, "lines": 0, "warnings": 0})
    by_name: dict[str, int] = field(default_factory=dict)
    hip: dict[str, str] = field(default_factory=dict)


def _header(line: str) -> _Block | None:
    """The block a ``[HIPIFY] info: file '...' statistics:`` line opens, else ``None``."""
    body = line[len(_HEADER):]
    for tail in ("' statistics:", "' statisitics:"):  # older scripts misspelt it
        if body.endswith(tail):
            return _Block(body[:-len(tail)])
    return None


def _count(block: _Block, line: str) -> bool:
    """Record a ``CONVERTED refs count:`` / ``TOTAL lines of code:`` / ``WARNINGS:`` line."""
    for label, key in _COUNTS.items():
        if line.startswith(label):
            value = _int(line[len(label):])
            if value is not None:
                block.counts[key] = value
            return True
    return False


def _converted(block: _Block, line: str) -> None:
    """Record a ``cudaMalloc => hipMalloc: 1`` line (anything else is ignored)."""
    pair, sep, count_text = line.rpartition(": ")
    cuda, arrow, hip = pair.partition(" => ")
    count = _int(count_text)
    name = cuda.strip()
    if sep and arrow and count is not None and name:
        block.by_name[name] = block.by_name.get(name, 0) + count
        block.hip[name] = hip.strip()


def parse_stats(text: str) -> HipifyPerlStats:
    """The statistics and warnings in ``hipify-perl -examine`` stderr ``text``.

    Lines that are none of the printed forms are ignored; a block missing a count reads 0.
    Never raises, whatever the text.
    """
    blocks: list[_Block] = []
    warnings: list[HipifyWarning] = []
    current: _Block | None = None
    in_names = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(_HEADER):
            current = _header(line)
            if current is not None:
                blocks.append(current)
            in_names = False
        elif line == _BY_NAMES:
            in_names = current is not None
        elif current is not None and _count(current, line):
            in_names = False
        elif (found := _warning(line)) is not None:
            warnings.append(found)
            in_names = False
        elif in_names and current is not None:
            _converted(current, line)
    files: list[HipifyPerlFile] = []
    total: HipifyPerlFile | None = None
    for block in blocks:
        entry = HipifyPerlFile(
            file=block.file, converted=block.counts["converted"], lines=block.counts["lines"],
            warnings=block.counts["warnings"], converted_by_name=block.by_name,
            hip_names=block.hip, warning_list=[w for w in warnings if w.file == block.file])
        if block.file == "GLOBAL":
            total = entry
        else:
            files.append(entry)
    return HipifyPerlStats(files=files, total=total, warnings=warnings)


# -- running -----------------------------------------------------------------------------------

def _argument(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    # hipify-perl takes options from any argument starting with "-", and names the totals
    # block "GLOBAL": give such names a directory part.
    if text.startswith("-") or text == "GLOBAL":
        text = os.path.join(".", text)
    return text


def _run_batch(exe: str, files: Sequence[str], timeout: float,
               cwd: Path | None) -> tuple[str, str | None]:
    """``(stderr text, error or None)`` of one ``-examine`` run over ``files``."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen([exe, "-examine", *files], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        except OSError as exc:
            return "", f"{TOOL} could not be started: {exc}"
        error = None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
            error = f"{TOOL} timed out after {timeout:g} s; its report is partial"
        err.seek(0)
        data = err.read(MAX_STDERR_BYTES + 1)
    if len(data) > MAX_STDERR_BYTES:
        data = data[:MAX_STDERR_BYTES]
        error = error or f"{TOOL} printed more than {MAX_STDERR_BYTES} bytes; report cut there"
    text = data.decode("utf-8", "replace")
    if code not in (0, None) and error is None:
        last = (text.strip().splitlines() or [""])[-1][:200]
        error = f"{TOOL} exited {code}" + (f": {last}" if last else "")
    return text, error


def run_hipify_perl(files: Sequence[str | os.PathLike[str]], *, timeout: float = TIMEOUT_S,
                    cwd: Path | None = None) -> HipifyPerlStats | None:
    """Run ``hipify-perl -examine`` over ``files`` (in batches of :data:`BATCH`, no shell,
    each run limited to ``timeout`` seconds and :data:`MAX_STDERR_BYTES` of output) and
    parse what it printed; ``None`` when ``hipify-perl`` is not on ``PATH``. The tool runs
    in ``cwd`` (default: this process's), and file names are reported as passed. Never raises
    for a failing tool: a crash, a non-zero exit or a timeout is the result's ``error``; the
    ``GLOBAL`` totals are summed over all batches.
    """
    exe = shutil.which(TOOL)
    if exe is None:
        return None
    names = [_argument(f) for f in files]
    texts: list[str] = []
    errors: list[str] = []
    for start in range(0, len(names), BATCH):
        text, error = _run_batch(exe, names[start:start + BATCH], timeout, cwd)
        texts.append(text)
        if error:
            errors.append(error)
    stats = parse_stats("\n".join(texts))
    files_out = stats.files
    total = None
    if len(names) > 1:
        total = HipifyPerlFile(
            file="GLOBAL", converted=sum(f.converted for f in files_out),
            lines=sum(f.lines for f in files_out), warnings=sum(f.warnings for f in files_out),
            converted_by_name=_sum_names(files_out),
            hip_names={k: v for f in files_out for k, v in f.hip_names.items()})
    return HipifyPerlStats(files=files_out, total=total, warnings=stats.warnings,
                           error="; ".join(errors) or None)


def _sum_names(files: Sequence[HipifyPerlFile]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in files:
        for name, count in f.converted_by_name.items():
            out[name] = out.get(name, 0) + count
    return dict(sorted(out.items()))
