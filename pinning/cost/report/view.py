"""The report as plain data: sections of paragraphs, bullet items, tables and plots, built
from :class:`~pinning.cost.report.inputs.ReportInputs`. The HTML and Markdown renderers
only lay this out (and escape it); every number and sentence is decided here.

Strings in the view are raw text (file content included); renderers escape them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pinning.cost.model import PlatformCost
from pinning.cost.report.inputs import AcceptInput

__all__ = ["LIST_LIMIT", "NOT_GIVEN", "Headline", "Platform", "Plot", "ReportView", "Section",
           "Table", "file_name", "num", "usd"]

#: What a section without its input says.
NOT_GIVEN = "not given"

#: How many blocked items, drift findings or failed checks a section lists in full.
LIST_LIMIT = 50


@dataclass(frozen=True)
class Table:
    """A table: ``caption``, ``headers`` and ``rows`` of cells (plain text)."""

    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Plot:
    """One inline plot: ``key`` (the ``<svg>`` id), ``title``, the ``svg`` element text and
    ``alt``, a sentence saying what it shows.
    """

    key: str
    title: str
    svg: str
    alt: str


@dataclass(frozen=True)
class Section:
    """One section: ``key`` (an HTML id), ``title``, whether its input was ``given``, a
    one-word ``status`` badge (``port``, ``stay``, ``match``, ``drift``, ``passed``,
    ``failed``; ``None`` for none), and its content in order: paragraphs, items, tables,
    plots.
    """

    key: str
    title: str
    given: bool
    status: str | None = None
    paragraphs: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    plots: tuple[Plot, ...] = ()


@dataclass(frozen=True)
class Headline:
    """The box that opens the page: the ``verdict`` (``port``, ``stay``, ``inconclusive``
    when the inputs disagree, or ``no verdict`` without a cost verdict), the ``stack`` it is
    for (one line), ``why`` (one sentence per way the inputs disagree; empty unless
    inconclusive) and ``caveats``: every caveat and binding problem, in one list.
    """

    verdict: str
    stack: str
    why: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportView:
    """The whole report: ``title``, ``subtitle``, the ``headline`` box and the sections in
    page order.
    """

    title: str
    subtitle: str
    sections: tuple[Section, ...] = field(default_factory=tuple)
    headline: Headline | None = None


@dataclass(frozen=True)
class Platform:
    """One acceptance result as a platform of the report: its ``label``, the input, its
    priced form in the cost report (``cost``, when the cost report names the same file),
    the ``chosen`` serving point (an index into ``serve.points``) and ``why`` it was chosen.
    """

    label: str
    accept: AcceptInput
    cost: PlatformCost | None
    chosen: int | None
    why: str


#: Large numbers in words: (threshold, word), largest first.
_SCALES = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def _scaled(value: float) -> str | None:
    """``value`` in words when it is a million or more (``5e9`` -> ``5.0 billion``)."""
    for size, word in _SCALES:
        if abs(value) >= size:
            x = value / size
            return f"{x:,.1f} {word}" if abs(x) < 100 else f"{x:,.0f} {word}"
    return None


def num(value: float | None, digits: int = 4) -> str:
    """``value`` for people: ``-`` for ``None``, ``unknown`` when not finite; a million
    or more in words (``5.0 billion``); at least ``10**digits`` as a whole number with
    thousands separators (``12,346``); else ``digits`` significant digits without an
    exponent (``153.8``, ``0.0001234``).
    """
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "unknown"
    words = _scaled(value)
    if words is not None:
        return words
    if value == 0 or abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    text = f"{value:,.{digits}g}"
    if "e" in text:  # below 1e-4: fixed point with the digits asked
        places = digits - 1 - math.floor(math.log10(abs(value)))
        text = f"{value:.{places}f}"
    return text


def usd(value: float | None) -> str:
    """US dollars: ``unknown`` for ``None``; a million or more in words (``USD 1.2
    million``); cents from 1 up (``USD 4.68``); 4 significant digits below.
    """
    if value is None or not math.isfinite(value):
        return "unknown"
    words = _scaled(value)
    if words is not None:
        return f"USD {words}"
    return f"USD {value:,.2f}" if abs(value) >= 1 else f"USD {num(value)}"


def file_name(path: str) -> str:
    """How the report names an input: its file name, never the local path (``-``:
    ``standard input``).
    """
    if path == "-":
        return "standard input"
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or path
