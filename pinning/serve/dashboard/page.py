"""The dashboard's page frame and small pieces: escaping, status badges, times, digests,
links. Pure string building (no template engine, no script): every value that came from a
report, a lock or a request goes through :func:`t` (``html.escape`` with quotes, after
hidden characters are written as escapes) before it reaches the page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from html import escape
from urllib.parse import quote, urlencode

from pinning.util.text import printable

__all__ = ["CSP", "STATUSES", "age", "badge", "frame", "host_url", "lock_url", "message",
           "not_found", "query", "short", "t", "when"]

#: The Content-Security-Policy every dashboard response carries: nothing loads or runs
#: (no script at all), inline styles only, forms submit only to the dashboard itself.
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

#: The results a host's latest report can have, in the order the dashboard shows them.
STATUSES = ("match", "drift", "unknown")

#: The mark beside each status, so status never rests on colour alone.
_MARK = {"match": "\u2713", "drift": "\u2717", "unknown": "?"}

_CSS = """
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--match:#1a7f37;--drift:#cf222e;
--unknown:#9a6700}
body{font:14px/1.4 system-ui,sans-serif;color:var(--fg);margin:0 auto;max-width:1400px;
padding:1rem 1.5rem}
header{display:flex;gap:1.5rem;align-items:baseline;border-bottom:2px solid var(--line);
margin-bottom:.8rem}
header h1{font-size:1.25rem;margin:.3rem 0}
header a{color:var(--fg)}
h2{font-size:1.1rem;margin:1rem 0 .4rem}
a{color:#0969da}
table{border-collapse:collapse;margin:.4rem 0;font-size:.92em}
th,td{border-bottom:1px solid var(--line);padding:.2rem .6rem;text-align:left;
vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa;position:sticky;top:0}
td.r,th.r{text-align:right}
.b{display:inline-block;min-width:4.5em;padding:0 .5em;border-radius:1em;font-weight:600;
border:1px solid}
.b.match{color:var(--match);border-color:var(--match);background:#dafbe1}
.b.drift{color:#fff;border-color:var(--drift);background:var(--drift)}
.b.unknown{color:var(--unknown);border-color:var(--unknown);background:#fff8c5}
.counts{display:flex;gap:.8rem;margin:.4rem 0 .8rem;flex-wrap:wrap}
.counts a{border:1px solid var(--line);border-radius:6px;padding:.3rem .8rem;
text-decoration:none;color:var(--fg)}
.counts strong{font-size:1.3em;margin-right:.3em}
form.filter{display:flex;gap:.6rem;align-items:end;flex-wrap:wrap;margin:.4rem 0}
form.filter label{display:flex;flex-direction:column;font-size:.85em;color:var(--muted)}
.muted,td.age{color:var(--muted)}
code{font-size:.95em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}
dt{color:var(--muted)}dd{margin:0}
footer{color:var(--muted);font-size:.85em;margin-top:1.5rem}
"""


def t(text: object) -> str:
    """``text`` (``None``: empty) as HTML text or attribute value: hidden characters
    (controls, bidi overrides; :func:`~pinning.util.text.printable`) written as escapes,
    then ``&``, ``<``, ``>``, ``"`` and ``'`` escaped.
    """
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    return escape(printable(value, newlines=False), quote=True)


def badge(status: str) -> str:
    """A status badge: its mark and word, coloured by class (unknown words shown as is)."""
    kind = status if status in _MARK else "unknown"
    return f'<span class="b {kind}">{_MARK.get(status, "?")} {t(status)}</span>'


def short(content_hash: str | None) -> str:
    """The short digest of a lock (12 hex digits after ``sha256:``, as pin's Slurm feature
    ``pin_<d12>`` spells it), escaped; empty for ``None``.
    """
    if not content_hash:
        return ""
    return t(content_hash.removeprefix("sha256:")[:12])


def host_url(name: str) -> str:
    """The escaped path of a host's page (the name percent-encoded, slashes included)."""
    return t("/hosts/" + quote(name, safe=""))


def lock_url(content_hash: str) -> str:
    """The escaped path of a lock's page."""
    return t("/locks/" + quote(content_hash, safe=":"))


def query(params: Mapping[str, object]) -> str:
    """``?a=1&b=2`` of the non-empty ``params`` (escaped for an attribute), or ``?``."""
    kept = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return t("?" + urlencode(kept))


def when(value: dt.datetime | None) -> str:
    """A UTC time as ``YYYY-MM-DD HH:MM:SSZ`` (escaped; empty for ``None``)."""
    if value is None:
        return ""
    utc = value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)
    return utc.isoformat(" ", "seconds") + "Z"


def age(value: dt.datetime | None, now: dt.datetime) -> str:
    """How long before ``now`` ``value`` was, in its largest whole unit (``42 s``,
    ``5 min``, ``3 h``, ``2 d``); ``in the future`` for a later time; empty for ``None``.
    Naive times are taken as UTC.
    """
    if value is None:
        return ""
    then = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    at = now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    seconds = int((at - then).total_seconds())
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def frame(title: str, body: str, *, version: str = "") -> str:
    """A whole page: ``title`` (escaped here) and ``body`` (markup, escaped by its maker),
    with the navigation and inline CSS; no script, no external URL.
    """
    foot = f"pin {t(version)} \u00b7 " if version else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"  # no favicon request
            f"<title>{t(title)} \u00b7 pin serve</title>\n<style>{_CSS}</style>\n</head>\n"
            "<body>\n<header><h1>pin serve</h1><nav><a href=\"/\">Fleet</a> \u00b7 "
            "<a href=\"/locks\">Locks</a></nav></header>\n<main>\n"
            f"{body}</main>\n<footer>{foot}times in UTC \u00b7 "
            "<a href=\"/api/v1/fleet/summary\">JSON API</a></footer>\n</body>\n</html>\n")


def message(heading: str, what: str, hint: str) -> str:
    """The body of an error page: a heading, what happened and what to do (all escaped)."""
    return (f'<h2 id="error">{t(heading)}</h2>\n<p>{t(what)}</p>\n'
            f'<p class="muted">{t(hint)}</p>\n')


def not_found(what: str, hint: str) -> str:
    """The body of a 404 page: what was not found and what to do (both escaped)."""
    return message("Not found", what, hint)
