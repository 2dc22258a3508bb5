"""The Slurm checks with a multi-target lock: the node's target chosen by its GPU (the
recorded MI300X host), by the job's ``pin_<digest12>`` of one target, or by ``--target``;
a node no target matches drains with that reason; each target is its own feature."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pinning.errors import DriftError, PinError, UsageError
from pinning.fleet.config import FleetConfig, SlurmConfig
from pinning.fleet.slurm import lock_feature
from pinning.fleet.slurm_checks import Outcome, node_features, run_check
from pinning.fleet.slurm_locks import index_locks
from pinning.lockfile.io import read_lock, read_locks
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts
from pinning.util.proc import CommandResult
from tests.support.hosts import recorded
from tests.support.locks import frozen_mi300x
from tests.support.multilock_verify import H200, MI250X, write_multi

IDLE = ("NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE "
        "ThreadsPerCore=1 Partitions=debug BootTime=2026-12-01T09:21:22")


class Recorder:
    """A Runner answering ``scontrol -o show node`` with an idle node, recording argv."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        self.calls.append(list(argv))
        out = IDLE + "\n" if list(argv[1:4]) == ["-o", "--", "show"] else ""
        return CommandResult(tuple(argv), 0, out, "")


@pytest.fixture(scope="module")
def facts() -> HostFacts:
    return recorded("mi300x-rocm7.1")


@pytest.fixture(scope="module")
def mi300x(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


@pytest.fixture
def folder(tmp_path: Path, mi300x: Lockfile) -> Path:
    locks = tmp_path / "locks"
    locks.mkdir()
    write_multi(locks / "pin.lock", {"current": H200, "candidate": mi300x})
    return locks


def _run(check: str, facts: HostFacts, matrix: Matrix, fleet: FleetConfig,
         env: dict[str, str] | None = None,
         target: str | None = None) -> tuple[Outcome, PinError | None, Recorder]:
    rec = Recorder()
    out, err = run_check(check, SlurmConfig(), fleet,  # type: ignore[arg-type]
                         {"SLURMD_NODENAME": "gpu01", **(env or {})}, runner=rec,
                         probe=lambda _path, _model: facts, matrix=matrix, hostname="h",
                         target=target)
    return out, err, rec


def test_every_target_is_a_feature_of_the_folder(folder: Path, mi300x: Lockfile) -> None:
    _, _, views = read_locks(folder / "pin.lock")
    assert set(index_locks(folder)) == {lock_feature(v.content_hash) for v in views.values()}
    assert lock_feature(mi300x.content_hash) in index_locks(folder)


def test_the_default_lock_picks_the_target_by_gpu(folder: Path, facts: HostFacts,
                                                  matrix: Matrix) -> None:
    out, err, rec = _run("prolog", facts, matrix, FleetConfig(default_lock=folder / "pin.lock"))
    assert err is None and rec.calls == []
    assert out.result == "match"


def test_target_overrides_and_drains_on_the_named_targets_drift(
        folder: Path, facts: HostFacts, matrix: Matrix) -> None:
    out, err, rec = _run("prolog", facts, matrix, FleetConfig(default_lock=folder / "pin.lock"),
                         target="current")
    feat = lock_feature(read_lock(H200).content_hash)
    assert isinstance(err, DriftError)
    assert out.reason is not None and out.reason.startswith(f"pin: {feat} target.gpu H200!=")
    assert any(c[1] == "update" for c in rec.calls)


def test_the_jobs_feature_picks_its_target(folder: Path, facts: HostFacts,
                                           matrix: Matrix) -> None:
    feat = lock_feature(read_lock(H200).content_hash)
    out, err, _ = _run("prolog", facts, matrix, FleetConfig(locks=folder),
                       {"SLURM_JOB_CONSTRAINTS": feat})
    assert out.features == (feat,) and out.result == "drift"
    assert out.reason is not None and out.reason.startswith(f"pin: {feat} target.gpu")
    assert isinstance(err, DriftError)


def test_no_target_matching_drains_naming_them(tmp_path: Path, facts: HostFacts,
                                               matrix: Matrix) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"old": MI250X, "current": H200})
    _, multi, _ = read_locks(lock)
    assert multi is not None
    out, err, _ = _run("healthcheck", facts, matrix, FleetConfig(default_lock=lock))
    assert err is None and out.result == "drift" and out.action == "drained"
    assert out.reason == (f"pin: {lock_feature(multi.content_hash)} target "
                          "AMD_Instinct_MI250X,NVIDIA_H200!=AMD_Instinct_MI300X")


def test_an_unknown_target_is_a_setup_error(folder: Path, facts: HostFacts,
                                            matrix: Matrix) -> None:
    out, err, _ = _run("prolog", facts, matrix, FleetConfig(default_lock=folder / "pin.lock"),
                       target="nope")
    assert isinstance(err, UsageError) and out.result == "error"


def test_node_features_offer_the_matching_target_only(folder: Path, facts: HostFacts,
                                                      matrix: Matrix, mi300x: Lockfile) -> None:
    found = node_features(FleetConfig(locks=folder), probe=lambda _p, _m: facts, matrix=matrix)
    locks = [f for f, path in found.items() if path is not None]
    assert locks == [lock_feature(mi300x.content_hash)]


@pytest.mark.parametrize(("script", "want"), [
    ("pin-prolog", "slurm prolog --target candidate"),
    ("pin-healthcheck", "slurm healthcheck --target candidate"),
])
def test_contrib_scripts_pass_pin_target(tmp_path: Path, script: str, want: str) -> None:
    import shutil
    import subprocess

    from tests.support.paths import ROOT

    shutil.copy2(ROOT / "contrib" / "slurm" / script, tmp_path / script)
    fake = tmp_path / "fake-pin"
    fake.write_text('#!/bin/bash\necho "$*"\n')
    fake.chmod(0o755)
    env_file = tmp_path / "pin-slurm.env"
    env_file.write_text(f"PIN_BIN={fake}\nPIN_TARGET=candidate\n")
    done = subprocess.run([str(tmp_path / script)], env={"SLURMD_NODENAME": "n1"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.stdout.strip() == want, done.stderr
    env_file.write_text(f"PIN_BIN={fake}\n")
    done = subprocess.run([str(tmp_path / script)], env={"SLURMD_NODENAME": "n1"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.stdout.strip() == want.split(" --target")[0]
