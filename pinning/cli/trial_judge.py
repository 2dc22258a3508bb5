"""The last stages of ``pin trial``: ``accept``, ``cost`` and ``report``, and the verdict.

Acceptance runs (``pin accept run``) only for a target whose GPU this host has; for the
others the recorded results the project file names are judged (``pin accept judge``), and a
target with neither is skipped, saying so. Judged results are not evidence about the
target's GPU (pin did not run them): the verdict says that first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinning.cli.trial_invoke import Invoked
from pinning.cli.trial_record import TRIAL_DIR, Inputs
from pinning.cli.trial_stages import AUDIT_OUT, LOCK, Outcome, Trial, failed

__all__ = ["accept_inputs", "cost_inputs", "report_inputs", "run_accept", "run_cost",
           "run_report", "verdict"]

COST_OUT = (TRIAL_DIR / "cost.json").as_posix()
_INLINE_ACCEPT = (TRIAL_DIR / "accept.toml").as_posix()
REPORTS = ((TRIAL_DIR / "report.html").as_posix(), (TRIAL_DIR / "report.md").as_posix())


def accepted(name: str) -> str:
    """The acceptance result of target ``name``, relative to the project folder."""
    return (TRIAL_DIR / f"accepted-{name}.json").as_posix()


def _accept_file(trial: Trial) -> str | None:
    """The gates file: the path ``accept`` names, or ``.pin/trial/accept.toml`` written
    from an inline ``[accept]`` table; ``None`` without one.
    """
    given = trial.project.model.accept
    if given is None:
        return None
    if isinstance(given, str):
        return trial.rel(given)
    import tomlkit

    from pinning.util.files import atomic_write_bytes

    data = given.model_dump(mode="json", by_alias=True, exclude_unset=True)
    path = trial.folder / _INLINE_ACCEPT
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, tomlkit.dumps(data).encode())
    return _INLINE_ACCEPT


def accept_inputs(trial: Trial) -> Inputs:
    """Acceptance reads the lock, the gates, each target's results and this host's GPUs."""
    model = trial.project.model
    files = [LOCK] + [trial.rel(f) for r in model.results.values() for f in r.files]
    if isinstance(model.accept, str):
        files.append(trial.rel(model.accept))
    gpus, _ = trial.host()
    return Inputs({"accept": trial.dump(model.accept), "results": trial.dump(model.results),
                   "gpus": {n: trial.gpu_id(n) for n in trial.targets()},
                   "host-gpus": sorted(gpus)}, files)


def _accept_argv(trial: Trial, name: str, gates: str) -> tuple[list[str], str] | str:
    """The command accepting target ``name`` and what it is, or why it is skipped."""
    gpus, shown = trial.host()
    out = accepted(name)
    common = ["--lock", LOCK, "--target", name, "-o", out, "--format", "json"]
    if trial.gpu_id(name) in gpus:
        venv = trial.folder / ".venv" / "bin" / "python"
        python = ["--python", ".venv/bin/python"] if venv.exists() else []
        return ["accept", "run", gates, *python, *common], "ran the gates on this host"
    results = trial.project.model.results.get(name)
    if results is None or not results.files:
        return (f"no results recorded for target {name} and this host is not one "
                f"(its GPU: {shown})")
    files = [trial.rel(f) for f in results.files]
    return (["accept", "judge", gates, "--from", *files, *common, "--unbound-ok"],
            f"judged {len(files)} recorded result file(s) pin did not run")


def run_accept(trial: Trial) -> Outcome:
    """Per target: ``pin accept run`` where this host's GPU is the target's (with the
    project's ``.venv/bin/python`` when it has one), else ``pin
    accept judge`` of its recorded results, else skipped. A gate that fails (exit 12) is
    the answer, not a failure of the trial: the result is written and the cost stage
    weighs it.
    """
    gates = _accept_file(trial)
    if gates is None:
        return Outcome("skipped", "no acceptance gates in the project file (accept = "
                                  "\"accept.toml\" or an inline [accept])")
    commands: list[Invoked] = []
    notes: list[str] = []
    outputs: list[str] = []
    for name in trial.targets():
        plan = _accept_argv(trial, name, gates)
        if isinstance(plan, str):
            notes.append(f"{name}: skipped: {plan}")
            continue
        argv, what = plan
        done = trial.pin(argv)
        commands.append(done)
        if done.exit_code not in (0, 12) or not (trial.folder / accepted(name)).is_file():
            return failed(done, commands, notes)
        result = (done.envelope or {}).get("result") or {}
        gate = "every gate held" if result.get("passed") else "a gate FAILED"
        why_not = evidence_gaps(trial.folder / accepted(name))
        notes.append(f"{name}: {what}: {gate}"
                     + (f"; not evidence about this target: {why_not[0]}" if why_not else ""))
        outputs.append(accepted(name))
    if not commands:
        return Outcome("skipped", "no target could be run or judged here", notes=notes)
    return Outcome("ran", None, commands, outputs, notes)


def _results_made(trial: Trial) -> list[str]:
    """The targets with an acceptance result in ``.pin/trial``, in file order."""
    return [n for n in trial.targets() if (trial.folder / accepted(n)).is_file()]


def cost_inputs(trial: Trial) -> Inputs:
    """Cost reads ``[cost]`` and the files it names, the results, the lock and the audit."""
    cost = trial.project.model.cost
    files = [LOCK, AUDIT_OUT] + [accepted(n) for n in trial.targets()]
    if cost is not None:
        files += [trial.rel(p) for p in (cost.prices, cost.migration, cost.effort,
                                         cost.waivers) if p is not None]
    return Inputs({"cost": trial.dump(cost), "targets": trial.targets()}, files)


def run_cost(trial: Trial) -> Outcome:
    """``pin cost`` of the accepted results (the platform in use first) with ``[cost]``
    (the project file's values are the command's defaults), the audit as the migration
    when ``[cost]`` prices its findings; skipped without prices or results.
    """
    cost = trial.project.model.cost
    if cost is None or cost.prices is None:
        return Outcome("skipped", "no prices file in the project file ([cost] prices)")
    made = _results_made(trial)
    if not made:
        return Outcome("skipped", "no acceptance results to price (see the accept stage)")
    argv = ["cost", *(accepted(n) for n in made)]
    for name in made:
        argv += ["--lock", LOCK, "--target", name]
    priced = (cost.effort is not None and cost.labour_usd_per_hour is not None) or (
        cost.migration_usd is not None)
    if cost.migration is None and priced and (trial.folder / AUDIT_OUT).is_file():
        argv += ["--migration", AUDIT_OUT]
    argv += ["-o", COST_OUT, "--format", "json"]
    done = trial.pin(argv)
    if done.exit_code:
        return failed(done, [done], [])
    decision = ((done.envelope or {}).get("result") or {}).get("verdict") or {}
    note = (f"verdict: {decision.get('decision')}" if decision
            else "one result: cost per million tokens only, no verdict")
    return Outcome("ran", None, [done], [COST_OUT], [note])


def report_inputs(trial: Trial) -> Inputs:
    """The report reads the lock, the audit, the results and the cost report."""
    files = [LOCK, AUDIT_OUT, COST_OUT] + [accepted(n) for n in trial.targets()]
    return Inputs({"project": trial.project.model.project.name, "targets": trial.targets()},
                  files)


def run_report(trial: Trial) -> Outcome:
    """``pin report`` (HTML, then Markdown) from what the earlier stages wrote; every
    input is optional, a section without one says "not given".
    """
    argv: list[str] = []
    targets = trial.targets()
    if (trial.folder / LOCK).is_file() and targets:
        argv += ["--lock", LOCK, "--target", targets[-1]]
    for flag, path in (("--audit", AUDIT_OUT), ("--cost", COST_OUT)):
        argv += [flag, path] if (trial.folder / path).is_file() else []
    for name in _results_made(trial):
        argv += ["--accept", accepted(name)]
    commands: list[Invoked] = []
    for out, fmt in zip(REPORTS, ("html", "md"), strict=True):
        done = trial.pin(["report", *argv, "--format", fmt, "-o", out])
        commands.append(done)
        if done.exit_code:
            return failed(done, commands, [])
    return Outcome("ran", None, commands, list(REPORTS), [])


def evidence_gaps(path: Path) -> list[str]:
    """Why the acceptance result at ``path`` is not evidence about its target's stack, one
    sentence each, differences first (:func:`pinning.accept.result.binding_problems`),
    then the GPU-stack layers pin did not verify; ``[]`` when it is bound and verified, or
    the file cannot be read (the stage that wrote it said so). Never raises.
    """
    from pydantic import ValidationError

    from pinning.accept.result import AcceptanceResult, binding_problems, unverified_stack
    from pinning.errors import PinError
    from pinning.util.jsonread import load_json

    try:
        result = AcceptanceResult.model_validate(
            load_json(path.read_bytes(), PinError, label=path.name))
    except (OSError, PinError, ValidationError):
        return []
    return binding_problems(result) + unverified_stack(result)


def verdict(trial: Trial, stages: dict[str, Any]) -> dict[str, Any]:
    """The trial's verdict: ``not-checked`` (what the run did not check, said first),
    ``decision`` (pin cost's ``port`` / ``stay`` / ``inconclusive``, or ``None`` with
    ``why``), ``reasons`` and ``caveats`` from the cost report, and the ``report``'s path.
    ``stages`` maps a stage name to its record.
    """
    not_checked: list[str] = []
    what = {"build": "no image built or signed", "accept": "no acceptance result"}
    for name in ("lock", "build", "accept"):
        stage = stages.get(name)
        for note in getattr(stage, "notes", []):
            target, _, rest = note.partition(": ")
            if name == "lock":
                _, sep, packages = rest.partition("; Python packages not locked")
                if sep:
                    not_checked.append(f"{target}: Python packages not locked{packages}")
            elif rest.startswith("skipped: "):
                not_checked.append(f"{target}: {what[name]} ({rest.removeprefix('skipped: ')})")
            elif name == "accept":
                not_checked += [f"{target}: {gap}" for gap in
                                evidence_gaps(trial.folder / accepted(target))]
    out: dict[str, Any] = {"not-checked": not_checked, "decision": None, "why": None,
                           "reasons": [], "caveats": [], "report": None}
    report = stages.get("report")
    if report is not None and report.status in ("ran", "unchanged"):
        out["report"] = REPORTS[0]
    cost = stages.get("cost")
    if cost is None or cost.status not in ("ran", "unchanged"):
        out["why"] = ("the cost stage did not run" + (
            f": {cost.reason}" if cost is not None and cost.reason
            else " (stopped before it: --until, or a failed stage)" if cost is None else ""))
        return out
    from pinning.errors import PinError
    from pinning.util.jsonread import load_json

    try:
        doc = load_json((trial.folder / COST_OUT).read_bytes(), PinError, label=COST_OUT)
    except (OSError, PinError):
        out["why"] = f"{COST_OUT} cannot be read"
        return out
    found = doc.get("verdict") or {}
    out["decision"] = found.get("decision")
    out["reasons"] = [r.get("text") for r in found.get("reasons", [])]
    out["caveats"] = list(doc.get("caveats", []))
    if out["decision"] is None:
        out["why"] = "pin cost priced one result: nothing to compare"
    return out
