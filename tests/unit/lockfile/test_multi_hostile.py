"""A hostile ``lock-version = 2`` file, written by hand with every content hash recomputed
so that only validation can stop it: each is refused (exit 5) with one message naming the
file and the field, never a traceback nor a silent acceptance."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from click.testing import CliRunner

from pinning.cli import main
from pinning.errors import LockfileError
from pinning.lockfile.io import content_hash, lock_json, read_lock, read_locks
from pinning.lockfile.multi import multi_hash, multi_json, split
from pinning.lockfile.tomlout import toml_item
from tests.support.paths import ROOT

H200 = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"


def _base() -> dict[str, Any]:
    """Two identical targets, so ``[shared]`` holds a generator, matrix and request."""
    view = lock_json(read_lock(H200))
    data = multi_json(split({"a": view, "b": copy.deepcopy(view)}, project="demo"))
    assert "frameworks" in data["shared"]["request"]
    return data


def _reseal(data: dict[str, Any]) -> None:
    """Each target's hash over its view (where one can be built), then the file's."""
    shared = data.get("shared", {})
    for section in data["targets"].values():
        try:
            view = {"lock-version": 1, **{k: v for k, v in shared.items() if k != "request"},
                    **section, "request": {**shared.get("request", {}),
                                           **section.get("request", {})}}
        except (TypeError, ValueError, AttributeError):
            continue
        section["content-hash"] = content_hash(view)
    data["content-hash"] = multi_hash(data)


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    doc = tomlkit.document()
    for key, value in data.items():
        doc.add(key, toml_item(value))
    path = tmp_path / "pin.lock"
    path.write_text(tomlkit.dumps(doc))
    return path


def _refused(tmp_path: Path, data: dict[str, Any], *words: str) -> str:
    _reseal(data)
    path = _write(tmp_path, data)
    with pytest.raises(LockfileError) as err:
        read_locks(path)
    message = str(err.value)
    assert str(path) in message
    for word in words:
        assert word in message
    result = CliRunner().invoke(main, ["lock", "validate", str(path)])
    assert result.exit_code == 5, result.output
    assert "Traceback" not in result.output and "unexpected" not in result.output
    return message


def test_the_base_file_reads(tmp_path: Path) -> None:
    data = _base()
    _reseal(data)
    _, multi, locks = read_locks(_write(tmp_path, data))
    assert multi is not None and list(locks) == ["a", "b"]


@pytest.mark.parametrize("version", ["2", True, 2.0, 1.0])
def test_a_lock_version_that_is_not_an_integer_is_refused(tmp_path: Path,
                                                          version: object) -> None:
    # `2.0 == 2` and `True == 1` in Python: 2.0 read as version 2, silently, before.
    data = _base()
    data["lock-version"] = version
    _refused(tmp_path, data, "lock-version must be an integer", type(version).__name__)


@pytest.mark.parametrize("bad", ["x", [1, 2]])
def test_a_target_request_that_is_not_a_table_is_refused(tmp_path: Path, bad: object) -> None:
    data = _base()
    data["targets"]["a"]["request"] = bad  # a traceback (TypeError/ValueError) before
    _refused(tmp_path, data, "[targets.a]", "request")


def test_a_shared_request_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    data = _base()
    data["shared"]["request"] = "gpu"  # named "not g, p, u" (its letters) before
    message = _refused(tmp_path, data, "[shared] request must be a table")
    assert "not g" not in message


def test_a_target_section_holding_lock_version_is_refused(tmp_path: Path) -> None:
    data = _base()
    data["targets"]["a"]["lock-version"] = 1  # the view's hash is the same: accepted before
    _refused(tmp_path, data, "[targets.a]", "lock-version")


@pytest.mark.parametrize("name", ["x" * 10_000, "a\x1b[31mred", "\x1b]0;pwn\x07", "bad name!"])
def test_a_bad_target_name_is_named_short_and_escaped(tmp_path: Path, name: str) -> None:
    data = _base()
    data["targets"][name] = data["targets"].pop("b")
    message = _refused(tmp_path, data, "is not a target name")
    assert "\x1b" not in message and "\x07" not in message
    assert len(message) < 400  # the whole 10,000 characters, before
