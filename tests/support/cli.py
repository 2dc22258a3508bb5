"""The ``pin`` command as a user runs it: a subprocess of this interpreter."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def pin(*args: str, cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], cwd=cwd,
                          capture_output=True, text=True, env=env)
