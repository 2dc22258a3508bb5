"""``pin config show``: the effective values of the commands the project file sets, and
where each came from (a flag, ``pin.toml:LINE``, an environment variable, or the option's
default).

The values are those click computes: the command's own options are parsed from the words
given (``pin config show resolve --gpu h200``), with the project's ``default_map``
(:mod:`pinning.cli.project`), so what is shown is what the command would use.
"""

from __future__ import annotations

from typing import Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option
from pinning.cli.project import TARGETED, WIRED, loaded
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["config", "config_show"]


@click.group()
def config() -> None:
    """The project file's effective values (pin.toml, or [tool.pin] in pyproject.toml)."""


def _source(sub: click.Context, name: str, sources: dict[str, str]) -> str:
    """``flag``, ``env``, ``pin.toml:LINE`` or ``default`` for parameter ``name``."""
    from click.core import ParameterSource

    found = sub.get_parameter_source(name)
    if found is ParameterSource.COMMANDLINE:
        return "flag"
    if found is ParameterSource.ENVIRONMENT:
        return "env"
    if found is ParameterSource.DEFAULT_MAP:
        return sources.get(name, "project file")
    return "default"


def _plain(value: Any) -> Any:
    """``value`` as JSON data (tuples as lists)."""
    return list(value) if isinstance(value, tuple) else value


def _effective(ctx: click.Context, name: str, args: list[str]) -> dict[str, Any]:
    """Parse ``pin NAME ARGS`` as the command would (nothing runs) and return its wired
    parameters and any given by flag: ``{command, args, values: [{option, value, source}]}``.
    Raises ``UsageError`` (exit 2) for an unknown command or a project error.
    """
    root = ctx.find_root()
    group = root.command
    cmd = group.get_command(root, name) if isinstance(group, click.Group) else None
    if cmd is None or name not in WIRED:
        raise UsageError(f"pin config show {printable(name, newlines=False)}: the project "
                         f"file sets values for: {', '.join(sorted(WIRED))}.")
    ctx.meta.pop(f"pin.sources.{name}", None)
    ctx.meta.pop("pin.project-error", None)
    saved = dict(ctx.meta)  # the command's own --format must not replace config show's
    _check_args(cmd, name, list(args), root)
    sub = cmd.make_context(name, list(args), parent=root, resilient_parsing=True)
    ctx.meta.update(saved)
    error = ctx.meta.get("pin.project-error")
    if isinstance(error, UsageError):
        raise error
    sources: dict[str, str] = ctx.meta.get(f"pin.sources.{name}", {})
    rows = []
    for param in cmd.params:
        if param.name is None or param.name == "project_target" or param.name not in sub.params:
            continue
        source = _source(sub, param.name, sources)
        if param.name in WIRED[name] or source == "flag":
            rows.append({"option": max(param.opts, key=len), "value": _plain(sub.params[
                param.name]), "source": source})
    return {"command": name, "args": list(args), "values": rows}


def _check_args(cmd: click.Command, name: str, args: list[str], root: click.Context) -> None:
    """Parse ``pin NAME ARGS`` strictly, as the command itself would: a flag it does not
    take or a value it refuses raises ``UsageError`` (exit 2) with click's words; an
    argument left out is not an error here (config show shows what is set).
    """
    try:
        cmd.make_context(name, list(args), parent=root)
    except click.MissingParameter:
        return
    except click.ClickException as exc:
        shown = printable(" ".join(["pin", name, *args]), newlines=False)
        raise UsageError(f"{shown}: {exc.format_message()}",
                         hint=f"See `pin {name} --help` for its options.") from exc


def _runs(ctx: click.Context, words: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """The command lines to show: the one given, else every wired command (a target-scoped
    one once per target of the project).
    """
    if words:
        return [(words[0], list(words[1:]))]
    project = loaded(ctx)
    targets = sorted(project.model.targets) if project is not None else []
    runs: list[tuple[str, list[str]]] = []
    for name in sorted(WIRED):
        if name in TARGETED and len(targets) > 1:
            runs += [(name, ["--target", t]) for t in targets]
        else:
            runs.append((name, []))
    return runs


def _text(project: str | None, shown: list[dict[str, Any]]) -> str:
    """The text form: the file, then per command line its options, values and sources."""
    out = [f"Project file: {printable(project, newlines=False)}" if project else
           "Project file: none found from this folder (pin init writes one)"]
    for item in shown:
        out.append(printable(" ".join(["pin", item["command"], *item["args"]]),
                             newlines=False))
        width = max((len(r["option"]) for r in item["values"]), default=0)
        for row in item["values"]:
            value = row["value"]
            text = ("-" if value in (None, [], False) else
                    " ".join(map(str, value)) if isinstance(value, list) else str(value))
            out.append(printable(f"  {row['option']:<{width}}  {text}  ({row['source']})",
                                 newlines=False))
    return "\n".join(out)


@config.command("show")
@format_option
@click.argument("words", metavar="[COMMAND [-- ARGS...]]", nargs=-1, type=click.UNPROCESSED)
def config_show(words: tuple[str, ...], fmt: str) -> None:
    """Print the effective values of the commands the project file sets and where each
    came from: flag, env, pin.toml:LINE or default. With COMMAND, for that command, and its
    own flags after `--` as you would give them (`pin config show resolve -- --target
    candidate --gpu h200`); without, for every such command (each target of a
    target-scoped one). Exit 2 for an invalid project file, an unknown COMMAND or --target.
    """
    ctx = click.get_current_context()
    project = loaded(ctx)
    shown = [_effective(ctx, name, args) for name, args in _runs(ctx, words)]
    path = str(project.path) if project is not None else None
    if fmt == "json":
        emit({"project": path, "commands": shown})
        return
    click.echo(_text(path, shown))
