"""``pin --color auto|always|never`` (also ``PIN_COLOR``) and ``NO_COLOR``: what reaches a
pipe. The tables of ``pin matrix list`` are the probe: a real command, run as a process so
that standard output is a pipe, not a terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

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
