"""Bad paths, FIFOs and flag combinations on the command line: one paragraph, the right exit
code, no traceback. (Regressions found by trying to break probe / verify / freeze / doctor.)"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cli import pin
from tests.support.hosts import MI300X
from tests.support.paths import ROOT

ROOT_LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"


def test_cli_bad_paths_and_flag_combinations(tmp_path: Path) -> None:
    args = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    r = pin("probe", *args, "-o", str(tmp_path))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    r = pin("probe", *args, "-o", str(tmp_path / "no/such/dir/x.json"))
    assert r.returncode == 2
    r = pin("probe", *args, "--site-packages", "/opt/venv/typo")
    assert r.returncode == 2 and "/opt/venv/typo" in r.stderr
    r = pin("probe", *args, "--site-packages", "/opt/venv/lib/python3.12/site-packages")
    assert r.returncode == 0 and "2.7.0+rocm6.3" in r.stdout  # read under the root
    r = pin("probe", "--replay", str(MI300X / "commands.toml"))
    assert r.returncode == 2 and "--root" in r.stderr
    empty = tmp_path / "empty.lock"
    empty.write_text("")
    r = pin("verify", str(empty), *args)
    assert r.returncode == 5 and "empty" in r.stderr
    r = pin("doctor", "/dev/zero")  # a dump that cannot be read: 7 (README, "Exit codes")
    assert r.returncode == 7 and "not a regular file" in r.stderr


def test_fifo_inputs_do_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "lock.fifo"
    os.mkfifo(fifo)
    args = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    r = pin("verify", str(fifo), *args)
    assert r.returncode == 5 and "not a regular file" in r.stderr
    r = pin("verify", str(ROOT_LOCK), "--host", str(fifo))
    assert r.returncode == 7 and "not a regular file" in r.stderr
    r = pin("doctor", "-", "-")
    assert r.returncode == 2
