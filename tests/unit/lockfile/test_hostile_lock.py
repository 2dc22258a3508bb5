"""A hostile lock, written by hand with its content hash recomputed so that only validation
can stop it: every value that reaches an image build is refused by ``read_lock`` and
``pin lock validate`` (exit 5) with the field named, and a hand edit of a value's type is
not coerced back into what the hash covers."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.errors import LockfileError
from pinning.lockfile.io import content_hash, lock_json, read_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.util.text import control_chars
from tests.support.cli import pin
from tests.support.paths import ROOT

EXAMPLE = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
DIGEST = "sha256:" + "a" * 64

Edit = Callable[[dict[str, Any]], None]

# Text that ends a Dockerfile line, a shell word or a command, or runs one.
HOSTILE = ["x\nRUN touch /pwned", "x\rRUN touch /pwned", "x\x00y", 'x" && touch /pwned "',
           "$(touch /pwned)", "`touch /pwned`", "x\x1b[2K", "x y"]


def example() -> dict[str, Any]:
    return lock_json(read_lock(EXAMPLE))


def write_hostile(path: Path, edit: Edit) -> Path:
    """Write the example lock with ``edit`` applied and the content hash of what it says."""
    data = example()
    edit(data)
    data["content-hash"] = content_hash(data)
    path.write_text(tomlkit.dumps(data))
    return path


def _set(*keys: str | int, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return edit


def _wheel(**fields: str) -> Edit:
    wheel = {"name": "six", "version": "1.16.0", "filename": "six-1.16.0-py2.py3-none-any.whl",
             "sha256": "0" * 64, **fields}
    return _set("wheels", value=[wheel])


CASES: list[tuple[str, Edit, str]] = [
    *[(f"env name {v!r}", _set("environment", value={v: "1"}), "environment.")
      for v in [*HOSTILE, "A=B", "1ABC", ""]],
    *[(f"env value {v!r}", _set("environment", value={"PIN_X": v}), "environment.PIN_X")
      for v in HOSTILE if control_chars(v)],
    *[(f"package name {v!r}", _set("packages", value={v: "1.0"}), "packages.")
      for v in [*HOSTILE, "six==1 -e ."]],
    *[(f"package version {v!r}", _set("packages", value={"six": v}), "packages.six")
      for v in [*HOSTILE, "1.0 --hash=sha256:00", ""] if control_chars(v) or " " in v or not v],
    *[(f"build step {v!r}", _set("build-steps", value=["true", v]), "build-steps[1]")
      for v in ["x\rRUN touch /pwned", "x\x00y", "x\x1b]0;title\x07", "x\x85y"]],
    *[(f"base {v!r}", _set("image", "base", value={"value": v, "origin": "user"}), "image")
      for v in [*HOSTILE, "a\nRUN touch x\nb/pin/base"]],
    ("base digest + newline", _set("image", "base-digest",
                                   value={"value": DIGEST + "\n", "origin": "user"}), "image"),
    ("image digest path", _set("image", "digest",
                               value={"value": "sha256:../../v2", "origin": "derived"}), "image"),
    ("image ref", _set("image", "ref", value={"value": "h/r@x\ny", "origin": "derived"}),
     "image"),
    ("epoch out of range", _set("image", "epoch", value=10**15), "image.epoch"),
    ("negative epoch", _set("image", "epoch", value=-1), "image.epoch"),
    ("wheel file outside the house", _wheel(filename="../../etc/x.whl"), "wheels[0].filename"),
    ("wheel name", _wheel(name="six\n--index-url=http://x"), "wheels[0].name"),
    ("wheel version", _wheel(version="1.16.0 --no-binary six"), "wheels[0].version"),
]


@pytest.mark.parametrize("edit,field", [(e, f) for _, e, f in CASES],
                         ids=[i for i, _, _ in CASES])
def test_read_lock_refuses_a_hostile_value_naming_the_field(tmp_path: Path, edit: Edit,
                                                             field: str) -> None:
    path = write_hostile(tmp_path / "hostile.lock", edit)
    with pytest.raises(LockfileError) as info:
        read_lock(path)
    assert info.value.exit_code == 5
    message = info.value.message
    assert "invalid lockfile" in message and field in message, message
    # The message itself carries no raw control character (it names, it does not replay).
    assert control_chars(message) == []


@pytest.mark.parametrize("edit,needle", [
    (_set("lock-version", value=True), "lock-version"),
    (_set("lock-version", value=1.0), "lock-version"),
    (_set("image", "epoch", value="1700000000"), "image.epoch"),
    (_set("frozen", value={"snapshot": DIGEST, "host": "h", "probed-by": "pin",
                           "forced": 0}), "frozen.forced"),
    (_set("matrix", "sources", 0, "overlay", value=0), "matrix.sources[0].overlay"),
], ids=["lock-version true", "lock-version 1.0", "epoch string", "forced 0", "overlay 0"])
def test_a_coerced_hand_edit_is_refused(tmp_path: Path, edit: Edit, needle: str) -> None:
    """The hash was taken over the value a coercing model would have read back: only the
    strict read can tell that the file says something else."""
    data = example()  # with a valid [frozen] and epoch for the edits to change
    data["frozen"] = {"snapshot": DIGEST, "host": "h", "probed-by": "pin", "forced": False}
    data["image"]["epoch"] = 1700000000
    data = lock_json(Lockfile.model_validate(data))
    path = tmp_path / "edited.lock"
    edited = copy.deepcopy(data)
    edit(edited)
    edited["content-hash"] = content_hash(data)
    path.write_text(tomlkit.dumps(edited))
    if needle != "lock-version":  # a coercing read would have matched the hash
        lax = Lockfile.model_validate({k: v for k, v in edited.items() if k != "content-hash"}
                                      | {"content-hash": DIGEST})
        assert content_hash(lock_json(lax)) == edited["content-hash"]
    with pytest.raises(LockfileError) as info:
        read_lock(path)
    assert info.value.exit_code == 5 and needle in info.value.message, info.value.message


@pytest.mark.parametrize("edit,field", [
    (_set("environment", value={"A\nRUN touch /pwned\nB": "1"}), "environment.A\\x0aRUN"),
    (_set("environment", value={"PIN_X": "\x1b]0;owned\x07"}), "environment.PIN_X"),
    (_set("build-steps", value=["true\r"]), "build-steps[0]"),
], ids=["env name", "env value", "build step"])
def test_pin_lock_validate_exits_5_naming_the_field(tmp_path: Path, edit: Edit,
                                                    field: str) -> None:
    path = write_hostile(tmp_path / "hostile.lock", edit)
    r = pin("lock", "validate", str(path))
    assert r.returncode == 5, r.stdout + r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr and "\r" not in r.stderr


def test_quotes_and_dollars_in_env_values_are_valid(tmp_path: Path) -> None:
    """Values are quoted where they are rendered, so text that is only dangerous unquoted
    stays a valid value (a lock may well need `$` or quotes in a variable)."""
    env = {"PIN_A": '"$(id)" `id` \\ $HOME', "_B": "ünï 'x'"}
    lock = read_lock(write_hostile(tmp_path / "ok.lock", _set("environment", value=env)))
    assert lock.environment == env


ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(name=st.text(max_size=12), value=st.text(max_size=12))
def test_any_environment_is_valid_exactly_when_it_is_safe(name: str, value: str) -> None:
    data = example()
    data["environment"] = {name: value}
    data["content-hash"] = content_hash(data)
    safe_name = ENV_NAME_RE.fullmatch(name) is not None
    safe_value = not control_chars(value)
    try:
        Lockfile.model_validate(data, strict=True)
    except ValueError:
        assert not (safe_name and safe_value)
    else:
        assert safe_name and safe_value


@settings(max_examples=100, deadline=None)
@given(name=ENV_NAME, value=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=(
    "Cc", "Cs")), max_size=20))
def test_safe_environments_round_trip(name: str, value: str) -> None:
    data = example()
    data["environment"] = {name: value}
    data["content-hash"] = content_hash(data)
    assert Lockfile.model_validate(data, strict=True).environment == {name: value}


def test_a_build_step_flag_with_a_control_character_is_a_usage_error(tmp_path: Path) -> None:
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0",
            "--build-step", "echo \x1b]0;owned\x07", "-o", str(tmp_path / "pin.lock"))
    assert r.returncode == 2 and "control characters" in r.stderr
    assert "\x1b" not in r.stderr and not (tmp_path / "pin.lock").exists()


def test_the_header_comments_of_a_written_lock_hold_no_control_character(
        tmp_path: Path, matrix: Matrix) -> None:
    from pinning.lockfile.io import amend, render
    from tests.support.locks import lock_for

    lock = lock_for(matrix, "mi300x", "pytorch==2.13.0")
    hostile = amend(lock, generator=lock.generator.model_copy(
        update={"command": "pin resolve --gpu mi300x \x1b]0;owned\x07 \x1b[2J"}))
    text = render(hostile, dest=tmp_path / "pin.lock")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header and not any("\x1b" in line or "\x07" in line for line in header)
    assert any("\\x1b]0;owned" in line for line in header)
