"""Lockfile: deterministic bytes, round trip, validation errors, schemas, examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pinning.errors import LockfileError
from pinning.lockfile.io import lock_json, read_lock, render, write_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import Constraints, parse_framework, parse_model
from pinning.resolve.resolver import resolve
from pinning.resolve.to_lock import lock_from_resolution
from tests.support.matrix import OVERLAY
from tests.support.paths import ROOT

EXAMPLES = {
    "mi300x-pytorch-2.13.0.lock": ["--gpu", "mi300x", "--framework", "pytorch==2.13.0"],
    "mi355x-vllm-0.27.0.lock": ["--gpu", "mi355x", "--framework", "vllm==0.27.0"],
    "mi250x-pytorch-2.6.lock": ["--gpu", "mi250x", "--framework", "pytorch==2.6", "--rocm", "<7"],
    "h200-pytorch-2.13.0.lock": ["--gpu", "h200", "--framework", "pytorch==2.13.0"],
}


def make_lock(matrix: Matrix, gpu: str = "mi300x", fw: str = "pytorch==2.13.0",
              **kw: Any) -> Lockfile:
    c = Constraints(gpu=gpu, frameworks=(parse_framework(fw, matrix.framework_names()),), **kw)
    return lock_from_resolution(resolve(matrix, c), matrix)


def test_written_twice_byte_identical(matrix: Matrix, tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "pin.lock", tmp_path / "b" / "pin.lock"
    a.parent.mkdir()
    b.parent.mkdir()
    assert write_lock(make_lock(matrix), a) == write_lock(make_lock(matrix), b)
    assert a.read_bytes() == b.read_bytes()
    head = a.read_text().splitlines()
    assert head[1].startswith("# Regenerate: pin lock upgrade FILE")
    assert head[2] == "# Resolved by: pin resolve --gpu mi300x --framework pytorch==2.13.0"


def test_round_trip_and_content_hash(matrix: Matrix, tmp_path: Path) -> None:
    lock = make_lock(matrix, model=parse_model("org/m@" + "0" * 40))
    p = tmp_path / "pin.lock"
    write_lock(lock, p)
    back = read_lock(p)
    assert back == lock
    assert render(back, dest=p) == p.read_text()


def test_hand_edit_is_detected(matrix: Matrix, tmp_path: Path) -> None:
    p = tmp_path / "pin.lock"
    write_lock(make_lock(matrix), p)
    p.write_text(p.read_text().replace('value = "2.13.0"', 'value = "2.12.0"'))
    with pytest.raises(LockfileError, match="content-hash .* does not match") as info:
        read_lock(p)
    assert info.value.exit_code == 5


@pytest.mark.parametrize("old,new,needle", [
    ('origin = "matrix"', 'origin = "guess"', "origin: Input should be"),
    ("lock-version = 1", "lock-version = 9", "lock-version 9 is not supported"),
    ('[runtime]\nname = "rocm"', '[runtime]\nname = "oneapi"', "runtime.name"),
    ("[kernel]", "[kernel\n", "not valid TOML"),
])
def test_broken_lock_names_the_field(matrix: Matrix, tmp_path: Path, old: str, new: str,
                                     needle: str) -> None:
    p = tmp_path / "pin.lock"
    write_lock(make_lock(matrix), p)
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    with pytest.raises(LockfileError) as info:
        read_lock(p)
    assert needle in info.value.message and str(p) in info.value.message


def test_failed_write_leaves_nothing_behind(matrix: Matrix, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "pin.lock"
    with pytest.raises(LockfileError, match="cannot write"):
        write_lock(make_lock(matrix), target)
    assert not target.parent.exists()


def test_lock_json_validates_against_committed_schema(matrix: Matrix) -> None:
    schema = json.loads((ROOT / "schemas" / "lockfile.schema.json").read_text())
    for kw in ({}, {"gpu": "h200"}, {"gpu": "mi355x", "fw": "vllm==0.27.0"}):
        jsonschema.validate(lock_json(make_lock(matrix, **kw)), schema)


def test_mi300x_lock_says_what_must_be_frozen(matrix: Matrix) -> None:
    lock = make_lock(matrix)
    assert lock.runtime.version.value == "10.0.0"
    assert lock.target.gfx_target is not None
    assert lock.target.gfx_target.value == "gfx942"
    assert lock.firmware.version.value is None and lock.firmware.version.origin == "unknown"
    assert "must be frozen from the trial host" in lock.notes[0]
    assert lock.frameworks[0].version.allowed == ["2.13.0", "2.12.0", "2.11.0"]


def test_overlay_is_recorded(matrix: Matrix, tmp_path: Path) -> None:
    from pinning.matrix.load import load_matrix

    p = tmp_path / "lab.toml"
    p.write_text(OVERLAY)
    m = load_matrix([p])
    c = Constraints(gpu="mi300x", frameworks=(parse_framework("pytorch==2.10.0"),))
    lock = lock_from_resolution(resolve(m, c), m, overlays=[str(p)])
    assert lock.runtime.version.value == "7.2.1"
    src = lock.matrix.sources[-1]
    assert src.overlay and src.name == "site-lab" and src.path == str(p)
    assert "--matrix" in lock.generator.command


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_lockfiles_regenerate_without_difference(name: str, tmp_path: Path) -> None:
    committed = ROOT / "lockfiles" / name
    out = tmp_path / "lockfiles"
    out.mkdir(exist_ok=True)
    (tmp_path / "schemas").mkdir(exist_ok=True)
    (tmp_path / "schemas" / "lockfile.schema.json").write_text("{}")
    cmd = [sys.executable, "-m", "pinning", "resolve", *EXAMPLES[name],
           "-o", f"lockfiles/{name}"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (out / name).read_text() == committed.read_text(), (
        f"lockfiles/{name} differs from what pin writes: run `make lockfiles`")
    read_lock(committed)


def test_cuda_12_lock_names_the_cuda_12_driver_rule(matrix: Matrix) -> None:
    from pinning.resolve.constraints import parse_runtime_spec

    lock = make_lock(matrix, gpu="h100", cuda=parse_runtime_spec("--cuda", "12.6"))
    drv = lock.kernel_driver.version
    assert drv.constraint == ">=525,<580"
    assert drv.ref == "nvidia-cuda:cuda-12.x"
    assert "nvidia-cuda:cuda-12.x" in [r.ref for r in lock.matrix.rows]
    assert "nvidia-cuda:cuda-13.x" not in [r.ref for r in lock.matrix.rows]
