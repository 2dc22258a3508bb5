"""Hostile site overlays (``--matrix FILE``): a version or specifier the resolver would compare
is validated on load, so a bad one is exit 3 naming the file and the field, never exit 1 (a
bug) and never a row shown as validated."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinning.errors import MatrixError, PinError
from pinning.matrix.load import Matrix, load_file, load_matrix
from pinning.resolve.constraints import Constraints, parse_framework
from pinning.resolve.resolver import resolve
from tests.support.cli import pin
from tests.support.matrix import OVERLAY

FRAMEWORK_LINE = 'versions = ["2.10.0"]\n'

RESTRICTION = """
[[os-restrictions]]
source = "Example Lab footnote"
checked = 2026-11-20
mode = "only-these-os"
gpus = ["mi300x"]
os = ["ubuntu-24.04"]
runtimes = {runtimes}
"""


def with_framework_keys(extra: str) -> str:
    """The overlay with ``extra`` TOML lines added to its pytorch entry."""
    assert OVERLAY.count(FRAMEWORK_LINE) == 1
    return OVERLAY.replace(FRAMEWORK_LINE, FRAMEWORK_LINE + extra + "\n")


def with_restriction(runtimes: str) -> str:
    """The overlay plus one OS restriction whose ``runtimes`` is the TOML value ``runtimes``."""
    return OVERLAY + RESTRICTION.format(runtimes=runtimes)


KMD_LINE = 'kmd = ["30.30.0"]\n'


def with_release_keys(extra: str) -> str:
    """The overlay with ``extra`` TOML lines added to its release row."""
    assert OVERLAY.count(KMD_LINE) == 1
    return OVERLAY.replace(KMD_LINE, KMD_LINE + extra + "\n")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (every character escaped as \\uXXXX / \\UXXXXXXXX)."""
    return '"' + "".join(f"\\U{ord(c):08x}" for c in text) + '"'


HOSTILE = [
    ("min-runtime", with_framework_keys('min-runtime = "banana"'),
     "frameworks[0].min-runtime: 'banana' is not a PEP 440 version"),
    ("min-runtime-empty", with_framework_keys('min-runtime = "7..0"'),
     "frameworks[0].min-runtime"),
    ("min-runtime-huge", with_framework_keys(f'min-runtime = "{"9" * 5000}"'),
     "frameworks[0].min-runtime"),
    ("min-runtime-by-target", with_framework_keys('min-runtime-by-target = {gfx942 = "x.y"}'),
     "frameworks[0].min-runtime-by-target: gfx942 = 'x.y' is not a PEP 440"),
    ("framework-version", OVERLAY.replace(FRAMEWORK_LINE, 'versions = ["latest"]\n'),
     "frameworks[0].versions: 'latest' is not a PEP 440 version"),
    ("framework-version-among-good",
     OVERLAY.replace(FRAMEWORK_LINE, 'versions = ["2.10.0", "2.10.x"]\n'),
     "frameworks[0].versions: '2.10.x' is not a PEP 440 version"),
    ("unknown-reason-empty", with_release_keys('unknown = { hip = "" }'),
     "releases[0] (rocm 7.2.1).unknown.hip: a reason must say why"),
    ("unknown-reason-blank", with_release_keys('unknown = { firmware = "   " }'),
     "releases[0] (rocm 7.2.1).unknown.firmware: a reason must say why"),
    ("unknown-reason-control", with_release_keys('unknown = { hip = "a\\u001b[2Jb" }'),
     "releases[0] (rocm 7.2.1).unknown.hip: character \\x1b not allowed in a reason"),
    ("unknown-reason-invisible", with_release_keys('unknown = { os = "\\u200b" }'),
     "releases[0] (rocm 7.2.1).unknown.os: character \\u200b not allowed"),
    ("unknown-reason-filler", with_release_keys('unknown = { os = "\\u3164" }'),
     "releases[0] (rocm 7.2.1).unknown.os: a reason must say why"),
    ("unknown-reason-line-separator", with_release_keys('unknown = { os = "a\\u2028b" }'),
     "releases[0] (rocm 7.2.1).unknown.os: character \\u2028 not allowed"),
    ("versions-unknown-empty",
     OVERLAY.replace(FRAMEWORK_LINE, 'versions-unknown = ""\n'),
     "frameworks[0].versions-unknown: a reason must say why"),
    ("os-runtimes", with_restriction('">>>7"'),
     "os-restrictions[0].runtimes: '>>>7' is not a PEP 440 specifier"),
    ("os-runtimes-no-operator", with_restriction('"7.0"'), "os-restrictions[0].runtimes"),
    ("os-runtimes-compatible-one-part", with_restriction('"~=7"'),
     "os-restrictions[0].runtimes"),
    ("os-runtimes-huge", with_restriction(f'">={"9" * 5000}"'), "os-restrictions[0].runtimes"),
]


