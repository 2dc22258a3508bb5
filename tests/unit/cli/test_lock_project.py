"""``pin lock`` (the group without a subcommand): every target of the project file into one
lock-version 2 ``pin.lock``, each target exactly as ``pin resolve --target NAME`` makes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pinning.lockfile.frozen import frozen_fields
from pinning.lockfile.io import amend, read_lock, read_lock_at, read_locks, write_lock
from pinning.lockfile.status import status_value
from tests.support.paths import ROOT
from tests.support.projectcli import pin_in as pin

PROJECT = """\
[project]
name = "demo"
frameworks = ["pytorch==2.13.0"]

[targets.current]
gpu = "h200"

[targets.candidate]
gpu = "mi300x"
"""




@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pin.toml").write_text(PROJECT)
    return tmp_path


def test_without_a_project_file_exit_2_says_what_to_do(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(tmp_path, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 2
    assert "pin init" in r.stderr and "pin resolve" in r.stderr
    assert "pin lock --help" in r.stderr and not (tmp_path / "pin.lock").exists()


def test_help_still_lists_the_subcommands(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(tmp_path, "lock", "--help", monkeypatch=monkeypatch)
    assert r.exit_code == 0
    for sub in ("show", "validate", "upgrade", "migrate", "packages", "export"):
        assert f"  {sub} " in r.stdout


def test_every_target_is_what_pin_resolve_target_makes(project: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(project, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("current: H200 · CUDA ")
    assert "validated [new]" in r.stdout and "Wrote pin.lock" in r.stdout
    raw, multi, views = read_locks(project / "pin.lock")
    assert multi is not None and multi.project == "demo" and list(views) == ["current",
                                                                            "candidate"]
    for name in views:
        assert pin(project, "resolve", "--target", name, "-o", f"{name}.lock",
                   monkeypatch=monkeypatch).exit_code == 0
        assert views[name].content_hash == read_lock(project / f"{name}.lock").content_hash
    again = pin(project, "lock", monkeypatch=monkeypatch)
    assert again.exit_code == 0 and "pin.lock: unchanged" in again.stdout
    assert (project / "pin.lock").read_bytes() == raw


def test_target_re_resolves_one_section_and_keeps_the_others(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert pin(project, "lock", monkeypatch=monkeypatch).exit_code == 0
    _, _, before = read_locks(project / "pin.lock")
    (project / "pin.toml").write_text(PROJECT.replace('gpu = "h200"', 'gpu = "h200"\n'
                                                      'frameworks = ["pytorch==2.12.0"]')
                                      .replace('gpu = "mi300x"', 'gpu = "mi300x"\nrocm = "7.2.0"\n'
                                               'frameworks = ["pytorch==2.9.1"]'))
    r = pin(project, "lock", "--target", "candidate", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    _, _, after = read_locks(project / "pin.lock")
    assert after["current"].content_hash == before["current"].content_hash  # kept
    assert after["candidate"].runtime.version.value == "7.2.0"
    assert "[kept]" in r.stdout and "[updated]" in r.stdout
    bad = pin(project, "lock", "--target", "candidat", monkeypatch=monkeypatch)
    assert bad.exit_code == 2 and "Did you mean 'candidate'" in bad.stderr


def test_a_target_the_project_dropped_needs_force(project: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert pin(project, "lock", monkeypatch=monkeypatch).exit_code == 0
    (project / "pin.toml").write_text(PROJECT.split("[targets.candidate]")[0])
    before = (project / "pin.lock").read_bytes()
    r = pin(project, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "'candidate'" in r.stderr and "--force" in r.stderr
    assert (project / "pin.lock").read_bytes() == before
    assert pin(project, "lock", "--force", monkeypatch=monkeypatch).exit_code == 0
    assert list(read_locks(project / "pin.lock")[2]) == ["current"]


def test_frozen_host_values_are_kept_unless_force(project: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert pin(project, "lock", monkeypatch=monkeypatch).exit_code == 0
    read = read_lock_at(project / "pin.lock", "candidate")
    os_value = dict(read.lock.os.model_dump(mode="json", by_alias=True, exclude_none=True))
    os_value.update(value=(read.lock.os.allowed or ["ubuntu-24.04"])[0], origin="host")
    write_lock(amend(read.lock, os=os_value), project / "pin.lock", if_unchanged=read.raw,
               into=read)
    assert frozen_fields(read_lock(project / "pin.lock", "candidate")) == ["os"]
    r = pin(project, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "kept 1 frozen host value(s): os" in r.stdout
    assert frozen_fields(read_lock(project / "pin.lock", "candidate")) == ["os"]
    assert pin(project, "lock", "--force", monkeypatch=monkeypatch).exit_code == 0
    assert frozen_fields(read_lock(project / "pin.lock", "candidate")) == []


def test_a_single_target_lock_there_is_not_replaced(project: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert pin(project, "resolve", "--target", "current", monkeypatch=monkeypatch).exit_code == 0
    before = (project / "pin.lock").read_bytes()
    r = pin(project, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "pin lock migrate pin.lock" in r.stderr
    assert (project / "pin.lock").read_bytes() == before


def test_stdout_dry_run_and_output(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(project, "lock", "-o", "-", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and r.stdout.startswith("# pin lockfile (lock-version 2)")
    assert "Wrote the lock to standard output" in r.stderr
    dry = pin(project, "lock", "--dry-run", monkeypatch=monkeypatch)
    assert dry.exit_code == 0 and "nothing written" in dry.stdout
    assert not (project / "pin.lock").exists()
    (project / "out").mkdir()
    assert pin(project, "lock", "-o", "out/x.lock", monkeypatch=monkeypatch).exit_code == 0
    assert read_locks(project / "out" / "x.lock")[1] is not None
    both = pin(project, "lock", "-o", "-", "--format", "json", monkeypatch=monkeypatch)
    assert both.exit_code == 2


def test_json_and_packages_not_locked(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "requirements.txt").write_text("numpy==1.26.4\n")
    (project / "pin.toml").write_text(PROJECT.replace(
        'name = "demo"', 'name = "demo"\nrequirements = "requirements.txt"'))
    r = pin(project, "lock", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)
    jsonschema.validate(env, json.loads((ROOT / "schemas" / "envelope.schema.json").read_text()))
    assert env["command"] == "lock" and env["ok"] is True
    res = env["result"]
    assert res["file"] == "pin.lock" and res["written"] is True and res["changed"] is True
    _, _, views = read_locks(project / "pin.lock")
    for t in res["targets"]:
        assert t["content-hash"] == views[t["name"]].content_hash
        assert t["status"] == status_value(views[t["name"]].status) and t["changed"] is True
        assert t["packages"]["locked"] is False
        assert t["packages"]["run"] == (f"pin lock packages pin.lock --target {t['name']} "
                                        "-r requirements.txt")
    text = pin(project, "lock", monkeypatch=monkeypatch)
    assert ("  packages: not locked: set [project] indexes (with python and python-platform) "
            "in pin.toml for pin lock to lock them, or run pin lock packages pin.lock --target "
            "current -r requirements.txt") in text.stdout
    err = pin(project, "lock", "--target", "nope", "--format", "json", monkeypatch=monkeypatch)
    env = json.loads(err.stdout)
    assert err.exit_code == 2 and env["ok"] is False and env["command"] == "lock"


def test_a_hand_edited_section_is_named_and_pin_lock_force_writes_the_file_anew(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value edited by hand in one target's section: every command names that section
    (exit 5) and says how to recover; `pin lock --target NAME --force` still refuses (it
    would keep the other, unreadable sections), `pin lock --force` re-resolves every
    target and the file reads again.
    """
    assert pin(project, "lock", monkeypatch=monkeypatch).exit_code == 0
    lock = project / "pin.lock"
    text = lock.read_text()
    start = text.index("[targets.candidate]")
    edited = text[start:].replace('gpu = "mi300x"', 'gpu = "mi325x"', 1)
    lock.write_text(text[:start] + edited)
    shown = pin(project, "lock", "show", "pin.lock", monkeypatch=monkeypatch)
    assert shown.exit_code == 5
    assert "pin.lock [targets.candidate]: content-hash" in shown.output
    assert "`pin lock --force` re-resolves every target" in shown.output
    one = pin(project, "lock", "--target", "candidate", "--force", monkeypatch=monkeypatch)
    assert one.exit_code == 5
    assert pin(project, "lock", "--force", monkeypatch=monkeypatch).exit_code == 0
    assert pin(project, "lock", "validate", "pin.lock", monkeypatch=monkeypatch).exit_code == 0
