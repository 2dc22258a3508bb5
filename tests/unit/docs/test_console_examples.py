"""Every ```` ```console ```` example in README.md and docs/ runs as written (issue 29 §5).

A console block is a shell session: ``$ COMMAND`` lines (a line ending in ``\\`` continues on
the next), each followed by the output it prints. The blocks of one page run in order in one
``bash`` process, in a fresh folder holding copies of the shipped data (``tests/data``,
``examples``, ``lockfiles``) and a link to ``pinning`` (the prices file, the gates template),
with ``pin`` on PATH as this interpreter's ``python -m pinning``; so a later block may use the
files and shell variables an earlier block of its page made. Each command must end with the
exit code the example states: ``# exits N`` in the command, a ``$ echo $?`` line (or
``; echo $?`` at the command's end) followed by N, else 0. Each output line shown must appear in
what the command printed (stdout and stderr); ``...`` or ``…`` ends the part of a line that is
checked, and a line of only an ellipsis stands for lines left out.

A block that needs what this machine may lack says so on the line before its fence, visibly
in the Markdown source: ``<!-- needs: docker, registry -->`` (one or more of :data:`NEEDS`);
it is skipped with that reason. Every other block must run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import ROOT

#: What a block may declare it needs, and what each means.
NEEDS = {
    "gpu": "a GPU",
    "docker": "a Docker engine",
    "registry": "an OCI registry",
    "network": "the network (a package index, the Debian mirror)",
    "torch": "a Python with PyTorch (make torchenv)",
    "service": "a running pin serve",
    "slurm": "a Slurm cluster",
    "kubernetes": "a Kubernetes cluster",
}
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```console[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.S | re.M)
_NEEDS = re.compile(r"<!--\s*needs:\s*(?P<what>[a-z, -]+?)\s*-->")
_EXITS = re.compile(r"#\s*exits\s+(\d+)")
_ECHO_RC = re.compile(r"\s*;\s*echo \$\?\s*$")
_ELLIPSIS = re.compile(r"\.\.\.|…")


@dataclass
class Command:
    """One ``$`` command, the exit code it must end with and the output lines it shows."""

    line: int
    text: str
    exit_code: int = 0
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    """A console block of ``page`` starting at ``line``; ``needs`` is empty when it must run."""

    page: Path
    line: int
    needs: list[str]
    commands: list[Command]

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _commands(body: str, first_line: int) -> list[Command]:
    """The commands of a block body (dedented), with their expected exit codes and output."""
    out: list[Command] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        text = lines[i]
        if not text.startswith("$ "):
            if out:
                out[-1].shown.append(text)
            i += 1
            continue
        start = i
        cmd = text[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd += "\n" + lines[i]
        i += 1
        if cmd.strip() == "echo $?":  # states the previous command's exit code
            assert out, f"line {first_line + start}: `echo $?` with no command before it"
            out[-1].exit_code = int(lines[i])
            i += 1
            continue
        command = Command(first_line + start, cmd)
        if _ECHO_RC.search(cmd):
            command.text = _ECHO_RC.sub("", cmd)
            j = i
            while j < len(lines) and not lines[j].startswith("$ "):
                j += 1
            command.exit_code = int(lines[j - 1])
            lines[j - 1] = ""
        elif found := _EXITS.search(cmd):
            command.exit_code = int(found.group(1))
        out.append(command)
    return out


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for found in _FENCE.finditer(text):
        line = text.count("\n", 0, found.start()) + 1
        before = [s for s in text[:found.start()].splitlines()[-3:] if s.strip()]
        needs = _NEEDS.search(before[-1]) if before else None
        what = [w.strip() for w in needs.group("what").split(",")] if needs else []
        unknown = set(what) - set(NEEDS)
        assert not unknown, f"{page}:{line}: unknown needs {sorted(unknown)}; known: {list(NEEDS)}"
        indent = found.group("indent")
        body = "".join(s[len(indent):] if s.startswith(indent) else s
                       for s in found.group("body").splitlines(keepends=True))
        blocks.append(Block(page, line, what, _commands(body, line + 1)))
    return blocks


BLOCKS = [block for page in PAGES for block in _blocks(page)]


def _workdir(tmp: Path) -> Path:
    """A folder with the shipped data a user of a checkout has, and ``pin`` on a PATH."""
    work = tmp / "work"
    (work / "tests").mkdir(parents=True)
    shutil.copytree(ROOT / "tests" / "data", work / "tests" / "data", symlinks=True)
    for name in ("examples", "lockfiles"):
        shutil.copytree(ROOT / name, work / name, symlinks=True)
    (work / "pinning").symlink_to(ROOT / "pinning")
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / "pin").write_text(f'#!/bin/sh\nexec {sys.executable} -P -m pinning "$@"\n')
    (bindir / "pin").chmod(0o755)
    return work


def _run_page(page: Path, tmp: Path) -> dict[int, tuple[int, str]]:
    """Run every block of ``page`` that needs nothing, in order in one shell; the exit code
    and output of each command, by the command's line.
    """
    work = _workdir(tmp)
    logs = tmp / "logs"
    logs.mkdir()
    script = ["cd " + str(work)]
    commands = [c for b in BLOCKS if b.page == page and not b.needs for c in b.commands]
    for c in commands:
        script.append(f"{{\n{c.text}\n}} >{logs}/{c.line}.out 2>&1 </dev/null; "
                      f"echo $? >{logs}/{c.line}.rc")
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIN_", "VIRTUAL_ENV", "CONDA_", "XDG_"))}
    env.update(PATH=f"{tmp / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), NO_COLOR="1",
               XDG_DATA_HOME=str(home / ".local/share"), XDG_CONFIG_HOME=str(home / ".config"),
               COLUMNS="200")
    subprocess.run(["bash", "-c", "\n".join(script)], env=env, check=True, timeout=600)
    return {c.line: (int((logs / f"{c.line}.rc").read_text()),
                     (logs / f"{c.line}.out").read_text(errors="replace")) for c in commands}


_RESULTS: dict[Path, dict[int, tuple[int, str]]] = {}


def test_the_examples_are_found() -> None:
    assert len(BLOCKS) >= 20
    assert any(b.page.name == "README.md" and not b.needs for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_console_example_runs(block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    if block.needs:
        pytest.skip(f"needs {', '.join(NEEDS[n] for n in block.needs)}")
    assert block.commands, f"{block.name}: a console block without a `$ ` command"
    if block.page not in _RESULTS:
        _RESULTS[block.page] = _run_page(block.page, tmp_path_factory.mktemp("page"))
    results = _RESULTS[block.page]
    for c in block.commands:
        code, printed = results[c.line]
        where = f"{block.page.relative_to(ROOT)}:{c.line}: $ {c.text}"
        assert code == c.exit_code, f"{where}\nexited {code}, the example says " \
                                    f"{c.exit_code}; it printed:\n{printed}"
        for shown in c.shown:
            checked = _ELLIPSIS.split(shown, maxsplit=1)[0].strip()
            if checked:
                assert checked in printed, f"{where}\nshows {checked!r}, which it did " \
                                           f"not print; it printed:\n{printed}"
