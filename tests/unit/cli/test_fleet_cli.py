"""pin fleet verify as a user runs it: exit codes, the envelope, the text summary, bad
arguments."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest

from pinning.errors import PinError, UsageError
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


def mixed(tmp_path: Path, base: dict[str, Any]) -> Path:
    """A folder with every kind of host: matching, drifting (two reasons), a fact the
    snapshot could not read (``cannot-compare``), unreadable (cut short, wrong type)."""
    folder = fleet(tmp_path, base, drift=2, broken=1)
    unknown = copy.deepcopy(base)
    unknown["gpus"][0]["vbios"] = {"reason": "not readable"}
    (folder / "unknown-0.json").write_text(json.dumps(unknown))
    typed = json.dumps(base).replace('"live": false', '"live": "false"')
    (folder / "typed-0.json").write_text(typed)
    return folder


def test_streamed_json_is_the_whole_report(lock_file: str, base: dict[str, Any],
                                           matrix: Matrix, tmp_path: Path) -> None:
    """Issue 33 §4: the streamed envelope parses to exactly the report built in memory."""
    from pinning.fleet.batch import FleetVerifier, folder_files, folder_inputs
    from pinning.lockfile.io import read_lock

    folder = mixed(tmp_path, base)
    r = pin("fleet", "verify", lock_file, str(folder), "--format", "json")
    assert r.returncode == 6, r.stderr
    env = json.loads(r.stdout)
    jsonschema.validate(env, ENVELOPE)
    result = json_result(r)
    jsonschema.validate(result, REPORT)
    whole = FleetVerifier(read_lock(Path(lock_file)), matrix, lock_name=lock_file).run(
        folder_inputs(folder_files(folder)))
    assert result == whole.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert [h["result"] for h in result["hosts"]] == [
        "unreadable", "drift", "drift", "match", "match", "unreadable", "match"]
    assert result["hosts"][6]["counts"]["cannot-compare"] >= 1
    assert env["error"] == {"code": 6, "kind": "DriftError",
                            "message": "2 of 7 host(s) drifted from " + lock_file
                                       + "; 2 snapshot(s) could not be read.",
                            "hint": env["error"]["hint"]}
    lines = r.stdout.splitlines()  # one host a line, as it was verified
    assert sum(line.startswith('      {"name": ') for line in lines) == 7


def test_text_streams_hosts_in_order_then_the_summary(lock_file: str, base: dict[str, Any],
                                                      tmp_path: Path) -> None:
    r = pin("fleet", "verify", lock_file, str(mixed(tmp_path, base)), "-v")
    assert r.returncode == 6, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:7]] == [
        ["broken-0", "UNREADABLE"], ["drift-0", "DRIFT"], ["drift-1", "DRIFT"],
        ["ok-0", "MATCH"], ["ok-1", "MATCH"], ["typed-0", "UNREADABLE"], ["unknown-0", "MATCH"]]
    assert all(line[9:11] == "  " and line[11] != " " for line in lines[:7])  # one column
    assert lines[7].endswith(": 7 host(s): 3 match, 2 drift, 2 unreadable.")
    assert lines[8:] == ["Top drifting facts: kernel (2)", "Top reasons:",
                         "       2  kernel 6.8.0-85-generic!=6.8.0-90-generic"]


def test_json_lines_text_leaves_room_for_six_digit_lines(lock_file: str,
                                                         base: dict[str, Any]) -> None:
    broken = json.dumps(base)[:50]
    lines = "\n".join([json.dumps(base), broken]) + "\n"
    r = subprocess.run([sys.executable, "-m", "pinning", "fleet", "verify", lock_file,
                        "--from", "-"], input=lines, capture_output=True, text=True)
    assert r.returncode == 7, r.stderr
    assert r.stdout.startswith("stdin:2" + " " * 5 + "  UNREADABLE  Host snapshot stdin line 2")


class _Broken(Exception):
    pass


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("failure, code", [
    (UsageError("--from stdin: cannot be read after line 2 (Input/output error)."), 2),
    (_Broken("boom"), 1),
])
def test_a_failure_mid_stream_closes_the_document(base: dict[str, Any], matrix: Matrix,
                                                  lock_file: str, fmt: str,
                                                  failure: Exception, code: int) -> None:
    """The input fails after two hosts: JSON is still one whole envelope (the hosts so far,
    their summary, ok false and the error); text has the hosts so far and no summary."""
    from pinning.cli.envelope import FORMAT_KEY
    from pinning.cli.fleet import _write_all
    from pinning.cli.fleet_stream import JsonOut, TextOut
    from pinning.fleet.batch import FleetTally, FleetVerifier, SnapshotInput
    from pinning.lockfile.io import read_lock

    def inputs() -> Iterator[SnapshotInput]:
        yield SnapshotInput("a", "in", 1, data=json.dumps(base).encode())
        yield SnapshotInput("b", "in", 2, error="Host snapshot in line 2: not JSON.")
        raise failure

    lock = read_lock(Path(lock_file))
    head = {"fleet-version": 1, "lock": "pin.lock", "lock-hash": lock.content_hash,
            "strict": False}
    parts: list[str] = []
    tally = FleetTally()
    hosts = FleetVerifier(lock, matrix, lock_name="pin.lock").stream(inputs(), tally)
    ctx = click.Context(click.Command("verify"))
    ctx.meta[FORMAT_KEY] = fmt
    out = JsonOut(parts.append, ctx, "fleet verify", head) if fmt == "json" \
        else TextOut(parts.append, 4, verbose=True)
    with pytest.raises(PinError) as raised:
        _write_all(hosts, tally, out, head, "--from -")
    assert raised.value.exit_code == code
    if fmt == "text":
        assert "".join(parts).splitlines() == [
            "a     MATCH", "b     UNREADABLE  Host snapshot in line 2: not JSON."]
        return
    assert ctx.meta[FORMAT_KEY] != "json"  # the pin group prints no second envelope
    env = json.loads("".join(parts))
    jsonschema.validate(env, ENVELOPE)
    jsonschema.validate(env["result"], REPORT)
    assert (env["ok"], env["exit-code"], env["error"]["code"]) == (False, code, code)
    assert env["error"]["message"] == raised.value.message
    assert [h["name"] for h in env["result"]["hosts"]] == ["a", "b"]
    assert env["result"]["summary"]["total"] == 2
