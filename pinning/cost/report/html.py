"""The report as one self-contained HTML page (``templates/report.html``, Jinja2 with
autoescape): inline CSS, plots as inline SVG, no script, no external URL. A
Content-Security-Policy meta tag (``default-src 'none'``) keeps the page from loading or
running anything even if a value slipped past escaping.

Every string from an input is printed through :func:`_t` (hidden characters shown as
escapes, then :func:`html.escape` with quotes); only the SVG text made by
:mod:`pinning.cost.report.plots` is inlined as markup (``|safe``). The page opens with the
headline box (verdict, the stack it is for, why it is inconclusive, every caveat and binding
problem). Table cells never wrap inside a word (short cells not at all); a wide table
scrolls sideways instead.
"""

from __future__ import annotations

from html import escape

from pinning.cost.report.view import ReportView
from pinning.util.text import printable

__all__ = ["CSP", "render_html"]

#: The page's Content-Security-Policy: nothing from anywhere; inline styles only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " \
      "form-action 'none'"

_GOOD = frozenset({"port", "match", "passed", "SLOs met", "no blocked items",
                   "candidate cheaper"})
_BAD = frozenset({"stay", "drift", "failed", "blocked", "no payback", "no operating point",
                  "candidate not cheaper"})
_WARN = frozenset({"inconclusive", "passed, not bound", "passed, not verified"})
#: Table cells up to this many characters never wrap (numbers, names, hashes, GPU models:
#: "H10 0" must not happen); longer ones wrap between words only, never inside one.
NOWRAP_CHARS = 72


def _nowrap(cell: str) -> object:
    """The class attribute of a table cell: ``nw`` (no wrapping) for a short cell."""
    from markupsafe import Markup

    return Markup(' class="nw"') if len(cell) <= NOWRAP_CHARS else Markup("")


def _t(value: object) -> object:
    """What the template prints for ``value``: markup as is, anything else as escaped text
    (hidden characters shown as escapes first).
    """
    from markupsafe import Markup

    if isinstance(value, Markup):
        return value
    return Markup(escape(printable("" if value is None else str(value)), quote=True))


def render_html(view: ReportView, *, version: str) -> str:
    """The page for ``view`` (``version``: pin's, named in the footer). Deterministic: the
    same view gives the same text.
    """
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("pinning.cost.report"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                      finalize=_t)
    return env.get_template("report.html").render(view=view, version=version, csp=CSP,
                                                  good=_GOOD, bad=_BAD, warn=_WARN,
                                                  nowrap=_nowrap)
