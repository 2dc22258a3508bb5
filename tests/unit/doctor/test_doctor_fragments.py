"""Issue 32, section 6: a pasted fragment of a package tree or listing (``uv tree | grep jax``:
lines of one format without its header or root) is read, not refused with exit 7; and a
value collect_env prints over several lines (cuDNN's "Probably one of the following:" and
one library per line) is shown on one line, never with ``\\x0a`` escapes.

The fragments are the real tool outputs in ``tests/data/dumps`` filtered here as ``grep``
would (every line kept whole)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.doctor.facts import one_line
from pinning.doctor.report import doctor
from pinning.matrix.load import Matrix
from pinning.probe.formats.packages import is_tree_node
from tests.support.cli import pin
from tests.support.paths import DUMPS

CUDNN_DUMP = DUMPS / "pytorch-pytorch-196996.txt"
LIBS = [f"/usr/lib/x86_64-linux-gnu/libcudnn{part}.so.9.1.0" for part in (
    "", "_adv", "_cnn", "_engines_precompiled", "_engines_runtime_compiled", "_graph",
    "_heuristic", "_ops")]


def _grep(name: str, word: str) -> str:
    """The lines of the dump ``name`` that contain ``word``, as ``grep word`` prints them."""
    lines = (DUMPS / name).read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if word in line]
    assert kept, (name, word)
    return "\n".join(kept) + "\n"


@pytest.mark.parametrize(("dump", "word", "expected"), [
    # `uv tree | grep pydantic`: a branch and the child below it, no root line.
    ("uv-tree.txt", "pydantic", {"pydantic": "2.14.4", "pydantic-core": "2.50.5"}),
    # `uv tree | grep typing`: only nested branches.
    ("uv-tree.txt", "typing", {"typing-extensions": "4.16.0", "typing-inspection": "0.4.5"}),
    # `pipdeptree | grep typing`: child lines only, no `name==version` top line.
    ("pipdeptree.txt", "typing", {"typing-extensions": "4.16.0",
                                  "typing-inspection": "0.4.5"}),
    # `pipdeptree | grep pydantic`: a top line and one child.
    ("pipdeptree.txt", "pydantic", {"pydantic": "2.14.4", "pydantic-core": "2.50.5"}),
    # `pip list | grep jax` and `pip freeze | grep jax`: no header.
    ("pip-list.txt", "jax", {"jax": "0.8.2", "jaxlib": "0.8.2"}),
    ("pip-freeze.txt", "jax", {"jax": "0.8.2", "jaxlib": "0.8.2"}),
    ("uv-pip-list.txt", "pydantic", {"pydantic": "2.14.4", "pydantic-core": "2.50.5"}),
])
def test_fragment_of_each_listing_is_read(tmp_path: Path, dump: str, word: str,
                                          expected: dict[str, str]) -> None:
    path = tmp_path / f"{word}.txt"
    path.write_text(_grep(dump, word), encoding="utf-8")
    done = pin("doctor", str(path), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    facts = json.loads(done.stdout)["result"]["facts"]
    read = {p["name"].replace("_", "-").lower(): p["version"] for p in facts["packages"]}
    assert expected.items() <= read.items(), read


def test_uv_tree_fragment_is_read_with_its_section_kind(matrix: Matrix) -> None:
    report = doctor([("frag.txt", _grep("uv-tree.txt", "typing"))], matrix)
    assert [s.kind for s in report.facts.sections] == ["dep_tree"]
    assert report.findings == []


def test_tree_branch_without_a_package_is_still_not_a_dump(tmp_path: Path) -> None:
    assert not is_tree_node("└── see the docs")
    assert not is_tree_node("pydantic v2.14.4")  # a root line: read with its branch
    assert is_tree_node("    │   └── typing-extensions v4.16.0")
    path = tmp_path / "x.txt"
    path.write_text("└── see the docs\n├── and more\n", encoding="utf-8")
    done = pin("doctor", str(path))
    assert done.returncode == 7, done.stdout + done.stderr
    assert "no known tool output found" in done.stderr


def test_multi_line_cudnn_is_shown_on_one_line_without_escapes() -> None:
    done = pin("doctor", str(CUDNN_DUMP))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\\x0a" not in done.stdout
    system = next(line for line in done.stdout.splitlines() if line.startswith("System: "))
    cudnn = "cuDNN Probably one of the following: " + ", ".join(LIBS)
    assert cudnn in system
    assert "Is XPU available" not in system  # the next field is not part of the value


def test_multi_line_cudnn_fact_and_raw_field(matrix: Matrix) -> None:
    report = doctor([(CUDNN_DUMP.name, CUDNN_DUMP.read_text(encoding="utf-8"))], matrix)
    assert report.facts.cudnn == "Probably one of the following: " + ", ".join(LIBS)
    raw = report.facts.sections[0].fields["cudnn_version"]
    assert raw.splitlines() == ["Probably one of the following:", *LIBS]  # as printed


def test_one_line() -> None:
    assert one_line("Probably one of the following:\n/a.so.9\n/b.so.9\n") == (
        "Probably one of the following: /a.so.9, /b.so.9")
    assert one_line("  9.1.0 ") == "9.1.0"
    assert one_line("first\nsecond") == "first; second"
