"""``pin audit``: scan Python sources for device strings ROCm builds of PyTorch reject.

Registered on the main group by :func:`register`; the scanner is imported inside the command
so ``pin --help`` stays fast.
"""

from __future__ import annotations

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option
from pinning.util.text import printable

__all__ = ["audit", "register"]


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True,
                type=click.Path(exists=True))
@format_option
def audit(paths: tuple[str, ...], fmt: str) -> None:
    """Scan Python sources for device strings ROCm builds of PyTorch reject:
    torch.device("rocm") / "hip", .to("hip"), device="rocm:0". ROCm builds keep "cuda".

    Exit 0 when none is found, 10 when some are (guard rule torch-device-rocm). Files that
    cannot be scanned are listed, not fatal.
    """
    from pathlib import Path

    from pinning.audit.device_strings import SOURCE, audit_paths
    from pinning.errors import GuardRefused

    result = audit_paths([Path(p) for p in paths])
    hits, unparsed = result.hits, result.unparsed
    if fmt == "json":
        emit({"hits": [h.__dict__ for h in hits], "unparsed": unparsed, "source": SOURCE})
    else:
        for h in hits:
            click.echo(printable(f"{h.path}:{h.line}:{h.column}: {h.text}: ROCm builds use "
                                 '"cuda"', newlines=False))
        for line in unparsed:
            click.echo(printable(line, newlines=False))
        if not hits:
            click.echo("No rocm/hip device strings found.")
    if hits:
        raise GuardRefused(f"{len(hits)} device string(s) ROCm builds of PyTorch reject.",
                           hint=f"Use torch.device(\"cuda\") on ROCm too ({SOURCE}).")


def register(group: click.Group) -> None:
    """Add ``pin audit`` to the ``pin`` group."""
    group.add_command(audit)
