"""Versions past the bounds (64 characters, 18 digits a number; Python refuses ``int()`` of
more than 4,300 digits): every version function stays total, and where versions enter pin
they are a usage or data error naming the flag, file or field, never exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from pinning.util.versions import (
    MAX_NUMBER_DIGITS,
    MAX_VERSION_CHARS,
    allowed_contains,
    at_least,
    constraint_holds,
    in_specifier,
    match_entry,
    numeric_parts,
    pep440,
    series_less,
    sort_key,
    specifier_problem,
    version_fields_problem,
    version_problem,
)
from tests.support.cli import pin
from tests.support.matrix import OVERLAY
from tests.support.paths import ROOT

HUGE = "9" * 5000
LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
SNAPSHOT = ROOT / "tests" / "data" / "hosts"

digit_runs = st.integers(min_value=MAX_NUMBER_DIGITS + 1, max_value=6000).map(lambda n: "7" * n)
hostile = st.one_of(
    digit_runs,
    st.tuples(st.sampled_from(["", "1.", "v", "=="]), digit_runs,
              st.sampled_from(["", ".0", "+rocm7.1", ".x"])).map("".join),
    st.text(alphabet="0123456789.²٣", min_size=1, max_size=80),
)


@given(hostile)
def test_every_function_is_total_on_huge_digit_runs(text: str) -> None:
    numeric_parts(text)
    sort_key(text)
    series_less(text, "7.0")
    assert at_least(text, "1") in (True, False, None)
    assert pep440(text) is None or version_problem(text) is None
    assert in_specifier(text, ">=1") in (True, False, None)
    assert in_specifier("1.0", ">=" + text) in (True, False, None)
    allowed_contains([text, text + " (or later)"], "1.0")
    constraint_holds(">=" + text, "1.0")
    match_entry(text, SpecifierSet(">=1"))


def test_huge_numbers_give_unknown_not_an_exception() -> None:
    assert pep440(HUGE) is None and pep440("1." + HUGE) is None
    assert in_specifier("1." + HUGE, ">=1") is None
    assert in_specifier("1.0", ">=" + HUGE) is None
    assert match_entry("2.9", SpecifierSet("==" + "1" * 40)) is None
    assert numeric_parts("7." + HUGE) == () and at_least("1." + HUGE, "1.0") is None
    long_part = "9" * 30  # within 64 characters, but a number past 18 digits
    assert numeric_parts("7." + long_part) == (7,)  # the part past the bound ends it
    assert sort_key("7." + long_part) == (7, 0)
    assert at_least("1." + long_part, "1") is True
    assert numeric_parts("²") == () and sort_key("²") == (0,)  # isdigit() but not int()


def test_bounds_name_what_is_wrong() -> None:
    assert version_problem("1.2.3") is None
    assert version_problem("1" * MAX_NUMBER_DIGITS) is None
    assert "19 digits" in (version_problem("1" * 19) or "")
    assert f"more than the {MAX_VERSION_CHARS}" in (version_problem("1." * 40) or "")
    assert specifier_problem(">=7.0,<8,!=7.0.1") is None
    assert "5007 characters" in (specifier_problem(">=7.0,<" + HUGE) or "")
    assert "30 digits" in (specifier_problem(">=7.0,<" + "1" * 30) or "")


def test_version_fields_problem_names_the_field() -> None:
    data = {"frameworks": [{"name": "pytorch", "version": {"value": "2." + HUGE,
                                                             "origin": "matrix"}}]}
    assert (version_fields_problem(data, {"version"}) or "").startswith(
        "frameworks[0].version.value: ")
    assert version_fields_problem({"unknown": {"version": "x" * 100}}, {"version"}) is None
    assert (version_fields_problem({"request": {"rocm": ">=" + HUGE}}, set(), {"rocm"})
            or "").startswith("request.rocm: ")
    deep: list[object] = []
    for _ in range(5000):  # iterative: no recursion limit
        deep = [deep]
    assert version_fields_problem({"x": deep}, {"version"}) is None


@pytest.mark.parametrize("flag,value", [
    ("--rocm", "7." + HUGE),
    ("--rocm", ">=" + "1." * 100 + "0"),
    ("--cuda", "13." + "0" * 30),
    ("--framework", "pytorch==" + HUGE),
    ("--framework", "pytorch>=2." + "1" * 19),
])
def test_cli_flags_past_the_bound_are_exit_2_naming_the_flag(flag: str, value: str) -> None:
    args = ["resolve", "--gpu", "mi300x", flag, value]
    if flag != "--framework":
        args += ["--framework", "pytorch"]
    r = pin(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"pin: error: {flag} ") and "Traceback" not in r.stderr
    assert len(r.stderr) < 1000  # the value is shown cut, not 5,000 digits


@pytest.mark.parametrize("old,new", [
    ('version = "7.2.1"', f'version = "7.2.{HUGE}"'),
    ('version = "7.2.1"', 'version = "7.2.' + "1" * 30 + '"'),
    ('kmd = ["30.30.0"]', f'kmd = ["30.30.{"0" * 70}"]'),
    ('version = "7.2.1"', f"version = {HUGE}"),  # a TOML integer int() refuses
])
def test_overlay_versions_past_the_bound_are_exit_3_naming_file_and_field(
        tmp_path: Path, old: str, new: str) -> None:
    assert OVERLAY.count(old) == 1
    overlay = tmp_path / "site.toml"
    overlay.write_text(OVERLAY.replace(old, new))
    r = pin("matrix", "list", "--matrix", str(overlay))
    assert r.returncode == 3, r.stderr
    assert str(overlay) in r.stderr and "Traceback" not in r.stderr
    field = old.split(" ", 1)[0]
    assert f"releases[0].{field}" in r.stderr or "number too long" in r.stderr


def _resealed(tmp_path: Path, edit: str, replacement: str) -> Path:
    """The example lock with ``edit`` replaced and the content hash recomputed (a lock a
    hostile tool wrote: valid but for the version)."""
    import tomllib

    from pinning.lockfile.io import content_hash

    text = LOCK.read_text()
    assert text.count(edit) == 1
    text = text.replace(edit, replacement)
    data = tomllib.loads(text)
    old = data["content-hash"]
    text = text.replace(old, content_hash(data))
    path = tmp_path / "hostile.lock"
    path.write_text(text)
    return path


@pytest.mark.parametrize("edit,replacement,field", [
    ('value = "2.13.0"', f'value = "2.13.{HUGE}"', "frameworks[0].version.value"),
    ('frameworks = ["pytorch==2.13.0"]',
     'frameworks = ["pytorch==2.13.0"]\ncuda = "==' + "1" * 40 + '"', "request.cuda"),
    ('frameworks = ["pytorch==2.13.0"]', 'frameworks = ["pytorch==' + HUGE + '"]',
     "request.frameworks[0]"),
])
def test_lock_versions_past_the_bound_are_exit_5_naming_the_field(
        tmp_path: Path, edit: str, replacement: str, field: str) -> None:
    path = _resealed(tmp_path, edit, replacement)
    r = pin("lock", "validate", str(path))
    assert r.returncode == 5, r.stderr
    assert field in r.stderr and str(path) in r.stderr and "Traceback" not in r.stderr


def test_snapshot_versions_past_the_bound_are_exit_7_naming_the_field(tmp_path: Path) -> None:
    host = tmp_path / "host.json"
    probe = pin("probe", "--root", str(SNAPSHOT / "h200-cuda13" / "root"), "--replay",
                str(SNAPSHOT / "h200-cuda13" / "commands.toml"), "-o", str(host))
    assert probe.returncode == 0, probe.stderr
    data = json.loads(host.read_text())
    data["nvidia"]["driver"]["value"] = "580." + HUGE
    host.write_text(json.dumps(data))
    r = pin("verify", str(LOCK), "--host", str(host))
    assert r.returncode == 7, r.stderr
    assert "nvidia.driver.value" in r.stderr and "Traceback" not in r.stderr
    host.write_text(host.read_text().replace('"host-version": 1', f'"host-version": {HUGE}'))
    r = pin("verify", str(LOCK), "--host", str(host))
    assert r.returncode == 7 and "number too long" in r.stderr, r.stderr


def test_the_reason_of_an_unread_version_is_prose_not_a_version() -> None:
    from pinning.util.versions import version_fields_problem

    reason = "ldd --version did not run: a --root probe runs no tools without --replay"
    assert len(reason) > 64
    assert version_fields_problem({"os": {"glibc": {"source": "ldd --version",
                                                    "reason": reason}}}, {"glibc"}) is None
    assert version_fields_problem({"glibc": {"reason": reason, "absent": True}},
                                  {"glibc"}) is None
    # Its value, and a map of versions, are still judged.
    assert version_fields_problem({"glibc": {"value": "1" * 70, "source": "ldd"}}, {"glibc"})
    assert version_fields_problem({"versions": {"source": "1" * 70, "numpy": "2.1.2"}},
                                  {"versions"})


def test_a_snapshot_of_a_root_probed_without_tools_reads_back(tmp_path: Path) -> None:
    from pinning.probe.host import probe_host
    from pinning.probe.snapshot import read_snapshot, write_snapshot
    from pinning.util.proc import NoRunner
    from tests.support.hosts import MI300X

    facts = probe_host(MI300X / "root", NoRunner())
    assert facts.os.glibc.value is None and len(facts.os.glibc.reason or "") > 64
    write_snapshot(facts, tmp_path / "s.json")
    assert read_snapshot(tmp_path / "s.json") == facts
