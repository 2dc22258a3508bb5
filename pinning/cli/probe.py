"""``pin probe``: read a host's stack (live, a recorded ``--root``, or a snapshot) and print or
write the snapshot; the host is read by :mod:`pinning.cli.hostread`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.hostread import host_facts
from pinning.cli.options import (
    cli_path,
    format_option,
    host_options,
    lock_target_option,
    one_stdin,
    output_path,
)
from pinning.cli.render_host import probe_text
from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts

__all__ = ["probe"]


@click.command()
@host_options
@click.option("--lock", "lock_path", metavar="LOCK", type=click.Path(),
              help="Also read the lock's model: its revision in the Hugging Face cache and "
                   "every file, hashed ('-': standard input). A multi-target lock: the "
                   "model every target shares, else --target's, else that of the target "
                   "whose GPU this host shows.")
@lock_target_option
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the snapshot (JSON, schemas/host.schema.json) to FILE ('-': standard "
                   "output, the report then goes to stderr; exit 2 when it cannot be "
                   "written).")
@format_option
def probe(host_file: str | None, root: str | None, replay: str | None,
          site_packages: tuple[str, ...], overlays: tuple[str, ...], lock_path: str | None,
          target: str | None, output: str | None, fmt: str) -> None:
    """Read this host's stack: OS, kernel, glibc, GPUs (gfx target / compute capability,
    VBIOS, firmware, PLDM bundle), amdgpu or NVIDIA driver, ROCm / CUDA, the Python
    environment (torch build, every Triton), behaviour-changing variables, container, model.

    A fact that cannot be read is reported as not-probed with the reason; a missing tool
    never fails the probe. Exit 7 only when the host cannot be read at all.

    \b
    Examples:
      pin probe -o host.json
      pin probe --root tests/data/hosts/mi300x-rocm7.1/root \\
                --replay tests/data/hosts/mi300x-rocm7.1/commands.toml
    """
    from pinning.matrix.load import load_matrix
    from pinning.probe.snapshot import write_snapshot

    one_stdin(**{"--host": host_file, "--lock": lock_path})
    if output == "-" and fmt == "json":
        raise UsageError("The snapshot goes to standard output ('-') and so would --format "
                         "json; choose one.",
                         hint="The envelope's result is the snapshot: use --format json alone.")
    if target is not None and lock_path is None:
        raise UsageError("--target chooses a target of --lock LOCK; give --lock too.")
    matrix = load_matrix(overlays)
    facts = _probe(host_file, root, replay, site_packages, matrix, lock_path, target)
    to_stdout = output == "-"
    if output:
        write_snapshot(facts, cli_path(output))
    if fmt == "json":
        emit(facts.model_dump(mode="json", by_alias=True, exclude_none=True), ascii_only=False)
        return
    click.echo(probe_text(facts), err=to_stdout)
    if output:
        from pinning.probe.models import snapshot_hash

        where = "the snapshot to standard output" if to_stdout else output
        click.echo(printable(f"Wrote {where} ({snapshot_hash(facts)})", newlines=False),
                   err=to_stdout)


def _probe(host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], matrix: Matrix, lock_path: str | None,
           target: str | None) -> HostFacts:
    """The host's facts, with the model of ``--lock`` (a multi-target lock: ``--target``'s,
    else the one every target shares, else that of the target whose GPU the host shows,
    the host then read again with it). Raises ``UsageError`` (exit 2) when the targets'
    models differ and no target, or several, match this host's GPUs.
    """
    if lock_path is None:
        return host_facts(host_file, root, replay, site_packages, matrix, None)[0]
    from pinning.errors import PinError
    from pinning.verify.target import read_host_lock

    held = read_host_lock(cli_path(lock_path), target, label=lock_path)
    facts, _ = host_facts(host_file, root, replay, site_packages, matrix, held.probe_model(),
                          lock_path)
    if host_file or not held.models_differ:
        return facts
    try:
        choice = held.choose(facts, matrix)
    except PinError as err:
        raise UsageError(f"{err.message} The targets lock different models: name the one "
                         "to read with --target NAME.") from err
    if not held.needs_model(choice):
        return facts
    return host_facts(None, root, replay, site_packages, matrix, choice.lock.model,
                      lock_path)[0]
