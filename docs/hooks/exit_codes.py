"""mkdocs hook: the exit-code table of the docs, generated at build time from
:func:`pinning.errors.exit_codes` and the error classes, so it cannot drift from the code.

A page holds ``<!-- exit-codes -->`` where the table goes (docs/concepts/exit-codes.md). A
hook of a few lines rather than a macro plugin, so the site needs no further dependency.
"""

from __future__ import annotations

import re
from typing import Any

from pinning.errors import ALL_ERRORS, PinError, exit_codes

MARKER = "<!-- exit-codes -->"
_ROLE = re.compile(r":(?:class|func|data|mod):`~?([^`]+)`")


def _prose(doc: str | None) -> str:
    """A class docstring as one Markdown table cell: roles and ``literals`` as code, one line."""
    text = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1]}`", doc or "")
    text = text.replace("``", "`")
    return " ".join(text.split()).replace("|", "\\|")


def table() -> str:
    """The Markdown table: one row per exit code (0 and every :data:`ALL_ERRORS` code), with
    its summary, the error classes that carry it, the first class's docstring and the hint it
    prints unless the error gives its own.
    """
    classes: dict[int, list[type[PinError]]] = {}
    for cls in ALL_ERRORS:
        classes.setdefault(cls.exit_code, []).append(cls)
    rows = ["| code | summary | error | meaning | usual hint |",
            "| --- | --- | --- | --- | --- |"]
    for code, summary in exit_codes():
        carried = classes.get(code, [])
        names = ", ".join(f"`{cls.__name__}`" for cls in carried) or "-"
        meaning = _prose(carried[0].__doc__) if carried else "success"
        hint = _prose(carried[0].default_hint) if carried else ""
        rows.append(f"| {code} | {summary} | {names} | {meaning} | {hint or '-'} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace :data:`MARKER` in a page with :func:`table`; other pages pass unchanged."""
    return markdown.replace(MARKER, table()) if MARKER in markdown else markdown
