"""The report as one self-contained HTML page: inline CSS, plots as inline SVG, no script,
no external URL. A Content-Security-Policy meta tag (``default-src 'none'``) keeps the page
from loading or running anything even if a value slipped past escaping.

Every string from an input is escaped with :func:`html.escape` (quotes included); only the
SVG text made by :mod:`pinning.cost.report.plots` is inlined as markup.
"""

from __future__ import annotations

from html import escape

from pinning.cost.report.view import ReportView, Section, Table
from pinning.util.text import printable

__all__ = ["CSP", "render_html"]

#: The page's Content-Security-Policy: nothing from anywhere; inline styles only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " \
      "form-action 'none'"

_GOOD = frozenset({"port", "match", "passed", "SLOs met", "no blocked items",
                   "candidate cheaper"})
_BAD = frozenset({"stay", "drift", "failed", "blocked", "no payback", "no operating point",
                  "candidate not cheaper"})

_CSS = """
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --good: #1a7f37; --bad: #cf222e; }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); margin: 0 auto;
       max-width: 1100px; padding: 1.5rem; }
header { border-bottom: 2px solid var(--line); margin-bottom: 1rem; }
h1 { margin: 0 0 .2rem; } .subtitle { color: var(--muted); margin: 0 0 .6rem; }
nav a { margin-right: .9rem; color: var(--fg); }
section { border-bottom: 1px solid var(--line); padding: .6rem 0 1rem; }
section.not-given h2 { color: var(--muted); }
.badge { font-size: .75em; padding: .1em .55em; border-radius: 1em; margin-left: .5em;
         border: 1px solid var(--muted); color: var(--muted); vertical-align: middle; }
.badge.good { border-color: var(--good); color: var(--good); }
.badge.bad { border-color: var(--bad); color: var(--bad); }
#verdict .badge { font-size: 1.1em; font-weight: 700; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9em; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left;
         vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f8fa; }
figure { margin: .8rem 0; } figcaption { color: var(--muted); font-size: .85em; }
figure svg { max-width: 100%; height: auto; }
footer { color: var(--muted); font-size: .85em; padding-top: 1rem; }
"""


def _t(text: str) -> str:
    """Text content or attribute value: hidden characters shown as escapes, then escaped."""
    return escape(printable(text), quote=True)


def _badge(status: str | None) -> str:
    if status is None:
        return ""
    kind = " good" if status in _GOOD else (" bad" if status in _BAD else "")
    return f' <span class="badge{kind}">{_t(status)}</span>'


def _table(table: Table) -> str:
    head = "".join(f'<th scope="col">{_t(h)}</th>' for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{_t(c)}</td>" for c in row) + "</tr>\n"
                   for row in table.rows)
    return (f"<table>\n<caption>{_t(table.caption)}</caption>\n<thead><tr>{head}</tr></thead>"
            f"\n<tbody>\n{body}</tbody>\n</table>\n")


def _section(s: Section) -> str:
    parts = [f'<section id="{_t(s.key)}" class="{"given" if s.given else "not-given"}">\n'
             f"<h2>{_t(s.title)}{_badge(s.status)}</h2>\n"]
    parts += [f"<p>{_t(p)}</p>\n" for p in s.paragraphs]
    if s.items:
        parts.append("<ul>\n" + "".join(f"<li>{_t(i)}</li>\n" for i in s.items) + "</ul>\n")
    parts += [_table(t) for t in s.tables]
    parts += [f'<figure class="plot" data-plot="{_t(p.key)}">\n{p.svg}'
              f"<figcaption><strong>{_t(p.title)}.</strong> {_t(p.alt)}</figcaption>\n"
              "</figure>\n" for p in s.plots]
    return "".join(parts) + "</section>\n"


def render_html(view: ReportView, *, version: str) -> str:
    """The page for ``view`` (``version``: pin's, named in the footer). Deterministic: the
    same view gives the same text.
    """
    nav = "".join(f'<a href="#{_t(s.key)}">{_t(s.title)}</a>' for s in view.sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{_t(CSP)}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_t(view.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<header>\n<h1>{_t(view.title)}</h1>\n"
            f'<p class="subtitle">{_t(view.subtitle)}</p>\n<nav>{nav}</nav>\n</header>\n'
            "<main>\n" + "".join(_section(s) for s in view.sections) + "</main>\n"
            f"<footer>Made by pin {_t(version)} (pin report). Sections without input say "
            "&quot;not given&quot;.</footer>\n</body>\n</html>\n")
