"""mkdocs hook: load every ``pin`` command before the CLI reference is rendered.

``pin`` loads its command modules lazily (:mod:`pinning.cli.lazy`): a group lists every
command (``list_commands``) but holds in ``Group.commands`` only those already used.
mkdocs-click 0.9.0 documents ``Group.commands`` when it is not empty and asks
``list_commands`` only when it is, so without this hook the reference would leave out every
command not yet loaded. Loading them all here, once per build, makes ``commands`` complete.

mkdocs-click 0.9.0 also prints a parameter's default as it finds it, and click 8.3 and later
mark "no default" with a sentinel (``click.core.UNSET``), which would show as
``Sentinel.UNSET``; in this build process only, such defaults are set to ``None``, which
mkdocs-click shows as "None" (or "required" for a required option).
"""

from __future__ import annotations

from typing import Any

import click


def load_all(group: click.Group) -> list[str]:
    """Load every command under ``group``, depth first, so each group's ``commands`` holds
    all of them; the command paths loaded (``"lock model"``), sorted. A command that cannot
    be loaded raises what its import raised (``ModuleNotFoundError`` for a missing extra).
    """
    ctx = click.Context(group, info_name="pin")
    paths = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            raise LookupError(f"pin lists the command {name!r} but cannot load it")
        paths.append(name)
        if isinstance(cmd, click.Group):
            paths += [f"{name} {sub}" for sub in load_all(cmd)]
    return sorted(paths)


def unset_defaults_to_none(group: click.Group) -> int:
    """Set every parameter default that is click's "no default" sentinel (it prints as
    ``Sentinel.UNSET``; click keeps it in a private module) to ``None``, in ``group`` and
    every command under it (already loaded), their ``--help`` options included; how many
    were set.
    """
    changed = 0
    commands: list[click.Command] = [group]
    while commands:
        cmd = commands.pop()
        for param in cmd.get_params(click.Context(cmd)):  # cached: the ones mkdocs-click gets
            if str(param.default) == "Sentinel.UNSET":
                param.default = None
                changed += 1
        if isinstance(cmd, click.Group):
            commands += cmd.commands.values()
    return changed


def on_config(config: Any, **_: Any) -> Any:
    """Load every ``pin`` command (:func:`load_all`) before any page is rendered, and give
    mkdocs-click defaults it can print (:func:`unset_defaults_to_none`).
    """
    from pinning.cli import main

    load_all(main)
    unset_defaults_to_none(main)
    return config
