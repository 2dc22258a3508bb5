"""The pin command as a user runs it: exit codes, one paragraph, no traceback, JSON."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import json_result, pin
from tests.support.paths import AMD_SOURCES


def test_resolve_writes_a_valid_lock(tmp_path: Path) -> None:
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ROCm 10.0.0" in r.stdout and "gfx942" in r.stdout
    assert (tmp_path / "pin.lock").exists()
    v = pin("lock", "validate", "pin.lock", cwd=tmp_path)
    assert v.returncode == 0 and "valid" in v.stdout
    s = pin("lock", "show", "pin.lock", cwd=tmp_path)
    assert "Instinct MI300X (gfx942)" in s.stdout


def test_resolve_again_says_unchanged_once(tmp_path: Path) -> None:
    args = ("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0")
    assert pin(*args, cwd=tmp_path).returncode == 0
    again = pin(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "Wrote pin.lock: unchanged"
    assert "pin.lock: unchanged" not in again.stdout.splitlines()


def test_resolve_json_and_explain(tmp_path: Path) -> None:
    r = pin("resolve", "--gpu", "H200", "--framework", "torch==2.13.0", "--format", "json",
            "-o", "h.lock", cwd=tmp_path)
    data = json_result(r)
    assert data["lock"]["runtime"]["version"]["value"] == "13.0.2"
    assert data["considered"][0]["verdict"]
    e = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", "--explain", "-o", "-")
    assert e.returncode == 0 and "lock-version = 1" in e.stdout


@pytest.mark.parametrize("args,code,needle", [
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.99"], 4, "No validated combination"),
    (["resolve", "--gpu", "mi30x", "--framework", "pytorch"], 2, "Did you mean"),
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch=2.13"], 2, "PEP 440"),
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch", "--as-of", "yesterday"], 2, "YYYY-MM-DD"),
    (["resolve", "--gpu", "mi300x"], 2, "--framework"),
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch", "--model", "org/m@main"], 2, "40-hex"),
    (["lock", "validate", "missing.lock"], 5, "cannot be read"),
    (["resolve", "--gpu", "mi300x", "--framework", "pytorch", "--matrix", "nope.toml"], 3, "nope.toml"),
])
def test_errors_exit_codes_one_paragraph_no_traceback(tmp_path: Path, args: list[str], code: int,
                                                      needle: str) -> None:
    r = pin(*args, cwd=tmp_path)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "pin.lock").exists()


def test_failed_resolve_keeps_the_old_lock(tmp_path: Path) -> None:
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", cwd=tmp_path).returncode == 0
    before = (tmp_path / "pin.lock").read_bytes()
    r = pin("resolve", "--gpu", "mi100", "--framework", "pytorch==2.13.0", cwd=tmp_path)
    assert r.returncode == 4
    assert (tmp_path / "pin.lock").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["pin.lock"]


def test_debug_shows_traceback(tmp_path: Path) -> None:
    r = pin("--debug", "lock", "validate", "missing.lock", cwd=tmp_path)
    assert r.returncode == 5 and "Traceback" in r.stderr


def test_matrix_list_and_show_print_sources() -> None:
    r = pin("matrix", "list")
    assert r.returncode == 0
    assert "ROCM 10.0.0" in r.stdout and "published 2026-08-25" in r.stdout
    s = pin("matrix", "show", "rocm-7.2.0")
    assert "amd-rocm-2026-01-21:rocm-7.2.0" in s.stdout and "published: 2026-01-21" in s.stdout
    assert "rocm-7.2.0/MI300X" in s.stdout
    g = pin("matrix", "show", "mi300x", "--format", "json")
    assert json_result(g)[0]["gfx-target"] == "gfx942"
    c = pin("matrix", "show", "cuda-13.4.2")
    assert "bundled-driver" in c.stdout and "checked: 2026-09-28" in c.stdout


def test_import_amd_on_both_copies(tmp_path: Path) -> None:
    for csv_name in ("rocm-compat-historical-2026-01-21.csv", "rocm-compat-historical-2025-03-21.csv"):
        out = tmp_path / (csv_name + ".toml")
        r = pin("matrix", "import-amd", str(AMD_SOURCES / csv_name), "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert 'version = "6.0.0"' in out.read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text("nonsense\n")
    r = pin("matrix", "import-amd", str(bad), "--published", "2026-01-01")
    assert r.returncode == 3 and "line 1" in r.stderr


def test_help_is_clear() -> None:
    r = pin("resolve", "--help")
    assert "--framework NAME[SPEC]" in r.stdout and "--as-of DATE" in r.stdout


def test_closed_pipe_is_not_reported_as_a_bug() -> None:
    # `true` exits at once, so pin's first write meets a closed pipe.
    cmd = f"{sys.executable} -m pinning matrix list | true; exit ${{PIPESTATUS[0]}}"
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert r.returncode == 141, r.stderr
    assert "bug in pin" not in r.stderr and "Traceback" not in r.stderr
