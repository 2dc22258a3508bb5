"""The ``pin`` command as a user runs it: a subprocess of this interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def pin(*args: str, cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], cwd=cwd,
                          capture_output=True, text=True, env=env)


def json_result(done: subprocess.CompletedProcess[Any]) -> Any:
    """The ``result`` of the JSON envelope a ``pin ... --format json`` run printed, after
    checking the envelope agrees with the process: ``pin`` and ``command`` are named, ``ok``
    is true exactly when the exit code is 0, ``exit-code`` is that exit code, and ``error``
    is set on every failure that raised one.
    """
    out = done.stdout.decode() if isinstance(done.stdout, bytes) else done.stdout
    env = json.loads(out)
    assert set(env) == {"pin", "command", "ok", "exit-code", "result", "error"}, env.keys()
    assert env["pin"] and env["command"], env
    assert env["exit-code"] == done.returncode, (env["exit-code"], done.returncode)
    assert env["ok"] is (done.returncode == 0), env
    if env["ok"]:
        assert env["error"] is None, env["error"]
    return env["result"]
