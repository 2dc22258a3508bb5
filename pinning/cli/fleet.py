"""``pin fleet verify``: many host snapshots against one lock, at once, its output
streamed (:mod:`pinning.cli.fleet_stream`).
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from pinning.cli.fleet_stream import LINE_DIGITS, JsonOut, TextOut
from pinning.cli.options import cli_path, format_option, lock_target_option, path_given
from pinning.cli.progress import progress_for, quiet_option
from pinning.errors import DriftError, InternalError, PinError, ProbeError, UsageError
from pinning.util.startup import loading

#: Bytes read from JSON Lines at a time (a snapshot line is tens of kB: fewer reads).
READ_BUFFER = 1 << 16

if TYPE_CHECKING:
    from pinning.fleet.batch import FleetTally, FleetVerifier, SnapshotInput
    from pinning.fleet.models import FleetHost, FleetSummary
    from pinning.matrix.load import Matrix
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
@lock_target_option
@click.option("--strict", is_flag=True,
              help="Warnings are drift too, as with `pin verify --strict`.")
@click.option("-v", "--verbose", is_flag=True,
              help="List matching hosts too (text output).")
@quiet_option
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", callback=path_given,
              help="Add a site overlay to the matrix (also PIN_MATRIX).")
@format_option
def verify(lock_path: str, snapshot_dir: str | None, from_file: str | None,
           target: str | None, strict: bool, verbose: bool, quiet: bool,
           overlays: tuple[str, ...], fmt: str) -> None:
    """Check every host snapshot in SNAPSHOT_DIR (or --from FILE.jsonl) against LOCK, as
    `pin verify LOCK --host SNAPSHOT` does for one host, with the work that depends on
    the lock alone done once.

    SNAPSHOT_DIR holds one `pin probe -o HOST.json` snapshot (or its `--format json`
    envelope) per host, read in name order; a host is named after its file (HOST).
    With --from a host is named FILE:LINE. A snapshot that cannot be read is that host's
    `unreadable` result, naming the file and line; the others are still verified.

    A multi-target lock: each host gets the target its GPU matches (--target NAME: one
    for all), named in its line. A host no target matches drifts (`pin: target
    <targets' GPUs>!=<its GPUs>`); several matching is exit 2 (name one with --target).

    Output is streamed, each host as it is verified, so memory stays flat. Text: one
    line per drifting or unreadable host (every host with -v), with pin's short reason
    (`pin: <fact> <want>!=<have> (+N more)`: the first differing fact, N how many more;
    a Slurm drain shows it), then a summary: how many hosts match, drift and are
    unreadable, the most frequent reasons, by fact and by value. JSON: the envelope, its result is
    schemas/fleet-report.schema.json, one host a line, with ok, exit-code and error
    written last. Progress goes to standard error (not with --format json or -q).

    Exit 0 when every host matches; 6 when any host drifted (whatever else); 7 when none
    drifted but a snapshot could not be read; 5 for a bad lockfile; 2 for a usage error
    (both or neither of SNAPSHOT_DIR and --from, no such folder, no snapshot in it).

    \b
    Examples:
      pin fleet verify pin.lock /srv/pin/snapshots
      pin fleet verify pin.lock --from fleet.jsonl --format json > fleet.json
      cat /srv/pin/*.jsonl | pin fleet verify pin.lock --from - --strict
    """
    if (snapshot_dir is None) == (from_file is None):
        raise UsageError("Give either SNAPSHOT_DIR or --from FILE.jsonl"
                         + (", not both." if snapshot_dir else "."),
                         hint="pin fleet verify LOCK DIR (one snapshot per host, *.json), or "
                              "pin fleet verify LOCK --from FILE.jsonl ('-': standard input).")
    if lock_path == "-" and from_file == "-":
        raise UsageError("LOCK and --from both read standard input ('-'); give '-' once and "
                         "a file for the other.")
    with loading():  # what is loaded once lives to the end: not scanned by each collection
        from pinning.fleet.batch import FleetTally

        matrix = _matrix(overlays)
        verifier = _verifier(lock_path, target, matrix, strict)
    head = {"fleet-version": 1, "lock": lock_path, "lock-hash": verifier.lock_hash,
            "strict": strict, **({"targets": verifier.targets} if verifier.targets else {})}
    write = sys.stdout.write  # before progress starts: rich bars would take sys.stdout
    tally = FleetTally()
    with _progress(fmt, quiet) as progress:
        source = _source(snapshot_dir, from_file)
        hosts = verifier.stream(source.inputs, tally, progress, label=source.label,
                                total=source.total)
        out: TextOut | JsonOut = (
            JsonOut(write, click.get_current_context(), "fleet verify", head)
            if fmt == "json" else TextOut(write, source.width, verbose=verbose,
                                          targets=verifier.targets))
        _write_all(hosts, tally, out, head, source.where)


def _matrix(overlays: tuple[str, ...]) -> Matrix:
    """The matrix with the site ``overlays``; raises as :func:`load_matrix` does."""
    from pinning.matrix.load import load_matrix

    return load_matrix(overlays)


def _verifier(lock_path: str, target: str | None, matrix: Matrix,
              strict: bool) -> FleetVerifier:
    """The fleet verifier of LOCK: one lock's, or a multi-target lock's
    (:class:`~pinning.fleet.targets.TargetFleetVerifier`, ``target`` for every host when
    given). Raises ``LockfileError`` (exit 5) for a bad lock, ``UsageError`` (exit 2) for
    ``--target`` with a single-target lock or a target the lock lacks.
    """
    from pinning.fleet.batch import FleetVerifier
    from pinning.lockfile.io import parse_lock_bytes, read_locks
    from pinning.lockfile.multi import pick

    raw, multi, locks = read_locks(cli_path(lock_path))
    if multi is None:
        if target is not None:
            parse_lock_bytes(raw, label=lock_path, target=target)  # raises: one message
        return FleetVerifier(locks[""], matrix, lock_name=lock_path, strict=strict)
    from pinning.fleet.targets import TargetFleetVerifier

    if target is not None:
        pick(multi, target, label=lock_path)  # an unknown name: exit 2, the nearest named
    return TargetFleetVerifier(multi, locks, matrix, lock_name=lock_path, target=target,
                               strict=strict)


@contextmanager
def _progress(fmt: str, quiet: bool) -> Iterator[Progress]:
    """Progress on standard error (:func:`~pinning.cli.progress.progress_for`), as plain
    lines rather than bars when standard output is a terminal too, so the streamed host
    lines are not drawn over.
    """
    from pinning.cli.progress import LineProgress

    if fmt != "json" and not quiet and sys.stdout.isatty() and sys.stderr.isatty():
        yield LineProgress()
        return
    with progress_for(fmt, quiet=quiet) as progress:
        yield progress


def _write_all(hosts: Generator[FleetHost, None, None], tally: FleetTally, out: TextOut | JsonOut,
               head: dict[str, Any], where: str) -> None:
    """Write each of ``hosts`` to ``out`` as it comes, then the summary; raise the error
    the run ends with (:func:`_exit_error`), or the one that cut it short after the output
    was closed (a streamed JSON document is always whole).
    """
    try:
        with closing(hosts):
            for h in hosts:
                out.host(h)
    except BrokenPipeError:
        raise
    except PinError as err:
        out.end(head, tally.summary(), err, complete=False)
        raise
    except Exception as exc:  # a bug: close the document, then report it as pin does
        bug = InternalError(f"unexpected {type(exc).__name__}: {exc}")
        out.end(head, tally.summary(), bug, complete=False)
        raise bug from exc
    summary = tally.summary()
    if summary.total == 0:
        raise UsageError(f"{where}: no snapshot in it.",
                         hint="Write one per line with `pin probe --format json | jq -c . "
                              ">> FILE.jsonl` on each host.")
    error = _exit_error(head["lock"], summary)
    out.end(head, summary, error)
    if error is not None:
        raise error


@dataclass(frozen=True)
class _Source:
    """The snapshots to verify: ``inputs`` (streamed), the progress ``label`` and
    ``total`` bytes (when known), the host column's starting ``width`` and the input's
    name for messages (``where``).
    """

    inputs: Iterator[SnapshotInput]
    label: str
    total: int | None
    width: int
    where: str


def _source(snapshot_dir: str | None, from_file: str | None) -> _Source:
    """The snapshots of ``snapshot_dir`` or the JSON Lines ``from_file`` (``-``: standard
    input). Raises :class:`~pinning.errors.UsageError` (exit 2) naming the folder or file
    when it cannot be listed or opened (a folder is given as SNAPSHOT_DIR instead).
    """
    from pinning.fleet.batch import folder_files, folder_inputs, host_name

    if snapshot_dir is not None:
        files = folder_files(cli_path(snapshot_dir))
        return _Source(folder_inputs(files), f"verify {len(files)} snapshots",
                       sum(_size(f) for f in files),
                       max((len(host_name(f)) for f in files), default=4),
                       f"SNAPSHOT_DIR {snapshot_dir}")
    assert from_file is not None
    if from_file == "-":  # its own buffer: snapshots are tens of kB, sys.stdin's is 8 kB
        stdin = open(sys.stdin.fileno(), "rb", buffering=READ_BUFFER, closefd=False)  # noqa: SIM115
        return _Source(_closing_lines(stdin, "stdin"), "verify standard input", None,
                       len("stdin:") + LINE_DIGITS, "--from -")
    path = cli_path(from_file)
    try:
        handle = path.open("rb", buffering=READ_BUFFER)
    except OSError as exc:
        raise UsageError(f"--from {from_file}: cannot be read ({exc.strerror or exc}).",
                         hint="Name a JSON Lines file with one snapshot per line, or give a "
                              "folder of snapshots as SNAPSHOT_DIR.") from exc
    total = _size(path) if path.is_file() else None
    return _Source(_closing_lines(handle, from_file), f"verify {from_file}", total,
                   len(from_file) + 1 + LINE_DIGITS, f"--from {from_file}")


def _closing_lines(handle: IO[bytes], label: str) -> Iterator[SnapshotInput]:
    """:func:`~pinning.fleet.batch.jsonl_inputs` of ``handle``, closing it when done."""
    from pinning.fleet.batch import jsonl_inputs

    with handle:
        yield from jsonl_inputs(handle, label)


def _size(path: Path) -> int:
    """The size of a snapshot file in bytes, 0 when it cannot be read (reported later)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _exit_error(lock: str, s: FleetSummary) -> PinError | None:
    """The error whose exit code the fleet's result calls for (6 drift, 7 only unreadable
    snapshots); ``None`` when every host matches.
    """
    if s.drift:
        return DriftError(
            f"{s.drift} of {s.total} host(s) drifted from {lock}"
            + (f"; {s.unreadable} snapshot(s) could not be read" if s.unreadable else "") + ".",
            hint="Take the drifting hosts out of service (pin slurm healthcheck drains a "
                 "Slurm node) and bring them back to the lock, or re-freeze the lock from "
                 "a validated host.")
    if s.unreadable:
        return ProbeError(
            f"{s.unreadable} of {s.total} snapshot(s) could not be read; the others match "
            f"{lock}.",
            hint="Write fresh snapshots with `pin probe -o FILE` on those hosts.")
    return None
