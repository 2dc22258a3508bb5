"""Host commands of the CLI: ``pin probe``, ``pin freeze``, ``pin verify``.

Registered on the main group by :func:`register`; heavy imports stay inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit, note_format
from pinning.cli.hostread import host_facts
from pinning.cli.nodecheck import VerifyRun, verify_npd
from pinning.cli.options import (
    amends,
    cli_path,
    format_option,
    host_options,
    one_stdin,
    output_path,
)
from pinning.cli.remote import report_options, verify_reporter
from pinning.cli.render import probe_text, verify_text
from pinning.errors import DriftError, UsageError
from pinning.fleet.nfd import DEFAULT_TTL_S
from pinning.fleet.npd import DEFAULT_MAX_OUTPUT, MIN_OUTPUT
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Lockfile
    from pinning.verify.report import VerifyReport

__all__ = ["VERIFY_FORMAT", "freeze", "probe", "register", "verify"]


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


VERIFY_FORMAT = click.Choice(["text", "json", "npd"])
"""``pin verify --format``: ``text``, ``json`` (the envelope) or ``npd`` (a Node Problem
Detector custom plugin: one line, exit 0 / 1 / 2)."""


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@host_options
@click.option("--strict", is_flag=True,
              help="Warnings are drift too: a locked fact that could not be read, packages "
                   "beyond the lock, an amdgpu module an unfrozen lock cannot compare (freeze "
                   "the lock first), a driver above NVIDIA's listed range.")
@click.option("-v", "--verbose", is_flag=True,
              help="List matching facts too, and the guard rules that do not apply here (a "
                   "fact they need, such as the lock's [serving] quantization, is not known).")
@click.option("--audit", "audit_path", metavar="REPORT", type=click.Path(),
              help="The JSON `pin audit PATH --format json` wrote: the code rules (torch "
                   "device strings) judge the audited code (exit 2 when it is not such a "
                   "report).")
@click.option("--node-only", "node_only", is_flag=True,
              help="Judge only what the node provides beneath its containers: GPUs, "
                   "firmware, kernel driver, kernel and OS (Kubernetes: the ROCm / CUDA user "
                   "space, frameworks and packages come with the image; check those with "
                   "pin verify-image and pin accept).")
@click.option("--format", "fmt", type=VERIFY_FORMAT, default="text", show_default=True,
              callback=note_format,
              help="text for people; json: one envelope {pin, command, ok, exit-code, "
                   "result, error} on standard output; npd: one line for Node Problem "
                   "Detector, exit 0 match, 1 drift, 2 unknown (lock or host unreadable).")
@click.option("--emit", "emit_kind", type=click.Choice(["nfd"]),
              help="Also write a Node Feature Discovery feature file to -o FILE (pin.dev/"
                   "result, pin.dev/lock, ...), on drift too and, with result=unknown, when "
                   "the lock or the host cannot be read.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="With --emit nfd: the feature file, written atomically (e.g. /etc/"
                   "kubernetes/node-feature-discovery/features.d/pin; '-': standard output, "
                   "the text report then goes to stderr; exit 2 when it cannot be written).")
@click.option("--nfd-expiry", "nfd_expiry", type=click.IntRange(min=60), default=DEFAULT_TTL_S,
              show_default=True, metavar="SECONDS",
              help="With --emit nfd: the file's labels expire this long after the run (# "
                   "+expiry-time), so they vanish when pin stops refreshing them.")
@click.option("--max-output-length", "max_output", type=click.IntRange(min=MIN_OUTPUT),
              default=DEFAULT_MAX_OUTPUT, show_default=True, metavar="N",
              help="With --format npd: the longest line printed; match NPD's "
                   "max_output_length.")
@report_options("Also post the host facts checked (the snapshot pin probe -o writes) to "
                "this pin service, which judges them against the lock it assigns to the "
                "host or its group (else LOCK, which must be stored there: pin lock push), "
                "and print its verdict.")
@click.option("--report-host", "report_host", metavar="NAME",
              help="With --report-to: the host name to report as (default: this machine's "
                   "short host name; with --root DIR, DIR/etc/hostname).")
@click.option("--report-group", "report_group", metavar="GROUP",
              help="With --report-to: the host's group, whose lock the service judges by "
                   "when the host has none assigned.")
@click.pass_context
def verify(ctx: click.Context, lock_path: str, host_file: str | None, root: str | None,
           replay: str | None, site_packages: tuple[str, ...], overlays: tuple[str, ...],
           strict: bool, verbose: bool, audit_path: str | None, node_only: bool, fmt: str,
           emit_kind: str | None, output: str | None, nfd_expiry: int,
           max_output: int, report_to: str | None, token_file: str | None,
           ca_cert: str | None, report_host: str | None, report_group: str | None) -> None:
    """Check that a host still matches LOCK, below user space too.

    Each fact gets expected, actual, a status (match, mismatch, missing, not-probed,
    outside-validated, ...), a severity and the source that makes it wrong. The lock's
    model is compared file by file (model.files[PATH]: changed, missing, extra, a cache
    blob whose bytes do not match its name) with its content hash. Rules that need
    no frozen values also run: the CUDA driver minimum, the gfx target validated for the
    ROCm release, Triton and torch install hazards.

    Exit 0 when the host matches, 6 on drift, 7 when the host could not be probed at all,
    5 for a bad lockfile. JSON: the envelope, its result is schemas/verify-report.schema.json.
    LOCK or --host may be '-' (standard input).

    On a Kubernetes node (deploy/kubernetes): --emit nfd -o FILE writes a Node Feature
    Discovery feature file (labels pin.dev/result, pin.dev/drift-count, pin.dev/lock = the
    lock digest's first 12 hex digits) before the exit code is decided; --format npd prints
    one line for a Node Problem Detector custom plugin and exits 0 (match), 1 (drift) or 2
    (unknown: the lock or the host could not be read) instead of the codes above; on a
    match it adds "(N facts not probed)" when some locked facts could not be read.

    With --report-to URL the same host facts go to a pin service (pin serve) with a token
    (--token-file, PIN_TOKEN, PIN_TOKEN_FILE); its verdict is printed ("reported to URL:
    drift (pin: ...)"; on stderr with --format json or npd). The local check still decides
    the exit code: a report that fails is exit 13 only when the host matched; on drift (6)
    the report's error is printed and the exit stays 6; with --format npd it never changes
    the exit code.

    With --root /host (the host's / mounted in a container), --chroot runs the host's own
    tools (amd-smi, rocminfo, nvidia-smi, ldd) inside --root with chroot(8), so firmware
    is checked too; that needs a privileged container. Without it pin reads files only
    and reports what only a tool prints as not-probed (a warning; drift with --strict).

    \b
    Examples:
      pin verify pin.lock
      pin verify pin.lock --root /host --chroot --node-only --emit nfd \\
                 -o /etc/kubernetes/node-feature-discovery/features.d/pin
      pin verify pin.lock --root /host --emit nfd \\
                 -o /etc/kubernetes/node-feature-discovery/features.d/pin
      pin verify pin.lock --root /host --chroot --format npd
    """
    if output is not None and emit_kind is None:
        raise UsageError("-o FILE names where --emit writes; add --emit nfd (pin verify prints "
                         "its report on standard output).")
    if emit_kind is not None and output is None:
        raise UsageError("--emit nfd needs -o FILE: the feature file, e.g. "
                         "/etc/kubernetes/node-feature-discovery/features.d/pin.")
    if output == "-" and fmt in ("json", "npd"):
        raise UsageError(f"-o - writes the feature file to standard output and so would "
                         f"--format {fmt}; choose one.")
    if output not in (None, "-") and Path(output).name.startswith("."):
        raise UsageError(f"{output}: NFD ignores feature files whose name starts with '.'; "
                         "name the file without it (e.g. .../features.d/pin).")
    one_stdin(LOCK=lock_path, **{"--host": host_file})
    reporter = verify_reporter(report_to, report_host, report_group, token_file, ca_cert,
                               host_file, root)
    run = VerifyRun(output=output, ttl_s=nfd_expiry, node_only=node_only)

    def post(report: VerifyReport, *, err: bool) -> None:
        from pinning.cli.remote import report_or_note

        if reporter is None or run.facts is None:
            return
        answer = report_or_note(lambda: reporter.send(run.facts, report.lock_hash,
                                                      node_only=node_only),
                                local_failed=report.result == "drift")
        if answer is not None:
            click.echo(reporter.line(answer, report.lock_hash), err=err)

    if fmt == "npd":
        verify_npd(ctx, run, max_output, lambda: run.check(
            lock_path, host_file, root, replay, site_packages, overlays, strict=strict,
            verbose=verbose, audit_path=audit_path),
            after=None if reporter is None else lambda r: post(r, err=True))
        return
    report, label = run.check(lock_path, host_file, root, replay, site_packages, overlays,
                              strict=strict, verbose=verbose, audit_path=audit_path)
    run.emit(report)
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True, exclude_none=True),
                  ascii_only=False)
    else:
        err = output == "-"
        click.echo(verify_text(report, verbose=verbose), err=err)
        if report.hidden_rules:
            click.echo(f"({report.hidden_rules} guard rule(s) that do not apply here hidden; "
                       "-v lists them)", err=err)
    post(report, err=fmt == "json" or output == "-")
    if report.result == "drift":
        facts_named = sorted({f.fact + (f"[GPU {f.gpu}]" if f.gpu is not None else "")
                              for f in report.drift})
        raise DriftError(
            f"{label} has drifted from {lock_path}: {', '.join(facts_named)}.",
            hint="Bring the host back to the lock, or re-freeze the lock from a validated host "
                 "(pin freeze).",
        )


@click.command()
@amends("lock_path")
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@host_options
@click.option("--force", is_flag=True,
              help="Freeze even when the host is outside what the lock validated; the "
                   "deviations are recorded in the lock.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write here instead of replacing LOCK ('-': standard output, messages then "
                   "go to stderr; exit 2 when it cannot be written).")
@format_option
def freeze(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], force: bool,
           output: str | None, fmt: str) -> None:
    """Write the host's exact values into LOCK: firmware, driver, OS, kernel, ROCm,
    framework builds, every Python distribution and the lock's model files (size, sha256),
    marked as frozen from that host with the snapshot's hash.

    Exit 6 (nothing written) when the host is outside what the lock's matrix validated,
    unless --force; exit 5 (nothing written) when LOCK changed while pin was probing
    (another pin command wrote it): re-run. LOCK '-' reads standard input and writes the
    frozen lock to standard output (unless -o); --host '-' reads the snapshot from it.

    -o may not name an input (the snapshot, a recording, an overlay: exit 2, nothing
    written); -o naming LOCK itself (links followed) is the same in-place update as no -o.
    """
    from pinning.lockfile.io import read_lock_bytes, write_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.freeze import freeze as do_freeze

    one_stdin(LOCK=lock_path, **{"--host": host_file})
    dest = cli_path(output or lock_path)
    to_stdout = str(dest) == "-"
    if to_stdout and fmt == "json":
        raise UsageError("The frozen lock goes to standard output ('-') and so would "
                         "--format json; choose one.")
    raw, lock = read_lock_bytes(cli_path(lock_path))
    matrix = load_matrix(overlays)
    facts, label = host_facts(host_file, root, replay, site_packages, matrix, lock.model,
                               lock_path)
    frozen, found, unfrozen = do_freeze(lock, facts, matrix, host_label=label, force=force)
    # Replacing the lock read above: only if nobody wrote it meanwhile (exit 5 otherwise).
    in_place = not to_stdout and (
        output is None or dest.resolve() == cli_path(lock_path).resolve())
    write_lock(frozen, dest, if_unchanged=raw if in_place else None)
    _freeze_summary(frozen, found, unfrozen, label=label, dest=dest, fmt=fmt)


def _freeze_summary(frozen: Lockfile, found: list[Finding], unfrozen: list[str], *, label: str,
                    dest: Path, fmt: str) -> None:
    """What ``pin freeze`` did: JSON, or text lines (on stderr when the lock went to
    standard output).
    """
    from pinning.lockfile.io import lock_json

    err = str(dest) == "-"
    if fmt == "json":
        emit({"lockfile": str(dest), "lock": lock_json(frozen),
              "deviations": [f.model_dump(mode="json") for f in found],
              "not-frozen": unfrozen})
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
    click.echo(printable(f"Froze {label} into {where} (snapshot {frozen.frozen.snapshot}).",
                         newlines=False), err=err)


def register(group: click.Group) -> None:
    """Add the host commands to the ``pin`` group."""
    group.add_command(probe)
    group.add_command(verify)
    group.add_command(freeze)
