"""The CMake scanner of ``pin audit``: CUDA build hooks and NVIDIA arch lists in
``CMakeLists.txt`` and ``*.cmake`` (``project(... LANGUAGES CUDA)``, ``enable_language(CUDA)``,
``find_package(CUDA|CUDAToolkit)``, ``cuda_add_library``, ``CMAKE_CUDA_ARCHITECTURES``,
``-gencode``/``-arch=sm_XX``, ``-maxregcount``); the rules are
:func:`pinning.audit.kernel_rules.cmake_rules`.

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.kernel_rules import cmake_rules
from pinning.audit.kernel_text import Hits
from pinning.audit.model import Context, FileScan

__all__ = ["scan_cmake"]

_CMAKE = re.compile(
    r"(?P<lc>\#[^\n]*+)"
    r"|(?P<proj>[pP](?<![\w.].)(?i:roject)[ \t]*+\()"
    r"|(?P<lang>[eE](?<![\w.].)(?i:nable_language)[ \t]*+\([ \t]*+CUDA\b)"
    r"|(?P<fpkg>[fF](?<![\w.].)(?i:ind_package)[ \t]*+\([ \t]*+CUDA(?:Toolkit)?\b)"
    r"|(?P<cadd>[cC](?<![\w.].)(?i:uda_add_(?:library|executable))\b)"
    r"|(?P<carch>C(?<!\w.)(?:MAKE_CUDA|UDA)_ARCHITECTURES\b)"
    r"|(?P<sm>-(?<![\w-].)-?(?:arch|gpu-architecture)[= \t]++(?:sm|compute)_\d{2,3}[a-z]?"
    r"|-(?<![\w-].)-?gencode\b)"
    r"|(?P<mrc>-(?<![\w-].)-?maxregcount)"
)


def scan_cmake(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``CMakeLists.txt`` / ``*.cmake`` for CUDA build hooks and NVIDIA arch lists.
    Raises :class:`~pinning.audit.model.Skip` for a file that cannot be read, nothing else.
    """
    text = read_text(path)
    rules = cmake_rules(ctx)
    hits = Hits(text, display, 0)
    pos, n = 0, len(text)
    while pos < n:
        m = _CMAKE.search(text, pos)
        if m is None:
            break
        group = m.lastgroup or ""
        start, pos = m.span()
        if group == "lc":
            continue
        if group == "proj":
            close = text.find(")", pos, pos + 2000)
            words = text[pos:close if close >= 0 else pos + 2000].replace('"', " ").split()
            if "LANGUAGES" in words and "CUDA" in words[words.index("LANGUAGES"):]:
                hits.add(rules["lang"], "project(... LANGUAGES CUDA)", start)
            continue
        subject = " ".join(m.group().split())
        if group == "lang":
            subject = "enable_language(CUDA)"
        elif group == "fpkg":
            subject = f"find_package({subject.split('(')[-1].strip()})"
        hits.add(rules[group], subject, start)
    return FileScan(findings=hits.findings())

