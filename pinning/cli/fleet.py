"""``pin fleet verify``: many host snapshots against one lock, at once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, path_given
from pinning.cli.progress import progress_for, quiet_option
from pinning.errors import DriftError, ProbeError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.fleet.batch import FleetVerifier
    from pinning.fleet.models import FleetReport
    from pinning.util.progress import Progress


@click.group()
def fleet() -> None:
    """Verify many hosts against one lock at once, from their snapshots."""


@fleet.command("verify")
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@click.argument("snapshot_dir", metavar="[SNAPSHOT_DIR]", required=False, type=click.Path(),
                callback=path_given)
@click.option("--from", "from_file", metavar="FILE.jsonl", type=click.Path(),
              callback=path_given,
              help="Read the snapshots from JSON Lines, one snapshot (or its `pin probe "
                   "--format json` envelope) per line ('-': standard input), instead of "
                   "SNAPSHOT_DIR.")
@click.option("--strict", is_flag=True,
              help="Warnings are drift too, as with `pin verify --strict`.")
@click.option("-v", "--verbose", is_flag=True,
              help="List matching hosts too (text output).")
@quiet_option
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", callback=path_given,
              help="Add a site overlay to the matrix (also PIN_MATRIX).")
@format_option
def verify(lock_path: str, snapshot_dir: str | None, from_file: str | None, strict: bool,
           verbose: bool, quiet: bool, overlays: tuple[str, ...], fmt: str) -> None:
    """Check every host snapshot in SNAPSHOT_DIR (or --from FILE.jsonl) against LOCK, as
    `pin verify LOCK --host SNAPSHOT` does for one host, with the work that depends on
    the lock alone done once.

    SNAPSHOT_DIR holds one `pin probe -o HOST.json` snapshot (or its `--format json`
    envelope) per host, read in name order; a host is named after its file (HOST).
    With --from a host is named FILE:LINE. A snapshot that cannot be read is that host's
    `unreadable` result, naming the file and line; the others are still verified.

    Text: one line per drifting or unreadable host (every host with -v), with pin's short
    reason (`pin: <fact> <want>!=<have> (+N more)`, the reason a Slurm drain shows), then
    a summary: how many hosts match, drift and are unreadable, and the most frequent
    reasons, by fact and by exact value. JSON: the envelope, its result is
    schemas/fleet-report.schema.json. Progress goes to standard error (not with
    --format json or -q).

    Exit 0 when every host matches; 6 when any host drifted (whatever else); 7 when none
    drifted but a snapshot could not be read; 5 for a bad lockfile; 2 for a usage error
    (both or neither of SNAPSHOT_DIR and --from, no such folder, no snapshot in it).

    \b
    Examples:
      pin fleet verify pin.lock /srv/pin/snapshots
      pin fleet verify pin.lock --from fleet.jsonl --format json > fleet.json
      cat /srv/pin/*.jsonl | pin fleet verify pin.lock --from - --strict
    """
    from pinning.fleet.batch import FleetVerifier
    from pinning.lockfile.io import read_lock
    from pinning.matrix.load import load_matrix

    if (snapshot_dir is None) == (from_file is None):
        raise UsageError("Give either SNAPSHOT_DIR or --from FILE.jsonl"
                         + (", not both." if snapshot_dir else "."),
                         hint="pin fleet verify LOCK DIR (one snapshot per host, *.json), or "
                              "pin fleet verify LOCK --from FILE.jsonl ('-': standard input).")
    if lock_path == "-" and from_file == "-":
        raise UsageError("LOCK and --from both read standard input ('-'); give '-' once and "
                         "a file for the other.")
    lock = read_lock(cli_path(lock_path))
    matrix = load_matrix(overlays)
    verifier = FleetVerifier(lock, matrix, lock_name=lock_path, strict=strict)
    with progress_for(fmt, quiet=quiet) as progress:
        report, where = _run(verifier, snapshot_dir, from_file, progress)
    if report.summary.total == 0:
        raise UsageError(f"{where}: no snapshot in it.",
                         hint="Write one per line with `pin probe --format json | jq -c "
                              ".result >> FILE.jsonl` on each host.")
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True, exclude_none=True),
             ascii_only=False)
    else:
        click.echo(fleet_text(report, verbose=verbose))
    _exit_for(report)


def _run(verifier: FleetVerifier, snapshot_dir: str | None, from_file: str | None,
         progress: Progress) -> tuple[FleetReport, str]:
    """Run ``verifier`` over the snapshots of ``snapshot_dir`` or the JSON Lines
    ``from_file``; the report and the input's name for messages.
    """
    from pinning.fleet.batch import folder_files, folder_inputs

    if snapshot_dir is not None:
        files = folder_files(cli_path(snapshot_dir))
        total = sum(_size(f) for f in files)
        report = verifier.run(folder_inputs(files), progress,
                              label=f"verify {len(files)} snapshots", total=total)
        return report, f"SNAPSHOT_DIR {snapshot_dir}"
    assert from_file is not None
    return _from_jsonl(verifier, from_file, progress), f"--from {from_file}"


def _size(path: Path) -> int:
    """The size of a snapshot file in bytes, 0 when it cannot be read (reported later)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _from_jsonl(verifier: FleetVerifier, from_file: str, progress: Progress) -> FleetReport:
    """Run ``verifier`` over the JSON Lines ``from_file`` (``-``: standard input), streamed.
    Raises :class:`~pinning.errors.UsageError` (exit 2) naming it when it cannot be opened
    (a folder is given as SNAPSHOT_DIR instead).
    """
    import sys

    from pinning.fleet.batch import jsonl_inputs

    if from_file == "-":
        stream = sys.stdin.buffer
        return verifier.run(jsonl_inputs(stream, "stdin"), progress,
                            label="verify standard input")
    path = cli_path(from_file)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UsageError(f"--from {from_file}: cannot be read ({exc.strerror or exc}).",
                         hint="Name a JSON Lines file with one snapshot per line, or give a "
                              "folder of snapshots as SNAPSHOT_DIR.") from exc
    with handle:
        total = _size(path) if path.is_file() else None
        return verifier.run(jsonl_inputs(handle, from_file), progress,
                            label=f"verify {from_file}", total=total)


def fleet_text(report: FleetReport, *, verbose: bool = False) -> str:
    """The text output: a line per drifting or unreadable host (every host when
    ``verbose``), then the summary and the most frequent reasons.
    """
    lines: list[str] = []
    width = max((len(h.name) for h in report.hosts), default=4)
    for h in report.hosts:
        if h.result == "match" and not verbose:
            continue
        reason = h.reason or ""
        lines.append(printable(f"{h.name:<{width}}  {h.result.upper():<10}  {reason}".rstrip(),
                               newlines=False))
    s = report.summary
    lines.append(f"pin fleet verify {printable(report.lock, newlines=False)} "
                 f"({report.lock_hash[:19]}): {s.total} host(s): {s.match} match, "
                 f"{s.drift} drift, {s.unreadable} unreadable"
                 + (" (strict)" if report.strict else "") + ".")
    if s.top_facts:
        lines.append("Top drifting facts: " + ", ".join(
            f"{printable(r.reason, newlines=False)} ({r.hosts})" for r in s.top_facts[:5]))
        lines.append("Top reasons:")
        lines += [f"  {r.hosts:>6}  {printable(r.reason, newlines=False)}"
                  for r in s.top_reasons[:5]]
    return "\n".join(lines)


def _exit_for(report: FleetReport) -> None:
    """Raise the error whose exit code the fleet's result calls for (6 drift, 7 only
    unreadable snapshots); nothing when every host matches.
    """
    s = report.summary
    if s.drift:
        raise DriftError(
            f"{s.drift} of {s.total} host(s) drifted from {report.lock}"
            + (f"; {s.unreadable} snapshot(s) could not be read" if s.unreadable else "") + ".",
            hint="Take the drifting hosts out of service (pin slurm healthcheck drains a "
                 "Slurm node) and bring them back to the lock, or re-freeze the lock from "
                 "a validated host.")
    if s.unreadable:
        raise ProbeError(
            f"{s.unreadable} of {s.total} snapshot(s) could not be read; the others match "
            f"{report.lock}.",
            hint="Write fresh snapshots with `pin probe -o FILE` on those hosts.")
