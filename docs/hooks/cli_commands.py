"""mkdocs hook: load every ``pin`` command before the CLI reference is rendered.

``pin`` loads its command modules lazily (:mod:`pinning.cli.lazy`): a group lists every
command (``list_commands``) but holds in ``Group.commands`` only those already used.
mkdocs-click 0.9.0 documents ``Group.commands`` when it is not empty and asks
``list_commands`` only when it is, so without this hook the reference would leave out every
command not yet loaded. Loading them all here, once per build, makes ``commands`` complete.

The reference uses mkdocs-click's plain style (each command's options as ``--help`` prints
them, defaults as click shows them). mkdocs-click writes a help text's lines as Markdown, so a
``\\b`` paragraph (lines click keeps as they are, such as "Start here:") would run together;
in this build process only, such paragraphs become fenced text blocks. The README snippets
the home page includes are read relative to mkdocs.yml's folder.
"""

from __future__ import annotations

import inspect
import os
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


def fence_verbatim_blocks(group: click.Group) -> int:
    """Turn each ``\\b`` paragraph of a help text (click's "keep these line breaks" mark:
    the examples under "Start here:") into a fenced text block, in ``group`` and every
    command under it, so Markdown keeps their lines; how many were turned.
    """
    turned = 0
    commands: list[click.Command] = [group]
    while commands:
        cmd = commands.pop()
        if cmd.help:
            paragraphs = inspect.cleandoc(cmd.help).split("\n\n")
            for i, para in enumerate(paragraphs):
                lines = para.splitlines()
                if lines and lines[0].strip() == "\b":
                    paragraphs[i] = "\n".join(["```text", *lines[1:], "```"])
                    turned += 1
            cmd.help = "\n\n".join(paragraphs)
        if isinstance(cmd, click.Group):
            commands += cmd.commands.values()
    return turned


def snippets_from_config_dir(config: Any) -> None:
    """Read ``--8<--`` snippets (README.md) relative to mkdocs.yml's folder, not the
    current one, so ``mkdocs build -f PATH/mkdocs.yml`` works from anywhere.
    """
    root = os.path.dirname(os.path.abspath(config["config_file_path"]))
    options = config["mdx_configs"].setdefault("pymdownx.snippets", {})
    options["base_path"] = [root]


def on_config(config: Any, **_: Any) -> Any:
    """Before any page is rendered: load every ``pin`` command (:func:`load_all`), fence
    the verbatim help paragraphs (:func:`fence_verbatim_blocks`) and anchor snippets at the
    config's folder (:func:`snippets_from_config_dir`).
    """
    from pinning.cli import main

    load_all(main)
    fence_verbatim_blocks(main)
    snippets_from_config_dir(config)
    return config
