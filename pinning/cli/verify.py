"""``pin verify``: check that a host still matches a lock, below user space too; on a
Kubernetes node also the NFD feature file and the NPD line (:mod:`pinning.cli.nodecheck`),
and ``--report-to`` a pin service (:mod:`pinning.cli.service`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit, note_format
from pinning.cli.nodecheck import VerifyRun, verify_npd
from pinning.cli.options import host_options, lock_target_option, one_stdin, output_path
from pinning.cli.render import terminal_style
from pinning.cli.render_host import verify_text
from pinning.cli.service import report_options, report_or_note, verify_reporter
from pinning.errors import DriftError, UsageError
from pinning.fleet.nfd import DEFAULT_TTL_S
from pinning.fleet.npd import DEFAULT_MAX_OUTPUT, MIN_OUTPUT
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.remote.reporter import VerifyReporter
    from pinning.verify.report import VerifyReport

__all__ = ["VERIFY_FORMAT", "verify"]


VERIFY_FORMAT = click.Choice(["text", "json", "npd"])
"""``pin verify --format``: ``text``, ``json`` (the envelope) or ``npd`` (a Node Problem
Detector custom plugin: one line, exit 0 / 1 / 2)."""


_HELP = """Check that a host still matches LOCK, below user space too.

Each fact gets expected, actual, a status (match, mismatch, missing, not-probed,
outside-validated, ...), a severity and the source that makes it wrong. The lock's
model is compared file by file (model.files[PATH]: changed, missing, extra, a cache
blob whose bytes do not match its name) with its content hash. Rules that need
no frozen values also run: the CUDA driver minimum, the gfx target validated for the
ROCm release, Triton and torch install hazards.

The report first says the lock's status: validated; unconfirmed (a warning naming what
no source confirms: drift with --strict); or not recorded (a lock written before pin
recorded it: a note).

Exit 0 when the host matches, 6 on drift, 7 when the host could not be probed at all,
5 for a bad lockfile. JSON: the envelope, its result is schemas/verify-report.schema.json.
LOCK or --host may be '-' (standard input).

A multi-target lock (pin lock's pin.lock) is checked against one target: --target NAME,
else the one whose locked vendor and GPU match a GPU this host shows. The first line
says which and why ("target candidate (mi300x): matches this host's AMD Instinct
MI300X"; JSON: the result's target). No target matching is exit 6, naming each
target's GPU and the host's; several matching is exit 2 (name one with --target).

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


@click.command(help=_HELP)
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@lock_target_option
@host_options
@click.option("--strict", is_flag=True,
              help="Warnings are drift too: a lock whose status is unconfirmed, a locked "
                   "fact that could not be read, packages beyond the lock, an amdgpu module an "
                   "unfrozen lock cannot compare (freeze the lock first), a driver above "
                   "NVIDIA's listed range.")
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
def verify(ctx: click.Context, lock_path: str, target: str | None, host_file: str | None,
           root: str | None, replay: str | None, site_packages: tuple[str, ...],
           overlays: tuple[str, ...], strict: bool, verbose: bool, audit_path: str | None,
           node_only: bool, fmt: str,
           emit_kind: str | None, output: str | None, nfd_expiry: int,
           max_output: int, report_to: str | None, token_file: str | None,
           ca_cert: str | None, report_host: str | None, report_group: str | None) -> None:
    """``pin verify`` (its help is :data:`_HELP`): the report, the NFD file, the NPD line,
    the service's verdict; ``DriftError`` (exit 6) on drift.
    """
    _check_output_flags(output, emit_kind, fmt)
    one_stdin(LOCK=lock_path, **{"--host": host_file})
    reporter = verify_reporter(report_to, report_host, report_group, token_file, ca_cert,
                               host_file, root)
    run = VerifyRun(output=output, ttl_s=nfd_expiry, node_only=node_only)

    def check() -> tuple[VerifyReport, str]:
        return run.check(lock_path, host_file, root, replay, site_packages, overlays,
                         strict=strict, verbose=verbose, audit_path=audit_path,
                         target=target)

    if fmt == "npd":
        verify_npd(ctx, run, max_output, check, after=None if reporter is None else
                   lambda r: _post(reporter, run, r, err=True))
        return
    report, label = check()
    run.emit(report)
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True, exclude_none=True), ascii_only=False)
    else:
        err = output == "-"
        if report.target is not None:
            from pinning.verify.target import describe

            click.echo(printable(describe(report.target), newlines=False), err=err)
        click.echo(verify_text(report, verbose=verbose, style=terminal_style(
            sys.stderr if err else None)), err=err)
        if report.hidden_rules:
            click.echo(f"({report.hidden_rules} guard rule(s) that do not apply here hidden; "
                       "-v lists them)", err=err)
    _post(reporter, run, report, err=fmt == "json" or output == "-")
    if report.result == "drift":
        facts_named = sorted({f.fact + (f"[GPU {f.gpu}]" if f.gpu is not None else "")
                              for f in report.drift})
        raise DriftError(
            f"{label} has drifted from {lock_path}"
            + (f" (target {report.target.name})" if report.target else "")
            + f": {', '.join(facts_named)}.",
            hint="Bring the host back to the lock, or re-freeze the lock from a validated host "
                 "(pin freeze).",
        )


def _check_output_flags(output: str | None, emit_kind: str | None, fmt: str) -> None:
    """``UsageError`` (exit 2) for ``-o`` without ``--emit nfd`` or the reverse, ``-o -``
    with ``--format json|npd``, or a feature file NFD would ignore (a dot file).
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


def _post(reporter: VerifyReporter | None, run: VerifyRun, report: VerifyReport, *,
          err: bool) -> None:
    """``--report-to``: send the host facts ``run`` read and print the service's verdict
    (on stderr when ``err``); a failed report is handled by
    :func:`~pinning.cli.service.report_or_note`.
    """
    if reporter is None or run.facts is None:
        return
    from pinning.probe.snapshot import snapshot_text

    snapshot = snapshot_text(run.facts).encode()
    answer = report_or_note(lambda: reporter.send(snapshot, report.lock_hash,
                                                  node_only=run.node_only),
                            local_failed=report.result == "drift")
    if answer is not None:
        click.echo(reporter.line(answer, report.lock_hash), err=err)
