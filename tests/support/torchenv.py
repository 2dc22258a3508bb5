"""A Python with real PyTorch 2.13.0 (CPU build) for the training-gate tests.

The venv lives at ``.wheelhouse/torch-venv`` (``make torchenv`` creates it ahead of the
tests; pip takes the wheel these machines hold). :func:`torch_python` reuses it, or makes
it once (about 30 s); when it cannot be made the test is skipped with the reason, and fails
instead when ``CI=true``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

TORCH_VERSION = "2.13.0"
VENV = ROOT / ".wheelhouse" / "torch-venv"
_PYTHON = VENV / "bin" / "python"
_state: dict[str, str] = {}


def _has_torch() -> bool:
    """Whether the venv's Python imports torch at exactly :data:`TORCH_VERSION`."""
    if not _PYTHON.is_file():
        return False
    done = subprocess.run([str(_PYTHON), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode == 0 and done.stdout.strip().split("+")[0] == TORCH_VERSION


def _make() -> str | None:
    """Create the venv and install torch; ``None`` on success, else the reason."""
    steps = ([sys.executable, "-m", "venv", str(VENV)],
             [str(_PYTHON), "-m", "pip", "install", "--quiet", f"torch=={TORCH_VERSION}",
              "numpy"])
    for argv in steps:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(argv[:4])}: {exc}"
        if done.returncode != 0:
            return f"{' '.join(argv[:4])} exited {done.returncode}: {done.stderr[-500:]}"
    return None if _has_torch() else "torch does not import in the new venv"


def torch_python() -> str:
    """The path of a Python that imports torch 2.13.0 (CPU); skips the calling test (fails
    it when ``CI=true``) with the reason when that venv cannot be made.
    """
    if "python" not in _state and "error" not in _state:
        if _has_torch():
            _state["python"] = str(_PYTHON)
        else:
            reason = _make()
            if reason is None:
                _state["python"] = str(_PYTHON)
            else:
                _state["error"] = reason
    if "python" in _state:
        return _state["python"]
    message = (f"no torch=={TORCH_VERSION} venv at {VENV} (run `make torchenv`): "
               f"{_state['error']}")
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
