"""``pin verify`` on a Kubernetes node: the run that writes a Node Feature Discovery
feature file (``--emit nfd -o FILE``) and the Node Problem Detector plugin output
(``--format npd``). The formats are :mod:`pinning.fleet.nfd` and :mod:`pinning.fleet.npd`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from pinning.cli.hostread import host_facts
from pinning.cli.options import cli_path
from pinning.errors import LockfileError, PinError, ProbeError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.probe.models import HostFacts
    from pinning.verify.report import VerifyReport

__all__ = ["VerifyRun", "verify_npd"]


class VerifyRun:
    """One ``pin verify`` run that may write an NFD feature file (``output``, expiring
    ``ttl_s`` seconds after it is written) and may judge only what the node provides
    (``node_only``: :func:`~pinning.verify.report.node_scope`); remembers the lock once
    read, so a file written after a failed probe still names it, and the host facts once
    read (``facts``), which ``--report-to`` sends.
    """

    def __init__(self, *, output: str | None, ttl_s: int, node_only: bool = False) -> None:
        self.output = output
        self.ttl_s = ttl_s
        self.node_only = node_only
        self.lock: Lockfile | None = None
        self.facts: HostFacts | None = None

    def check(self, lock_path: str, host_file: str | None, root: str | None,
              replay: str | None, site_packages: tuple[str, ...], overlays: tuple[str, ...],
              *, strict: bool, verbose: bool, audit_path: str | None,
              target: str | None = None) -> tuple[VerifyReport, str]:
        """Read the lock, probe (or read) the host and verify: the report and the host's
        label. In a multi-target lock the target is ``target`` (``--target``), else the
        one whose GPU the host shows (:mod:`pinning.verify.target`; the report's
        ``target`` says which). When the lock or the host cannot be read
        (``LockfileError``, ``ProbeError``) or no target matches the host
        (:class:`~pinning.verify.target.NoTargetError`, exit 6), a feature file saying
        ``result=unknown`` is written first (best effort) and the error raised.
        """
        from pinning.matrix.load import load_matrix
        from pinning.verify.report import audit_device_strings
        from pinning.verify.report import verify as do_verify
        from pinning.verify.target import NoTargetError, read_host_lock

        try:
            held = read_host_lock(cli_path(lock_path), target, label=lock_path)
            self.lock = held.chosen.lock if held.chosen else None
            matrix = load_matrix(overlays)
            facts, label = host_facts(host_file, root, replay, site_packages, matrix,
                                      None if self.node_only else held.probe_model(),
                                      lock_path)
            choice = held.choose(facts, matrix)
            self.lock = lock = choice.lock
            if not host_file and not self.node_only and held.needs_model(choice):
                facts, label = host_facts(None, root, replay, site_packages, matrix,
                                          lock.model, lock_path)
        except (LockfileError, ProbeError, NoTargetError):
            if self.output is not None:
                self._unknown_file()
            raise
        self.facts = facts
        devices = audit_device_strings(Path(audit_path)) if audit_path else None
        report = do_verify(lock, facts, matrix, lock_name=lock_path, host_name=label,
                           strict=strict, verbose=verbose, device_strings=devices)
        if choice.info is not None:
            report = report.model_copy(update={"target": choice.info})
        if self.node_only:
            from pinning.verify.report import node_scope

            report = node_scope(report)
        return report, label

    def _unknown_file(self) -> None:
        """Write the ``result=unknown`` file; a failure is noted on stderr only (the error
        that led here is the one to report).
        """
        try:
            self.emit(None)
        except UsageError as err:
            click.echo(f"pin: note: {printable(err.message, newlines=False)}", err=True)

    def emit(self, report: VerifyReport | None) -> None:
        """Write the feature file for ``report`` (``None``: unknown) when ``-o`` was given.
        Raises ``UsageError`` (exit 2) naming the file when it cannot be written.
        """
        if self.output is None:
            return
        import datetime as dt

        from pinning.fleet.nfd import render_feature_file, write_feature_file

        text = render_feature_file(report, self.lock, now=dt.datetime.now(dt.UTC),
                                   ttl_s=self.ttl_s)
        try:
            write_feature_file(cli_path(self.output), text)
        except OSError as exc:
            raise UsageError(f"Cannot write the NFD feature file {self.output}: "
                             f"{exc.strerror or exc}.",
                             hint="Mount NFD's features.d folder read-write and name a file "
                                  "in it (-o .../features.d/pin).") from exc


def verify_npd(ctx: click.Context, run: VerifyRun, limit: int,
               check: Callable[[], tuple[VerifyReport, str]],
               after: Callable[[VerifyReport], None] | None = None) -> NoReturn:
    """``--format npd``: print one line of at most ``limit`` characters and exit 0 (match),
    1 (drift) or 2 (unknown: any ``PinError`` while reading the lock or probing, whose
    paragraph goes to stderr for NPD's log; an unexpected exception too, with its
    traceback, so a bug never reads as a drifting node). The feature file, if asked for, is written
    too; when that fails the verdict stays a drift (1), a match becomes unknown (2).
    ``after(report)`` (``--report-to``) runs last; its ``PinError`` goes to stderr only and
    never changes the line or the exit code (NPD's verdict is the node's, not the service's).
    """
    from pinning.fleet.npd import OK, npd_result, npd_unknown

    try:
        report, _label = check()
    except PinError as err:
        click.echo(f"pin: error: {printable(err.render())}", err=True)
        code, line = npd_unknown(err.message, limit)
        click.echo(line)
        ctx.exit(code)
    except Exception as exc:  # a bug: NPD must read unknown, not "problem" (exit 1)
        import traceback

        click.echo(printable(traceback.format_exc()), err=True, nl=False)
        code, line = npd_unknown(f"internal error ({type(exc).__name__}); please report it",
                                 limit)
        click.echo(line)
        ctx.exit(code)
    code, line = npd_result(report, limit)
    try:
        run.emit(report)
    except PinError as err:
        click.echo(f"pin: error: {printable(err.render())}", err=True)
        if code == OK:
            code, line = npd_unknown(err.message, limit)
    if after is not None:
        try:
            after(report)
        except PinError as err:
            click.echo(f"pin: error: {printable(err.render())}", err=True)
    click.echo(line)
    ctx.exit(code)
