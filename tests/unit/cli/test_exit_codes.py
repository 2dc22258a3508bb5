"""The exit code README documents, for every command and every way a path can be wrong: a
LOCK, a --host snapshot or a --matrix overlay that is missing, a directory, a dangling
symbolic link, a FIFO or unreadable is 5 / 7 / 3 (never click's 2, never 1); an output file
that cannot be written (missing folder, a file where a folder should be, a directory in the
way, a place nothing can be created) is 2 in every command. Each message names the path.

Commands run in-process (click's runner, the same ``main`` and exit codes) to keep the table
fast; a few rows run as a real subprocess too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinning.cli import main
from tests.support.cli import pin
from tests.support.hosts import MI300X
from tests.support.paths import DATA, ROOT

EXAMPLE_LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
DIGEST = "sha256:" + "ab" * 32
REF = f"127.0.0.1:9/pin/trial@{DIGEST}"  # nothing listens: pin must stop before it connects
HOST = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
AS_ROOT = os.geteuid() == 0


def run(*args: str) -> tuple[int, str]:
    """``pin ARGS`` in-process: the exit code and what it wrote to stderr."""
    result = CliRunner(env={"PIN_KEY_PASSWORD": "correct horse", "PIN_MATRIX": None}).invoke(
        main, list(args))
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good inputs the bad one is combined with: a lock, a snapshot, a key pair."""
    d = tmp_path_factory.mktemp("inputs")
    lock = d / "pin.lock"
    shutil.copy(EXAMPLE_LOCK, lock)
    snap = d / "host.json"
    code, err = run("probe", *HOST, "-o", str(snap))
    assert code == 0, err
    code, err = run("keygen", "-o", str(d / "k"))
    assert code == 0, err
    return {"lock": lock, "snap": snap, "key": d / "k.key", "pub": d / "k.pub"}


# -- inputs that cannot be read --------------------------------------------------------------


def _directory(tmp: Path) -> Path:
    (tmp / "a-directory").mkdir()
    return tmp / "a-directory"


def _missing(tmp: Path) -> Path:
    return tmp / "absent.file"


def _dangling(tmp: Path) -> Path:
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    return tmp / "dangling"


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "a-fifo")
    return tmp / "a-fifo"


def _unreadable(tmp: Path) -> Path:
    (tmp / "unreadable").write_text("lock-version = 1\n")
    (tmp / "unreadable").chmod(0)
    return tmp / "unreadable"


UNREADABLE = [
    pytest.param(_directory, id="directory"),
    pytest.param(_missing, id="missing"),
    pytest.param(_dangling, id="dangling-symlink"),
    pytest.param(_fifo, id="fifo"),
    pytest.param(_unreadable, id="chmod-000", marks=pytest.mark.skipif(
        AS_ROOT, reason="root reads a chmod 000 file; the other rows cover unreadable")),
]

# (command, the documented code): BAD is the unreadable path, the others the good inputs.
READERS: list[tuple[list[str], int]] = [
    (["lock", "show", "BAD"], 5),
    (["lock", "validate", "LOCK", "BAD"], 5),
    (["verify", "BAD", *HOST], 5),
    (["freeze", "BAD", *HOST], 5),
    (["probe", "--lock", "BAD", *HOST], 5),
    (["build", "BAD", "--wheelhouse", "DIR", "--registry", "http://127.0.0.1:9"], 5),
    (["rebuild", "BAD", "--wheelhouse", "DIR"], 5),
    (["sign", REF, "--key", "KEY", "--lock", "BAD"], 5),
    (["verify-image", REF, "--key", "PUB", "--lock", "BAD"], 5),
    (["probe", "--host", "BAD"], 7),
    (["verify", "LOCK", "--host", "BAD"], 7),
    (["freeze", "LOCK", "--host", "BAD"], 7),
    (["probe", "--root", str(MI300X / "root"), "--replay", "BAD"], 7),
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "--matrix", "BAD",
      "-o", "-"], 3),
    (["probe", "--matrix", "BAD", "--host", "SNAP"], 3),
    (["verify", "LOCK", "--matrix", "BAD", "--host", "SNAP"], 3),
    (["freeze", "LOCK", "--matrix", "BAD", "--host", "SNAP"], 3),
    (["matrix", "list", "--matrix", "BAD"], 3),
    (["sign", REF, "--key", "BAD"], 9),
    (["verify-image", REF, "--key", "BAD"], 9),
]


def _args(template: list[str], bad: Path, inputs: dict[str, Path], tmp: Path) -> list[str]:
    names = {"BAD": str(bad), "LOCK": str(inputs["lock"]), "SNAP": str(inputs["snap"]),
             "KEY": str(inputs["key"]), "PUB": str(inputs["pub"]), "DIR": str(tmp)}
    return [names.get(a, a) for a in template]


@pytest.mark.parametrize("make_bad", UNREADABLE)
@pytest.mark.parametrize("template,code", READERS,
                         ids=[" ".join(a for a in t if not a.startswith("/"))[:60]
                              for t, _ in READERS])
def test_an_input_that_cannot_be_read_has_its_documented_code(
        tmp_path: Path, inputs: dict[str, Path], make_bad: Callable[[Path], Path],
        template: list[str], code: int) -> None:
    bad = make_bad(tmp_path)
    before = inputs["lock"].read_bytes()
    got, err = run(*_args(template, bad, inputs, tmp_path))
    assert got == code, err
    assert bad.name in err
    assert "bug in pin" not in err and "Traceback" not in err and "Usage:" not in err
    assert inputs["lock"].read_bytes() == before


def _a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("")
    return tmp / "a-file"


