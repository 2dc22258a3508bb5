"""Host commands of the CLI: ``pin probe``, ``pin freeze``, ``pin verify``.

Registered on the main group by :func:`register`; heavy imports stay inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.options import format_option, host_options, path_given
from pinning.cli.render import probe_text, verify_text
from pinning.errors import DriftError, UsageError
from pinning.util.text import json_safe, printable

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts

__all__ = ["freeze", "probe", "register", "verify"]


def _probe(root: str | None, replay: str | None, site_packages: tuple[str, ...],
           matrix: Matrix, model_id: str | None) -> HostFacts:
    """Probe this machine live, or a recorded ``--root`` tree (tools answered by ``--replay``)."""
    from pinning.probe.host import probe_host
    from pinning.util.proc import NoRunner, ReplayRunner, Runner, SystemRunner

    runner: Runner
    environ = None
    if replay and not root:
        raise UsageError("--replay answers tool commands for a recorded host; give its tree "
                         "with --root DIR too (without --root pin probes this machine live).")
    if replay:
        rec = ReplayRunner(Path(replay))
        runner, environ = rec, rec.environment
    elif root:
        runner = NoRunner()
    else:
        runner = SystemRunner()

    def identify(device: str) -> str | None:
        hit = matrix.gpu_by_pci(device)
        return hit.id if hit else None

    return probe_host(
        Path(root) if root else Path("/"), runner, environ=environ,
        site_packages=list(site_packages), model_id=model_id,
        replay=replay, identify=identify,
    )


def _host_facts(host_file: str | None, root: str | None, replay: str | None,
                site_packages: tuple[str, ...], matrix: Matrix,
                model_id: str | None) -> tuple[HostFacts, str]:
    """The facts and a label: from ``--host FILE`` or by probing (live or ``--root``)."""
    if host_file:
        if root or replay or site_packages:
            raise UsageError("--host reads a snapshot; it excludes --root, --replay and "
                             "--site-packages (those probe a host).")
        from pinning.probe.snapshot import read_snapshot

        return read_snapshot(Path(host_file)), host_file
    label = f"root {root}" if root else "this host (live)"
    return _probe(root, replay, site_packages, matrix, model_id), label


@click.command()
@host_options
@click.option("--lock", "lock_path", metavar="LOCK", type=click.Path(),
              help="Also look for the lock's model revision in the Hugging Face cache.")
@click.option("-o", "--output", callback=path_given, metavar="FILE",
              help="Write the snapshot (JSON, schemas/host.schema.json) to FILE (exit 2 when "
                   "it cannot be written).")
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
    from pinning.probe.snapshot import snapshot_text, write_snapshot

    matrix = load_matrix(overlays)
    model_id = None
    if lock_path:
        lk = read_lock(Path(lock_path))
        model_id = lk.model.id if lk.model else None
    facts, _label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    if output:
        write_snapshot(facts, Path(output))
    if fmt == "json":
        click.echo(snapshot_text(facts), nl=False)
        return
    click.echo(probe_text(facts))
    if output:
        from pinning.probe.models import snapshot_hash

        click.echo(f"Wrote {output} ({snapshot_hash(facts)})")


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@host_options
@click.option("--strict", is_flag=True,
              help="Warnings are drift too: a locked fact that could not be read, packages "
                   "beyond the lock, an amdgpu module an unfrozen lock cannot compare (freeze "
                   "the lock first), a driver above NVIDIA's listed range.")
@click.option("-v", "--verbose", is_flag=True, help="List matching facts too.")
@format_option
def verify(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], strict: bool,
           verbose: bool, fmt: str) -> None:
    """Check that a host still matches LOCK, below user space too.

    Each fact gets expected, actual, a status (match, mismatch, missing, not-probed,
    outside-validated, ...), a severity and the source that makes it wrong. Rules that need
    no frozen values also run: the CUDA driver minimum, the gfx target validated for the
    ROCm release, Triton and torch install hazards.

    Exit 0 when the host matches, 6 on drift, 7 when the host could not be probed at all,
    5 for a bad lockfile. JSON output: schemas/verify-report.schema.json.
    """
    from pinning.lockfile.io import read_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.report import verify as do_verify

    lock = read_lock(Path(lock_path))
    matrix = load_matrix(overlays)
    model_id = lock.model.id if lock.model else None
    facts, label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    report = do_verify(lock, facts, matrix, lock_name=lock_path, host_name=label, strict=strict)
    if fmt == "json":
        click.echo(json_safe(report.model_dump_json(by_alias=True, exclude_none=True, indent=2)))
    else:
        click.echo(verify_text(report, verbose=verbose))
    if report.result == "drift":
        facts_named = sorted({f.fact + (f"[GPU {f.gpu}]" if f.gpu is not None else "")
                              for f in report.drift})
        raise DriftError(
            f"{label} has drifted from {lock_path}: {', '.join(facts_named)}.",
            hint="Bring the host back to the lock, or re-freeze the lock from a validated host "
                 "(pin freeze).",
        )


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@host_options
@click.option("--force", is_flag=True,
              help="Freeze even when the host is outside what the lock validated; the "
                   "deviations are recorded in the lock.")
@click.option("-o", "--output", callback=path_given, metavar="FILE",
              help="Write here instead of replacing LOCK (exit 2 when it cannot be written).")
@format_option
def freeze(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], force: bool,
           output: str | None, fmt: str) -> None:
    """Write the host's exact values into LOCK: firmware, driver, OS, kernel, ROCm,
    framework builds and every Python distribution, marked as frozen from that host with
    the snapshot's hash.

    Exit 6 (nothing written) when the host is outside what the lock's matrix validated,
    unless --force; exit 5 (nothing written) when LOCK changed while pin was probing
    (another pin command wrote it): re-run.
    """
    from pinning.lockfile.io import lock_json, read_lock_bytes, write_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.freeze import freeze as do_freeze

    raw, lock = read_lock_bytes(Path(lock_path))
    matrix = load_matrix(overlays)
    model_id = lock.model.id if lock.model else None
    facts, label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    frozen, found, unfrozen = do_freeze(lock, facts, matrix, host_label=label, force=force)
    dest = Path(output or lock_path)
    # Replacing the lock read above: only if nobody wrote it meanwhile (exit 5 otherwise).
    in_place = output is None or dest.resolve() == Path(lock_path).resolve()
    write_lock(frozen, dest, if_unchanged=raw if in_place else None)
    if fmt == "json":
        click.echo(json.dumps({"lockfile": str(dest), "lock": lock_json(frozen),
                               "deviations": [f.model_dump(mode="json") for f in found],
                               "not-frozen": unfrozen}, indent=2))
        return
    for f in found:
        click.echo(printable(f"Recorded deviation (--force): {f.fact}: {f.message}",
                             newlines=False))
    if found:
        click.echo("pin verify will keep reporting these facts as outside what the matrix "
                   "validated.")
    for item in unfrozen:
        click.echo(printable(f"Not frozen: {item}", newlines=False))
    assert frozen.frozen is not None
    click.echo(printable(f"Froze {label} into {dest} (snapshot {frozen.frozen.snapshot}).",
                         newlines=False))


def register(group: click.Group) -> None:
    """Add the host commands to the ``pin`` group."""
    group.add_command(probe)
    group.add_command(verify)
    group.add_command(freeze)
