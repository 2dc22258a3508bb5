"""``pin fleet verify`` with a multi-target lock: a mixed fleet of AMD and NVIDIA host
snapshots, each checked against the target its GPU matches (or ``--target`` for all), the
target named per host (text, JSON), a host no target matches drifting with that reason,
and the speed path (shape and byte memory) giving exactly the slow path's outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.fleet.batch import FleetTally, SnapshotInput, folder_files, folder_inputs
from pinning.fleet.targets import TargetFleetVerifier
from pinning.lockfile.io import read_locks
from pinning.matrix.load import Matrix
from pinning.probe.snapshot import snapshot_text
from tests.support.cli import json_result, pin
from tests.support.hosts import recorded
from tests.support.locks import frozen_mi300x
from tests.support.multilock_verify import H200, MI250X, write_multi

HOSTS = ("mi300x-rocm7.1", "h200-cuda13", "mi250x-rocm6.3", "no-gpu")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One snapshot per recorded host, and a second MI300X one whose GPUs sit elsewhere."""
    folder = tmp_path_factory.mktemp("fleet")
    for name in HOSTS:
        (folder / f"{name}.json").write_text(snapshot_text(recorded(name)))
    text = (folder / "mi300x-rocm7.1.json").read_text()
    moved = text.replace('"pci-bus": "0000:', '"pci-bus": "0001:')
    assert moved != text
    (folder / "mi300x-b.json").write_text(moved)
    return folder


@pytest.fixture(scope="module")
def lock(matrix: Matrix, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_multi(tmp_path_factory.mktemp("lock") / "pin.lock",
                       {"current": H200, "candidate": frozen_mi300x(matrix)})


def test_each_host_gets_the_target_its_gpu_matches(lock: Path, fleet: Path) -> None:
    done = pin("fleet", "verify", str(lock), str(fleet), "--format", "json")
    assert done.returncode == 6, done.stderr
    result = json_result(done)
    assert result["targets"] == ["current", "candidate"]
    hosts = {h["name"]: h for h in result["hosts"]}
    assert hosts["mi300x-rocm7.1"]["target"] == "candidate"
    assert hosts["mi300x-rocm7.1"]["result"] == "match"
    assert hosts["mi300x-b"]["target"] == "candidate"
    assert hosts["h200-cuda13"]["target"] == "current"
    for name in ("mi250x-rocm6.3", "no-gpu"):
        assert "target" not in hosts[name]
        assert hosts[name]["result"] == "drift"
        assert hosts[name]["reason"].startswith("pin: target NVIDIA_H200,AMD_Instinct_MI300X!=")
    assert hosts["no-gpu"]["reason"].endswith("!=no_GPU")
    assert {"reason": "target", "hosts": 2} in result["summary"]["top-facts"]


def test_text_names_the_target_per_host(lock: Path, fleet: Path) -> None:
    done = pin("fleet", "verify", str(lock), str(fleet), "-v", "-q")
    assert done.returncode == 6
    lines = {ln.split()[0]: ln.split() for ln in done.stdout.splitlines()[:len(HOSTS) + 1]}
    assert lines["mi300x-rocm7.1"][1:3] == ["MATCH", "candidate"]
    assert lines["h200-cuda13"][2] == "current"
    assert lines["no-gpu"][1:4] == ["DRIFT", "-", "pin:"]
    assert "targets current, candidate" in done.stdout


def test_target_checks_every_host_against_one(lock: Path, fleet: Path) -> None:
    done = pin("fleet", "verify", str(lock), str(fleet), "--target", "candidate",
               "--format", "json")
    result = json_result(done)
    assert result["targets"] == ["candidate"]
    assert {h["target"] for h in result["hosts"]} == {"candidate"}
    hosts = {h["name"]: h for h in result["hosts"]}
    assert hosts["h200-cuda13"]["result"] == "drift"
    bad = pin("fleet", "verify", str(H200), str(fleet), "--target", "current")
    assert bad.returncode == 2 and "single-target lock" in bad.stderr
    unknown = pin("fleet", "verify", str(lock), str(fleet), "--target", "nope")
    assert unknown.returncode == 2 and "no such target" in unknown.stderr


def test_a_single_target_lock_reports_no_targets(fleet: Path) -> None:
    result = json_result(pin("fleet", "verify", str(H200), str(fleet), "--format", "json"))
    assert "targets" not in result
    assert all("target" not in h for h in result["hosts"])


def _outcomes(lock: Path, matrix: Matrix, fleet: Path, *, memo: bool,
              target: str | None = None) -> list[tuple[str, str | None, str | None]]:
    _, multi, locks = read_locks(lock)
    assert multi is not None
    verifier = TargetFleetVerifier(multi, locks, matrix, lock_name="l", target=target,
                                   memo=memo, views=memo)
    files = folder_files(fleet)
    inputs = [*folder_inputs(files), *folder_inputs(files)]  # each shape twice
    return [(h.result, h.target, h.reason)
            for h in verifier.stream(inputs, FleetTally())]


@pytest.mark.parametrize("target", [None, "current"])
def test_the_speed_path_gives_the_slow_paths_outcomes(lock: Path, matrix: Matrix, fleet: Path,
                                                      target: str | None) -> None:
    fast = _outcomes(lock, matrix, fleet, memo=True, target=target)
    assert fast == _outcomes(lock, matrix, fleet, memo=False, target=target)
    assert len({t for _, t, _ in fast}) == (1 if target else 3)


def test_run_reports_the_files_hash_and_targets(lock: Path, matrix: Matrix,
                                                fleet: Path) -> None:
    _, multi, locks = read_locks(lock)
    assert multi is not None
    report = TargetFleetVerifier(multi, locks, matrix, lock_name="l").run(
        folder_inputs(folder_files(fleet)))
    assert report.lock_hash == multi.content_hash
    assert report.targets == ["current", "candidate"]
    assert report.summary.total == len(HOSTS) + 1


def test_several_matching_targets_stop_the_run_asking_for_target(
        matrix: Matrix, fleet: Path, tmp_path: Path) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"a": MI250X, "b": H200, "c": H200})
    done = pin("fleet", "verify", str(lock), str(fleet), "--format", "json")
    assert done.returncode == 2
    assert "targets b, c all match" in json.loads(done.stdout)["error"]["message"]


def test_jsonl_input_names_targets_too(lock: Path, fleet: Path, tmp_path: Path) -> None:
    lines = tmp_path / "fleet.jsonl"
    lines.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n"
                             for p in folder_files(fleet)))
    result = json_result(pin("fleet", "verify", str(lock), "--from", str(lines),
                             "--format", "json"))
    assert [h.get("target") for h in result["hosts"]] == [
        "current", None, "candidate", "candidate", None]


def test_snapshot_input_for_unreadable_host_has_no_target(lock: Path, matrix: Matrix) -> None:
    _, multi, locks = read_locks(lock)
    assert multi is not None
    verifier = TargetFleetVerifier(multi, locks, matrix, lock_name="l")
    [host] = verifier.stream([SnapshotInput(name="x", file="x", line=None, data=b"{}")],
                             FleetTally())
    assert host.result == "unreadable" and host.target is None
