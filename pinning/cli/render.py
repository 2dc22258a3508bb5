"""How ``pin`` draws text: the terminal :class:`Style` (``--color``, ``PIN_COLOR``,
``NO_COLOR``), tables and titled sections (rich on a terminal, plain aligned text
elsewhere), and status words in colour (:func:`paint`). The renderers of locks are in
:mod:`~pinning.cli.render_lock`, of hosts, verify and doctor reports in
:mod:`~pinning.cli.render_host`.

Pure functions returning strings; nothing here prints. rich is imported only when a table is
drawn for a terminal, so ``pin --help`` and piped output never load it; colour words are
plain ANSI SGR codes, which need no library.

Every value shown comes from a lock, snapshot, overlay or dump someone else may have written:
each rendered line goes through :func:`~pinning.util.text.printable` with line breaks
escaped, so a value can neither send the terminal a control sequence (erase lines, move the
cursor) nor start a line of its own that reads like pin's.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from pinning.util.text import printable

__all__ = [
    "LIST_LIMIT",
    "Section",
    "Style",
    "lines_text",
    "paint",
    "paint_words",
    "sections_text",
    "status_colour",
    "table_text",
    "terminal_style",
]

#: A section of ``pin lock show``: a title and its ``(name, value)`` rows.
Section = tuple[str, list[tuple[str, str]]]

LIST_LIMIT = 8
"""How many items of a list (packages, wheels, environment, notes) ``pin lock show`` prints
without ``--full``."""


# ------------------------------------------------------------------------------ terminal
#: The environment variable ``pin --color`` sets: ``auto``, ``always`` or ``never``.
COLOR_ENV = "PIN_COLOR"


@dataclass(frozen=True)
class Style:
    """How to draw output: ``rich`` tables (a terminal) or plain aligned text (a pipe or a
    file), ``color`` or not (``NO_COLOR`` set, https://no-color.org), ``width`` in columns.
    """

    rich: bool = False
    color: bool = False
    width: int = 100


def terminal_style(stream: TextIO | None = None) -> Style:
    """The :class:`Style` for ``stream`` (default standard output), by ``PIN_COLOR``
    (``pin --color``): ``auto`` (the default) draws rich tables only on a terminal whose
    ``TERM`` is not ``dumb``, in colour only there and when ``NO_COLOR`` is unset or empty;
    ``always`` draws them in colour anywhere (a flag wins over ``NO_COLOR``, as
    https://no-color.org asks); ``never`` draws no colour, tables still on a terminal.
    """
    import shutil

    out = stream if stream is not None else sys.stdout
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    tty = tty and os.environ.get("TERM") != "dumb"
    mode = os.environ.get(COLOR_ENV, "auto")
    width = shutil.get_terminal_size((100, 24)).columns
    if mode == "always":
        return Style(rich=True, color=True, width=width)
    return Style(rich=tty, color=mode != "never" and tty and not os.environ.get("NO_COLOR"),
                 width=width)


def _cell(text: str) -> str:
    return printable(text, newlines=False)


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
               title: str | None = None, style: Style | None = None) -> str:
    """A table: plain aligned columns under a header line (no trailing blanks), or, with
    ``style.rich``, a rich table with ANSI styling (colour unless ``style.color`` is false).
    Every cell and the title are escaped first (:func:`printable`), and never read as rich
    markup.
    """
    cells = [[_cell(c) for c in row] for row in rows]
    title = _cell(title) if title else title
    if style is not None and style.rich:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(title) if title else None, title_justify="left",
                      box=box.SIMPLE_HEAD, header_style="bold cyan", title_style="bold")
        for h in headers:
            table.add_column(h)
        for row in cells:
            table.add_row(*(Text(c) for c in row))
        return _rich_text(table, style)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    out = [f"{title}:"] if title else []
    for row in [list(headers), *cells]:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def _rich_text(renderable: Any, style: Style) -> str:
    """Render a rich object to a string of ANSI text ``style.width`` columns wide."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    console = Console(file=buf, force_terminal=True, no_color=not style.color,
                      width=style.width, highlight=False, emoji=False, markup=False,
                      color_system="standard" if style.color else None)
    console.print(renderable)
    return buf.getvalue().rstrip("\n")


def sections_text(sections: Sequence[Section], *, style: Style | None = None) -> str:
    """Titled sections of ``name  value`` rows: plain (``Title:`` then indented, aligned
    rows) or, with ``style.rich``, one rich table per section with the names styled.
    """
    if style is not None and style.rich:
        from rich import box
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        tables = []
        for title, rows in sections:
            table = Table(title=title, title_justify="left", box=box.SIMPLE, show_header=False,
                          title_style="bold")
            table.add_column(style="cyan", no_wrap=True)
            table.add_column()
            for k, v in rows:
                table.add_row(Text(_cell(k)), Text(_cell(v)))
            tables.append(table)
        return _rich_text(Group(*tables), style)
    out: list[str] = []
    for title, rows in sections:
        out.append(f"{title}:")
        width = max((len(_cell(k)) for k, _ in rows), default=0)
        out += [f"  {_cell(k).ljust(width)}  {_cell(v)}".rstrip() for k, v in rows]
    return "\n".join(out)



def lines_text(lines: Iterable[str]) -> str:
    """``lines`` joined by line feeds, each escaped as one line (:func:`printable`)."""
    return "\n".join(printable(line, newlines=False) for line in lines)


# ------------------------------------------------------------------------------- colour
_SGR = {"red": "31", "green": "32", "yellow": "33"}

#: The colour of a status word: red for what is wrong, green for what is right, yellow for
#: what is not known (matched case-insensitively).
STATUS_COLOURS: dict[str, str] = {
    **dict.fromkeys(("drift", "mismatch", "error", "blocked", "problem", "problems", "missing",
                     "changed", "refused", "fails", "failed", "outside-validated", "port",
                     "✗"), "red"),
    **dict.fromkeys(("match", "ok", "ready", "passes", "current", "✓"), "green"),
    **dict.fromkeys(("unknown", "not-probed", "warning", "swap", "no data", "!"), "yellow"),
}


def status_colour(word: str) -> str | None:
    """The colour name (``red``, ``green``, ``yellow``) of a status ``word``, else ``None``."""
    return STATUS_COLOURS.get(word.strip().lower())


def paint(text: str, colour: str | None, style: Style | None) -> str:
    """``text`` in ``colour`` (``red``, ``green``, ``yellow``) when ``style.color`` is on,
    else ``text`` unchanged (byte for byte).
    """
    if style is None or not style.color or colour not in _SGR:
        return text
    return f"\x1b[{_SGR[colour]}m{text}\x1b[0m"


def paint_words(text: str, words: Iterable[str], style: Style | None) -> str:
    """``text`` with each whole occurrence of the status ``words`` painted in its
    :func:`status_colour`; ``text`` unchanged when colour is off.
    """
    if style is None or not style.color:
        return text
    alts = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    if not alts:
        return text
    return re.sub(rf"(?<![\w-])({alts})(?![\w-])",
                  lambda m: paint(m.group(1), status_colour(m.group(1)), style), text)
