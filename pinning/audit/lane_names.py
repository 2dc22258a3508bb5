"""The records one C/C++/CUDA file leaves for the audit-wide name join: names it defines with
a 32-lane meaning and uses of names it could not resolve itself.

Plain data, importing nothing of the audit (so :mod:`pinning.audit.model` can name them in
:class:`~pinning.audit.model.FileScan`); the join is :mod:`pinning.audit.follow`, the
records are written by :mod:`pinning.audit.kernels` and :mod:`pinning.audit.kernel_names`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NameDef", "NameUse"]


@dataclass(frozen=True)
class NameDef:
    """A name one file defines with a 32-lane meaning.

    ``kind``: ``mask`` (``#define FULL_MASK 0xffffffff``, ``constexpr unsigned kFullMask =
    0xffffffff``; ``value`` the spelling), ``warp-size`` (``#define THREADS_PER_WARP 32``,
    ``constexpr int kWarpSize = 32``; ``value`` ``32``) or ``wrapper`` (a function whose
    parameter ``index``, 0-based, reaches the mask argument of the ``*_sync`` call ``value``).
    ``path``/``line`` (1-based) where it is defined; ``amd`` is false when an AMD build skips
    the definition (a CUDA-only ``#if`` branch), so it does not count there.
    """

    name: str
    kind: str
    value: str
    path: str
    line: int
    index: int = -1
    amd: bool = True


@dataclass(frozen=True)
class NameUse:
    """A use of a name the file does not define, at a position where a 32-lane definition
    would make it a porting item.

    ``kind``: ``mask`` (the mask argument of the ``*_sync`` call ``subject``), ``lane`` (a lane
    or warp-size expression ``subject``, e.g. ``WARP_SIZE / THREADS_PER_ROW``) or ``call``
    (a call of ``name`` with the 32-bit mask ``arg`` as argument ``index``, 0-based).
    ``path``/``line``/``column`` (1-based) where it is used.
    """

    name: str
    kind: str
    subject: str
    path: str
    line: int
    column: int
    index: int = -1
    arg: str = ""
