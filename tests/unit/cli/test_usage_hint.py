"""A usage error's default hint names the command that was run, not `pin COMMAND`."""

from __future__ import annotations

import click
import pytest

from pinning.cli import _command_path, main
from tests.support.cli import pin


@pytest.mark.parametrize(("argv", "path"), [
    (["--debug", "fleet", "verify", "x.lock"], "pin fleet verify"),
    (["lock", "show", "fleet"], "pin lock show"),
    (["verify", "--host", "s.json"], "pin verify"),
    (["--debug"], "pin COMMAND"),
    (["no-such-command"], "pin COMMAND"),
])
def test_the_command_words_of_the_run(monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                      path: str) -> None:
    monkeypatch.setattr("sys.argv", ["pin", *argv])
    assert _command_path(click.Context(main)) == path


def test_the_hint_a_user_sees_names_the_command() -> None:
    done = pin("probe", "--replay", "commands.toml")  # --replay without --root
    assert done.returncode == 2 and "See `pin probe --help`" in done.stderr