@pytest.mark.parametrize("text,needle", [(t, n) for _, t, n in HOSTILE],
                         ids=[name for name, _, _ in HOSTILE])
def test_hostile_overlay_is_a_matrix_error_naming_file_and_field(
        tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "hostile.toml"
    p.write_text(text)
    with pytest.raises(MatrixError) as info:
        load_file(p, overlay=True)
    assert info.value.exit_code == 3
    assert f"Matrix file {p}" in info.value.message
    assert needle in info.value.message


CLI_CASES = ("min-runtime", "os-runtimes", "framework-version")


@pytest.mark.parametrize("text,needle", [(t, n) for name, t, n in HOSTILE if name in CLI_CASES],
                         ids=[name for name, _, _ in HOSTILE if name in CLI_CASES])
def test_cli_refuses_hostile_overlay_with_exit_3(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "hostile.toml"
    p.write_text(text)
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", "--rocm", "7.2.1",
            "--matrix", str(p), "-o", "-")
    assert r.returncode == 3, r.stderr
    assert str(p) in r.stderr and needle in r.stderr
    assert "bug in pin" not in r.stderr and "Traceback" not in r.stderr


def test_valid_overlay_values_still_load_and_resolve(tmp_path: Path) -> None:
    p = tmp_path / "lab.toml"
    p.write_text(with_restriction('">=7.2.1,<7.3"').replace(
        FRAMEWORK_LINE, FRAMEWORK_LINE + 'min-runtime = "7.2"\n'
        'min-runtime-by-target = {gfx942 = "7.2.1"}\n'))
    m = load_matrix([p])
    res = resolve(m, Constraints(gpu="mi300x", frameworks=(
        parse_framework("pytorch==2.10.0", m.framework_names()),)))
    assert res.runtime_version == "7.2.1"


_FILES = itertools.count()  # one file per example
VALUE = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)  # no lone surrogates


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(min_runtime=VALUE, by_target=VALUE, version=VALUE, runtimes=VALUE)
def test_arbitrary_overlay_values_load_or_refuse_never_crash(
        tmp_path: Path, matrix: Matrix, min_runtime: str, by_target: str, version: str,
        runtimes: str) -> None:
    text = with_restriction(toml_string(runtimes)).replace(
        FRAMEWORK_LINE,
        f"versions = [{toml_string(version)}]\n"
        f"min-runtime = {toml_string(min_runtime)}\n"
        f"min-runtime-by-target = {{gfx942 = {toml_string(by_target)}}}\n")
    p = tmp_path / f"arbitrary-{next(_FILES)}.toml"
    p.write_text(text)
    try:
        m = Matrix([*matrix.files, load_file(p, overlay=True)])  # as load_matrix([p]) builds it
    except MatrixError as exc:
        assert str(p) in exc.message
        return
    with contextlib.suppress(PinError):  # a result or a PinError, never another exception
        resolve(m, Constraints(gpu="mi300x", frameworks=(
            parse_framework("pytorch", m.framework_names()),)))
