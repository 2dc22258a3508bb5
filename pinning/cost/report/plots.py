"""The report's plots as SVG text, drawn with matplotlib's object API and its SVG backend
(no pyplot, no display, no global state beyond an ``rc_context``).

Every function returns one ``<svg ...>...</svg>`` element (no XML prolog or doctype) to be
inlined in HTML. Output is deterministic: the same data gives the same bytes (``svg.hashsalt``
fixed, no date in the metadata, text as ``<text>`` elements, not glyph paths). Labels that
come from input files are made inert first (:func:`safe_label`): matplotlib would otherwise
read ``$...$`` as mathematics and hide a legend entry that starts with ``_``; matplotlib
escapes ``<``, ``>`` and ``&`` in the SVG it writes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinning.util.text import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["CostSeries", "LatencySeries", "SloLine", "cost_sweep_svg", "latency_svg",
           "payback_svg", "safe_label"]

#: Colours by platform order (matplotlib's "tab10" cycle, first four).
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")

_RC: dict[str, Any] = {
    "svg.hashsalt": "pin-report",
    "svg.fonttype": "none",
    "font.size": 9.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "path.simplify": False,
}


@dataclass(frozen=True)
class LatencySeries:
    """One platform's throughput-latency curve for one metric: ``xs`` tokens per second
    (the basis named in the plot's x label), ``p50``/``p99`` latencies in ms (``None`` where
    the result does not record them), ``passed`` per point (it met every SLO), ``chosen``
    the index of the operating point (or ``None``) and ``loads`` the point labels
    (``c=4``).
    """

    label: str
    xs: tuple[float, ...]
    p50: tuple[float | None, ...]
    p99: tuple[float | None, ...]
    passed: tuple[bool, ...]
    chosen: int | None
    loads: tuple[str, ...]


@dataclass(frozen=True)
class SloLine:
    """A horizontal limit: ``label`` (``ttft-p99-ms <= 2000 ms``) at ``value`` (ms)."""

    label: str
    value: float


@dataclass(frozen=True)
class CostSeries:
    """One platform's cost per million tokens across its sweep: ``xs`` tokens per second,
    ``usd`` US dollars per million tokens, ``passed`` per point, ``chosen`` the operating
    point's index in these tuples (or ``None``), ``loads`` the point labels.
    """

    label: str
    xs: tuple[float, ...]
    usd: tuple[float, ...]
    passed: tuple[bool, ...]
    chosen: int | None
    loads: tuple[str, ...]


def safe_label(text: str) -> str:
    """``text`` for a matplotlib label: hidden characters escaped (:func:`printable`),
    ``$`` escaped so no mathematics is parsed, and a leading ``_`` kept visible (matplotlib
    leaves such labels out of legends).
    """
    out = printable(text, newlines=False).replace("$", r"\$")
    return (" " + out) if out.startswith("_") else out


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=96, layout="constrained")


def _style(svg_id: str) -> AbstractContextManager[None]:
    """The matplotlib settings of one plot (:data:`_RC`, ``svg.id``), for the ``with`` block
    that draws and saves it; the global settings are restored after.
    """
    import matplotlib

    settings: Any = {**_RC, "svg.id": svg_id}
    return matplotlib.rc_context(settings)


def _svg(fig: Figure) -> str:
    """The figure as one ``<svg>`` element, identical bytes for identical figures (call
    inside :func:`_style`).
    """
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    # No metadata block: its Dublin Core / Creative Commons namespaces and matplotlib's
    # home page would be the only URLs in the page besides the SVG namespaces.
    fig.savefig(buf, format="svg",
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    return text[text.index("<svg"):].strip() + "\n"


def _mark(ax: Axes, xs: Sequence[float], ys: Sequence[float | None], passed: Sequence[bool],
          colour: str, *, style: str, label: str, hollow_failed: bool = True) -> None:
    """A line through the points that have a value; met-SLO points filled, others hollow."""
    pts = [(x, y, ok) for x, y, ok in zip(xs, ys, passed, strict=True) if y is not None]
    if not pts:
        return
    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style, color=colour,
            linewidth=1.5, label=label)
    for x, y, ok in pts:
        face = colour if ok or not hollow_failed else "white"
        ax.plot([x], [y], marker="o", markersize=5, color=colour, markerfacecolor=face,
                linestyle="none")


def _chosen(ax: Axes, x: float, y: float, colour: str, first: bool) -> None:
    ax.plot([x], [y], marker="*", markersize=15, color=colour, markeredgecolor="black",
            linestyle="none", label="chosen operating point" if first else None, zorder=5)


#: The most an SLO may lie above the highest point for a linear axis that shows both;
#: further out, the latency axis is logarithmic so the points are not squashed flat.
SLO_SPAN = 3.0


def scale_latency_axis(ax: Axes, values: Sequence[float], limits: Sequence[float]) -> bool:
    """Scale the latency (y) axis to the data while keeping every SLO line in view:
    linear from 0 when each limit is within :data:`SLO_SPAN` times the highest value,
    else logarithmic from just under the lowest value to just over the highest limit.
    Returns whether the axis is logarithmic.
    """
    shown = [v for v in values if v > 0 and math.isfinite(v)]
    top = max([*shown, *limits], default=1.0)
    if not shown or max(limits, default=0.0) <= SLO_SPAN * max(shown):
        ax.set_ylim(0, top * 1.12)
        return False
    ax.set_yscale("log")
    ax.set_ylim(min(shown) / 1.5, top * 1.5)
    return True


def latency_svg(*, metric: str, x_label: str, series: Sequence[LatencySeries],
                slos: Sequence[SloLine], svg_id: str) -> str:
    """The throughput-latency plot of one latency ``metric`` (``TTFT``): per platform its
    p50 (dashed) and p99 (solid) latency in ms against tokens per second, each SLO as a
    horizontal dotted line, the chosen operating point as a star, points that missed an SLO
    hollow. The latency axis is scaled to the data with every SLO line in view
    (:func:`scale_latency_axis`); the throughput axis from 0 to just past the highest
    rate. ``svg_id`` is the ``id`` of the ``<svg>`` element.
    """
    with _style(svg_id):
        fig = _figure(6.4, 3.6)
        ax = fig.add_subplot()
        starred = False
        for i, s in enumerate(series):
            colour = COLOURS[i % len(COLOURS)]
            name = safe_label(s.label)
            _mark(ax, s.xs, s.p99, s.passed, colour, style="-", label=f"{name} p99")
            _mark(ax, s.xs, s.p50, s.passed, colour, style="--", label=f"{name} p50")
            for x, y, load in zip(s.xs, s.p99, s.loads, strict=True):
                if y is not None:
                    ax.annotate(safe_label(load), (x, y), textcoords="offset points",
                                xytext=(4, 4), fontsize=7, color=colour)
            if s.chosen is not None:
                y = s.p99[s.chosen] if s.p99[s.chosen] is not None else s.p50[s.chosen]
                if y is not None:
                    _chosen(ax, s.xs[s.chosen], y, colour, not starred)
                    starred = True
        for j, slo in enumerate(slos):
            ax.axhline(slo.value, color="black", linestyle=":", linewidth=1.2,
                       label=f"SLO {safe_label(slo.label)}", alpha=1.0 - 0.25 * (j % 3))
        ax.set_xlabel(safe_label(x_label))
        ys = [y for s in series for y in (*s.p50, *s.p99) if y is not None]
        log = scale_latency_axis(ax, ys, [slo.value for slo in slos])
        ax.set_ylabel(f"{safe_label(metric)} latency (ms"
                      + (", log scale)" if log else ")"))
        xs = [x for s in series for x in s.xs]
        ax.set_xlim(0, max(xs, default=1.0) * 1.15 or 1.0)
        ax.legend(fontsize=7, loc="best")
        return _svg(fig)


def cost_sweep_svg(*, y_label: str, x_label: str, series: Sequence[CostSeries],
                   svg_id: str) -> str:
    """Cost per million tokens (US dollars) at every point of each platform's sweep
    against its token rate; the chosen operating point starred, points that missed an SLO
    hollow. ``svg_id`` is the ``id`` of the ``<svg>`` element.
    """
    with _style(svg_id):
        fig = _figure(6.4, 3.4)
        ax = fig.add_subplot()
        starred = False
        for i, s in enumerate(series):
            colour = COLOURS[i % len(COLOURS)]
            _mark(ax, s.xs, s.usd, s.passed, colour, style="-", label=safe_label(s.label))
            for x, y, load in zip(s.xs, s.usd, s.loads, strict=True):
                ax.annotate(safe_label(load), (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7, color=colour)
            if s.chosen is not None:
                _chosen(ax, s.xs[s.chosen], s.usd[s.chosen], colour, not starred)
                starred = True
        ax.set_xlabel(safe_label(x_label))
        ax.set_ylabel(safe_label(y_label))
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.legend(fontsize=7, loc="best")
        return _svg(fig)


def payback_svg(*, one_time_usd: float, net_usd_per_month: float,
                payback_months: float | None, life_months: float | None, svg_id: str) -> str:
    """The payback timeline: cumulative net position in US dollars, ``-one_time_usd +
    net_usd_per_month x month``, from month 0 to past the payback and the remaining life;
    the payback month and the end of life as vertical lines, break-even at zero.
    ``svg_id`` is the ``id`` of the ``<svg>`` element.
    """
    ends = [m for m in (payback_months, life_months) if m is not None and math.isfinite(m)]
    horizon = max([12.0, *(1.2 * m for m in ends)])
    with _style(svg_id):
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        ax.plot([0.0, horizon], [-one_time_usd, -one_time_usd + net_usd_per_month * horizon],
                color=COLOURS[0], linewidth=2, label="cumulative net savings")
        ax.axhline(0.0, color="black", linewidth=0.8)
        if payback_months is not None:
            ax.axvline(payback_months, color=COLOURS[2], linestyle="--",
                       label=f"payback: {payback_months:.3g} months")
        if life_months is not None:
            ax.axvline(life_months, color=COLOURS[1], linestyle=":",
                       label=f"remaining life: {life_months:.3g} months")
        ax.set_xlabel("months after the port")
        ax.set_ylabel("US dollars")
        ax.set_xlim(0, horizon)
        ax.legend(fontsize=7, loc="best")
        return _svg(fig)
