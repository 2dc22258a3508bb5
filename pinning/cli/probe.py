"""``pin probe``: read a host's stack (live, a recorded ``--root``, or a snapshot) and print or
write the snapshot; the host is read by :mod:`pinning.cli.hostread`.
"""

from __future__ import annotations

import click

from pinning.cli.envelope import emit
from pinning.cli.hostread import host_facts
from pinning.cli.options import cli_path, format_option, host_options, one_stdin, output_path
from pinning.cli.render_host import probe_text
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["probe"]


@click.command()
@host_options
@click.option("--lock", "lock_path", metavar="LOCK", type=click.Path(),
              help="Also read the lock's model: its revision in the Hugging Face cache and "
                   "every file, hashed ('-': standard input).")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the snapshot (JSON, schemas/host.schema.json) to FILE ('-': standard "
                   "output, the report then goes to stderr; exit 2 when it cannot be "
                   "written).")
@format_option
def probe(host_file: str | None, root: str | None, replay: str | None,
          site_packages: tuple[str, ...], overlays: tuple[str, ...], lock_path: str | None,
          output: str | None, fmt: str) -> None:
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
    from pinning.lockfile.io import read_lock
    from pinning.matrix.load import load_matrix
    from pinning.probe.snapshot import write_snapshot

    one_stdin(**{"--host": host_file, "--lock": lock_path})
    if output == "-" and fmt == "json":
        raise UsageError("The snapshot goes to standard output ('-') and so would --format "
                         "json; choose one.",
                         hint="The envelope's result is the snapshot: use --format json alone.")
    matrix = load_matrix(overlays)
    model = read_lock(cli_path(lock_path)).model if lock_path else None
    facts, _label = host_facts(host_file, root, replay, site_packages, matrix, model,
                                lock_path)
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
