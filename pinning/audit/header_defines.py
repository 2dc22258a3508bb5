"""The macros a project header ``#define``\\ s for an AMD build, for the files that include it.

DeepSpeed guards its inline PTX with ``#ifdef PTX_AVAILABLE`` in ``memory_access_utils.h``,
and ``PTX_AVAILABLE`` is defined in another header, ``ds_kernel_utils.h``, only in its
``#else`` of ``#ifdef __HIP_PLATFORM_AMD__``: an AMD build never defines it, so the PTX is a
CUDA-only branch, already ported. A per-file reading cannot see that. When the kernel scanner
meets ``#include "header.h"`` in code an AMD build compiles, :func:`header_defines` reads that
header's directives the way :class:`~pinning.audit.preproc.Guards` reads a file (its own quoted
includes first, at most :data:`MAX_DEPTH` deep) and returns what it defines as
:class:`~pinning.audit.project_defines.ProjectDefine`\\ s named by ``header:line``:

* defined in code an AMD build compiles: defined for every build, with its integer value;
* defined only in branches a platform macro skips for AMD (``__HIP_PLATFORM_AMD__``,
  ``USE_ROCM``, a project's ROCm define): set for CUDA builds only, a platform macro, so a
  branch it decides is "already ported" and names the header line;
* defined only under ``__CUDA_ARCH__`` or an undecided condition: not returned (the including
  file keeps calling it unknown; an arch-only branch may have no AMD counterpart).

A header is found the way a compiler looks for a quoted include first: beside the including
file, then under each audited root (``-I .``). Headers are read once per audit (the cache is
keyed by path and dropped by :func:`forget`); reads go through
:func:`pinning.audit.files.read_text`, so members of an in-memory archive are found too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.model import Context, Skip
from pinning.audit.preproc import Guards
from pinning.audit.project_defines import CUDA_ONLY, EVERY, ProjectDefine

__all__ = ["MAX_DEPTH", "MAX_HEADERS", "forget", "header_defines", "include_name"]

MAX_DEPTH = 4
"""How many quoted includes deep a header's own includes are followed."""

MAX_HEADERS = 50_000
"""At most this many ``#include`` lookups (folder, name) are made per audit; includes met
after that are not followed."""

_DIRECTIVE = re.compile(
    r"^[ \t]*+\#[ \t]*+(ifdef|ifndef|if|elif|else|endif|define|undef|include)(?!\w)",
    re.MULTILINE)
_QUOTED = re.compile(r'[ \t]*+"([^"\n]{1,200})"')

_cache: dict[str, tuple[ProjectDefine, ...]] = {}
"""What each header read defines, by path."""
_where: dict[tuple[str, str], str | None] = {}
"""Where ``#include "name"`` from a folder led (the header's path, ``None`` when not found)."""


def forget() -> None:
    """Drop the headers remembered so far (called when an audit starts)."""
    _cache.clear()
    _where.clear()


def include_name(text: str, after: int) -> str | None:
    """The header of a quoted ``#include "name"`` whose ``include`` word ends at ``after``;
    ``None`` for ``<name>`` or a malformed line.
    """
    m = _QUOTED.match(text, after)
    return m.group(1) if m else None


def header_defines(including: Path, name: str, ctx: Context,
                   depth: int = 0) -> tuple[ProjectDefine, ...]:
    """What the header ``name`` (as written in ``#include "name"`` in the file ``including``)
    defines for an AMD build and for CUDA builds only (see the module docstring); empty when
    the header is not found, cannot be read or lies deeper than :data:`MAX_DEPTH`. Never
    raises.
    """
    if depth > MAX_DEPTH or len(_where) >= MAX_HEADERS:
        return ()
    spot = (str(including.parent), name)
    if spot in _where:
        key = _where[spot]
        return () if key is None else _cache.get(key, ())
    found = _locate(including, name, ctx)
    _where[spot] = None if found is None else str(found[0])
    if found is None:
        return ()
    path, text = found
    key = str(path)
    if key in _cache:
        return _cache[key]
    _cache[key] = ()  # an include cycle reads nothing more
    defines = _read(text, path, _shown(path, ctx), ctx, depth) if "define" in text else ()
    _cache[key] = defines
    return defines


def _read(text: str, path: Path, shown: str, ctx: Context,
          depth: int) -> tuple[ProjectDefine, ...]:
    guards = Guards(text, ctx.build_defines)
    lines: dict[str, int] = {}
    for m in _DIRECTIVE.finditer(text):
        name = m.group(1)
        if name == "include":
            inner = include_name(text, m.end())
            live = guards.at(m.start())
            if inner is not None and (live is None or live.live is True):
                guards.include(header_defines(path, inner, ctx, depth + 1))
            continue
        if name == "define":
            word = text[m.end():m.end() + 200].split(None, 1)
            if word:
                lines.setdefault(word[0].split("(")[0], text.count("\n", 0, m.start()) + 1)
        guards.directive(name, m.start(), m.end())
    out = [ProjectDefine(n, v, True, EVERY, f"{shown}:{lines[n]}")
           for n, v in guards.defines.items() if n in lines]
    out += [ProjectDefine(n, None, False, CUDA_ONLY, f"{shown}:{lines[n]}, under {where}")
            for n, where in sorted(guards.platform_skipped.items())
            if n in lines and n not in guards.defines and n not in guards.unknown]
    own = {d.name for d in out}
    return (*out, *(d for d in guards.included if d.name not in own))


def _locate(including: Path, name: str, ctx: Context) -> tuple[Path, str] | None:
    """The header and its text: beside ``including``, else under an audited root."""
    if name.startswith("/") or "\\" in name or ".." in name.split("/"):
        return None
    for base in dict.fromkeys((including.parent, *ctx.roots)):
        candidate = base / name
        if str(candidate) in _cache:
            return candidate, ""
        try:
            return candidate, read_text(candidate)
        except (Skip, OSError):
            continue
    return None


def _shown(path: Path, ctx: Context) -> str:
    """The header as the bill names files: relative to the audited root holding it."""
    full = path if "!" in str(path) else Path(os.path.abspath(path))
    for root in ctx.roots:
        try:
            return full.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name
