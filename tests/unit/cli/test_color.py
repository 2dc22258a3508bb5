"""``pin --color auto|always|never`` (also ``PIN_COLOR``) and ``NO_COLOR``: what reaches a
pipe. The tables of ``pin matrix list`` are the probe: a real command, run as a process so
that standard output is a pipe, not a terminal. Status words (verify, audit, resolve, doctor,
lock diff) are coloured only when colour is on; the plain text is the same bytes otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DATA, HOSTS, ROOT

ESC = "\x1b["


def _matrix_list(*flags: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PIN_COLOR")}
    done = subprocess.run([sys.executable, "-m", "pinning", *flags, "matrix", "list"],
                          capture_output=True, text=True, cwd=ROOT, env={**environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_pipe_gets_plain_text_by_default() -> None:
    out = _matrix_list()
    assert ESC not in out and "─" not in out and "pytorch" in out


@pytest.mark.parametrize(("flags", "env"), [
    (("--color", "always"), {}),
    ((), {"PIN_COLOR": "always"}),
    (("--color", "always"), {"NO_COLOR": "1"}),  # a flag wins over NO_COLOR
])
def test_always_colours_a_pipe(flags: tuple[str, ...], env: dict[str, str]) -> None:
    out = _matrix_list(*flags, **env)
    assert ESC in out and "pytorch" in out


def test_never_and_no_color_draw_no_colour() -> None:
    assert ESC not in _matrix_list("--color", "never")
    assert ESC not in _matrix_list(NO_COLOR="1")


def test_a_bad_mode_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "pinning", "--color", "rainbow", "matrix",
                           "list"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "'rainbow' is not one of" in done.stderr


# --- status words in colour: pin verify, audit, resolve, doctor, lock diff -----------------

SGR = re.compile(r"\x1b\[[0-9;]*m")


def _pin(cwd: Path, *args: str, color: str | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PIN_COLOR")}
    flags = ("--color", color) if color else ()
    return subprocess.run([sys.executable, "-m", "pinning", *flags, *args], capture_output=True,
                          text=True, cwd=cwd, env=environ)


def _three_ways(cwd: Path, *args: str) -> tuple[str, str]:
    """``pin ARGS`` with ``--color always``; checks that ``never`` and a plain pipe print the
    same bytes, and that they are the coloured text without its colour codes.
    """
    always = _pin(cwd, *args, color="always")
    never = _pin(cwd, *args, color="never")
    plain = _pin(cwd, *args)
    assert always.returncode == never.returncode == plain.returncode, always.stderr
    assert ESC not in never.stdout and never.stdout == plain.stdout
    assert SGR.sub("", always.stdout) == never.stdout
    return always.stdout, never.stdout


DUMPS = DATA / "dumps"


def _red(word: str) -> str:
    return f"{ESC}31m{word}{ESC}0m"


def test_resolve_paints_unknown_values_yellow(tmp_path: Path) -> None:
    out, _ = _three_ways(tmp_path, "resolve", "--gpu", "mi300x", "--framework",
                         "pytorch==2.13.0", "-o", "-", "--dry-run")
    assert ESC not in out  # the lock itself is never coloured
    done = _pin(tmp_path, "resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0",
                "-o", str(tmp_path / "a.lock"), color="always")
    assert f"{ESC}33munknown{ESC}0m: the source" in done.stdout
    assert "Wrote " in done.stdout


def test_verify_paints_drift_red_and_matches_green(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    assert _pin(tmp_path, "resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7",
                "--rocm", "7.1.1", "-o", str(lock)).returncode == 0
    host = HOSTS / "mi300x-rocm7.1"
    out, plain = _three_ways(tmp_path, "verify", str(lock), "-v", "--root",
                             str(host / "root"), "--replay", str(host / "commands.toml"))
    verdict = "MATCH" if ": MATCH" in plain else "DRIFT"
    assert f"{ESC}3{'2' if verdict == 'MATCH' else '1'}m{verdict}{ESC}0m" in out
    assert f"{ESC}32mmatch{ESC}0m" in out


def test_doctor_paints_findings(tmp_path: Path) -> None:
    out, plain = _three_ways(tmp_path, "doctor", str(DUMPS / "pytorch-pytorch-37320.txt"))
    assert "✗ [" in plain and _red("✗") in out


def test_lock_diff_paints_old_red_and_new_green(tmp_path: Path) -> None:
    locks = ROOT / "lockfiles"
    out, plain = _three_ways(tmp_path, "lock", "diff", str(locks / "h200-pytorch-2.13.0.lock"),
                             str(locks / "mi250x-pytorch-2.6.lock"))
    assert "target.vendor: nvidia -> amd" in plain
    assert f"target.vendor: {_red('nvidia')} -> {ESC}32mamd{ESC}0m" in out


def test_audit_paints_verdicts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import pynvml\n")
    out, plain = _three_ways(tmp_path, "audit", str(tmp_path))
    assert "PORT (1)" in plain and _red("PORT") + " (1)" in out
