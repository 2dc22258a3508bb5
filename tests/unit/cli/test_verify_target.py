"""``pin verify`` with a multi-target lock (lock-version 2): the target whose GPU the
recorded host shows, ``--target``, no target matching, several matching, and a
single-target lock as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.matrix.load import Matrix
from tests.support.cli import json_result, pin
from tests.support.locks import frozen_mi300x
from tests.support.multilock_verify import H200, MI250X, MI300X, host_args, write_multi


@pytest.fixture(scope="module")
def two(matrix: Matrix, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """current: the shipped H200 lock; candidate: an MI300X lock frozen from the recorded
    MI300X host (which matches it)."""
    return write_multi(tmp_path_factory.mktemp("two") / "pin.lock",
                       {"current": H200, "candidate": frozen_mi300x(matrix)})


def test_amd_host_picks_the_mi300x_target_and_says_so_first(two: Path) -> None:
    done = pin("verify", str(two), *host_args("mi300x-rocm7.1"))
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first == "target candidate (mi300x): matches this host's AMD Instinct MI300X"


def test_json_names_the_target_and_how_it_was_chosen(two: Path) -> None:
    done = pin("verify", str(two), *host_args("mi300x-rocm7.1"), "--format", "json")
    result = json_result(done)
    assert result["target"] == {"name": "candidate", "gpu": "mi300x", "chosen-by": "gpu",
                                "why": "matches this host's AMD Instinct MI300X"}
    assert result["result"] == "match"


def test_nvidia_host_picks_the_nvidia_target(two: Path) -> None:
    done = pin("verify", str(two), *host_args("h200-cuda13"), "--format", "json")
    result = json_result(done)
    assert result["target"]["name"] == "current"
    assert result["target"]["chosen-by"] == "gpu"
    assert result["lock-hash"].startswith("sha256:")


def test_target_overrides_the_gpu(two: Path) -> None:
    done = pin("verify", str(two), *host_args("mi300x-rocm7.1"), "--target", "current")
    assert done.returncode == 6
    assert done.stdout.splitlines()[0] == "target current (h200): named by --target"
    assert "target.gpu" in done.stdout
    assert "(target current)" in done.stderr


def test_no_target_matching_is_drift_naming_every_gpu(tmp_path: Path) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"old": MI250X, "current": H200})
    done = pin("verify", str(lock), *host_args("mi300x-rocm7.1"))
    assert done.returncode == 6, done.stderr
    assert "no target matches this host's GPUs (AMD Instinct MI300X)" in done.stderr
    assert "old: AMD Instinct MI250X; current: NVIDIA H200" in done.stderr
    none = pin("verify", str(lock), *host_args("no-gpu"), "--format", "json")
    assert json_result(none) is None
    assert none.returncode == 6 and "(no GPU)" in none.stdout


def test_several_targets_matching_ask_for_target(matrix: Matrix, tmp_path: Path) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"a": MI300X, "b": frozen_mi300x(matrix)})
    done = pin("verify", str(lock), *host_args("mi300x-rocm7.1"))
    assert done.returncode == 2
    assert "targets a, b all match this host's GPUs" in done.stderr
    assert "--target" in done.stderr
    chosen = pin("verify", str(lock), *host_args("mi300x-rocm7.1"), "--target", "b")
    assert chosen.returncode == 0, chosen.stderr


def test_unknown_target_is_a_usage_error(two: Path) -> None:
    done = pin("verify", str(two), *host_args("mi300x-rocm7.1"), "--target", "candidat")
    assert done.returncode == 2
    assert "Did you mean 'candidate'?" in done.stderr


def test_single_target_lock_as_before_and_refuses_target(tmp_path: Path) -> None:
    done = pin("verify", str(H200), *host_args("h200-cuda13"), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "target" not in json_result(done)
    text = pin("verify", str(H200), *host_args("h200-cuda13"))
    assert not text.stdout.startswith("target ")
    refused = pin("verify", str(H200), *host_args("h200-cuda13"), "--target", "current")
    assert refused.returncode == 2
    assert "single-target lock" in refused.stderr


def test_one_target_lock_needs_no_gpu_match(tmp_path: Path) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"current": H200})
    done = pin("verify", str(lock), *host_args("mi300x-rocm7.1"))
    assert done.returncode == 6
    assert done.stdout.splitlines()[0] == "target current (h200): the lock's only target"


def test_npd_and_nfd_on_no_target(tmp_path: Path) -> None:
    lock = write_multi(tmp_path / "pin.lock", {"old": MI250X, "current": H200})
    npd = pin("verify", str(lock), *host_args("mi300x-rocm7.1"), "--format", "npd")
    assert npd.returncode == 2 and npd.stdout.startswith("pin: unknown: ")
    assert "no target matches" in npd.stderr
    out = tmp_path / "features"
    nfd = pin("verify", str(lock), *host_args("mi300x-rocm7.1"), "--emit", "nfd", "-o",
              str(out))
    assert nfd.returncode == 6
    assert "pin.dev/result=unknown" in out.read_text()


def test_probe_lock_with_target(two: Path) -> None:
    done = pin("probe", "--lock", str(two), *host_args("mi300x-rocm7.1"), "--format", "json")
    assert done.returncode == 0, done.stderr
    named = pin("probe", "--lock", str(two), "--target", "current",
                *host_args("mi300x-rocm7.1"), "--format", "json")
    assert named.returncode == 0, named.stderr
    assert pin("probe", "--target", "current").returncode == 2
    bad = pin("probe", "--lock", str(H200), "--target", "current", *host_args("h200-cuda13"))
    assert bad.returncode == 2 and "single-target lock" in bad.stderr
