"""``pin lock diff / check / upgrade``, ``pin resolve --dry-run`` and writing over a frozen
lock, run as a user runs them (the demo: MI300X, pytorch 2.7 series, ROCm 7.1.1, frozen from
the recorded host).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import json_result, pin
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
    assert "m.lock: up to date" in ok.stdout
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
    js = json_result(pin("lock", "check", "lab.lock", "--format", "json", cwd=work))
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
    data = json_result(js)
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
    check = pin("lock", "check", "m.lock", cwd=work)
    assert check.returncode == 0 and check.stdout == "m.lock: up to date: today's matrix " \
        "resolves its request to the same stack.\n"
    upgraded = (work / "m.lock").read_bytes()
    assert b"frozen values dropped (re-freeze them): " in upgraded
    again = pin("lock", "upgrade", "m.lock", cwd=work)
    assert again.returncode == 0 and "  unchanged\n" in again.stdout
    assert "m.lock: unchanged, not rewritten." in again.stdout
    assert (work / "m.lock").read_bytes() == upgraded


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
    before = (work / "m.lock").read_bytes()
    frozen = pin("resolve", *DEMO, "-o", "m.lock", "--dry-run", cwd=work)
    assert frozen.returncode == 5 and "Writing would be refused" in frozen.stderr
    assert "nothing written to m.lock" in frozen.stderr
    forced = pin("resolve", *DEMO, "-o", "m.lock", "--dry-run", "--force", cwd=work)
    assert forced.returncode == 0 and "Writing would be refused" not in forced.stderr
    assert (work / "m.lock").read_bytes() == before


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


SERVED = ["--gpu", "mi300x", "--framework", "pytorch==2.13.0"]


def test_diff_shows_serving_and_extensions_layers(work: Path) -> None:
    ext = "flash-attn==2.8.3:source@gfx942"
    assert pin("resolve", *SERVED, "--quantization", "awq:triton", "-o", "a.lock",
               cwd=work).returncode == 0
    assert pin("resolve", *SERVED, "--quantization", "awq", "-o", "b.lock",
               cwd=work).returncode == 0
    res = pin("lock", "diff", "a.lock", "b.lock", cwd=work)
    assert res.returncode == 6
    assert "serving:\n  serving.quantization: awq:triton -> awq  [user]\n" in res.stdout
    assert pin("resolve", *SERVED, "--quantization", "awq", "--extension", ext, "-o", "c.lock",
               cwd=work).returncode == 0
    js = json_result(pin("lock", "diff", "b.lock", "c.lock", "--format", "json",
                        cwd=work))
    assert {"layer": "extensions", "path": "extensions.flash-attn", "old": None, "new": ext,
            "source": "user"} in js["changes"]


def test_resolve_without_serving_flags_says_it_removes_them(work: Path) -> None:
    assert pin("resolve", *SERVED, "--quantization", "awq:triton", "--extension",
               "flash-attn==2.8.3:source@gfx942", "-o", "s.lock", cwd=work).returncode == 0
    before = (work / "s.lock").read_bytes()
    dry = pin("resolve", *SERVED, "-o", "s.lock", "--dry-run", cwd=work)
    assert dry.returncode == 0, dry.stderr
    for out in (dry.stderr, pin("resolve", *SERVED, "-o", "s.lock", cwd=work).stdout):
        assert "  serving: quantization awq:triton -> (absent)\n" in out
        assert "extensions: flash-attn flash-attn==2.8.3:source@gfx942 -> (absent)" in out
        assert "[serving] removed from s.lock" in out and "--quantization" in out
        assert "[[extensions]] removed from s.lock" in out
    assert before != (work / "s.lock").read_bytes()


def test_diff_refuses_stdin_twice(work: Path) -> None:
    def diff(*paths: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pinning", "lock", "diff", *paths],
                              input=(work / "m.lock").read_text(), cwd=work,
                              capture_output=True, text=True)
    res = diff("-", "-")
    assert res.returncode == 2 and "both read standard input" in res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    one = diff("m.lock", "-")
    assert one.returncode == 0 and one.stdout == "no differences\n"


def test_check_help_documents_every_exit_code() -> None:
    text = " ".join(pin("lock", "check", "--help").stdout.split())
    for code in ("Exit 0", "6 (drift)", "5 for", "4 when", "10 when a guard refuses"):
        assert code in text
