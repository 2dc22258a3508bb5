"""The streamed output of ``pin fleet verify``: each host written as it is verified, the
summary at the end, so memory stays flat however many hosts come (issue 33 §4).

Text: a line per drifting or unreadable host (every host with ``-v``) as it comes, then the
summary. The host column is as wide as the longest host name known when the line is
written: for a folder every name is known before the first host (the file names), so the
column is that of the whole fleet; for JSON Lines (``FILE:LINE``) it is wide enough for six
digits of line number and widens, never narrows, past them.

JSON: the envelope of every ``--format json`` output, written in pieces: ``pin``,
``command`` and the report's head at the first host, then one host per line in the
``hosts`` array, then the ``summary``, and ``ok``, ``exit-code`` and ``error`` last (the
exit code is known only then; this key order is the one difference from other commands'
envelopes, the same value once parsed). Each piece is ``json.dumps`` text of the value
the whole report would hold (kept here rather than a streaming JSON library: the pieces
are a few lines of standard-library JSON). When the run fails after the first host (the
input cannot be read further, a bug), the document is still closed: the hosts so far, their
summary, ``ok`` false and the error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from pinning import __version__
from pinning.cli.envelope import FORMAT_KEY
from pinning.util.text import json_safe, printable

if TYPE_CHECKING:
    from pinning.errors import PinError
    from pinning.fleet.models import FleetHost, FleetSummary

#: Where streamed text goes: ``sys.stdout.write`` as it was before progress started.
Write = Callable[[str], object]

#: Room for line numbers in the host column of JSON Lines input (``FILE:LINE``).
LINE_DIGITS = 6

_MARK = "\x00hosts\x00"


class TextOut:
    """Streamed text output on ``write``: host lines (``verbose``: matching hosts too) in
    a column ``width`` characters wide at least, then :meth:`end`'s summary. With a
    multi-target lock's ``targets``, each line names the host's target after its result
    (``-`` for a host no target matches).
    """

    def __init__(self, write: Write, width: int, *, verbose: bool = False,
                 targets: list[str] | None = None) -> None:
        self.write, self.width, self.verbose = write, width, verbose
        self.target_width = max(map(len, targets), default=0) if targets else None

    def host(self, h: FleetHost) -> None:
        """Write ``h``'s line (nothing for a matching host unless verbose)."""
        if h.result == "match" and not self.verbose:
            return
        self.width = max(self.width, len(h.name))
        target = ("" if self.target_width is None
                  else f"{h.target or '-':<{self.target_width}}  ")
        line = (f"{h.name:<{self.width}}  {h.result.upper():<10}  {target}"
                f"{h.reason or ''}").rstrip()
        self.write(printable(line, newlines=False) + "\n")

    def end(self, head: dict[str, Any], summary: FleetSummary, error: PinError | None,
            *, complete: bool = True) -> None:
        """Write the summary of the fleet ``head`` (lock, lock-hash, strict) when the run
        is ``complete`` (a run cut short by an error ends with the error on stderr).
        """
        if complete:
            self.write("\n".join(summary_lines(head, summary)) + "\n")


def summary_lines(head: dict[str, Any], s: FleetSummary) -> list[str]:
    """The text summary: the counts, then the most frequent facts and reasons (five each)."""
    targets = (f", targets {', '.join(head['targets'])}" if head.get("targets") else "")
    lines = [f"pin fleet verify {printable(head['lock'], newlines=False)} "
             f"({head['lock-hash'][:19]}{printable(targets, newlines=False)}): "
             f"{s.total} host(s): {s.match} match, "
             f"{s.drift} drift, {s.unreadable} unreadable"
             + (" (strict)" if head["strict"] else "") + "."]
    if s.top_facts:
        lines.append("Top drifting facts: " + ", ".join(
            f"{printable(r.reason, newlines=False)} ({r.hosts})" for r in s.top_facts[:5]))
        lines.append("Top reasons:")
        lines += [f"  {r.hosts:>6}  {printable(r.reason, newlines=False)}"
                  for r in s.top_reasons[:5]]
    return lines


class JsonOut:
    """The streamed JSON envelope on ``write`` for the command under ``ctx``: the report
    ``head`` (``fleet-version``, ``lock``, ``lock-hash``, ``strict``) at the first host,
    each host, then :meth:`end`. From the first host on, the ``pin`` group no longer
    prints an envelope of its own (this one is already under way).
    """

    def __init__(self, write: Write, ctx: click.Context, command: str,
                 head: dict[str, Any]) -> None:
        self.write, self.ctx, self.command, self.head = write, ctx, command, head
        self.started = False

    def _text(self, **tail: Any) -> str:
        """The whole envelope with the hosts array marked, as indented JSON."""
        data = {"pin": __version__, "command": self.command,
                "result": {**self.head, "hosts": [_MARK], **tail.pop("result", {})}, **tail}
        return json_safe(json.dumps(data, indent=2, ensure_ascii=False))

    def host(self, h: FleetHost) -> None:
        """Write ``h``'s entry (after the envelope's head, for the first host)."""
        if not self.started:
            self.ctx.meta[FORMAT_KEY] = "json-streamed"
            text = self._text()
            self.write(text[:text.index(json.dumps(_MARK))])
            self.started = True
        else:
            self.write(",\n      ")
        entry = h.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.write(json_safe(json.dumps(entry, ensure_ascii=False)))

    def end(self, head: dict[str, Any], summary: FleetSummary, error: PinError | None,
            *, complete: bool = True) -> None:
        """Close the document: the ``summary``, then ``ok``, ``exit-code`` and the
        ``error`` the run ends with (``None``: exit 0). Nothing when no host was written
        (the ``pin`` group then prints the whole envelope).
        """
        if not self.started:
            return
        code = error.exit_code if error is not None else 0
        err = None if error is None else {"code": code, "kind": type(error).__name__,
                                          "message": error.message, "hint": error.hint}
        text = self._text(result={"summary": summary.model_dump(mode="json", by_alias=True)},
                          ok=code == 0, **{"exit-code": code}, error=err)
        self.write(text[text.index(json.dumps(_MARK)) + len(json.dumps(_MARK)):] + "\n")
