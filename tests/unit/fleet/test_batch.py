"""pin fleet verify's engine: per host exactly what pin verify finds, from a folder or JSON
Lines (standard input too), an unreadable snapshot as that host's result, the summary."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import ProbeError, UsageError
from pinning.fleet.batch import (
    FleetVerifier,
    folder_files,
    folder_inputs,
    jsonl_inputs,
)
from pinning.fleet.models import FleetReport
from pinning.fleet.reason import drift_word
from pinning.guards.view import EnvView
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe import snapshot
from pinning.probe.models import HostFacts
from pinning.probe.snapshot import parse_snapshot
from pinning.util.versions import MAX_NUMBER_DIGITS, MAX_VERSION_CHARS, version_fields_problem
from pinning.verify.freeze import freeze
from pinning.verify.report import verify
from pinning.verify.rulekey import rule_key
from tests.support.fleetgen import DRIFTS, base_snapshot, envelope, generate, write_folder
from tests.support.hosts import recorded
from tests.support.locks import lock_for

Snapshot = dict[str, Any]


@pytest.fixture(scope="module")
def unfrozen(matrix: Matrix) -> Lockfile:
    return lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")


@pytest.fixture(scope="module")
def frozen(matrix: Matrix, unfrozen: Lockfile) -> Lockfile:
    lock, found, _ = freeze(unfrozen, recorded("mi300x-rocm7.1"), matrix, host_label="h")
    assert found == []
    return lock


@pytest.fixture(scope="module")
def base() -> Snapshot:
    return base_snapshot()


def facts_of(data: Snapshot) -> HostFacts:
    return parse_snapshot(json.dumps(data).encode(), "test")


def varied(base: Snapshot) -> list[Snapshot]:
    """Every drift alone (several seeds), pairs of them, and some hosts beyond the
    generator: no AMD software, no GPUs, no Python packages, an inbox driver."""
    import random

    out = [copy.deepcopy(base)]
    for seed in range(3):
        for name, change in sorted(DRIFTS.items()):
            s = copy.deepcopy(base)
            change(s, random.Random(f"{seed}{name}"))
            out.append(s)
    out += [json.loads(text) for _, text in generate(base, 30, seed=5, drift=1.0, envelopes=0)]
    no_amd = copy.deepcopy(base)
    del no_amd["amd"]
    no_gpus = copy.deepcopy(base)
    no_gpus["gpus"] = []
    no_python = copy.deepcopy(base)
    no_python["python"] = {"reason": "no site-packages found"}
    inbox = copy.deepcopy(base)
    inbox["amd"]["driver-kind"] = "inbox"
    return [*out, no_amd, no_gpus, no_python, inbox]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("which", ["frozen", "unfrozen"])
def test_each_host_gets_exactly_what_verify_reports(
        which: str, strict: bool, base: Snapshot, matrix: Matrix,
        request: pytest.FixtureRequest) -> None:
    lock: Lockfile = request.getfixturevalue(which)
    fleet = FleetVerifier(lock, matrix, lock_name="pin.lock", strict=strict)
    results = set()
    for i, data in enumerate(varied(base) * 2):  # twice: the second pass hits the memories
        facts = facts_of(data)
        want = verify(lock, facts, matrix, lock_name="pin.lock", host_name=f"h{i}",
                      strict=strict)
        got = fleet.report(facts, f"h{i}")
        assert got == want
        assert got.model_dump(mode="json") == want.model_dump(mode="json")
        out = fleet.outcome(facts)
        assert out.result == want.result
        assert dict(out.counts) == want.counts
        assert out.reasons == tuple(dict.fromkeys(drift_word(f) for f in want.drift))
        results.add(want.result)
    assert "drift" in results
    assert "match" in results or (which, strict) == ("unfrozen", True)  # warnings drift


def test_memories_change_nothing(frozen: Lockfile, base: Snapshot, matrix: Matrix,
                                 tmp_path: Path) -> None:
    write_folder(tmp_path, generate(base, 80, seed=3, drift=0.5, unreadable=2))
    files = folder_files(tmp_path)
    runs = [FleetVerifier(frozen, matrix, lock_name="l", memo=m, views=v).run(
        folder_inputs(files)) for m, v in ((True, True), (False, False), (True, False))]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0].summary.unreadable == 2 and runs[0].summary.drift > 0


def test_folder_and_json_lines_agree(frozen: Lockfile, base: Snapshot, matrix: Matrix,
                                     tmp_path: Path) -> None:
    hosts = list(generate(base, 40, seed=11, drift=0.5, envelopes=0.3))
    write_folder(tmp_path / "dir", iter(hosts))
    lines = tmp_path / "fleet.jsonl"
    lines.write_text("".join(text + "\n" + ("\n" if i == 3 else "")  # a blank line: skipped
                             for i, (_, text) in enumerate(hosts)))
    fleet = FleetVerifier(frozen, matrix, lock_name="l")
    by_dir = fleet.run(folder_inputs(folder_files(tmp_path / "dir")))
    with lines.open("rb") as f:
        by_lines = fleet.run(jsonl_inputs(f, "fleet.jsonl"))
    assert [h.name for h in by_dir.hosts] == [name for name, _ in hosts]
    assert [h.line for h in by_lines.hosts] == [*range(1, 5), *range(6, 42)]
    assert by_lines.hosts[5].name == "fleet.jsonl:7"
    assert [(h.result, h.reasons, h.counts) for h in by_dir.hosts] == \
        [(h.result, h.reasons, h.counts) for h in by_lines.hosts]
    assert by_dir.summary == by_lines.summary
    drifting = [h for h in by_dir.hosts if h.result == "drift"]
    assert drifting and all(h.reason and h.reason.startswith("pin: ") for h in drifting)


def test_standard_input_is_json_lines(frozen: Lockfile, base: Snapshot,
                                      matrix: Matrix) -> None:
    changed = copy.deepcopy(base)
    changed["os"]["kernel"]["value"] = "6.8.0-90-generic"
    stream = io.BytesIO(b"".join(json.dumps(s).encode() + b"\n"
                                 for s in (base, envelope(changed), base)))
    report = FleetVerifier(frozen, matrix, lock_name="l").run(jsonl_inputs(stream, "stdin"))
    assert [(h.name, h.result) for h in report.hosts] == [
        ("stdin:1", "match"), ("stdin:2", "drift"), ("stdin:3", "match")]
    assert report.hosts[1].reasons == ["kernel 6.8.0-85-generic!=6.8.0-90-generic"]
    assert report.hosts[1].reason == "pin: kernel 6.8.0-85-generic!=6.8.0-90-generic"


def test_a_bad_snapshot_is_that_hosts_result(frozen: Lockfile, base: Snapshot,
                                             matrix: Matrix, tmp_path: Path) -> None:
    good = json.dumps(base)
    (tmp_path / "a.json").write_text(good)
    (tmp_path / "b.json").write_text(good[:200])  # cut short
    (tmp_path / "c.json").write_bytes(b"\xff\xfe")  # not UTF-8
    (tmp_path / "d.json").mkdir()  # not a file
    (tmp_path / "e.json").write_text(good.replace('"live": false', '"live": "no"'))
    (tmp_path / ".tmp.json").write_text("partial")  # a writer's temporary file: not read
    (tmp_path / "notes.txt").write_text("not a snapshot")
    report = FleetVerifier(frozen, matrix, lock_name="l").run(
        folder_inputs(folder_files(tmp_path)))
    assert [(h.name, h.result) for h in report.hosts] == [
        ("a", "match"), ("b", "unreadable"), ("c", "unreadable"), ("d", "unreadable"),
        ("e", "unreadable")]
    reasons = {h.name: h.reason or "" for h in report.hosts}
    assert f"{tmp_path / 'b.json'}: not JSON (line 1" in reasons["b"]
    assert "not UTF-8" in reasons["c"] and "not a regular file" in reasons["d"]
    assert "probe.live" in reasons["e"]
    assert report.summary.unreadable == 4 and report.summary.match == 1


def test_a_bad_line_names_its_line(frozen: Lockfile, base: Snapshot, matrix: Matrix) -> None:
    good = json.dumps(base).encode()
    stream = io.BytesIO(good + b"\n{\"host-version\": 1\n" + b"x" * 300 + b"\n" + good)
    report = FleetVerifier(frozen, matrix, lock_name="l").run(
        jsonl_inputs(stream, "f.jsonl", limit=len(good) + 1))
    assert [h.result for h in report.hosts] == ["match", "unreadable", "unreadable", "match"]
    assert report.hosts[1].reason is not None
    assert report.hosts[1].reason.startswith("Host snapshot f.jsonl line 2: not JSON")
    stream = io.BytesIO(b"x" * 50 + b"\n" + good + b"\n")
    report = FleetVerifier(frozen, matrix, lock_name="l").run(
        jsonl_inputs(stream, "f.jsonl", limit=40))
    assert report.hosts[0].reason == "Host snapshot f.jsonl line 1: longer than 40 bytes."
    assert [h.line for h in report.hosts] == [1, 2]  # the long line skipped as one line


def test_summary_counts_and_top_reasons(frozen: Lockfile, base: Snapshot,
                                        matrix: Matrix) -> None:
    kernel = copy.deepcopy(base)
    kernel["os"]["kernel"]["value"] = "6.8.0-90-generic"
    kernel2 = copy.deepcopy(base)
    kernel2["os"]["kernel"]["value"] = "6.11.0-29-generic"
    blocks = copy.deepcopy(base)
    for gpu in blocks["gpus"]:
        gpu["firmware"]["mec"] = "0x000080c0"
    hosts = [base, kernel, kernel, kernel2, blocks, base]
    lines = b"".join(json.dumps(h).encode() + b"\n" for h in hosts) + b"{}\n"
    report = FleetVerifier(frozen, matrix, lock_name="l").run(
        jsonl_inputs(io.BytesIO(lines), "f"))
    s = report.summary
    assert (s.total, s.match, s.drift, s.unreadable) == (7, 2, 4, 1)
    assert [(r.reason, r.hosts) for r in s.top_facts] == [("kernel", 3), ("firmware.blocks", 1)]
    assert [(r.reason, r.hosts) for r in s.top_reasons] == [
        ("kernel 6.8.0-85-generic!=6.8.0-90-generic", 2),
        ("firmware.blocks[0] mec=0x000080bf!=mec=0x000080c0", 1),
        ("firmware.blocks[1] mec=0x000080bf!=mec=0x000080c0", 1),
        ("kernel 6.8.0-85-generic!=6.11.0-29-generic", 1)]
    assert report.hosts[4].reasons == ["firmware.blocks[0] mec=0x000080bf!=mec=0x000080c0",
                                       "firmware.blocks[1] mec=0x000080bf!=mec=0x000080c0"]
    assert report.hosts[4].reason == \
        "pin: firmware.blocks[0] mec=0x000080bf!=mec=0x000080c0"  # one fact, two GPUs
    assert report.lock_hash == frozen.content_hash
    FleetReport.model_validate(report.model_dump(mode="json", by_alias=True),
                               strict=False)  # the JSON reads back


def test_folder_errors_name_the_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no-such-dir: no such folder"):
        folder_files(tmp_path / "no-such-dir")
    with pytest.raises(UsageError, match="no \\*.json snapshot"):
        folder_files(tmp_path)


def test_the_rule_key_covers_every_view_field() -> None:
    # rule_key mirrors view_from_facts field by field; a field added to EnvView must be
    # added to the key too, or two hosts differing only there would share rule findings.
    assert {f.name for f in dataclasses.fields(EnvView)} == {
        "gpus", "torch_version", "torch_kind", "torch_cuda", "torch_hip",
        "torch_files_version", "nvidia_driver", "cuda_compat", "rocm_version",
        "amdgpu_version", "amdgpu_kind", "packages", "environment", "extensions"}


def test_hosts_differing_in_what_rules_read_get_other_keys(base: Snapshot) -> None:
    import random

    keys = set()
    for name in ("driver", "rocm", "environment"):
        s = copy.deepcopy(base)
        DRIFTS[name](s, random.Random(1))
        keys.add(rule_key(facts_of(s)))
    keys.add(rule_key(facts_of(base)))
    assert len(keys) == 4
    # A package no rule or check names leaves the key as it is (its version is compared
    # with the lock, not judged by the rules).
    s = copy.deepcopy(base)
    s["python"]["distributions"].append({"name": "no-rule-reads-this", "version": "1.0"})
    assert rule_key(facts_of(s)) == rule_key(facts_of(base))


# -- the snapshot reader's fast bounds check -------------------------------------------------

def test_the_byte_patterns_follow_the_bounds() -> None:
    assert snapshot._LONG_RUN == b"x" * (MAX_VERSION_CHARS + 1)
    assert snapshot._LONG_NUMBER == b"0" * (MAX_NUMBER_DIGITS + 1)
    assert snapshot._PAST.pattern == f"[0-9]{{{MAX_NUMBER_DIGITS + 1}}}"


@pytest.mark.parametrize("change", [
    lambda s: s["amd"]["rocm"].update(value="7." * 40),                 # too long
    lambda s: s["python"]["distributions"][0].update(version="1" * 30),  # a long number
    lambda s: s["os"]["glibc"].update(value="2.\\u0033" + "9" * 20),    # digits via escape
    lambda s: s["gpus"][0]["pldm-bundle"].update(value='0"' + "1" * 70),  # escaped quote
])
def test_versions_past_the_bounds_are_still_refused(base: Snapshot, change: Any) -> None:
    data = copy.deepcopy(base)
    change(data)
    text = json.dumps(data).replace("\\\\u0033", "\\u0033")
    problem = version_fields_problem(json.loads(text), snapshot.SNAPSHOT_VERSION_FIELDS)
    assert problem is not None
    with pytest.raises(ProbeError, match="a version may have"):
        parse_snapshot(text.encode(), "t")


def test_long_text_outside_version_fields_is_read(base: Snapshot) -> None:
    data = copy.deepcopy(base)
    data["notes"] = ["n" * 500, "1" * 40]
    data["os"]["kernel"]["source"] = "/proc/" + "k" * 100
    raw = json.dumps(data).encode()
    assert not snapshot._bytes_within_bounds(raw)  # the walk decides
    assert snapshot._versions_within_bounds(data)
    assert parse_snapshot(raw, "t").notes[0] == "n" * 500


def test_equal_views_have_equal_rule_keys(base: Snapshot) -> None:
    from pinning.guards.view import view_from_facts

    hosts = [facts_of(s) for s in varied(base)]
    for a in hosts:
        for b in hosts:
            same_view = (view_from_facts(a), [g.product for g in a.gpus if g.product]) == \
                (view_from_facts(b), [g.product for g in b.gpus if g.product])
            if same_view:  # a key leaves out what no rule reads: unequal views may share it
                assert rule_key(a) == rule_key(b)
