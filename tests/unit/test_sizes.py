"""Rooms of the right size: every module of ``pinning/`` is at most 400 lines and every
function at most 60 (CONTRIBUTING.md), apart from the few in :data:`ALLOWED`, each with the
reason it stays whole.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pinning

PACKAGE = Path(pinning.__file__).parent
MODULE_LINES = 400
FUNCTION_LINES = 60

#: ``path:name`` (a function) or ``path`` (a module), relative to ``pinning/``, and why it is
#: longer than the limit. At most five entries.
ALLOWED: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _key(path: Path, name: str | None = None) -> str:
    rel = path.relative_to(PACKAGE).as_posix()
    return f"{rel}:{name}" if name else rel


def _long_modules() -> dict[str, int]:
    out = {}
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LINES:
            out[_key(path)] = lines
    return out


def _long_functions() -> dict[str, int]:
    out = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > FUNCTION_LINES:
                    out[_key(path, node.name)] = lines
    return out


def test_allow_list_is_short_and_explained() -> None:
    assert len(ALLOWED) <= 5
    assert all(len(reason.split()) >= 5 for reason in ALLOWED.values())


def test_modules_fit() -> None:
    over = {k: n for k, n in _long_modules().items() if k not in ALLOWED}
    assert not over, f"modules over {MODULE_LINES} lines (split them): {over}"


def test_functions_fit() -> None:
    over = {k: n for k, n in _long_functions().items() if k not in ALLOWED}
    assert not over, f"functions over {FUNCTION_LINES} lines (split them): {over}"


def test_allowed_entries_still_need_it() -> None:
    """An allow-list entry for something now within the limit is removed."""
    long = _long_modules() | _long_functions()
    stale = [k for k in ALLOWED if k not in long]
    assert not stale, f"within the limit now; remove from ALLOWED: {stale}"