@pytest.mark.parametrize("make_bad", [_missing, _dangling, _fifo, _a_file],
                         ids=["missing", "dangling-symlink", "fifo", "a-file"])
def test_a_root_that_is_not_a_tree_is_exit_7(tmp_path: Path,
                                              make_bad: Callable[[Path], Path]) -> None:
    bad = make_bad(tmp_path)
    got, err = run("probe", "--root", str(bad))
    assert got == 7, err
    assert "not a directory" in err and "Usage:" not in err


# -- outputs that cannot be written ----------------------------------------------------------


def _in_missing_folder(tmp: Path) -> Path:
    return tmp / "no" / "such" / "out.key"


def _under_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("")
    return tmp / "a-file" / "out.key"


def _directory_in_the_way(tmp: Path) -> Path:
    (tmp / "out.key").mkdir()
    return tmp / "out.key"


def _in_proc(tmp: Path) -> Path:
    return Path("/proc") / "out.key"  # the kernel's file system: nothing can be created


def _read_only_folder(tmp: Path) -> Path:
    (tmp / "ro").mkdir()
    (tmp / "ro").chmod(0o555)
    return tmp / "ro" / "out.key"


UNWRITABLE = [
    pytest.param(_in_missing_folder, id="missing-folder"),
    pytest.param(_under_a_file, id="under-a-file"),
    pytest.param(_directory_in_the_way, id="directory"),
    pytest.param(_in_proc, id="proc"),
    pytest.param(_read_only_folder, id="read-only-folder", marks=pytest.mark.skipif(
        AS_ROOT, reason="root writes into a mode 555 folder; /proc covers read-only")),
]

# OUT is the output path; keygen is given the prefix of OUT (it writes PREFIX.key).
WRITERS: list[list[str]] = [
    ["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", "OUT"],
    ["freeze", "LOCK", "--host", "SNAP", "--force", "-o", "OUT"],
    ["probe", "--host", "SNAP", "-o", "OUT"],
    ["matrix", "import-pytorch", str(DATA / "release-compatibility-matrix.md"),
     "--checked", "2026-01-01", "-o", "OUT"],
    ["keygen", "-o", "PREFIX"],
]


@pytest.mark.parametrize("make_target", UNWRITABLE)
@pytest.mark.parametrize("template", WRITERS, ids=[" ".join(t[:2]) for t in WRITERS])
def test_an_output_that_cannot_be_written_is_exit_2_in_every_command(
        tmp_path: Path, inputs: dict[str, Path], make_target: Callable[[Path], Path],
        template: list[str]) -> None:
    target = make_target(tmp_path)
    names = {"OUT": str(target), "PREFIX": str(target)[: -len(".key")],
             "LOCK": str(inputs["lock"]), "SNAP": str(inputs["snap"])}
    before = inputs["lock"].read_bytes()
    got, err = run(*[names.get(a, a) for a in template])
    assert got == 2, err
    assert str(target.parent) in err
    assert "bug in pin" not in err and "Traceback" not in err
    assert inputs["lock"].read_bytes() == before
    if target.parent.is_dir() and target.parent != Path("/proc"):
        assert sorted(p.name for p in target.parent.iterdir()
                      if p.name.startswith(".out.key")) == []  # no temp or lock file left


EMPTY_PATH_WRITERS = [*WRITERS, ["build", "LOCK", "-o", "OUT"]]


@pytest.mark.parametrize("template", EMPTY_PATH_WRITERS,
                         ids=[" ".join(t[:2]) for t in EMPTY_PATH_WRITERS])
def test_an_empty_output_path_is_a_usage_error(
        tmp_path: Path, inputs: dict[str, Path], template: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o ''`` (an unset shell variable) never means "the default file" or "LOCK itself"."""
    monkeypatch.chdir(tmp_path)
    names = {"OUT": "", "PREFIX": "", "LOCK": str(inputs["lock"]), "SNAP": str(inputs["snap"])}
    before = inputs["lock"].read_bytes()
    got, err = run(*[names.get(a, a) for a in template])
    assert got == 2, err
    assert "an empty path was given" in err and "'-o' / '--output'" in err
    assert inputs["lock"].read_bytes() == before
    assert list(tmp_path.iterdir()) == []  # no pin.lock, .key or .pub in the working folder


# -- the same codes from a real process ------------------------------------------------------


def test_real_process_exit_statuses(tmp_path: Path, inputs: dict[str, Path]) -> None:
    folder = _directory(tmp_path)
    assert pin("lock", "validate", str(folder)).returncode == 5
    assert pin("probe", "--host", str(folder)).returncode == 7
    assert pin("matrix", "list", "--matrix", str(folder)).returncode == 3
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0",
            "-o", str(tmp_path / "no" / "x.lock"))
    assert r.returncode == 2 and "cannot write the lockfile" in r.stderr


@pytest.mark.parametrize("args", [
    ["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", "."],
    ["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", "sub/"],
    ["keygen", "-o", "."],
    ["probe", "--host", ""],
    ["probe", "--root", "", "--replay", ""],
    ["verify", "LOCK", "--host", " "],
], ids=["dot", "trailing-slash", "keygen-dot", "host-empty", "root-empty", "host-blank"])
def test_a_folder_or_blank_path_is_a_usage_error(tmp_path: Path, inputs: dict[str, Path],
                                                 args: list[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o .` was exit 1 (a bug); `--host ''` meant "probe this machine" and froze it."""
    monkeypatch.chdir(tmp_path)
    got, err = run(*[str(inputs["lock"]) if a == "LOCK" else a for a in args])
    assert got == 2, err
    assert "names a folder" in err or "an empty path was given" in err
    assert list(tmp_path.iterdir()) == []
