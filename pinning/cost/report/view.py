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

__all__ = ["LIST_LIMIT", "NOT_GIVEN", "Platform", "Plot", "ReportView", "Section", "Table",
           "num", "usd"]

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
class ReportView:
    """The whole report: ``title``, ``subtitle`` and the sections in page order."""

    title: str
    subtitle: str
    sections: tuple[Section, ...] = field(default_factory=tuple)


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


def num(value: float | None, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits, ``-`` for ``None``."""
    return "-" if value is None else f"{value:,.{digits}g}"


def usd(value: float | None) -> str:
    """US dollars: cents from 1 up, 4 significant digits below; ``unknown`` for ``None``."""
    if value is None or not math.isfinite(value):
        return "unknown"
    return f"USD {value:,.2f}" if abs(value) >= 1 else f"USD {value:.4g}"
