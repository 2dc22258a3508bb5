"""Find and read the project file.

Discovery follows uv's rule for ``pyproject.toml``: from the working folder up through every
parent to the filesystem root, the first folder holding ``pin.toml``, or a ``pyproject.toml``
with a ``[tool.pin]`` table, is the project (``pin.toml`` wins in one folder); a ``.git``
folder does not stop the walk. ``--project DIR`` (or ``PIN_PROJECT``) names the folder
instead. Errors are :class:`~pinning.errors.UsageError` (exit 2, the file is the flags'
file): TOML syntax errors name line and column, unknown keys name the key path and the
nearest known key. The key -> line map is a scan of the text (tomllib keeps no positions):
a key in an inline table or a dotted key maps to the line of the key that holds it.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pinning.errors import UsageError
from pinning.project.model import ProjectFile
from pinning.util.files import read_toml
from pinning.util.models import error_location
from pinning.util.text import printable

__all__ = ["PIN_TOML", "LoadedProject", "discover", "key_lines", "load_project",
           "read_project"]

PIN_TOML = "pin.toml"
_HINT = ("Fix the named key or value (an unknown key's message lists the keys allowed "
         "there; the project file page of pin's docs describes each).")
_SYNTAX_HINT = "Fix the TOML at the line and column named."


@dataclass(frozen=True)
class LoadedProject:
    """A project file read: its ``path``, the ``model``, ``prefix`` (``("tool", "pin")`` in
    a pyproject.toml, else empty) and ``lines``, key path -> 1-based line.
    """

    path: Path
    model: ProjectFile
    prefix: tuple[str, ...]
    lines: dict[tuple[str, ...], int]

    @property
    def folder(self) -> Path:
        """The folder paths in the file are relative to."""
        return self.path.parent

    def resolve_path(self, value: str) -> Path:
        """``value`` (a path from the file; ``~`` expanded) relative to the file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.folder / path

    def where(self, *keys: str) -> str:
        """``pin.toml:LINE`` of the key path ``keys`` (the nearest enclosing key's line)."""
        for n in range(len(keys), 0, -1):
            line = self.lines.get(self.prefix + keys[:n])
            if line is not None:
                return f"{self.path.name}:{line}"
        return self.path.name


