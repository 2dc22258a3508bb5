"""The shape of a host snapshot: its bytes with the GPUs' PCI addresses taken out, where
they only say where a reading came from (``pci-bus``, and the sysfs paths of ``source``
and ``firmware-source``). Verification never reads an address, so two snapshots of one
shape have one outcome: ``pin fleet verify`` verifies a shape once, and a fleet whose
hosts differ only in where their GPUs sit costs a byte scan and a hash per host.

Why this is exact (``tests/unit/fleet/test_shape.py`` compares outcomes on varied
snapshots): a cut is an address of fixed form (``0000:05:00.0``: twelve bytes of
hex digits, ``:`` and ``.``) right after one of :data:`HEADS`, replaced by a NUL byte;
a snapshot holding a NUL byte has no shape (valid JSON has none). Equal shapes are then
equal bytes but for addresses at the same places, so they are equally valid (the
fields are free strings, lengths and digit runs are kept) and read the same where
verification looks, provided no free-keyed map (environment, firmware blocks) uses a key
of :data:`NOISE_KEYS`: :func:`shape_safe` says whether a parsed snapshot's shape may
stand for it. Kept in pin rather than a JSON library: it must not parse the JSON at all.
"""

from __future__ import annotations

import hashlib
import re

from pinning.probe.models import HostFacts

_ADDRESS = re.compile(rb"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
_WIDTH = 12
_SYSFS = b"/sys/bus/pci/devices/"

#: What may stand right before a cut address: a GPU's ``pci-bus`` value, or a sysfs path
#: starting a ``source`` / ``firmware-source`` value (compact or ``pin probe -o`` spacing).
HEADS: tuple[tuple[bytes, tuple[bytes, ...]], ...] = (
    (b'"pci-bus":"', ()), (b'"pci-bus": "', ()),
    (_SYSFS, (b'"source":"', b'"source": "', b'"firmware-source":"',
              b'"firmware-source": "')),
)

#: The keys whose values lose their addresses.
NOISE_KEYS = frozenset({"pci-bus", "source", "firmware-source"})


def _cuts(data: bytes) -> list[int]:
    """The offsets of the addresses :func:`shape_key` takes out of ``data``, in order."""
    cuts: list[int] = []
    for needle, before in HEADS:
        i = data.find(needle)
        while i >= 0:
            j = i + len(needle)
            if _ADDRESS.match(data, j) and (not before or data.endswith(before, 0, i)):
                cuts.append(j)
            i = data.find(needle, j)
    cuts.sort()
    return cuts


def shape_key(data: bytes) -> bytes | None:
    """The 32-byte sha256 of ``data`` with each GPU address (see the module docstring)
    replaced by a NUL byte; ``None`` when ``data`` holds a NUL byte (no shape: verify
    it as it is). Pure; about a fifth of the time a JSON parse of it takes.
    """
    if b"\x00" in data:
        return None
    parts: list[bytes] = []
    start = 0
    for j in _cuts(data):
        parts.append(data[start:j])
        start = j + _WIDTH
    parts.append(data[start:])
    return hashlib.sha256(b"\x00".join(parts)).digest()


def shape_safe(facts: HostFacts) -> bool:
    """True when no environment variable and no GPU firmware block of ``facts`` is named
    like a field whose address :func:`shape_key` takes out (:data:`NOISE_KEYS`), so the
    snapshot's shape may stand for it.
    """
    if NOISE_KEYS.intersection(facts.environment):
        return False
    return not any(NOISE_KEYS.intersection(g.firmware) for g in facts.gpus)
