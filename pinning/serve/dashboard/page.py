"""The dashboard's templates and small pieces: the Jinja2 environment (templates in
``templates/``, autoescaped), status words, times, digests and links.

Every value a template prints goes through :func:`t` (hidden characters written as
escapes, then ``html.escape`` with quotes) unless it is markup the templates made
(``Markup``: a macro's output, a page body); there is no script on any page.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from markupsafe import Markup

from pinning.util.text import printable

if TYPE_CHECKING:
    from jinja2 import Environment

__all__ = ["CSP", "STATUSES", "age", "frame", "message", "not_found", "render", "short", "t",
           "when"]

#: The Content-Security-Policy every dashboard response carries: nothing loads or runs
#: (no script at all), inline styles only, forms submit only to the dashboard itself.
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

#: The results a host's latest report can have, in the order the dashboard shows them.
STATUSES = ("match", "drift", "unknown")


def t(text: object) -> str:
    """``text`` (``None``: empty) as HTML text or attribute value: hidden characters
    (controls, bidi overrides; :func:`~pinning.util.text.printable`) written as escapes,
    then ``&``, ``<``, ``>``, ``"`` and ``'`` escaped.
    """
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    return escape(printable(value, newlines=False), quote=True)


def short(content_hash: str | None) -> str:
    """The short digest of a lock (12 hex digits after ``sha256:``, as pin's Slurm feature
    ``pin_<d12>`` spells it); empty for ``None``.
    """
    return (content_hash or "").removeprefix("sha256:")[:12]


def when(value: dt.datetime | None) -> str:
    """A UTC time as ``YYYY-MM-DD HH:MM:SSZ`` (empty for ``None``)."""
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


def _query(params: Mapping[str, object]) -> str:
    """``?a=1&b=2`` of the non-empty ``params``, or ``?``."""
    return "?" + urlencode({k: str(v) for k, v in params.items() if v not in (None, "")})


@functools.lru_cache(maxsize=4096)
def _cell(value: str) -> Markup:
    """:func:`t` of ``value`` as markup, cached: a fleet page repeats most values."""
    return Markup(t(value))


def _finalize(value: object) -> object:
    """What a template prints for ``value``: markup as is, anything else through :func:`t`."""
    if isinstance(value, Markup):
        return value
    return _cell("" if value is None else value if isinstance(value, str) else str(value))


@functools.lru_cache(maxsize=64)
def _badge(status: str) -> Markup:
    """The ``badge`` macro of ``macros.html`` for ``status``, rendered once per word."""
    macros = _env().get_template("macros.html").module
    return Markup(macros.badge(status))  # type: ignore[attr-defined]


@functools.cache
def _env() -> Environment:
    """The dashboard's Jinja2 environment (built once, on first use: no work at import)."""
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("pinning.serve.dashboard"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                      finalize=_finalize)
    env.filters.update(
        n="{:,}".format, short=short, when=when, age=age, query=_query,
        host_url=lambda name: "/hosts/" + quote(name, safe=""),
        lock_url=lambda h: "/locks/" + quote(h, safe=":"))
    env.globals.update(STATUSES=STATUSES, badge=_badge)
    return env


def render(template: str, **context: Any) -> str:
    """The text of dashboard template ``template`` (``templates/<name>``) with ``context``;
    values are escaped (:func:`t`) as they are printed.
    """
    return _env().get_template(template).render(**context)


def frame(title: str, body: str, *, version: str = "") -> str:
    """A whole page: ``title`` (escaped here) and ``body`` (markup, escaped by its maker),
    with the navigation and inline CSS; no script, no external URL.
    """
    return render("frame.html", title=title, body=Markup(body), version=version)


def message(heading: str, what: str, hint: str) -> str:
    """The body of an error page: a heading, what happened and what to do (all escaped)."""
    return render("message.html", heading=heading, what=what, hint=hint)


def not_found(what: str, hint: str) -> str:
    """The body of a 404 page: what was not found and what to do (both escaped)."""
    return message("Not found", what, hint)
