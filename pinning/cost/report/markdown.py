"""The report as Markdown (``pin report --format md``): the same sections as the HTML page,
plots replaced by the tables of their data (every figure a plot shows is in a table).

Input strings are escaped so they stay text: ``&``, ``<`` and ``>`` as HTML entities (a
``<script>`` in a model name is not markup), Markdown's punctuation with a backslash, line
breaks shown as escapes.
"""

from __future__ import annotations

from pinning.cost.report.view import ReportView, Section, Table
from pinning.util.text import printable

__all__ = ["md_escape", "render_markdown"]

#: Characters that make inline markup anywhere in a line.
_INLINE = frozenset("\\`*_[]|~")
#: Characters that make block markup at the start of a line (heading, list, quote, rule).
_LEADING = frozenset("#-+=>")


def md_escape(text: str) -> str:
    """``text`` as inert Markdown inline text: hidden characters shown as escapes, ``&``,
    ``<``, ``>`` as entities, inline Markdown punctuation backslash-escaped, and what would
    start a heading, list or quote at the start of the text; line breaks as escapes (``\\x0a``).
    """
    text = printable(text, newlines=False)
    digits = len(text) - len(text.lstrip("0123456789"))
    lead = 0 if text[:1] in _LEADING else (
        digits if 0 < digits < len(text) and text[digits] in ".)"
        and text[digits + 1:digits + 2] in ("", " ") else -1)
    out = []
    for i, ch in enumerate(text):
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _INLINE or i == lead:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _table(table: Table) -> list[str]:
    lines = [f"*{md_escape(table.caption)}*", "",
             "| " + " | ".join(md_escape(h) for h in table.headers) + " |",
             "|" + "---|" * len(table.headers)]
    lines += ["| " + " | ".join(md_escape(c) or " " for c in row) + " |" for row in table.rows]
    return [*lines, ""]


def _section(s: Section, plotted: bool) -> list[str]:
    badge = f" ({md_escape(s.status)})" if s.status else ""
    lines = [f"## {md_escape(s.title)}{badge}", ""]
    for p in s.paragraphs:
        lines += [md_escape(p), ""]
    if s.items:
        lines += [*(f"- {md_escape(i)}" for i in s.items), ""]
    for t in s.tables:
        lines += _table(t)
    if plotted:
        lines += ["Plot: in the HTML report (`pin report --format html`); its data is in "
                  "the tables above.", ""]
    return lines


def render_markdown(view: ReportView, *, version: str, plotted: frozenset[str]) -> str:
    """The Markdown text of ``view``; ``plotted`` names the sections (keys) that carry plots
    in the HTML report (they get a line saying where the plot is). Deterministic.
    """
    lines = [f"# {md_escape(view.title)}", "", md_escape(view.subtitle), ""]
    for s in view.sections:
        lines += _section(s, s.key in plotted)
    lines += [f"Made by pin {md_escape(version)} (pin report). Sections without input say "
              "\"not given\".", ""]
    return "\n".join(lines)
