"""Commands imported on first use: :class:`LazyGroup` looks a command up in a table of
``"module:attribute"`` strings (:data:`pinning.cli.COMMANDS`) and imports only that module,
so ``pin resolve`` loads ``pinning/cli/resolve.py`` and what it needs, not every command.

This is click's documented "lazily loading subcommands" pattern
(https://click.palletsprojects.com/en/stable/complex/#lazily-loading-subcommands), kept here
because click ships the pattern as documentation, not as a class.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

import click

__all__ = ["LazyGroup", "load_command"]

#: What every command gets when it is loaded (the output guard, the value completers):
#: functions of the command, set by :mod:`pinning.cli`.
Prepare = Callable[[click.Command], None]


def load_command(target: str) -> click.Command:
    """The click command at ``target`` (``"pinning.cli.resolve:resolve"``), its module
    imported. Raises ``ModuleNotFoundError`` when an optional part of pin is not installed
    (the ``pin`` group makes that exit 15), ``TypeError`` for a table entry naming no
    command (a bug).
    """
    module, _, attr = target.partition(":")
    cmd = getattr(importlib.import_module(module), attr)
    if not isinstance(cmd, click.Command):
        raise TypeError(f"{target} is not a click command")
    return cmd


class LazyGroup(click.Group):
    """A click group whose commands come from ``table`` (``"group sub"`` words ->
    ``"module:attribute"``): the entries one word below ``path`` (``""`` for ``pin``
    itself) are its commands, imported on first use and handed to ``prepare``. A loaded
    command that is itself a :class:`LazyGroup` gets the same table, one word deeper.
    """

    def __init__(self, *args: object, table: Mapping[str, str] | None = None,
                 path: str = "", prepare: Prepare | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.table: Mapping[str, str] = table or {}
        self.path = path
        self.prepare = prepare

    def _lazy(self) -> dict[str, str]:
        """The table's entries for this group's own commands: command name -> target."""
        depth = len(self.path.split()) + 1 if self.path else 1
        prefix = f"{self.path} " if self.path else ""
        return {words.split()[-1]: target for words, target in self.table.items()
                if words.startswith(prefix) and len(words.split()) == depth}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name: those added directly and those in the table, sorted."""
        return sorted({*self.commands, *self._lazy()})

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click does, but an unknown command's "Did you mean" looks at every command in
        the table, not only those loaded so far.
        """
        name = args[0] if args else ""
        if (not ctx.resilient_parsing and name and not name.startswith("-")
                and self.get_command(ctx, name) is None):
            raise click.exceptions.NoSuchCommand(name, possibilities=self.list_commands(ctx),
                                                 ctx=ctx)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, imported from its table entry the first time."""
        if cmd_name not in self.commands:
            target = self._lazy().get(cmd_name)
            if target is None:
                return None
            cmd = load_command(target)
            if isinstance(cmd, LazyGroup):
                cmd.table, cmd.prepare = self.table, self.prepare
                cmd.path = f"{self.path} {cmd_name}".strip()
            if self.prepare is not None:
                self.prepare(cmd)
            self.add_command(cmd, cmd_name)
        return self.commands.get(cmd_name)
