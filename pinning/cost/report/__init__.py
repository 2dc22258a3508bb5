"""``pin report``: one page for the port-or-stay decision, from a lockfile, a ``pin verify``
report, a porting audit, acceptance results and a cost report (each optional; a section
without its input says "not given"). The page opens with a headline box (:mod:`.headline`):
the verdict, the stack it is for, and every caveat and binding problem; ``inconclusive``
when the inputs disagree. Inputs are named by file name (and sha256), never by local path.

:func:`render_report` is the entry point: inputs in, HTML (self-contained: inline CSS,
plots as inline SVG drawn with matplotlib, no script, no URL) or Markdown text out. The
parts: :mod:`.inputs` (reading), :mod:`.view` (the report as data), :mod:`.sections` and
:mod:`.decision` (what each section says), :mod:`.headline` (the box that opens the
page), :mod:`.plots` (SVG), :mod:`.html`, :mod:`.markdown`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from pinning.cost.report.decision import (
    cost_section,
    inputs_section,
    payback_section,
    serving_section,
    verdict_section,
)
from pinning.cost.report.headline import build_headline, uncovered_blocked
from pinning.cost.report.inputs import ReportInputs
from pinning.cost.report.sections import (
    audit_section,
    gates_section,
    platforms,
    stack_section,
)
from pinning.cost.report.view import Headline, ReportView, Section, Table, file_name

__all__ = ["ReportInputs", "build_view", "render_report"]

#: The sections whose HTML carries plots (Markdown shows their data as tables).
PLOTTED = frozenset({"serving", "cost", "payback"})


def _local_paths(inputs: ReportInputs) -> dict[str, str]:
    """Every local path an input or the cost report names, mapped to its file name, and
    the trees the audit scanned (``/home/me/proj/``) mapped to nothing, so its findings
    read ``csrc/reduce.cu:15``; longest first (``/a/b.json`` before ``/a/``).
    """
    paths = inputs.paths()
    if inputs.cost is not None:
        c = inputs.cost.value
        paths += [c.prices, *(p.result for p in c.platforms),
                  *(p.lock for p in c.platforms if p.lock)]
        mig = c.payback.migration if c.payback is not None else None
        paths += [x for x in (mig.audit if mig else None,
                              mig.effort.source if mig and mig.effort else None) if x]
    if inputs.verify is not None:
        paths += [inputs.verify.value.lock, inputs.verify.value.host]
    if inputs.audit is not None and inputs.audit.value.effort is not None:
        paths.append(inputs.audit.value.effort.source)
    named = {p: file_name(p) for p in paths if p and file_name(p) != p}
    if inputs.audit is not None:  # files the audit found: relative to the tree it scanned
        named.update({root.rstrip("/") + "/": "" for root in inputs.audit.value.inputs
                      if "/" in root.rstrip("/")})
    return dict(sorted(named.items(), key=lambda kv: -len(kv[0])))


def _replacer(paths: dict[str, str]) -> Callable[[str], str]:
    """A function replacing every local path of ``paths`` in a text by its name."""
    def t(text: str) -> str:
        for path, name in paths.items():
            text = text.replace(path, name)
        return text
    return t


def _section_without_paths(part: Section, t: Callable[[str], str]) -> Section:
    """``part`` with its text passed through ``t`` (:func:`_replacer`)."""
    def rows(table: Table) -> Table:
        return Table(t(table.caption), tuple(map(t, table.headers)),
                     tuple(tuple(map(t, r)) for r in table.rows))

    return dataclasses.replace(part, paragraphs=tuple(map(t, part.paragraphs)),
                               items=tuple(map(t, part.items)),
                               tables=tuple(map(rows, part.tables)))


def build_view(inputs: ReportInputs, *, plots: bool = True) -> ReportView:
    """The report of ``inputs``: the headline box, then verdict, stack, porting bill,
    gates, serving curves, cost, payback and the inputs, in that order. ``plots`` false
    leaves the SVGs out (Markdown). No local path appears: inputs are named by file name.
    """
    plats = platforms(inputs)
    headline = build_headline(inputs, plats)
    sections = (
        verdict_section(inputs.cost, headline),
        stack_section(inputs.lock, inputs.verify),
        audit_section(inputs.audit, uncovered_blocked(inputs)),
        gates_section(inputs.results, plats,
                      inputs.lock.value.content_hash if inputs.lock is not None else None),
        serving_section(plats, plots=plots),
        cost_section(inputs.cost, plats, plots=plots),
        payback_section(inputs.cost, plots=plots),
        inputs_section(inputs),
    )
    model = next((p.accept.result.serve.model for p in plats
                  if p.accept.result.serve is not None and p.accept.result.serve.model), None)
    subtitle = "Port or stay: the decision from what pin measured" + (
        f" (model {model})" if model else "")
    t = _replacer(_local_paths(inputs))
    return ReportView("pin report", subtitle,
                      tuple(_section_without_paths(s, t) for s in sections),
                      Headline(headline.verdict, t(headline.stack), tuple(map(t, headline.why)),
                               tuple(map(t, headline.caveats))))


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
