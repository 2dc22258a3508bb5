"""The report as Markdown (``pin report --format md``): the same sections as the HTML page,
plots replaced by the tables of their data (every figure a plot shows is in a table).

Input strings are escaped so they stay text, with CommonMark's backslash escapes only, so
the file reads as written (``>=580``, never ``&gt;=580``): ``<`` always (a ``<script>`` in a
model name is not markup), ``&`` where it could start an entity, Markdown's punctuation,
and what would start a block at the start of a line; line breaks shown as escapes.
"""

from __future__ import annotations

from pinning.cost.report.view import Headline, ReportView, Section, Table
from pinning.util.text import printable

__all__ = ["md_escape", "render_markdown"]

#: Characters that make inline markup anywhere in a line (``<``: HTML and autolinks).
_INLINE = frozenset("\\`*_[]|~<")
#: Characters that make block markup at the start of a line (heading, list, quote, rule).
_LEADING = frozenset("#-+=>")


def md_escape(text: str, *, block: bool = True) -> str:
    """``text`` as inert Markdown inline text, escaped with backslashes only (no HTML
    entity, so the raw file reads as the text): hidden characters shown as escapes, ``<``
    and inline Markdown punctuation, ``&`` before a letter or ``#`` (an entity's start), and
    what would start a heading, list or quote at the start of the text (``block`` false:
    a table cell, where nothing starts a block); line breaks as escapes (``\\x0a``).
    """
    text = printable(text, newlines=False)
    digits = len(text) - len(text.lstrip("0123456789"))
    lead = -1 if not block else 0 if text[:1] in _LEADING else (
        digits if 0 < digits < len(text) and text[digits] in ".)"
        and text[digits + 1:digits + 2] in ("", " ") else -1)
    out = []
    for i, ch in enumerate(text):
        nxt = text[i + 1:i + 2]
        if ch in _INLINE or i == lead or (ch == "&" and (nxt.isalpha() or nxt == "#")):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _table(table: Table) -> list[str]:
    lines = [f"*{md_escape(table.caption)}*", "",
             "| " + " | ".join(md_escape(h, block=False) for h in table.headers) + " |",
             "|" + "---|" * len(table.headers)]
    lines += ["| " + " | ".join(md_escape(c, block=False) or " " for c in row) + " |"
              for row in table.rows]
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


def _headline(h: Headline) -> list[str]:
    """The headline box as a quoted block: verdict, stack, why, caveats."""
    lines = [f"> **Verdict: {md_escape(h.verdict.upper())}**", ">",
             f"> For: {md_escape(h.stack)}", ">"]
    if h.why:
        lines += ["> Inconclusive: the inputs disagree, so this report cannot say port or "
                  "stay until they agree:", ">", *(f"> - {md_escape(w)}" for w in h.why), ">"]
    lines.append("> Caveats and binding problems" + (":" if h.caveats else ": none."))
    if h.caveats:
        lines += [">", *(f"> - {md_escape(c)}" for c in h.caveats)]
    return [*lines, ""]


def render_markdown(view: ReportView, *, version: str, plotted: frozenset[str]) -> str:
    """The Markdown text of ``view``; ``plotted`` names the sections (keys) that carry plots
    in the HTML report (they get a line saying where the plot is). Deterministic.
    """
    lines = [f"# {md_escape(view.title)}", "", md_escape(view.subtitle), ""]
    if view.headline is not None:
        lines += _headline(view.headline)
    for s in view.sections:
        lines += _section(s, s.key in plotted)
    lines += [f"Made by pin {md_escape(version)} (pin report). Sections without input say "
              "\"not given\".", ""]
    return "\n".join(lines)
