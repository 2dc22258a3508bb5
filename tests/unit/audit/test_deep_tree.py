"""``pin audit`` on trees deeper than Python's recursion limit: folders are walked without
recursion and bounded in depth, a source nested too deeply for the parser is "not scanned",
and nothing is exit 1."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.audit.files import MAX_DEPTH, walk
from pinning.audit.model import Kind, Skipped
from pinning.audit.run import AuditRequest, audit
from tests.support.cli import pin


def _deep(root: Path, levels: int) -> Path:
    """``root/d/d/.../d`` (``levels`` folders), made with relative paths so no single path
    given to the kernel gets long."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
        with open(os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write("m = m.to('hip')\n")
    finally:
        os.close(fd)
    return root


def remove_tree(root: Path) -> None:
    """Remove the folder ``root`` and everything under it without recursion (pytest's own
    clean-up, ``shutil.rmtree``, recurses and cannot remove these trees).
    """
    stack: list[tuple[int, str]] = [(os.open(root, os.O_RDONLY | os.O_DIRECTORY), "")]
    while stack:
        fd, _name = stack[-1]
        sub = None
        for entry in os.listdir(fd):
            if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                sub = entry
                break
            os.unlink(entry, dir_fd=fd)
        if sub is not None:
            stack.append((os.open(sub, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), sub))
            continue
        os.close(fd)
        stack.pop()
        if stack:
            os.rmdir(_name, dir_fd=stack[-1][0])
    os.rmdir(root)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project folder, removed after the test however deep it grew."""
    root = tmp_path / "p"
    root.mkdir()
    try:
        yield root
    finally:
        remove_tree(root)


def test_tree_deeper_than_the_recursion_limit_is_not_exit_1(project: Path) -> None:
    levels = sys.getrecursionlimit() + 200
    src = _deep(project, levels)
    (src / "top.py").write_text("m = m.to('hip')\n")
    r = pin("audit", "--fail-on", "port", str(src))
    assert r.returncode == 11, r.stderr  # top.py is found; the deep one is listed, not read
    assert "Traceback" not in r.stderr
    assert "top.py:1" in r.stdout and "deep.py" not in r.stdout
    assert f"more than {MAX_DEPTH} levels deep; not scanned" in r.stdout


def test_files_down_to_the_depth_bound_are_scanned(project: Path) -> None:
    src = _deep(project, MAX_DEPTH)
    problems: list[Skipped] = []
    found = [path for path, _rel in walk(src, problems)]
    assert [p.name for p in found] == ["deep.py"] and problems == []
    report = audit(AuditRequest(paths=[str(src)]))
    hits = [f for f in report.findings if f.kind is Kind.DEVICE_STRING]
    assert len(hits) == 1 and report.skipped == []


def test_walk_order_is_os_walk_order(tmp_path: Path) -> None:
    for rel in ["b/x.py", "a/z.py", "a/c/y.py", "top.py", ".venv/skip.py", "a/b.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    expected = []
    for base, dirs, files in os.walk(tmp_path):
        dirs[:] = sorted(d for d in dirs if d != ".venv")
        expected += [Path(base) / f for f in sorted(files) if f.endswith(".py")]
    found = [path for path, _rel in walk(tmp_path, []) if path.suffix == ".py"]
    assert found == expected


def test_source_nested_too_deeply_is_not_scanned(tmp_path: Path) -> None:
    (tmp_path / "nested.py").write_text("import pynvml\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "chain.py").write_text("x = " + " + ".join(["a"] * 200_000) + "\n")
    r = pin("audit", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "nested.py: not valid Python (line 2)" in r.stdout
    assert "Traceback" not in r.stderr
