"""Write every ``--format json`` output as one envelope (:mod:`pinning.util.envelope`).

A command calls :func:`emit` with its JSON result instead of echoing it; the ``pin`` group
(:class:`pinning.cli.PinGroup`) prints the envelope once the command is over: ``ok`` with
exit code 0, or, when it raised a ``PinError``, exited with a code (``pin lock diff``
exit 6) or click refused a flag, ``ok`` false with that code, the error and whatever result
the command had already given. The human paragraph of an error still goes to stderr.

Only click and the standard library are imported here, so ``pin --help`` stays fast.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import click

from pinning import __version__
from pinning.util.text import json_safe

__all__ = ["FORMAT_KEY", "emit", "envelope_text", "wants_json", "write_envelope"]

FORMAT_KEY = "pin.format"
"""``ctx.meta`` key: the ``--format`` value a command was given (set by the option)."""
_RESULT = "pin.result"
_ASCII = "pin.ascii"
_TO_STDERR = "pin.envelope-stderr"
_COMMAND = "pin.command"
_ARGS = "pin.args"


def command_name(ctx: click.Context) -> str:
    """The command path of ``ctx`` without the program name: ``lock diff``, ``verify``."""
    names = []
    while ctx.parent is not None:
        names.append(ctx.command.name or ctx.info_name or "?")
        ctx = ctx.parent
    return " ".join(reversed(names))


def note_format(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of ``--format``: remember the format and the command it was given to."""
    ctx.meta[FORMAT_KEY] = value
    ctx.meta[_COMMAND] = command_name(ctx)
    return value


def emit(result: Any, *, ascii_only: bool = True, to_stderr: bool = False) -> None:
    """Record ``result`` (plain JSON data) as the current command's JSON result; the ``pin``
    group prints it in the envelope when the command ends. ``ascii_only`` escapes every
    non-ASCII character (as ``json.dumps`` does by default); otherwise only hidden ones
    (:func:`~pinning.util.text.json_safe`). ``to_stderr`` sends the envelope to standard
    error (standard output carries the data, as with ``pin lock upgrade -o -``).

    Outside the ``pin`` group (a command invoked on its own), the envelope is printed now.
    """
    ctx = click.get_current_context()
    ctx.meta[_RESULT] = result
    ctx.meta[_ASCII] = ascii_only
    ctx.meta[_TO_STDERR] = to_stderr
    ctx.meta.setdefault(_COMMAND, command_name(ctx))
    if not getattr(ctx.find_root().command, "prints_envelope", False):
        write_envelope(ctx, 0)


def remember_args(ctx: click.Context, args: Sequence[str]) -> None:
    """Keep the raw arguments of ``pin`` (for :func:`wants_json` when parsing failed)."""
    ctx.meta[_ARGS] = list(args)


def wants_json(ctx: click.Context) -> bool:
    """Whether the command was invoked with ``--format json``: as its option recorded it,
    else (click refused a flag before reaching ``--format``) as the raw arguments say.
    """
    if FORMAT_KEY in ctx.meta:
        return bool(ctx.meta[FORMAT_KEY] == "json")
    args: list[str] = ctx.meta.get(_ARGS, [])
    if "--format=json" in args:
        return True
    return any(a == "--format" and b == "json" for a, b in itertools.pairwise(args))


def _command_of(ctx: click.Context) -> str:
    """The command path given in the raw arguments (when its options were never parsed)."""
    if _COMMAND in ctx.meta:
        return str(ctx.meta[_COMMAND])
    group: Any = ctx.find_root().command
    names: list[str] = []
    for arg in ctx.meta.get(_ARGS, []):
        if arg.startswith("-") or not isinstance(group, click.Group):
            break
        cmd = group.get_command(ctx, arg)
        if cmd is None:
            break
        names.append(cmd.name or arg)
        group = cmd
    return " ".join(names)


def envelope_text(*, command: str, exit_code: int, result: Any = None,
                  error: dict[str, Any] | None = None, ascii_only: bool = True) -> str:
    """The envelope as indented JSON text (no final newline), hidden characters escaped."""
    data = {"pin": __version__, "command": command, "ok": exit_code == 0,
            "exit-code": exit_code, "result": result, "error": error}
    return json_safe(json.dumps(data, indent=2, ensure_ascii=ascii_only))


def write_envelope(ctx: click.Context, exit_code: int, *, kind: str | None = None,
                   message: str = "", hint: str = "") -> None:
    """Print the envelope of the command run under ``ctx``: its recorded result (if any),
    ``exit_code``, and an error of class ``kind`` when given.
    """
    error = None if kind is None else {"code": exit_code, "kind": kind, "message": message,
                                      "hint": hint}
    text = envelope_text(command=_command_of(ctx), exit_code=exit_code,
                         result=ctx.meta.get(_RESULT), error=error,
                         ascii_only=ctx.meta.get(_ASCII, True))
    click.echo(text, err=bool(ctx.meta.get(_TO_STDERR)))


def has_result(ctx: click.Context) -> bool:
    """Whether the command recorded a JSON result with :func:`emit`."""
    return _RESULT in ctx.meta
