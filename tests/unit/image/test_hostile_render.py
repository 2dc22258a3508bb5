"""The build context is checked where it is rendered: a hostile value that bypassed the
models (``model_construct``, a plan built by hand) still cannot add a Dockerfile line, a
requirements option or a file outside the context; render_context raises BuildError (exit 8)
and writes nothing. Safe values are quoted so that they mean exactly themselves."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.errors import BuildError
from pinning.image.plan import BuildPlan, plan_build, render_context
from pinning.lockfile.io import read_lock
from pinning.lockfile.wheels import Wheel
from pinning.util.text import control_chars
from tests.support.paths import ROOT

BASE = "127.0.0.1:5000/pin/base@sha256:" + "a" * 64
LABEL = "sha256:" + "b" * 64
SIX = "six-1.16.0-py2.py3-none-any.whl"
HOSTILE = ["x\nRUN touch /pwned", "x\rRUN touch /pwned", "x\x00y", "x\x1b[2K", "x\x85y"]


def six(**fields: str) -> Wheel:
    values: dict[str, Any] = {"name": "six", "version": "1.16.0", "filename": SIX,
                              "sha256": "c" * 64, **fields}
    return Wheel.model_construct(None, **values)  # no validation: only the renderer checks


def good_plan() -> BuildPlan:
    return BuildPlan(base_ref=BASE, wheels=(six(),), env={"PIN_TRIAL": "1"}, epoch=0,
                     input_hash=LABEL, steps=("true",))


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "house"
    house.mkdir()
    (house / SIX).write_bytes(b"six")
    return house


PLANS: list[tuple[str, BuildPlan, str]] = [
    *[(f"base {v!r}", dataclasses.replace(good_plan(), base_ref=v), "base image")
      for v in [f"a\nRUN touch /pwned\nb/pin/base@sha256:{'a' * 64}",
                f'a"b/pin/base@sha256:{"a" * 64}', f"$(id)/pin/base@sha256:{'a' * 64}",
                f"`id`/pin/base@sha256:{'a' * 64}", BASE + "\n", BASE + " AS x",
                "127.0.0.1:5000/pin/base:latest"]],
    *[(f"env name {v!r}", dataclasses.replace(good_plan(), env={v: "1"}), "environment name")
      for v in [*HOSTILE, "A=B", "A B", '"A"', "$(id)", "`id`", ""]],
    *[(f"env value {v!r}", dataclasses.replace(good_plan(), env={"PIN_X": v}),
       "environment PIN_X value") for v in HOSTILE],
    *[(f"wheel name {v!r}", dataclasses.replace(good_plan(), wheels=(six(name=v),)),
       "wheel name") for v in [*HOSTILE, "six --index-url=http://x", "-e ."]],
    *[(f"wheel version {v!r}", dataclasses.replace(good_plan(), wheels=(six(version=v),)),
       "wheel six version") for v in [*HOSTILE, "1 --no-binary six", ""]],
    *[(f"wheel file {v!r}", dataclasses.replace(good_plan(), wheels=(six(filename=v),)),
       "wheel six file name") for v in ["../../x.whl", "/etc/passwd", "a\nb.whl", ".whl"]],
    ("wheel sha256", dataclasses.replace(good_plan(), wheels=(six(sha256="0" * 63 + "\n"),)),
     "wheel six sha256"),
    *[(f"step {v!r}", dataclasses.replace(good_plan(), steps=("true", v)), "build step 2")
      for v in ["x\ry", "x\x00y", "x\x1b]0;t\x07"]],
    ("label", dataclasses.replace(good_plan(), input_hash=LABEL + '"\nRUN touch /pwned'),
     "lock label"),
]


@pytest.mark.parametrize("plan,what", [(p, w) for _, p, w in PLANS],
                         ids=[i for i, _, _ in PLANS])
def test_render_refuses_a_hostile_plan_and_writes_nothing(wheelhouse: Path, tmp_path: Path,
                                                          plan: BuildPlan, what: str) -> None:
    dest = tmp_path / "ctx"
    dest.mkdir()
    with pytest.raises(BuildError) as info:
        render_context(plan, wheelhouse, dest)
    assert info.value.exit_code == 8 and what in info.value.message, info.value.message
    assert control_chars(info.value.message) == []
    assert list(dest.iterdir()) == []


def test_a_good_plan_renders(wheelhouse: Path, tmp_path: Path) -> None:
    dest = render_context(good_plan(), wheelhouse, tmp_path / "ctx")
    text = (dest / "Dockerfile").read_text()
    assert text.splitlines()[0].startswith("# Trial image for a pin lockfile (rendered by "
                                           "pinning.image.plan;")
    assert f"FROM {BASE}\nUSER root\nENV PIN_TRIAL=\"1\"\n" in text
    assert (dest / "wheels" / "requirements.txt").read_text() == (
        f"six==1.16.0 --hash=sha256:{'c' * 64}\n")


def test_a_lock_model_bypassed_is_still_refused(wheelhouse: Path, tmp_path: Path) -> None:
    """A lock built without validation (``model_construct``) and planned as usual: the
    environment it carries is caught when the Dockerfile is rendered."""
    lock = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    hostile = lock.model_construct(**{**dict(lock), "packages": {"six": "1.16.0"},
                                      "environment": {"A\nRUN touch /pwned\n#": "1"}})
    plan = plan_build(hostile, BASE, wheelhouse)
    with pytest.raises(BuildError, match="environment name"):
        render_context(plan, wheelhouse, tmp_path / "ctx")
    assert not (tmp_path / "ctx").exists()


@pytest.mark.parametrize("base", [
    f"a\nRUN touch /pwned\nb/pin/base@sha256:{'a' * 64}",
    f"a b/pin/base@sha256:{'a' * 64}",
    f"127.0.0.1:5000/pin/base:t\u00e9@sha256:{'a' * 64}",
])
def test_base_flag_is_matched_whole(wheelhouse: Path, base: str) -> None:
    lock = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    lock = lock.model_copy(update={"packages": {"six": "1.16.0"}})
    with pytest.raises(BuildError, match="is not HOST/REPO"):
        plan_build(lock, base, wheelhouse)


def _dockerfile_unquote(word: str) -> str:
    """What Docker reads from a double-quoted ENV word (backslash escapes the next char)."""
    assert word.startswith('"') and word.endswith('"')
    return re.sub(r"\\(.)", r"\1", word[1:-1], flags=re.DOTALL)


@settings(max_examples=200, deadline=None)
@given(value=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")),
                     max_size=30))
def test_any_safe_env_value_is_one_line_that_means_itself(
        tmp_path_factory: pytest.TempPathFactory, value: str) -> None:
    house = tmp_path_factory.mktemp("house")
    (house / SIX).write_bytes(b"six")
    plan = dataclasses.replace(good_plan(), env={"PIN_X": value})
    dest = render_context(plan, house, tmp_path_factory.mktemp("ctx"))
    lines = [ln for ln in (dest / "Dockerfile").read_text().splitlines()
             if ln.startswith("ENV ")]
    assert len(lines) == 1 and lines[0].startswith("ENV PIN_X=")
    word = lines[0].removeprefix("ENV PIN_X=")
    assert re.search(r'(?<!\\)(?:\\\\)*\$', word) is None  # every $ is escaped
    assert _dockerfile_unquote(word) == value


def test_odd_wheel_file_names_are_not_planned(tmp_path: Path) -> None:
    """A wheel house file whose name could not be written safely is not a candidate: the
    plan says the wheel is missing (exit 8) instead of failing later."""
    house = tmp_path / "house"
    house.mkdir()
    (house / "six-1.16.0~x-py2.py3-none-any.whl").write_bytes(b"six")
    (house / "six-1.16.0-py2.py3-none-any x.whl").write_bytes(b"six")
    lock = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    for version in ("1.16.0~x", "1.16.0"):
        hostile = lock.model_copy(update={"packages": {"six": version}})
        with pytest.raises(BuildError, match=f"No wheel for six=={re.escape(version)}"):
            plan_build(hostile, BASE, house)
