"""``setup.py`` and ``setup.cfg`` read statically into declared packages.

``setup.py`` is parsed with :mod:`ast`, never executed or imported. From each ``setup(...)``
call (``setup`` or ``setuptools.setup``) the keywords ``install_requires``,
``extras_require`` and ``setup_requires`` are read when they are literal lists, tuples,
strings (one requirement a line) or dicts of those, or names bound once at module level to
such literals; anything else is a skipped entry ("install_requires is computed; not read
statically"). Keywords: setuptools' keywords reference,
https://setuptools.pypa.io/en/latest/references/keywords.html.

``setup.cfg`` is read with :mod:`configparser` (no interpolation): ``[options]
install_requires`` / ``setup_requires`` (one requirement a line) and each key of
``[options.extras_require]`` (https://setuptools.pypa.io/en/latest/userguide/declarative_config.html).
Lines are found by searching the text after the section header for each requirement string.
"""

from __future__ import annotations

import ast
import configparser
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.model import Context, DeclaredPackage, FileScan, Skip, Skipped
from pinning.audit.sources.pep508 import parse_requirement, shown

__all__ = ["scan_setup_cfg", "scan_setup_py"]

_KEYWORDS = ("install_requires", "extras_require", "setup_requires")


@dataclass
class _Scan:
    display: str
    origin: str
    packages: list[DeclaredPackage] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def requirement(self, text: str, line: int | None, what: str) -> None:
        got = parse_requirement(text, self.origin, path=self.display, line=line)
        if isinstance(got, str):
            where = self.display if line is None else f"{self.display}:{line}"
            self.skipped.append(Skipped(path=where, reason=f"{what}: {got}"))
        else:
            self.packages.append(got)

    def computed(self, what: str, line: int) -> None:
        self.skipped.append(Skipped(path=f"{self.display}:{line}",
                                    reason=f"{what} is computed; not read statically"))


def _string_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, requirement)`` for each requirement line of a multi-line string."""
    for offset, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", ";")):
            yield offset, stripped


# -- setup.py ---------------------------------------------------------------------------------


def _bindings(tree: ast.Module) -> dict[str, ast.expr | None]:
    """Module-level names bound exactly once by a plain assignment: ``name -> value``;
    ``None`` for a name bound more than once or changed (augmented assignment).
    """
    out: dict[str, ast.expr | None] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                out[target.id] = value if target.id not in out else None
    return out


def _is_setup(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "setup"
    return (isinstance(func, ast.Attribute) and func.attr == "setup"
            and isinstance(func.value, ast.Name) and func.value.id == "setuptools")


def _resolve(node: ast.expr, names: dict[str, ast.expr | None]) -> ast.expr | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return node


def _read_list(node: ast.expr, what: str, names: dict[str, ast.expr | None],
               scan: _Scan) -> None:
    """Requirements from a list / tuple / string literal (or a name bound to one)."""
    value = _resolve(node, names)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        spread = value.end_lineno is not None and value.end_lineno > value.lineno
        for offset, text in _string_lines(value.value):
            scan.requirement(text, value.lineno + offset if spread else value.lineno, what)
    elif isinstance(value, ast.List | ast.Tuple):
        for element in value.elts:
            item = _resolve(element, names)
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                scan.requirement(item.value, element.lineno, what)
            else:
                scan.computed(f"an entry of {what}", element.lineno)
    else:
        scan.computed(what, node.lineno)


def _read_keyword(keyword: ast.keyword, names: dict[str, ast.expr | None],
                  scan: _Scan) -> None:
    what = str(keyword.arg)
    if what != "extras_require":
        _read_list(keyword.value, what, names, scan)
        return
    value = _resolve(keyword.value, names)
    if not isinstance(value, ast.Dict):
        scan.computed(what, keyword.value.lineno)
        return
    for key, item in zip(value.keys, value.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            _read_list(item, f"extras_require[{key.value!r}]", names, scan)
        else:
            scan.computed("an extra of extras_require", item.lineno)


def scan_setup_py(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``setup.py`` at ``path`` (shown as ``display``) without running it.

    Returns a :class:`FileScan` with the packages (origin ``setup.py``) of every literal
    ``install_requires`` / ``extras_require`` / ``setup_requires`` and a skipped entry
    (``file:line``) for each that is computed, or for a ``setup(**kwargs)`` call that names
    none of them. Raises :class:`Skip` when the file cannot be read or is not Python.
    """
    del ctx
    text = read_text(path)
    try:
        tree = ast.parse(text, filename=display)
    except (SyntaxError, ValueError) as exc:
        raise Skip(f"not valid Python: {str(exc).splitlines()[0][:200]}") from None
    except (RecursionError, MemoryError):
        raise Skip("not readable Python: nested too deeply") from None
    names = _bindings(tree)
    scan = _Scan(display=display, origin="setup.py")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_setup(node)):
            continue
        keywords = [k for k in node.keywords if k.arg in _KEYWORDS]
        for keyword in keywords:
            _read_keyword(keyword, names, scan)
        if not keywords and any(k.arg is None for k in node.keywords):
            scan.skipped.append(Skipped(
                path=f"{display}:{node.lineno}",
                reason="setup() takes **kwargs: install_requires is computed; not read "
                       "statically"))
    return FileScan(packages=scan.packages, skipped=scan.skipped)


# -- setup.cfg --------------------------------------------------------------------------------


def _cfg_values(parser: configparser.ConfigParser) -> Iterator[tuple[str, str, str]]:
    """``(section, key, value)`` for each requirement list of a setup.cfg."""
    if parser.has_section("options"):
        for key in ("install_requires", "setup_requires"):
            if parser.has_option("options", key):
                yield "options", key, parser.get("options", key)
    if parser.has_section("options.extras_require"):
        for key, value in parser.items("options.extras_require"):
            yield "options.extras_require", key, value


def scan_setup_cfg(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``setup.cfg`` at ``path`` (shown as ``display``): packages (origin
    ``setup.cfg``) of ``[options] install_requires`` / ``setup_requires`` and
    ``[options.extras_require]``; a ``file:`` directive or a bad line is a skipped entry.
    Raises :class:`Skip` when the file cannot be read or is not an INI file.
    """
    del ctx
    text = read_text(path)
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=display)
    except configparser.Error as exc:
        raise Skip(f"not a valid setup.cfg: {str(exc).splitlines()[0][:200]}") from None
    scan = _Scan(display=display, origin="setup.cfg")
    for section, key, value in _cfg_values(parser):
        what = f"[{section}] {key}"
        start = max(text.find(f"[{section}]"), 0)
        cursor = max(text.find(key, start), start)
        if value.strip().startswith("file:"):
            scan.skipped.append(Skipped(path=display, reason=(
                f"{what} reads '{shown(value.strip())}'; scan that file itself")))
            continue
        for _offset, requirement in _string_lines(value):
            at = text.find(requirement, cursor)
            line = text.count("\n", 0, at) + 1 if at != -1 else None
            cursor = at + 1 if at != -1 else cursor
            scan.requirement(requirement, line, what)
    return FileScan(packages=scan.packages, skipped=scan.skipped)
