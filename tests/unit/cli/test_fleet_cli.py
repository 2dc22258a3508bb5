"""pin fleet verify as a user runs it: exit codes, the envelope, the text summary, bad
arguments."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pinning.lockfile.io import write_lock
from pinning.matrix.load import Matrix
from pinning.verify.freeze import freeze
from tests.support.cli import json_result, pin
from tests.support.fleetgen import base_snapshot
from tests.support.hosts import recorded
from tests.support.locks import lock_for
from tests.support.paths import ROOT

ENVELOPE = json.loads((ROOT / "schemas" / "envelope.schema.json").read_text())
REPORT = json.loads((ROOT / "schemas" / "fleet-report.schema.json").read_text())


@pytest.fixture(scope="module")
def lock_file(matrix: Matrix, tmp_path_factory: pytest.TempPathFactory) -> str:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    frozen, _, _ = freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="h")
    path = tmp_path_factory.mktemp("lock") / "pin.lock"
    write_lock(frozen, path)
    return str(path)


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return base_snapshot()


def fleet(tmp_path: Path, base: dict[str, Any], *, drift: int = 0,
          broken: int = 0, good: int = 2) -> Path:
    """A folder: ``good`` matching hosts, ``drift`` with another kernel, ``broken`` cut."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    for i in range(good):
        (folder / f"ok-{i}.json").write_text(json.dumps(base))
    changed = copy.deepcopy(base)
    changed["os"]["kernel"]["value"] = "6.8.0-90-generic"
    for i in range(drift):
        (folder / f"drift-{i}.json").write_text(json.dumps(changed))
    for i in range(broken):
        (folder / f"broken-{i}.json").write_text(json.dumps(base)[:100])
    return folder


def test_all_match_exits_0_with_a_summary(lock_file: str, base: dict[str, Any],
                                          tmp_path: Path) -> None:
    r = pin("fleet", "verify", lock_file, str(fleet(tmp_path, base)))
    assert r.returncode == 0, r.stderr
    assert "2 host(s): 2 match, 0 drift, 0 unreadable." in r.stdout
    assert "ok-0" not in r.stdout  # matches only with -v
    r = pin("fleet", "verify", lock_file, str(tmp_path / "snapshots"), "-v")
    assert r.returncode == 0 and "ok-0" in r.stdout and "MATCH" in r.stdout


def test_drift_exits_6_naming_host_and_reason(lock_file: str, base: dict[str, Any],
                                              tmp_path: Path) -> None:
    r = pin("fleet", "verify", lock_file, str(fleet(tmp_path, base, drift=2, broken=1)))
    assert r.returncode == 6, r.stderr
    lines = [line.split(None, 2) for line in r.stdout.splitlines()]
    assert ["drift-0", "DRIFT", "pin: kernel 6.8.0-85-generic!=6.8.0-90-generic"] in lines
    assert any(line[:2] == ["broken-0", "UNREADABLE"] and line[2].startswith("Host snapshot ")
               for line in lines)
    assert "2 match, 2 drift, 1 unreadable" in r.stdout
    assert "Top drifting facts: kernel (2)" in r.stdout
    assert "2 of 5 host(s) drifted" in r.stderr


def test_only_unreadable_exits_7(lock_file: str, base: dict[str, Any],
                                 tmp_path: Path) -> None:
    r = pin("fleet", "verify", lock_file, str(fleet(tmp_path, base, broken=1)))
    assert r.returncode == 7, r.stderr
    assert "1 of 3 snapshot(s) could not be read" in r.stderr


def test_json_is_the_envelope_with_the_fleet_report(lock_file: str, base: dict[str, Any],
                                                    tmp_path: Path) -> None:
    r = pin("fleet", "verify", lock_file, str(fleet(tmp_path, base, drift=1)),
            "--format", "json")
    assert r.returncode == 6
    env = json.loads(r.stdout)
    jsonschema.validate(env, ENVELOPE)
    assert env["command"] == "fleet verify" and env["error"]["code"] == 6
    result = json_result(r)
    jsonschema.validate(result, REPORT)
    assert result["summary"]["total"] == 3 and result["summary"]["drift"] == 1
    assert [h["name"] for h in result["hosts"]] == ["drift-0", "ok-0", "ok-1"]
    assert result["hosts"][0]["reasons"] == ["kernel 6.8.0-85-generic!=6.8.0-90-generic"]
    assert r.stderr.count("\n") <= 3  # no progress lines with --format json


def test_json_lines_from_standard_input(lock_file: str, base: dict[str, Any]) -> None:
    lines = "\n".join(json.dumps(base) for _ in range(3)) + "\n"
    r = subprocess.run([sys.executable, "-m", "pinning", "fleet", "verify", lock_file,
                        "--from", "-", "--format", "json"], input=lines,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    result = json_result(r)
    assert [h["name"] for h in result["hosts"]] == ["stdin:1", "stdin:2", "stdin:3"]


@pytest.mark.parametrize("args, says", [
    (["{dir}", "--from", "{dir}/x.jsonl"], "either SNAPSHOT_DIR or --from FILE.jsonl, not both"),
    ([], "either SNAPSHOT_DIR or --from FILE.jsonl."),
    (["{dir}/missing"], "SNAPSHOT_DIR {dir}/missing: no such folder"),
    (["{dir}"], "no *.json snapshot in it"),
    (["--from", "{dir}/none.jsonl"], "--from {dir}/none.jsonl: cannot be read"),
    (["--from", "/dev/null"], "--from /dev/null: no snapshot in it"),
])
def test_bad_arguments_exit_2(lock_file: str, tmp_path: Path, args: list[str],
                              says: str) -> None:
    filled = [a.replace("{dir}", str(tmp_path)) for a in args]
    r = pin("fleet", "verify", lock_file, *filled)
    assert r.returncode == 2, r.stderr
    assert says.replace("{dir}", str(tmp_path)) in r.stderr


def test_a_bad_lock_exits_5(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{}")
    r = pin("fleet", "verify", str(tmp_path / "missing.lock"), str(tmp_path))
    assert r.returncode == 5, r.stderr


def test_a_file_name_that_is_not_utf8_is_escaped_in_strict_json(
        lock_file: str, base: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "snapshots"
    folder.mkdir()
    (folder / "node\udcff.json").write_text(json.dumps(base))  # the byte 0xff in the name
    done = subprocess.run([sys.executable, "-m", "pinning", "fleet", "verify", lock_file,
                           str(folder), "--format", "json"], capture_output=True)
    text = done.stdout.decode("utf-8")  # strict: no lone surrogate was written
    (host,) = json.loads(text)["result"]["hosts"]
    assert host["name"] == "node\\xff" and host["result"] == "match"


def test_a_file_given_as_the_folder_is_named_as_not_a_folder(lock_file: str,
                                                             tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("{}")
    r = pin("fleet", "verify", lock_file, str(tmp_path / "s.json"))
    assert r.returncode == 2 and "not a folder" in r.stderr and "--from" in r.stderr
