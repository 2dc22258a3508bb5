"""``pin lock`` (the group without a subcommand) with the project's Python packages: with
``[project] requirements``, ``indexes``, ``python`` and ``python-platform`` each target gets
``[packages]``, ``[[wheels]]`` and ``[python]`` as ``pin lock packages`` writes them, from a
PEP 503 index of real built wheels on 127.0.0.1 (real uv); without them, "not locked" and why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.lockfile.io import read_locks
from tests.support.projectcli import pin_in as pin
from tests.support.pyindex import serve_index

GRAPH = {"torch==2.13.0+cu130": [], "torch==2.13.0+rocm7.2": [], "app==1.0": ["helper>=1"],
         "helper==1.2": []}

PROJECT = """\
[project]
name = "demo"
frameworks = ["pytorch==2.13.0"]
requirements = "requirements.txt"
{extra}
[targets.current]
gpu = "h200"

[targets.candidate]
gpu = "mi300x"
"""




@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """GRAPH served on 127.0.0.1 (its URL); uv with a private cache and no proxy."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with serve_index(tmp_path / "served", GRAPH) as (url, _log):
        yield url


def project(folder: Path, extra: str) -> Path:
    """A project in ``folder`` whose requirements.txt asks for app==1.0, [project] plus
    ``extra``.
    """
    folder.mkdir(exist_ok=True)
    (folder / "requirements.txt").write_text("app==1.0\n")
    (folder / "pin.toml").write_text(PROJECT.format(extra=extra))
    return folder


def test_every_target_gets_its_wheels_and_a_rerun_is_unchanged(
        tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = project(tmp_path / "p", f'indexes = ["{index}"]\npython = "3.12"\n'
                                     'python-platform = "x86_64-manylinux_2_28"\n')
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert r.stdout.count("\n  packages: 3 wheels for Python 3.12 on x86_64-manylinux_2_28\n"
                          ) == 2
    assert "not locked" not in r.output and "Wrote pin.lock" in r.stdout
    served = tmp_path / "served" / "index"
    _, _, views = read_locks(folder / "pin.lock")
    for name, lock in views.items():
        assert lock.python is not None and lock.python.version == "3.12", name
        assert lock.python.indexes == [index] and lock.python.requirements == ["app==1.0"]
        assert lock.wheels is not None
        assert {w.name for w in lock.wheels} == {"torch", "app", "helper"}
        assert lock.packages is not None and lock.packages["app"] == "1.0"
        for w in lock.wheels:
            assert w.sha256 == hashlib.sha256((served / w.filename).read_bytes()).hexdigest()
    assert views["current"].packages is not None
    assert views["current"].packages["torch"] == "2.13.0+cu130"
    raw = (folder / "pin.lock").read_bytes()
    again = pin(folder, "lock", monkeypatch=monkeypatch)
    assert again.exit_code == 0 and "pin.lock: unchanged" in again.stdout
    assert "kept" not in again.stdout and again.stdout.count("  packages: 3 wheels") == 2
    assert (folder / "pin.lock").read_bytes() == raw
    out = pin(folder, "lock", "export", "pin.lock", "--target", "candidate", "--format",
              "requirements", monkeypatch=monkeypatch)
    assert out.exit_code == 0, out.output
    for w in views["candidate"].wheels or []:
        assert f"--hash=sha256:{w.sha256}" in out.stdout
    assert "app==1.0 \\\n" in out.stdout


def test_a_target_kept_keeps_its_packages(tmp_path: Path, index: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    keys = f'indexes = ["{index}"]\npython = "3.12"\npython-platform = "x86_64-manylinux_2_28"\n'
    folder = project(tmp_path / "p", keys)
    assert pin(folder, "lock", monkeypatch=monkeypatch).exit_code == 0
    before = read_locks(folder / "pin.lock")[2]
    r = pin(folder, "lock", "--target", "current", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    targets = {t["name"]: t for t in json.loads(r.stdout)["result"]["targets"]}
    assert targets["candidate"]["resolved"] is False
    assert all(t["packages"]["locked"] is True for t in targets.values())
    # Without the keys, a re-resolved target whose stack did not change keeps its wheels
    # (as pin lock packages wrote them); nothing says "not locked".
    (folder / "pin.toml").write_text(PROJECT.format(extra=""))
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and "pin.lock: unchanged" in r.stdout, r.output
    after = read_locks(folder / "pin.lock")[2]
    assert {n: v.content_hash for n, v in after.items()} == {
        n: v.content_hash for n, v in before.items()}


def test_without_indexes_not_locked_says_to_set_them(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = project(tmp_path / "p", "")
    r = pin(folder, "lock", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    for t in json.loads(r.stdout)["result"]["targets"]:
        pk = t["packages"]
        assert pk["locked"] is False and "[project] indexes" in pk["reason"]
        assert pk["run"] == f"pin lock packages pin.lock --target {t['name']} -r requirements.txt"
        assert pk["reason"].endswith(f", or run {pk['run']}")
    text = pin(folder, "lock", monkeypatch=monkeypatch)
    assert ("  packages: not locked: set [project] indexes (with python and python-platform) "
            "in pin.toml for pin lock to lock them, or run pin lock packages pin.lock "
            "--target current -r requirements.txt") in text.stdout.splitlines()


def test_a_missing_python_key_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No uv runs: the index is never reached (nothing listens on port 9).
    folder = project(tmp_path / "p", 'indexes = ["http://127.0.0.1:9/simple"]\n'
                                     'python = "3.12"\n')
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert ("  packages: not locked: [project] in pin.toml sets indexes but not "
            "python-platform (the target's Python") in r.stdout
    assert all(lock.python is None and not lock.wheels
               for lock in read_locks(folder / "pin.lock")[2].values())


def test_no_requirements_nothing_about_packages(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "pin.toml").write_text(PROJECT.format(extra="").replace(
        'requirements = "requirements.txt"\n', 'indexes = ["https://pypi.org/simple"]\n'))
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "packages" not in r.output


def test_an_index_error_keeps_its_exit_code_and_names_the_target(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    folder = project(tmp_path / "p", 'indexes = ["http://127.0.0.1:9/simple"]\n'
                                     'python = "3.12"\npython-platform = '
                                     '"x86_64-manylinux_2_28"\n')
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code in (2, 8), r.output
    assert "[targets.current] of pin.toml: " in r.stderr
    assert not (folder / "pin.lock").exists()


@pytest.mark.parametrize(("line", "key"), [
    ('indexes = ["http://example.com/simple"]', "project.indexes[0]"),
    ('indexes = ["ftp://127.0.0.1/simple"]', "project.indexes[0]"),
    ('python = "3"', "project.python"),
    ('python-platform = "win_amd64"', "project.python-platform"),
])
def test_bad_values_are_refused_naming_the_key(tmp_path: Path, line: str, key: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = project(tmp_path / "p", line + "\n")
    r = pin(folder, "lock", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and f"{key}: " in r.stderr
    assert not (folder / "pin.lock").exists()
