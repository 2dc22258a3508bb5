"""``pin lock migrate``: single-target locks into one lock-version 2 file, each target's
view keeping its source lock's content-hash (every lock pin shipped)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result

from pinning.cli import main
from pinning.lockfile.io import read_lock, read_locks
from tests.support.paths import DATA, ROOT

SHIPPED = sorted([*(DATA / "locks-v1").glob("*.lock"), *(ROOT / "lockfiles").glob("*.lock")])
SCHEMA = json.loads((ROOT / "schemas" / "lockfile-v2.schema.json").read_text())


def pin(cwd: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("PIN_PROJECT", raising=False)
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_every_shipped_lock_is_found() -> None:
    assert len(SHIPPED) >= 33


@pytest.mark.parametrize("src", SHIPPED, ids=lambda p: p.name)
def test_migrate_in_place_keeps_the_content_hash(src: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    lock = tmp_path / "pin.lock"
    shutil.copyfile(src, lock)
    before = read_lock(src)
    r = pin(tmp_path, "lock", "migrate", "pin.lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    _, multi, views = read_locks(lock)
    assert multi is not None and len(views) == 1
    (view,) = views.values()
    assert view.content_hash == before.content_hash
    assert pin(tmp_path, "lock", "validate", "pin.lock", monkeypatch=monkeypatch).exit_code == 0
    data = json.loads(json.dumps(tomllib.loads(lock.read_text()), default=str))
    jsonschema.validate(data, SCHEMA)


def test_several_locks_need_o_and_take_project_names(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text('[project]\nname = "demo"\n\n[targets.current]\n'
                                       'gpu = "h200"\n\n[targets.candidate]\ngpu = "mi300x"\n')
    for name in ("h200-pytorch-2.13.0.lock", "mi300x-pytorch-2.13.0.lock"):
        shutil.copyfile(ROOT / "lockfiles" / name, tmp_path / name)
    args = ("lock", "migrate", "h200-pytorch-2.13.0.lock", "mi300x-pytorch-2.13.0.lock")
    r = pin(tmp_path, *args, monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "-o FILE" in r.stderr
    r = pin(tmp_path, *args, "-o", "pin.lock", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)["result"]
    assert [t["name"] for t in res["targets"]] == ["current", "candidate"]
    _, multi, views = read_locks(tmp_path / "pin.lock")
    assert multi is not None and multi.project == "demo"
    assert views["current"].content_hash == read_lock(
        ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").content_hash
    assert (tmp_path / "pin.lock").read_text().startswith("#:schema ") is False  # no schemas/


def test_names_and_their_clashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.lock", "b.lock"):
        shutil.copyfile(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock", tmp_path / name)
    r = pin(tmp_path, "lock", "migrate", "a.lock", "b.lock", "-o", "m.lock",
            monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "a.lock and b.lock" in r.stderr and "'h200'" in r.stderr
    assert not (tmp_path / "m.lock").exists()
    r = pin(tmp_path, "lock", "migrate", "a.lock", "b.lock", "-o", "m.lock", "--name", "x",
            monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "--name" in r.stderr
    r = pin(tmp_path, "lock", "migrate", "a.lock", "b.lock", "-o", "m.lock", "--name", "x",
            "--name", "y", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and list(read_locks(tmp_path / "m.lock")[2]) == ["x", "y"]


def test_a_lock_version_2_file_is_left_as_it_is(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock", tmp_path / "pin.lock")
    assert pin(tmp_path, "lock", "migrate", "pin.lock", monkeypatch=monkeypatch).exit_code == 0
    before = (tmp_path / "pin.lock").read_bytes()
    r = pin(tmp_path, "lock", "migrate", "pin.lock", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and "already lock-version 2" in r.stdout
    assert (tmp_path / "pin.lock").read_bytes() == before


def test_the_schema_hint_names_the_version_2_schema(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "schemas").mkdir()
    shutil.copyfile(ROOT / "schemas" / "lockfile-v2.schema.json",
                    tmp_path / "schemas" / "lockfile-v2.schema.json")
    shutil.copyfile(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock", tmp_path / "pin.lock")
    assert pin(tmp_path, "lock", "migrate", "pin.lock", monkeypatch=monkeypatch).exit_code == 0
    first = (tmp_path / "pin.lock").read_text().splitlines()[0]
    assert first == "#:schema schemas/lockfile-v2.schema.json"