def _has_tool_pin(path: Path) -> bool:
    """True when the pyproject.toml at ``path`` holds a ``[tool.pin]`` table (an unreadable
    or invalid one is read, and reported, by :func:`read_project`).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*pin\s*[.\]]", text, re.M) is not None


def discover(start: Path) -> Path | None:
    """The project file for the folder ``start``: ``pin.toml`` or a ``pyproject.toml`` with
    ``[tool.pin]`` in ``start`` or the nearest parent; ``None`` when no folder up to the
    root has one.
    """
    for folder in (start, *start.parents):
        if (folder / PIN_TOML).is_file():
            return folder / PIN_TOML
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_tool_pin(pyproject):
            return pyproject
    return None


def load_project(project_dir: str | None, cwd: Path) -> LoadedProject | None:
    """The project of ``--project DIR`` (a folder, or the file itself) or else the one
    :func:`discover` finds from ``cwd``; ``None`` when there is none. Raises ``UsageError``
    (exit 2) when ``DIR`` holds no project file or the file is invalid.
    """
    if project_dir is None:
        found = discover(cwd.resolve())
        return read_project(found) if found is not None else None
    given = (cwd / Path(project_dir).expanduser()).resolve()
    if given.is_file():
        return read_project(given)
    for cand in (given / PIN_TOML, given / "pyproject.toml"):
        if cand.is_file() and (cand.name == PIN_TOML or _has_tool_pin(cand)):
            return read_project(cand)
    shown = printable(project_dir, newlines=False)
    if not given.exists():
        raise UsageError(f"The project folder {shown} (--project or PIN_PROJECT) does not exist.",
                         hint="Name the folder that holds pin.toml, or unset PIN_PROJECT to "
                              "find it from the working folder.")
    raise UsageError(f"The project folder {shown} (--project or PIN_PROJECT) has no pin.toml, "
                     "and no pyproject.toml with [tool.pin].",
                     hint="Name the project's folder, or write one with `pin init`.")


def read_project(path: Path) -> LoadedProject:
    """Read the project file at ``path`` (a ``pyproject.toml``'s ``[tool.pin]``, else the
    whole file, as ``pin.toml``).
    Raises ``UsageError`` (exit 2) naming the file for unreadable or invalid TOML (line and
    column), an unknown key (its path and the nearest known key) or a bad value.
    """
    label = f"Project file {printable(str(path), newlines=False)}"
    raw, data = read_toml(path, UsageError, label=label, syntax_hint=_SYNTAX_HINT)
    prefix: tuple[str, ...] = ()
    if path.name == "pyproject.toml":
        prefix = ("tool", "pin")
        table = data.get("tool", {}).get("pin") if isinstance(data.get("tool"), dict) else None
        if not isinstance(table, dict):
            raise UsageError(f"{label}: no [tool.pin] table.",
                             hint="Add a [tool.pin] table, or write a pin.toml (pin init).")
        data = table
    try:  # strict, as the file's JSON: `"yes"` is no bool, `require_validated` no key
        model = ProjectFile.model_validate_json(json.dumps(data, default=str), strict=True,
                                                by_name=False)
    except ValidationError as exc:
        raise UsageError(f"{label}: {_summary(exc, data, prefix)}", hint=_HINT) from exc
    return LoadedProject(path=path, model=model, prefix=prefix,
                         lines=key_lines(raw.decode("utf-8")))


def _summary(exc: ValidationError, data: Any, prefix: tuple[str, ...]) -> str:
    """The file's first errors, unknown keys first, each with its full key path and, for an
    unknown key, "did you mean" the nearest key allowed there.
    """
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    parts = []
    for err in errors[:5]:
        where = ".".join((*prefix, error_location(err["loc"], data))) or "(top level)"
        if err["type"] == "extra_forbidden":
            known = _keys_at(ProjectFile, [str(p) for p in err["loc"][:-1]])
            close = difflib.get_close_matches(str(err["loc"][-1]), known, n=1)
            mean = f"; did you mean {close[0]!r}?" if close else ""
            parts.append(f"{where}: unknown key{mean} (known here: {', '.join(known)})")
        else:
            parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _model_in(annotation: Any, keyed: bool) -> tuple[type[BaseModel] | None, bool]:
    """The pydantic model inside ``annotation`` (through ``X | None``, ``dict[str, X]``)
    and whether the next key is a ``dict`` key (a target's name) rather than a field.
    """
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return _model_in(args[1], keyed)[0], True
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in args:
            found = _model_in(arg, keyed)
            if found[0] is not None:
                return found
    return None, False


def _keys_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    """The keys the model allows at the table ``loc`` (a path of keys from the top)."""
    current: type[BaseModel] | None = model
    skip = False
    for part in loc:
        if skip:
            skip = False
            continue
        if current is None:
            return []
        field = next((f for n, f in current.model_fields.items()
                      if (f.alias or n) == part or n == part), None)
        if field is None:
            return []
        current, skip = _model_in(field.annotation, False)
    if current is None:
        return []
    return sorted(f.alias or n for n, f in current.model_fields.items())


# Linear patterns (tests/unit/util/test_regex.py): spaces around a name are left in the
# group and dropped by _split; _KEY matches a line without its indent.
_HEADER = re.compile(r"^\s*\[\[?([^\]]*)\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""("[^"]*"|'[^']*')\s*=|([A-Za-z0-9_.-][A-Za-z0-9_.\s-]*)=""")


def _split(dotted: str) -> tuple[str, ...]:
    """``a."b.c".d`` -> ``("a", "b.c", "d")``."""
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', dotted)
    return tuple(next(p for p in groups if p) for groups in parts)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Key path -> 1-based line of each table header and each ``key =`` line of the TOML
    ``text`` (a key on a multi-line value's continuation lines is not seen; such lines
    start inside a string or array, not with a key, in the files pin writes).
    """
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for n, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            table = _split(header.group(1))
            lines.setdefault(table, n)
            continue
        key = _KEY.match(line.lstrip())
        if key:
            lines.setdefault(table + _split(key.group(1) or key.group(2)), n)
    return lines
