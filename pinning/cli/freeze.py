"""``pin freeze``: write a host's exact values into a lock (:func:`pinning.verify.freeze.freeze`)
and say what was frozen, recorded as a deviation, or left unfrozen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.hostread import host_facts
from pinning.cli.options import (
    amend_output_option,
    amends,
    cli_path,
    format_option,
    host_options,
    lock_target_option,
    one_stdin,
)
from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Lockfile

__all__ = ["freeze"]


@click.command()
@amends("lock_path")
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@host_options
@click.option("--force", is_flag=True,
              help="Freeze even when the host is outside what the lock validated; the "
                   "deviations are recorded in the lock.")
@amend_output_option
@lock_target_option
@format_option
def freeze(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], force: bool,
           output: str | None, target: str | None, fmt: str) -> None:
    """Write the host's exact values into LOCK: firmware, driver, OS, kernel, ROCm,
    framework builds, every Python distribution and the lock's model files (size, sha256),
    marked as frozen from that host with the snapshot's hash.

    Exit 6 (nothing written) when the host is outside what the lock's matrix validated,
    unless --force; exit 5 (nothing written) when LOCK changed while pin was probing
    (another pin command wrote it): re-run. LOCK '-' reads standard input and writes the
    frozen lock to standard output (unless -o); --host '-' reads the snapshot from it.

    -o may not name an input (the snapshot, a recording, an overlay: exit 2, nothing
    written); -o naming LOCK itself (links followed) is the same in-place update as no -o.

    A multi-target lock (lock-version 2) takes the host's values into one target: --target
    NAME (exit 2 naming the targets when it has several and none is named); the other
    targets are written back as they were, and -o (or '-') gets the whole file.
    """
    from pinning.lockfile.io import read_lock_at, write_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.freeze import freeze as do_freeze

    one_stdin(LOCK=lock_path, **{"--host": host_file})
    dest = cli_path(output or lock_path)
    to_stdout = str(dest) == "-"
    if to_stdout and fmt == "json":
        raise UsageError("The frozen lock goes to standard output ('-') and so would "
                         "--format json; choose one.")
    read = read_lock_at(cli_path(lock_path), target)
    lock = read.lock
    matrix = load_matrix(overlays)
    facts, label = host_facts(host_file, root, replay, site_packages, matrix, lock.model,
                               lock_path)
    frozen, found, unfrozen = do_freeze(lock, facts, matrix, host_label=label, force=force)
    # Replacing the lock read above: only if nobody wrote it meanwhile (exit 5 otherwise).
    in_place = not to_stdout and (
        output is None or dest.resolve() == cli_path(lock_path).resolve())
    write_lock(frozen, dest, if_unchanged=read.raw if in_place else None, into=read)
    _freeze_summary(frozen, found, unfrozen, label=label, dest=dest, fmt=fmt,
                    target=read.target)


def _freeze_summary(frozen: Lockfile, found: list[Finding], unfrozen: list[str], *, label: str,
                    dest: Path, fmt: str, target: str | None) -> None:
    """What ``pin freeze`` did: JSON (with ``target`` for a multi-target lock's target), or
    text lines (on stderr when the lock went to standard output).
    """
    from pinning.lockfile.io import lock_json

    err = str(dest) == "-"
    if fmt == "json":
        emit({"lockfile": str(dest), "lock": lock_json(frozen),
              "deviations": [f.model_dump(mode="json") for f in found],
              "not-frozen": unfrozen, **({"target": target} if target else {})})
        return
    for f in found:
        click.echo(printable(f"Recorded deviation (--force): {f.fact}: {f.message}",
                             newlines=False), err=err)
    if found:
        click.echo("pin verify will keep reporting these facts as outside what the matrix "
                   "validated.", err=err)
    for item in unfrozen:
        click.echo(printable(f"Not frozen: {item}", newlines=False), err=err)
    if frozen.model is not None:
        from pinning.cli.modelfiles import model_line

        click.echo(printable(model_line(frozen.model), newlines=False), err=err)
    assert frozen.frozen is not None
    where = "standard output" if err else str(dest)
    if target:
        where += f" [targets.{target}]"
    click.echo(printable(f"Froze {label} into {where} (snapshot {frozen.frozen.snapshot}).",
                         newlines=False), err=err)
