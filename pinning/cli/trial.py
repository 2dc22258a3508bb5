"""``pin trial``: the migration method for the project the project file describes.

The command is an orchestrator of pin's own commands (:mod:`pinning.cli.trial_stages`,
:mod:`pinning.cli.trial_judge`): each stage runs ``pin audit``, ``pin lock``, ``pin build``,
``pin accept run|judge``, ``pin cost`` or ``pin report`` in-process, and the run is one record
(:mod:`pinning.cli.trial_record`) written to ``.pin/trial/record.json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, output_path, path_given
from pinning.cli.trial_record import (
    RECORD,
    STAGES,
    Inputs,
    StageRecord,
    file_sha256,
    inputs_hash,
    outputs_intact,
    read_record,
    record_document,
    utc_now,
    write_record,
)
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["trial"]


def _table() -> dict[str, tuple[Callable[..., Inputs], Callable[..., Any]]]:
    """Stage name -> ``(inputs, run)`` (imported when the command runs)."""
    from pinning.cli import trial_judge as j
    from pinning.cli import trial_stages as s

    return {"audit": (s.audit_inputs, s.run_audit), "lock": (s.lock_inputs, s.run_lock),
            "build": (s.build_inputs, s.run_build), "accept": (j.accept_inputs, j.run_accept),
            "cost": (j.cost_inputs, j.run_cost), "report": (j.report_inputs, j.run_report)}


@click.command(short_help="Run the migration method for this project: audit to report.")
@click.option("--until", type=click.Choice(STAGES), metavar="STAGE",
              help="Stop after this stage (" + ", ".join(STAGES) + ").")
@click.option("--from", "start", type=click.Choice(STAGES), metavar="STAGE",
              help="Start at this stage, using the recorded outputs of the earlier ones "
                   "(exit 2 when they are missing).")
@click.option("--force", is_flag=True,
              help="Run every stage again, even those whose inputs did not change.")
@click.option("--sign", "sign_key", metavar="KEY", callback=path_given,
              help="Sign each image built (pin build --sign KEY); without it images are "
                   "built unsigned.")
@click.option("-o", "--output", callback=output_path, metavar="RECORD",
              help="Also write the run's record (JSON) here; it is always written to "
                   ".pin/trial/record.json in the project folder.")
@format_option
@click.pass_context
def trial(ctx: click.Context, until: str | None, start: str | None, force: bool,
          sign_key: str | None, output: str | None, fmt: str) -> None:
    """Run the migration method for the project of pin.toml, stage by stage.

    \b
      audit   pin audit of the project folder, for the candidate (AMD) targets' GPU
      lock    pin lock: every target into pin.lock
      build   pin build (and sign, with --sign) per target with a registry, where a
              container engine answers
      accept  per target: pin accept run where this host has the target's GPU, else
              pin accept judge of the results [results.NAME] records
      cost    pin cost of the accepted results with [cost]: port or stay
      report  pin report (HTML and Markdown) from all of the above

    Each stage says what it did: ran, skipped (and why: no registry configured, no
    engine, no results recorded, no prices), unchanged (its inputs hash -- the project
    file sections it reads, its input files, earlier stages' outputs, pin's version --
    equals the recorded one and its outputs are intact) or failed (the command's error).
    Outputs go to .pin/trial/ in the project folder (pin.lock to the folder itself); the
    run is one JSON record, .pin/trial/record.json (--format json prints it).

    The verdict is pin cost's, after what was not checked (judged results pin did not
    run are not evidence about a GPU). Exit 0 when no stage failed (a stay verdict, an
    audit finding blocked items or a failed gate are answers, not failures), else the
    failed stage's exit code; 2 for no project file or --from without the earlier
    stages' recorded outputs.
    """
    from pinning.cli.project import loaded
    from pinning.cli.trial_stages import Trial

    first, last = _bounds(start, until)
    project = loaded(ctx)
    if project is None:
        raise UsageError("pin trial runs the project described by pin.toml, and none was "
                         "found from this folder up.",
                         hint="Write one with `pin init`, or name its folder with --project.")
    trial_run = Trial(project=project, sign_key=_absolute(sign_key))
    _refuse_output_over_inputs(trial_run, output)
    old = read_record(trial_run.folder)
    _make_folder(trial_run.folder)
    kept = _kept(old, first, trial_run.folder)
    say = _printer(fmt)
    done, code = _run_stages(trial_run, old, kept, STAGES[first:last + 1], force, say)
    doc = _finish(trial_run, done, code, output, _carried(old, last, code))
    _say_verdict(doc, say, trial_run.folder)
    if fmt == "json":
        emit(doc)
    if code:
        ctx.exit(code)


def _refuse_output_over_inputs(trial_run: Any, output: str | None) -> None:
    """Raise ``UsageError`` (exit 2) when ``-o RECORD`` names the project file, a file a
    stage reads or one the trial writes (other than the record itself).
    """
    if output is None or output == "-":
        return
    from pinning.cli.trial_judge import COST_OUT, REPORTS, accepted
    from pinning.cli.trial_stages import AUDIT_OUT

    folder = trial_run.folder
    names = {n for inputs, _ in _table().values() for n in inputs(trial_run).files}
    names |= {COST_OUT, AUDIT_OUT, *REPORTS, *(accepted(t) for t in trial_run.targets())}
    taken = {(folder / n).resolve() for n in names} | {trial_run.project.path.resolve()}
    if cli_path(output).resolve() in taken:
        raise UsageError(f"-o {printable(output, newlines=False)}: a file the trial reads "
                         "or writes; the record would replace it.",
                         hint="Name another file, e.g. -o trial-record.json.")


def _make_folder(folder: Path) -> None:
    """Create ``.pin/trial`` in the project folder; ``UsageError`` (exit 2) when it
    cannot be.
    """
    from pinning.cli.trial_record import TRIAL_DIR

    try:
        (folder / TRIAL_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{folder / TRIAL_DIR} cannot be created ({exc.strerror or exc}).",
                         hint="Make the project folder writable.") from exc


def _absolute(path: str | None) -> str | None:
    """``--sign KEY`` as an absolute path (the stages run in the project folder)."""
    return str(cli_path(path).resolve()) if path is not None else None


def _bounds(start: str | None, until: str | None) -> tuple[int, int]:
    """The indexes of the first and last stage to run; ``UsageError`` (exit 2) when
    ``--from`` comes after ``--until``.
    """
    first = STAGES.index(start) if start else 0
    last = STAGES.index(until) if until else len(STAGES) - 1
    if first > last:
        raise UsageError(f"--from {start} comes after --until {until}: no stage to run "
                         f"(stages in order: {', '.join(STAGES)}).")
    return first, last


def _later_map(stages: list[StageRecord]) -> dict[str, str]:
    """Path -> the sha256 the last of ``stages`` that wrote it recorded."""
    out: dict[str, str] = {}
    for stage in stages:
        for item in stage.outputs:
            out[item["path"]] = item["sha256"]
    return out


def _kept(old: dict[str, StageRecord], first: int, folder: Path) -> list[StageRecord]:
    """The recorded stages before ``--from``, checked: each must be in the record and
    its outputs intact. Raises ``UsageError`` (exit 2) naming the stage to run first.
    """
    kept = [old[name] for name in STAGES[:first] if name in old]
    later = _later_map(kept)
    for name in STAGES[:first]:
        stage = old.get(name)
        if stage is None or stage.status == "failed" or not outputs_intact(stage, folder,
                                                                          later):
            what = "has no record of" if stage is None or stage.status == "failed" else (
                "finds the outputs changed or missing of")
            raise UsageError(f"--from {STAGES[first]}: {RECORD} {what} the {name} stage.",
                             hint=f"Run `pin trial --until {name}` first (or without --from).")
    return kept


def _carried(old: dict[str, StageRecord], last: int, code: int) -> list[StageRecord]:
    """The recorded stages after ``--until``, kept as the last run that reached them
    recorded them, so that a later run (or ``--from``) finds them; none after a failure.
    Their inputs hashes still decide whether a later run repeats them.
    """
    if code:
        return []
    return [old[name] for name in STAGES[last + 1:] if name in old]


def _run_stages(trial_run: Any, old: dict[str, StageRecord], kept: list[StageRecord],
                names: tuple[str, ...], force: bool,
                say: Callable[[str], None]) -> tuple[list[StageRecord], int]:
    """Run ``names`` in order after the ``kept`` stages; stop at a failed stage. Returns
    every stage's record and the exit code (the failed stage's, else 0).
    """
    table = _table()
    done = list(kept)
    later = _later_map([old[n] for n in STAGES if n in old])
    for name in names:
        inputs, run = table[name]
        known = _later_map(done)
        stage = _one(trial_run, name, inputs(trial_run), run, old.get(name), known, later,
                     force)
        done.append(stage)
        for line in _stage_lines(stage):
            say(line)
        if stage.status == "failed":
            return done, stage.exit_code or 1
    return done, 0


def _one(trial_run: Any, name: str, inputs: Inputs, run: Callable[..., Any],
         prev: StageRecord | None, known: dict[str, str], later: dict[str, str],
         force: bool) -> StageRecord:
    """One stage: unchanged when its inputs hash and outputs are as recorded (unless
    ``force``), else run. ``known`` are the earlier stages' output hashes this run.
    """
    folder = trial_run.folder
    digest = inputs_hash(name, inputs, folder, known)
    if (not force and prev is not None and prev.status in ("ran", "unchanged")
            and prev.inputs_hash == digest and outputs_intact(prev, folder, later)):
        return StageRecord(name, "unchanged", f"inputs as at {prev.at}", prev.commands,
                           digest, prev.outputs, prev.notes, prev.at)
    if sys.stderr.isatty():
        click.echo(f"pin trial: {name}...", err=True)
    outcome = run(trial_run)
    outputs = [{"path": p, "sha256": file_sha256(folder / p) or ""} for p in outcome.outputs]
    return StageRecord(name, outcome.status, outcome.reason,
                       [c.as_json() for c in outcome.commands], digest, outputs,
                       outcome.notes, utc_now(), outcome.exit_code, outcome.error)


def _stage_lines(stage: StageRecord) -> list[str]:
    """What a stage prints: its status (and why), a line per note, the files written."""
    head = f"{stage.name}: {stage.status}" + (f" ({stage.reason})" if stage.reason else "")
    lines = [head] + [f"  {note}" for note in stage.notes]
    if stage.status == "failed" and stage.error:
        lines.append(f"  error: {stage.error}")
    if stage.outputs and stage.status != "failed":
        verb = "kept" if stage.status == "unchanged" else "wrote"
        lines.append(f"  {verb}: " + ", ".join(o["path"] for o in stage.outputs))
    return lines


def _finish(trial_run: Any, done: list[StageRecord], code: int, output: str | None,
            carried: list[StageRecord]) -> dict[str, Any]:
    """The record of the run, written to ``.pin/trial/record.json`` (and ``-o``): the
    stages ``done`` then those ``carried`` past ``--until``; the verdict is this run's.
    """
    from pinning.cli.trial_judge import verdict

    project = trial_run.project
    about = {"name": project.model.project.name, "file": project.path.name}
    found = verdict(trial_run, {s.name: s for s in done})
    doc = record_document(about, done + carried, found, code)
    write_record(trial_run.folder, doc, cli_path(output) if output else None)
    return doc


def _say_verdict(doc: dict[str, Any], say: Callable[[str], None], folder: Path) -> None:
    """Print what was not checked, then the verdict, the report and the record (paths as
    the working folder reaches them; the record keeps them relative to ``folder``).
    """
    import os

    def shown(path: str | Path) -> str:
        return os.path.relpath(os.path.abspath(folder / path)).replace(os.sep, "/")

    found = doc["verdict"]
    if found["not-checked"]:
        say("Not checked:")
        for line in found["not-checked"]:
            say(f"  - {line}")
    if found["decision"] is None:
        say(f"Verdict: none ({found['why']})")
    else:
        say(f"Verdict (pin cost): {found['decision']}")
        for line in found["reasons"]:
            say(f"  - {line}")
    for line in found["caveats"]:
        say(f"  caveat: {line}")
    if found["report"]:
        say(f"Report: {shown(found['report'])}")
    say(f"Record: {shown(RECORD)}")


def _printer(fmt: str) -> Callable[[str], None]:
    """Print a line: to standard output, or with ``--format json`` to standard error
    (standard output then holds the envelope alone).
    """
    def say(line: str) -> None:
        click.echo(printable(line, newlines=False), err=fmt == "json")
    return say
