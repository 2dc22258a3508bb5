"""Run pin in-process from a project folder, as a user inside it would."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pinning.cli import main


def pin_in(cwd: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    """``pin ARGS`` run in ``cwd`` (the project is found from there: ``PIN_PROJECT`` and
    ``PIN_MATRIX`` unset), exceptions not caught, stdout and stderr apart.
    """
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("PIN_PROJECT", raising=False)
    monkeypatch.delenv("PIN_MATRIX", raising=False)
    return CliRunner().invoke(main, list(args), catch_exceptions=False)
