"""``pin report``: one page for the port-or-stay decision, from a lockfile, a ``pin verify``
report, a porting audit, acceptance results and a cost report (each optional; a section
without its input says "not given").

:func:`render_report` is the entry point: inputs in, HTML (self-contained: inline CSS,
plots as inline SVG drawn with matplotlib, no script, no URL) or Markdown text out. The
parts: :mod:`.inputs` (reading), :mod:`.view` (the report as data), :mod:`.sections` and
:mod:`.decision` (what each section says), :mod:`.plots` (SVG), :mod:`.html`,
:mod:`.markdown`.
"""

from __future__ import annotations

from typing import Literal

from pinning.cost.report.decision import (
    cost_section,
    inputs_section,
    payback_section,
    serving_section,
    verdict_section,
)
from pinning.cost.report.inputs import ReportInputs
from pinning.cost.report.sections import (
    audit_section,
    gates_section,
    platforms,
    stack_section,
)
from pinning.cost.report.view import ReportView

__all__ = ["ReportInputs", "build_view", "render_report"]

#: The sections whose HTML carries plots (Markdown shows their data as tables).
PLOTTED = frozenset({"serving", "cost", "payback"})


def build_view(inputs: ReportInputs, *, plots: bool = True) -> ReportView:
    """The report of ``inputs``: verdict, stack, porting bill, gates, serving curves, cost,
    payback and the inputs, in that order. ``plots`` false leaves the SVGs out (Markdown).
    """
    plats = platforms(inputs)
    sections = (
        verdict_section(inputs.cost),
        stack_section(inputs.lock, inputs.verify),
        audit_section(inputs.audit),
        gates_section(inputs.results, plats),
        serving_section(plats, plots=plots),
        cost_section(inputs.cost, plats, plots=plots),
        payback_section(inputs.cost, plots=plots),
        inputs_section(inputs),
    )
    model = next((p.accept.result.serve.model for p in plats
                  if p.accept.result.serve is not None and p.accept.result.serve.model), None)
    subtitle = "Port or stay: the decision from what pin measured" + (
        f" (model {model})" if model else "")
    return ReportView("pin report", subtitle, sections)


def render_report(inputs: ReportInputs, fmt: Literal["html", "md"], *, version: str) -> str:
    """The report of ``inputs`` as ``html`` or ``md`` text; ``version`` is pin's (footer).
    Deterministic: the same inputs give the same text. Raises no ``PinError`` itself (the
    readers in :mod:`.inputs` do, for bad files).
    """
    from pinning.cost.report.html import render_html
    from pinning.cost.report.markdown import render_markdown

    if fmt == "html":
        return render_html(build_view(inputs, plots=True), version=version)
    view = build_view(inputs, plots=False)
    shown = frozenset(s.key for s in view.sections if s.key in PLOTTED and s.given)
    return render_markdown(view, version=version, plotted=shown)
