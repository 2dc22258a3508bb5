"""``pin lock diff / check / upgrade``, ``pin resolve --dry-run`` and writing over a frozen
lock, run as a user runs them (the demo: MI300X, pytorch 2.7 series, ROCm 7.1.1, frozen from
the recorded host).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import pin
from tests.support.matrix import OVERLAY
from tests.support.paths import HOSTS

DEMO = ["--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1"]
HOST = HOSTS / "mi300x-rocm7.1"


@pytest.fixture(scope="module")
def frozen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("frozen")
    assert pin("resolve", *DEMO, "-o", "m.lock", cwd=d).returncode == 0
    assert pin("probe", "--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml"),
               "-o", "host.json", cwd=d).returncode == 0
    res = pin("freeze", "m.lock", "--host", "host.json", cwd=d)
    assert res.returncode == 0, res.stderr
    return d


@pytest.fixture
def work(frozen_dir: Path, tmp_path: Path) -> Path:
    (tmp_path / "m.lock").write_bytes((frozen_dir / "m.lock").read_bytes())
    return tmp_path


def test_rerunning_resolve_over_a_frozen_lock_refuses_and_writes_nothing(work: Path) -> None:
    before = (work / "m.lock").read_bytes()
    res = pin("resolve", *DEMO, "-o", "m.lock", cwd=work)
    assert res.returncode == 5
    assert "frozen from a host" in res.stderr and "Nothing was written" in res.stderr
    assert "pin lock upgrade m.lock" in res.stderr and "Traceback" not in res.stderr
    assert (work / "m.lock").read_bytes() == before
    forced = pin("resolve", *DEMO, "-o", "m.lock", "--force", cwd=work)
    assert forced.returncode == 0, forced.stderr
    assert "Wrote m.lock" in forced.stdout and "packages:" in forced.stdout
    assert (work / "m.lock").read_bytes() != before


def test_header_points_at_lock_upgrade(work: Path) -> None:
    head = (work / "m.lock").read_text().splitlines()[:4]
    assert any(line.startswith("# Regenerate: pin lock upgrade FILE") for line in head)
    assert not any(" -o " in line for line in head)


def test_check_is_0_when_current_and_6_with_the_diff_when_not(work: Path) -> None:
    ok = pin("lock", "check", "m.lock", cwd=work)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "m.lock: current" in ok.stdout
    # The lab's overlay validates pytorch 2.10.0 with ROCm 7.2.1; the lock records it.
    (work / "lab.toml").write_text(OVERLAY)
    res = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.10.0", "--matrix",
              "lab.toml", "-o", "lab.lock", cwd=work)
    assert res.returncode == 0, res.stderr
    assert pin("lock", "check", "lab.lock", cwd=work).returncode == 0
    # The lab re-validates the stack on ROCm 7.2.2 instead: the lock no longer is what
    # today's matrix gives.
    (work / "lab.toml").write_text(OVERLAY.replace('version = "7.2.1"', 'version = "7.2.2"'))
    drift = pin("lock", "check", "lab.lock", cwd=work)
    assert drift.returncode == 6, drift.stdout + drift.stderr
    assert "runtime.version: 7.2.1 -> 7.2.2" in drift.stdout
    assert "out of date" in drift.stderr and "pin lock upgrade lab.lock" in drift.stderr
    js = json.loads(pin("lock", "check", "lab.lock", "--format", "json", cwd=work).stdout)
    assert js["current"] is False and js["changes"]
    up = pin("lock", "upgrade", "lab.lock", cwd=work)
    assert up.returncode == 0 and "ROCm 7.2.1 -> 7.2.2" in up.stdout
    assert pin("lock", "check", "lab.lock", cwd=work).returncode == 0


def test_upgrade_to_a_newer_framework_reports_the_change(work: Path) -> None:
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.9.1",
               "-o", "p.lock", cwd=work).returncode == 0
    assert pin("lock", "check", "p.lock", cwd=work).returncode == 0
    up = pin("lock", "upgrade", "p.lock", "--framework", "pytorch==2.13.0", "-o", "q.lock",
             cwd=work)
    assert up.returncode == 0, up.stderr
    assert "ROCm 7.2.0 -> 10.0.0" in up.stdout and "pytorch 2.9.1 -> 2.13.0" in up.stdout
    assert "Wrote q.lock" in up.stdout


def test_diff_exit_codes_text_and_json(work: Path) -> None:
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.9.1",
               "-o", "a.lock", cwd=work).returncode == 0
    assert pin("resolve", "--gpu", "MI300X", "--framework", "torch==2.13.0",
               "-o", "b.lock", cwd=work).returncode == 0
    same = pin("lock", "diff", "a.lock", "a.lock", cwd=work)
    assert same.returncode == 0 and same.stdout == "no differences\n"
    res = pin("lock", "diff", "a.lock", "b.lock", cwd=work)
    assert res.returncode == 6
    assert "runtime:\n  runtime.version: 7.2.0 -> 10.0.0  [matrix " in res.stdout
    assert "frameworks.pytorch.version: 2.9.1 -> 2.13.0" in res.stdout
    js = pin("lock", "diff", "a.lock", "b.lock", "--format", "json", cwd=work)
    data = json.loads(js.stdout)
    assert js.returncode == 6 and data["equal"] is False
    assert {"layer": "runtime", "path": "runtime.version", "old": "7.2.0", "new": "10.0.0"} \
        .items() <= next(c for c in data["changes"] if c["path"] == "runtime.version").items()
    assert pin("lock", "diff", "a.lock", "missing.lock", cwd=work).returncode == 5


def test_upgrade_dry_run_writes_nothing_and_upgrade_keeps_frozen_values(work: Path) -> None:
    before = (work / "m.lock").read_bytes()
    dry = pin("lock", "upgrade", "m.lock", "--rocm", "7.2.0", "--framework", "pytorch==2.7.*",
              "--dry-run", cwd=work)
    assert dry.returncode == 0, dry.stderr
    assert "ROCm 7.1.1 -> 7.2.0" in dry.stdout and "Dropped frozen packages" in dry.stdout
    assert "Kept " in dry.stdout and "Dry run: nothing written" in dry.stdout
    assert (work / "m.lock").read_bytes() == before
    res = pin("lock", "upgrade", "m.lock", "--rocm", "7.2.0", "--framework", "pytorch==2.7.*",
              cwd=work)
    assert res.returncode == 0, res.stderr
    assert "Wrote m.lock" in res.stdout
    text = (work / "m.lock").read_text()
    assert 'rocm = "==7.2.0"' in text and 'origin = "host"' in text
    assert pin("lock", "check", "m.lock", cwd=work).returncode == 0
    again = pin("lock", "upgrade", "m.lock", cwd=work)
    assert again.returncode == 0 and "unchanged" in again.stdout


def test_upgrade_refuses_rocm_and_cuda_together(work: Path) -> None:
    res = pin("lock", "upgrade", "m.lock", "--rocm", "7.2.0", "--cuda", "13.0", cwd=work)
    assert res.returncode == 2


def test_resolve_dry_run_prints_lock_and_changes_and_writes_nothing(work: Path) -> None:
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.9.1",
               "-o", "p.lock", cwd=work).returncode == 0
    before = (work / "p.lock").read_bytes()
    res = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", "p.lock",
              "--dry-run", cwd=work)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("# pin lockfile for Instinct MI300X")
    assert "ROCm 7.2.0 -> 10.0.0" in res.stderr and "nothing written" in res.stderr
    assert (work / "p.lock").read_bytes() == before
    frozen = pin("resolve", *DEMO, "-o", "m.lock", "--dry-run", cwd=work)
    assert frozen.returncode == 0 and "Writing would be refused" in frozen.stderr


def test_every_write_says_what_changed(work: Path) -> None:
    first = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.9.1",
                "-o", "p.lock", cwd=work)
    assert "p.lock: new lock" in first.stdout
    same = pin("resolve", "--gpu", "MI300X", "--framework", "torch==2.9.1", "-o", "p.lock",
               cwd=work)
    assert "p.lock: unchanged" in same.stdout
    changed = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0",
                  "-o", "p.lock", cwd=work)
    assert "Changes in p.lock:\n  ROCm 7.2.0 -> 10.0.0\n" in changed.stdout


def test_explain_goes_to_stderr_with_stdout_output(work: Path) -> None:
    res = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", "-",
              "--explain", cwd=work)
    assert res.returncode == 0
    assert "Candidates (newest first):" in res.stderr
    assert "Candidates" not in res.stdout and res.stdout.startswith("# pin lockfile")
