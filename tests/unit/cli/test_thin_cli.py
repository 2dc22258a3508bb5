"""The thin CLI (issue 29 §3): every command is loaded from the one table
(``pinning.cli.COMMANDS``), no command module imports another, and ``pin resolve`` imports
no other command module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import click

from pinning.cli import COMMANDS, main

CLI = Path(__file__).resolve().parents[3] / "pinning" / "cli"
COMMAND_MODULES = {target.split(":")[0] for target in COMMANDS.values()}


def _imports(path: Path) -> set[str]:
    """Every ``pinning.cli.*`` module ``path`` imports, at module level or in a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("pinning.cli.")}


def test_no_command_module_imports_another() -> None:
    bad = []
    for path in sorted(CLI.glob("*.py")):
        module = f"pinning.cli.{path.stem}"
        imported = _imports(path) & COMMAND_MODULES
        if module in COMMAND_MODULES and imported - {module}:
            bad.append(f"{module} imports {sorted(imported - {module})}")
        if module not in COMMAND_MODULES and imported:
            bad.append(f"{module} (shared) imports the command modules {sorted(imported)}")
    assert not bad, "\n".join(bad)


def test_every_table_entry_is_a_listed_command() -> None:
    ctx = click.Context(main)
    top = [w for w in COMMANDS if " " not in w]
    assert main.list_commands(ctx) == sorted(top)
    for words in COMMANDS:
        cmd: click.Command | None = main
        for word in words.split():
            assert isinstance(cmd, click.Group), words
            cmd = cmd.get_command(ctx, word)
        assert cmd is not None and cmd.name == words.split()[-1], words


def test_resolve_imports_only_its_own_command_module(tmp_path: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['pin', 'resolve', '--gpu', 'mi300x', "
            f"'--framework', 'pytorch==2.13.0', '-o', {str(tmp_path / 'pin.lock')!r}]\n"
            "try:\n    runpy.run_module('pinning', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('pinning.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    loaded = set(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    assert loaded & COMMAND_MODULES == {"pinning.cli.resolve"}, done.stderr


def test_an_unknown_command_suggests_one_not_yet_loaded() -> None:
    from click.testing import CliRunner

    from pinning.cli import main

    out = CliRunner().invoke(main, ["verfy"])
    assert out.exit_code == 2
    assert "Did you mean 'verify'?" in out.output


def test_every_command_has_a_workflow_heading() -> None:
    from pinning.cli import COMMANDS, WORKFLOW

    placed = {name for _, names in WORKFLOW for name in names}
    top = {words for words in COMMANDS if " " not in words}
    assert top <= placed, f"listed under 'Other commands': {sorted(top - placed)}"
