"""Parsers for ``amd-smi version`` (and the bare banner), and helpers for the amdgpu version
strings amd-smi and rocm-smi print.

Formats and samples: ROCm/amdsmi@0ceca28 (CHANGELOG.md, docs/how-to/using-AMD-SMI-CLI-tool.md)
and the dumps of ROCm/ROCm#5231 (inbox driver strings included). The per-GPU outputs
(``firmware``, ``static``) are :mod:`pinning.probe.formats.amd_smi_gpu`. Every parser is pure
and tolerant: unknown lines are ignored, missing fields are ``None``;
:class:`~pinning.errors.FormatError` only when nothing of the format is present.
"""

from __future__ import annotations

import re

from pydantic import Field

from pinning.errors import FormatError
from pinning.util.models import Strict

__all__ = [
    "AmdSmiVersion",
    "is_inbox_driver_string",
    "kernel_from_banner",
    "parse_amd_smi_version",
]


class AmdSmiVersion(Strict):
    """``amd-smi version``, or the bare ``amd-smi`` banner.

    ``tool`` is ``AMDSMI Tool`` (banner: ``Version``), ``library`` the ``AMDSMI Library
    version``, ``rocm`` the ``ROCm version``, ``amdgpu`` the ``amdgpu version`` (the kernel
    module's version string, or the kernel banner with an inbox driver), ``amd_hsmp`` the
    ``amd_hsmp version``, ``platform`` the banner's ``Platform``. ``fields`` holds every
    ``Key: value`` pair as printed. All values are kept as printed (``N/A`` included).
    """

    tool: str | None = None
    library: str | None = None
    rocm: str | None = None
    amdgpu: str | None = None
    amd_hsmp: str | None = None
    platform: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)


_VERSION_KEYS = {
    "amdsmi tool": "tool",
    "amd-smi tool": "tool",
    "version": "tool",
    "amdsmi library version": "library",
    "amd-smi library version": "library",
    "rocm version": "rocm",
    "amdgpu version": "amdgpu",
    "amd_hsmp version": "amd_hsmp",
    "platform": "platform",
}


def parse_amd_smi_version(text: str, *, source: str = "amd-smi version") -> AmdSmiVersion:
    """Parse ``amd-smi version`` or the bare ``amd-smi`` banner.

    Reads the first line holding ``Key: value`` pairs separated by ``|`` where at least one
    key is known (``AMDSMI Tool``, ``ROCm version``, ...). Raises ``FormatError`` naming
    ``source`` when no such line exists.
    """
    for line in text.splitlines():
        if ":" not in line:
            continue
        fields: dict[str, str] = {}
        known: dict[str, str] = {}
        for part in line.strip().strip("|").split("|"):
            key, sep, value = part.partition(":")
            if not sep:
                continue
            key = key.strip()
            value = value.strip()
            if not key:
                continue
            fields[key] = value
            attr = _VERSION_KEYS.get(key.lower())
            if attr is not None and attr not in known:
                known[attr] = value
        low = line.lower()
        banner = "amdsmi" in low or "system management interface" in low
        if known and (banner or set(known) - {"platform", "tool"}):
            return AmdSmiVersion(fields=fields, **known)
    raise FormatError(
        f"{source}: no 'AMDSMI Tool: ... | ROCm version: ...' line found "
        "(expected the output of `amd-smi version`)"
    )


def is_inbox_driver_string(value: str) -> bool:
    """True when an amdgpu "version" is really the kernel build banner.

    amd-smi and rocm-smi fall back to the kernel version when the inbox (non-DKMS) amdgpu is
    loaded, e.g. ``Linuxversion6.8.0-79-generic(buildd@...)#79-Ubuntu...``. Detects the
    ``Linux version`` / ``Linuxversion`` prefix and ``#<n>`` build markers.
    """
    low = value.lower()
    if "linuxversion" in low or "linux version" in low:
        return True
    return re.search(r"#\d", value) is not None


def kernel_from_banner(value: str) -> str | None:
    """Return the kernel release from a kernel build banner, else ``None``.

    ``Linuxversion6.8.0-79-generic(buildd@lcy02-amd64-049)...`` -> ``6.8.0-79-generic``;
    also works with the spaced ``Linux version 6.8.0-79-generic (buildd@...)`` form.
    """
    m = re.search(r"linux\s*version\s*([0-9][^\s(]*)", value, re.IGNORECASE)
    return m.group(1) if m else None
