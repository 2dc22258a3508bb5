"""``pin completion bash|zsh|fish``: print the script click generates; the value completers
it mentions live in :mod:`pinning.cli.completers`.
"""

from __future__ import annotations

import click

__all__ = ["SHELLS", "completion"]

SHELLS = ("bash", "zsh", "fish")
"""The shells click generates completion scripts for."""


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish), with value
    completion of --gpu, --framework and --os from the matrix.

    \b
      bash: eval "$(pin completion bash)"      (or save it under bash-completion's dir)
      zsh:  eval "$(pin completion zsh)"       (after compinit)
      fish: pin completion fish > ~/.config/fish/completions/pin.fish
    """
    from click.shell_completion import get_completion_class

    root = ctx.find_root().command
    cls = get_completion_class(shell)
    assert cls is not None  # every name of SHELLS is one click ships
    click.echo(cls(root, {}, "pin", "_PIN_COMPLETE").source())
