"""Parser for pasted ``pip list`` / ``pip freeze`` output, and the package-line reader
collect_env's ``[pip3]`` lines share.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from pinning.errors import FormatError
from pinning.util.versions import normalize_name

__all__ = ["LIB_LINE", "PIP_HEADER", "PIP_RULER", "parse_pip_list", "pip_entry"]

LIB_LINE = re.compile(r"^\s*\[(pip\d*|conda)\]\s*(\S.*|)$")
"""A ``[pip3] name==version`` / ``[conda] name version ...`` line of collect_env; groups: the
bracketed tool, the rest of the line.
"""


def pip_entry(text: str) -> tuple[str, str] | None:
    """One package line -> ``(PEP 503 name, version as printed)``; ``None`` when it is not one.

    Reads ``name==version`` (``===`` and extras allowed), ``name (version)``, the
    ``name  version ...`` columns of ``pip list`` and pip freeze's direct references
    ``name @ URL`` whose URL names a wheel (the version is the wheel file name's second
    field, URL-decoded: ``torch-2.5.1%2Bcu124-cp311-...whl`` -> ``2.5.1+cu124``, per the
    wheel file name convention of PEP 427); the version must start with a digit.
    """
    direct = _direct_wheel(text)
    if direct is not None:
        return direct
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s*\[[^\]]*\])?\s*===?\s*(\S+)", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*\(([0-9][^)\s]*)\)", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s+([0-9]\S*)(?:\s.*)?", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    return None


def _direct_wheel(text: str) -> tuple[str, str] | None:
    """``name @ https://.../name-1.2+tag-py3-none-any.whl`` -> ``(name, "1.2+tag")``;
    ``None`` for any other line, or when the wheel file names another distribution.
    """
    name, sep, url = text.partition(" @ ")
    name = name.split("[", 1)[0].strip()
    if not sep or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        return None
    path = urlsplit(url.strip()).path
    file = unquote(path.rsplit("/", 1)[-1])
    parts = file.split("-")
    if not file.endswith(".whl") or len(parts) < 5:  # name-ver-py-abi-plat.whl
        return None
    if normalize_name(parts[0]) != normalize_name(name) or not parts[1][:1].isdigit():
        return None
    return normalize_name(name), parts[1]


PIP_RULER = re.compile(r"^-{3,}(\s+-{3,})*\s*$")
"""The ``----- -----`` ruler under the ``pip list`` header."""
PIP_HEADER = re.compile(r"^Package\s+Version\b")
"""The ``Package  Version`` header line of ``pip list``."""


def parse_pip_list(text: str, *, source: str = "pip list") -> dict[str, str]:
    """Parse ``pip list`` columns (header and ruler optional) or ``pip freeze`` lines.

    Returns PEP 503 names -> versions as printed. ``name==version``, ``name (version)`` and
    ``name @ URL`` naming a wheel are read; other ``name @ url`` lines, ``-e ...`` and
    comments are skipped; a version must start with a digit. Raises ``FormatError`` naming
    ``source`` when no package line is present.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-e ", "--")):
            continue
        if PIP_HEADER.match(stripped) or PIP_RULER.match(stripped):
            continue
        lib = LIB_LINE.match(stripped)
        if lib:
            if lib.group(1) == "conda":
                continue
            stripped = lib.group(2).strip()
        entry = pip_entry(stripped)
        if entry is not None:
            out[entry[0]] = entry[1]
    if not out:
        raise FormatError(
            f"{source}: no package line found (expected `pip list` columns "
            "'name  version' or `pip freeze` lines 'name==version')"
        )
    return out
