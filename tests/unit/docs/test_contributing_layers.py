"""CONTRIBUTING.md's package table and the import-linter layers contract in pyproject.toml
agree: every package (or top-level module) of ``pinning/`` is in both, and no import the
table allows is one the contract forbids.
"""

from __future__ import annotations

import re
import tomllib

from tests.support.paths import ROOT

PACKAGE = ROOT / "pinning"
_NAME = re.compile(r"`([\w.]+?)(?:/|\.py)?`")


def _on_disk() -> set[str]:
    """Every package (a folder with ``__init__.py``) and module directly under pinning/."""
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    return packages | modules


def table() -> dict[str, set[str]]:
    """CONTRIBUTING's table: package -> the packages it may import."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(r"^\| package \| owns \| may import \|\n\|[- |]+\|\n((?:\|.*\n)+)", text, re.M)
    assert found is not None, "CONTRIBUTING.md has no '| package | owns | may import |' table"
    rows: dict[str, set[str]] = {}
    for line in found.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"a row of three cells: {line}"
        name = _NAME.fullmatch(cells[0])
        assert name is not None, f"the first cell names one package in backticks: {line}"
        assert name.group(1) not in rows, f"{name.group(1)} is in the table twice"
        rows[name.group(1)] = set(_NAME.findall(cells[2]))
    return rows


def layers() -> list[set[str]]:
    """The layers contract, top to bottom: each layer's packages, without ``pinning.``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(contracts) == 1
    return [{name.strip().removeprefix("pinning.") for name in layer.split("|")}
            for layer in contracts[0]["layers"]]


def allowed(package: str, stack: list[set[str]]) -> set[str]:
    """What the contract lets ``package`` import: every package of the layers below its own."""
    level = next(i for i, layer in enumerate(stack) if package in layer)
    return set().union(*stack[level + 1:])


def test_every_package_is_in_the_table_and_the_contract() -> None:
    on_disk, in_table = _on_disk(), set(table())
    in_contract = set().union(*layers())
    assert on_disk - in_table == set(), "packages missing from CONTRIBUTING's table"
    assert in_table - on_disk == set(), "CONTRIBUTING's table names packages that do not exist"
    assert on_disk - in_contract == set(), "packages missing from the import-linter contract"
    assert in_contract - on_disk == set(), "the contract names packages that do not exist"


def test_no_import_the_table_allows_is_forbidden_by_the_contract() -> None:
    stack = layers()
    forbidden = {}
    for package, may in table().items():
        wrong = may - allowed(package, stack)
        if wrong:
            forbidden[package] = sorted(wrong)
    assert forbidden == {}, "CONTRIBUTING allows imports the layers contract forbids"


def test_the_checks_see_a_disagreement() -> None:
    stack = layers()
    assert "lockfile" not in allowed("util", stack)  # upward
    assert "verify" not in allowed("doctor", stack)  # a sibling stage of one layer
    assert "errors" in allowed("cli", stack)
