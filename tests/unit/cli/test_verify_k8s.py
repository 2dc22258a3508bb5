"""``pin verify --emit nfd`` and ``--format npd`` as a Kubernetes node runs them, on the
recorded MI300X host and a copy whose firmware changed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pinning.fleet.nfd import check_feature_file
from tests.support.cli import json_result, pin
from tests.support.hosts import MI300X


def host_args(host: Path) -> list[str]:
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


@pytest.fixture(scope="module")
def lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lock") / "pin.lock"
    made = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(path))
    assert made.returncode == 0, made.stderr
    frozen = pin("freeze", str(path), *host_args(MI300X))
    assert frozen.returncode == 0, frozen.stderr
    return path


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    host = tmp_path_factory.mktemp("drift") / "mi300x"
    shutil.copytree(MI300X, host, symlinks=True)
    fw = host / "out/amd-smi-firmware.txt"
    fw.write_text(re.sub(r"FW_VERSION: 32959", "FW_VERSION: 32960", fw.read_text(), count=1))
    return host


def features(path: Path) -> dict[str, str]:
    text = path.read_text()
    assert check_feature_file(text) == [], text
    return dict(line.split("=", 1) for line in text.splitlines()
                if line and not line.startswith("#"))


def test_emit_nfd_on_a_matching_host(lock: Path, tmp_path: Path) -> None:
    out = tmp_path / "features.d" / "pin"
    out.parent.mkdir()
    r = pin("verify", str(lock), *host_args(MI300X), "--emit", "nfd", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "MATCH" in r.stdout  # the report is printed as usual
    got = features(out)
    assert got["pin.dev/result"] == "match" and got["pin.dev/drift-count"] == "0"
    assert got["pin.dev/lock"] == got["pin.dev/lock-sha256"][:12]
    assert [p.name for p in out.parent.iterdir()] == ["pin"]  # no dot-file left behind


def test_emit_nfd_on_drift_writes_then_exits_6(lock: Path, drifted: Path,
                                               tmp_path: Path) -> None:
    out = tmp_path / "pin"
    r = pin("verify", str(lock), *host_args(drifted), "--emit", "nfd", "-o", str(out),
            "--nfd-expiry", "120")
    assert r.returncode == 6, r.stderr
    assert "drifted" in r.stderr and "firmware.blocks" in r.stderr
    assert features(out)["pin.dev/result"] == "drift"
    assert int(features(out)["pin.dev/drift-count"]) >= 1


def test_emit_nfd_to_stdout_sends_the_report_to_stderr(lock: Path) -> None:
    r = pin("verify", str(lock), *host_args(MI300X), "--emit", "nfd", "-o", "-")
    assert r.returncode == 0, r.stderr
    assert check_feature_file(r.stdout) == [] and "pin.dev/result=match" in r.stdout
    assert "MATCH" in r.stderr


def test_emit_nfd_with_json(lock: Path, tmp_path: Path) -> None:
    out = tmp_path / "pin"
    r = pin("verify", str(lock), *host_args(MI300X), "--emit", "nfd", "-o", str(out),
            "--format", "json")
    assert json_result(r)["result"] == "match"
    assert features(out)["pin.dev/result"] == "match"


def test_unreadable_lock_writes_unknown_and_keeps_exit_5(tmp_path: Path) -> None:
    out = tmp_path / "pin"
    r = pin("verify", str(tmp_path / "absent.lock"), *host_args(MI300X), "--emit", "nfd",
            "-o", str(out))
    assert r.returncode == 5 and "Traceback" not in r.stderr
    assert features(out) == {"pin.dev/result": "unknown"}


def test_npd_match_drift_and_unknown(lock: Path, drifted: Path, tmp_path: Path) -> None:
    ok = pin("verify", str(lock), *host_args(MI300X), "--format", "npd")
    assert ok.returncode == 0 and ok.stdout.startswith("pin: matches lock sha256:")
    bad = pin("verify", str(lock), *host_args(drifted), "--format", "npd")
    assert bad.returncode == 1
    assert bad.stdout == "pin: firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960\n"
    short = pin("verify", str(lock), *host_args(drifted), "--format", "npd",
                "--max-output-length", "30")
    assert short.returncode == 1 and len(short.stdout.rstrip("\n")) <= 30
    for args in ([str(tmp_path / "absent.lock"), *host_args(MI300X)],
                 [str(lock), "--root", str(tmp_path / "no-such-root")]):
        r = pin("verify", *args, "--format", "npd")
        assert r.returncode == 2, r.stderr
        assert r.stdout.startswith("pin: unknown: ") and r.stdout.count("\n") == 1
        assert len(r.stdout) <= 81 and "pin: error:" in r.stderr  # full paragraph for logs


def test_npd_notes_facts_not_probed_and_strict_makes_them_a_problem(lock: Path) -> None:
    # --root without --replay or --chroot: no amd-smi, so the firmware cannot be read.
    files_only = ["--root", str(MI300X / "root")]
    r = pin("verify", str(lock), *files_only, "--format", "npd")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"pin: matches lock sha256:[0-9a-f]{12} \([0-9]+ facts? not probed\)\n",
                        r.stdout), r.stdout
    full = pin("verify", str(lock), *host_args(MI300X), "--format", "npd")
    assert "not probed" not in full.stdout  # everything read: no note
    strict = pin("verify", str(lock), *files_only, "--format", "npd", "--strict")
    assert strict.returncode == 1 and "!=" in strict.stdout


def test_npd_with_emit_writes_the_file_too(lock: Path, drifted: Path, tmp_path: Path) -> None:
    out = tmp_path / "pin"
    r = pin("verify", str(lock), *host_args(drifted), "--format", "npd", "--emit", "nfd",
            "-o", str(out))
    assert r.returncode == 1 and r.stdout.count("\n") == 1
    assert features(out)["pin.dev/result"] == "drift"
    # A file that cannot be written: a match becomes unknown (2), never healthy.
    nowhere = str(tmp_path / "missing-folder" / "pin")
    m = pin("verify", str(lock), *host_args(MI300X), "--format", "npd", "--emit", "nfd",
            "-o", nowhere)
    assert m.returncode == 2 and m.stdout.startswith("pin: unknown: Cannot write")
    t = pin("verify", str(lock), *host_args(MI300X), "--emit", "nfd", "-o", nowhere)
    assert t.returncode == 2 and "Cannot write the NFD feature file" in t.stderr


@pytest.mark.parametrize("args", [
    ["--emit", "nfd"],                                   # no -o
    ["-o", "x"],                                         # -o without --emit
    ["--emit", "nfd", "-o", "-", "--format", "npd"],     # two things on stdout
    ["--emit", "nfd", "-o", "-", "--format", "json"],
    ["--emit", "nfd", "-o", ".pin"],                     # NFD ignores dot-files
    ["--format", "npd", "--max-output-length", "10"],
    ["--emit", "nfd", "-o", "x", "--nfd-expiry", "5"],
    ["--emit", "yaml", "-o", "x"],
])
def test_usage_errors(lock: Path, tmp_path: Path, args: list[str]) -> None:
    r = pin("verify", str(lock), *host_args(MI300X), *args, cwd=tmp_path)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and not (tmp_path / "x").exists()
