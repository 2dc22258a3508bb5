"""``pin lock packages`` as a user runs it, against a PEP 503 index on 127.0.0.1 (real uv,
no network): the table, the JSON envelope, the lock written (and left alone when nothing
changed), ``-o -``, and the errors (no target Python, an sdist-only package, a bad lock)."""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import json_result, pin
from tests.support.paths import ROOT
from tests.support.pyindex import serve_index

GRAPH: dict[str, list[str]] = {
    "torch==2.13.0+rocm7.2": ["filelock>=3"],
    "filelock==3.0": [],
    "rich==13.0": [],
    "app==1.0": ["srconly"],
    "srconly==0.1": [],
}
TAGS = {"torch==2.13.0+rocm7.2": ["cp312-cp312-manylinux_2_28_x86_64", "py3-none-any"]}
TARGET = ["--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), NO_PROXY="127.0.0.1")
    return env


@pytest.fixture
def index(tmp_path: Path) -> Iterator[str]:
    with serve_index(tmp_path, GRAPH, tags=TAGS, sdist_only=frozenset({"srconly"})) as (url, _):
        yield url


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "pin.lock"
    shutil.copyfile(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock", path)
    return path


def test_table_lock_and_unchanged_rerun(lock: Path, index: str, env: dict[str, str]) -> None:
    r = pin("lock", "packages", str(lock), "--index", index, "--requirement", "rich==13.0",
            *TARGET, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "3 wheel(s) for Python 3.12 on x86_64-manylinux_2_28:" in lines
    assert lines[lines.index("3 wheel(s) for Python 3.12 on x86_64-manylinux_2_28:") + 1].split() \
        == ["name", "version", "file", "size"]
    assert any(line.split()[:3] == ["torch", "2.13.0+rocm7.2",
                                    "torch-2.13.0+rocm7.2-cp312-cp312-manylinux_2_28_x86_64.whl"]
               for line in lines)
    assert lines[-1] == f"Wrote {lock}"
    assert "pytorch 2.13.0: torch==2.13.0+rocm7.2 from the --index given" in r.stdout
    assert "resolve 2 requirement(s) with uv" in r.stderr  # progress, not on stdout
    data = tomllib.loads(lock.read_text())
    assert data["packages"] == {"filelock": "3.0", "rich": "13.0", "torch": "2.13.0+rocm7.2"}
    assert {w["name"] for w in data["wheels"]} == set(data["packages"])
    assert all(w["url"].startswith(index.removesuffix("simple")) for w in data["wheels"])
    assert data["python"] == {"version": "3.12", "platform": "x86_64-manylinux_2_28",
                              "indexes": [index], "requirements": ["rich==13.0"]}
    assert pin("lock", "validate", str(lock)).returncode == 0
    before = lock.read_bytes()
    # The target and requirements come from [python] now; the same index gives the same lock.
    again = pin("lock", "packages", str(lock), "--index", index, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == f"{lock}: unchanged, not rewritten"
    assert lock.read_bytes() == before


def test_json_envelope_and_quiet_stderr(lock: Path, index: str, env: dict[str, str],
                                        tmp_path: Path) -> None:
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("# extra\nrich==13.0\n")
    r = pin("lock", "packages", str(lock), "--index", index, "-r", str(reqs), *TARGET,
            "--format", "json", env=env)
    result = json_result(r)
    assert r.returncode == 0 and r.stderr == ""
    assert result["lockfile"] == str(lock) and result["written"] is True
    assert result["requirements"] == ["torch==2.13.0+rocm7.2", "rich==13.0"]
    assert result["python"]["requirements"] == ["rich==13.0"]
    assert [w["name"] for w in result["wheels"]] == ["filelock", "rich", "torch"]
    assert all(len(w["sha256"]) == 64 and w["url"] for w in result["wheels"])


def test_output_to_stdout_leaves_the_lock(lock: Path, index: str, env: dict[str, str]) -> None:
    before = lock.read_bytes()
    r = pin("lock", "packages", str(lock), "--index", index, *TARGET, "-o", "-", env=env)
    assert r.returncode == 0, r.stderr
    data = tomllib.loads(r.stdout)
    assert data["packages"]["torch"] == "2.13.0+rocm7.2"
    assert "name" in r.stderr and "torch-2.13.0+rocm7.2" in r.stderr
    assert lock.read_bytes() == before


def test_without_a_target_python(lock: Path, env: dict[str, str]) -> None:
    r = pin("lock", "packages", str(lock), "--index", "http://127.0.0.1:9/simple", env=env)
    assert r.returncode == 2
    assert "--python-version X.Y and --python-platform PLATFORM" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_sdist_only_package_is_named(lock: Path, index: str, env: dict[str, str]) -> None:
    r = pin("lock", "packages", str(lock), "--index", index, "--requirement", "app==1.0",
            *TARGET, env=env)
    assert r.returncode == 2
    assert "srconly==0.1 has no usable wheels" in r.stderr
    assert "No wheel for the target: srconly==0.1" in r.stderr
    assert "packages" not in tomllib.loads(lock.read_text())


def test_a_bad_lock_or_flag(tmp_path: Path, env: dict[str, str]) -> None:
    r = pin("lock", "packages", str(tmp_path / "absent.lock"), *TARGET, env=env)
    assert r.returncode == 5
    r = pin("lock", "packages", str(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"), *TARGET,
            "-r", "", env=env)
    assert r.returncode == 2 and "empty path" in r.stderr
