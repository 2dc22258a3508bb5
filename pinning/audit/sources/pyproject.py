"""``pyproject.toml`` read into declared packages, and the CUDA wheel indexes it names.

Read: PEP 621 ``[project] dependencies`` and ``optional-dependencies``
(https://packaging.python.org/en/latest/specifications/pyproject-toml/), PEP 735
``[dependency-groups]`` (https://packaging.python.org/en/latest/specifications/dependency-groups/;
an ``{include-group = "..."}`` entry is not expanded: the included group's requirements are
read where that group is declared), Poetry's ``[tool.poetry.dependencies]``,
``[tool.poetry.group.<name>.dependencies]``, ``[tool.poetry.dev-dependencies]`` and
``[[tool.poetry.source]]`` (https://python-poetry.org/docs/dependency-specification/: ``^`` and
``~`` constraints are kept as written; the version is set only for an exact pin), and uv's
``[tool.uv.sources]`` ``index = NAME`` -> ``[[tool.uv.index]]`` URL, plus ``[tool.uv]
index-url`` / ``extra-index-url`` (astral-sh/uv:docs/concepts/indexes.md). A package pinned to
an index carries that index's URL; the others carry the indexes uv or Poetry would search by
default (not ``explicit = true`` ones, not Poetry ``explicit`` sources).

Line numbers: :mod:`tomllib` keeps none, so each requirement's line is found by searching the
text for the requirement string (quoted first; the n-th occurrence of a repeated string is
given to the n-th declaration), and a Poetry dependency's line by its key at a line start.
Cheap and deterministic; a string the search cannot find gets no line.
"""

from __future__ import annotations

import bisect
import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pinning.audit.files import read_text
from pinning.audit.indexes import index_findings
from pinning.audit.model import Context, DeclaredPackage, FileScan, Skip, Skipped
from pinning.audit.sources.pep508 import parse_requirement, shown, valid_name

__all__ = ["scan_pyproject"]

_ORIGIN = "pyproject"


class _Lines:
    """Line numbers of strings in ``text`` found by search: each call for the same needle
    continues after the previous hit, so repeated strings get successive lines.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._after: dict[str, int] = {}
        self._starts = [0]
        at = text.find("\n")
        while at != -1:
            self._starts.append(at + 1)
            at = text.find("\n", at + 1)

    def _line_of(self, pos: int) -> int:
        return bisect.bisect_right(self._starts, pos)

    def _find(self, needles: tuple[str, ...], key: str) -> int | None:
        start = self._after.get(key, 0)
        hits = [h for h in (self.text.find(n, start) for n in needles if n) if h != -1]
        if not hits:
            return None
        self._after[key] = min(hits) + 1
        return self._line_of(min(hits))

    def string(self, value: str) -> int | None:
        """Line of the next occurrence of ``value`` as a TOML string (quoted, else bare)."""
        found = self._find((f'"{value}"', f"'{value}'"), "s:" + value)
        return found if found is not None else self._find((value,), "b:" + value)

    def key(self, name: str) -> int | None:
        """Line of the next ``name = ...`` at a line start (bare or quoted key)."""
        for prefix in (f"\n{name} =", f"\n{name}=", f'\n"{name}" =', f"\n'{name}' ="):
            found = self._find((prefix,), "k:" + prefix)
            if found is not None:
                return found + 1
        return None


@dataclass
class _Scan:
    display: str
    lines: _Lines
    packages: list[DeclaredPackage] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    indexes: list[tuple[str, str, int | None]] = field(default_factory=list)

    def skip(self, reason: str, line: int | None = None) -> None:
        where = self.display if line is None else f"{self.display}:{line}"
        self.skipped.append(Skipped(path=where, reason=reason))

    def requirement(self, value: object, table: str) -> None:
        if not isinstance(value, str):
            self.skip(f"{table}: an entry is not a string")
            return
        line = self.lines.string(value)
        got = parse_requirement(value, _ORIGIN, path=self.display, line=line)
        if isinstance(got, str):
            self.skip(f"{table}: {got}", line)
        else:
            self.packages.append(got)


def _table(data: object, *keys: str) -> dict[str, Any]:
    """The nested table ``data[k1][k2]...``, or ``{}`` when absent or not a table."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _string_lists(value: object) -> Iterator[tuple[str, object]]:
    """``(key, list)`` for each entry of a table of lists (optional dependencies, groups)."""
    if isinstance(value, dict):
        for key, items in value.items():
            yield str(key), items


def _pep621(doc: dict[str, Any], scan: _Scan) -> None:
    project = _table(doc, "project")
    deps = project.get("dependencies", [])
    if not isinstance(deps, list):
        scan.skip("[project] dependencies is not a list")
        deps = []
    for item in deps:
        scan.requirement(item, "[project] dependencies")
    for extra, items in _string_lists(project.get("optional-dependencies")):
        if not isinstance(items, list):
            scan.skip(f"[project.optional-dependencies] {extra} is not a list")
            continue
        for item in items:
            scan.requirement(item, f"[project.optional-dependencies] {extra}")


def _groups(doc: dict[str, Any], scan: _Scan) -> None:
    groups = _table(doc, "dependency-groups")
    for group, items in _string_lists(groups):
        if not isinstance(items, list):
            scan.skip(f"[dependency-groups] {group} is not a list")
            continue
        for item in items:
            if isinstance(item, dict) and "include-group" in item:
                target = item["include-group"]
                if not isinstance(target, str) or target not in groups:
                    scan.skip(f"[dependency-groups] {group}: include-group {target!r} "
                              "names no group")
                continue
            scan.requirement(item, f"[dependency-groups] {group}")


# -- Poetry -----------------------------------------------------------------------------------


def _poetry_sources(poetry: dict[str, Any], scan: _Scan) -> tuple[dict[str, str], list[str]]:
    """``({source name: url}, [urls searched by default])`` from ``[[tool.poetry.source]]``."""
    named: dict[str, str] = {}
    default: list[str] = []
    sources = poetry.get("source", [])
    for source in sources if isinstance(sources, list) else []:
        body = source if isinstance(source, dict) else {}
        name, url = body.get("name"), body.get("url")
        if isinstance(name, str) and isinstance(url, str):
            named[name] = url
            scan.indexes.append((url, scan.display, scan.lines.string(url)))
            if body.get("priority") != "explicit":
                default.append(url)
    return named, default


def _inline(value: object) -> str:
    """``value`` written as a TOML inline value (for ``raw``: ``{ version = "^2.1" }``)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else str(value)


def _exact(constraint: str) -> str | None:
    """The version a Poetry constraint pins exactly (``2.1.0``, ``==2.1.0``), else None."""
    text = constraint.strip().removeprefix("==").strip()
    if not text or "*" in text:
        return None
    try:
        Version(text)
    except InvalidVersion:
        return None
    return text


def _poetry_dep(name: str, spec: object, table: str, scan: _Scan,
                sources: tuple[dict[str, str], list[str]]) -> None:
    line = scan.lines.key(name)
    if not valid_name(name):
        scan.skip(f"{table}: a key is not a valid distribution name", line)
        return
    if isinstance(spec, list):  # multiple-constraint dependency: one entry each
        for one in spec:
            _poetry_one(name, one, table, line, scan, sources)
    else:
        _poetry_one(name, spec, table, line, scan, sources)


def _poetry_one(name: str, spec: object, table: str, line: int | None, scan: _Scan,
                sources: tuple[dict[str, str], list[str]]) -> None:
    named, default = sources
    detail = spec if isinstance(spec, dict) else {"version": spec}
    constraint = detail.get("version", "")
    source = detail.get("source")
    extras = detail.get("extras", [])
    if not isinstance(constraint, str) or not isinstance(extras, list):
        scan.skip(f"{table}: {name} has a version or extras that is not text", line)
        return
    if isinstance(source, str) and source not in named:
        scan.skip(f"{table}: {name} names source '{shown(source)}', which no "
                  "[[tool.poetry.source]] declares", line)
    urls = (named[source],) if isinstance(source, str) and source in named else tuple(default)
    version = _exact(constraint)
    local = None
    if version is not None:
        local = Version(version).local
    scan.packages.append(DeclaredPackage(
        name=canonicalize_name(name), raw=f"{name} = {_inline(spec)}"[:500], origin=_ORIGIN,
        version=version, specifier="" if version else constraint.strip(), local=local,
        extras=tuple(sorted(str(e) for e in extras)), index_urls=urls, path=scan.display,
        line=line))


def _poetry(doc: dict[str, Any], scan: _Scan) -> None:
    poetry = _table(doc, "tool", "poetry")
    if not poetry:
        return
    sources = _poetry_sources(poetry, scan)
    tables = [("[tool.poetry.dependencies]", _table(poetry, "dependencies")),
              ("[tool.poetry.dev-dependencies]", _table(poetry, "dev-dependencies"))]
    for group, body in _table(poetry, "group").items():
        tables.append((f"[tool.poetry.group.{group}.dependencies]",
                       _table(body, "dependencies")))
    for table, deps in tables:
        for name, spec in deps.items():
            if name.lower() != "python":
                _poetry_dep(name, spec, table, scan, sources)


# -- uv ---------------------------------------------------------------------------------------


def _uv_indexes(uv: dict[str, Any], scan: _Scan) -> tuple[dict[str, str], list[str]]:
    """``({index name: url}, [urls searched by default])`` from ``[[tool.uv.index]]``,
    ``index-url`` and ``extra-index-url``.
    """
    named: dict[str, str] = {}
    default: list[str] = []
    indexes = uv.get("index", [])
    for index in indexes if isinstance(indexes, list) else []:
        body = index if isinstance(index, dict) else {}
        url, name = body.get("url"), body.get("name")
        if not isinstance(url, str):
            continue
        scan.indexes.append((url, scan.display, scan.lines.string(url)))
        if isinstance(name, str):
            named[name] = url
        if body.get("explicit") is not True:
            default.append(url)
    extra = uv.get("extra-index-url", [])
    main = uv.get("index-url")
    for url in [*(extra if isinstance(extra, list) else []), main]:
        if isinstance(url, str):
            scan.indexes.append((url, scan.display, scan.lines.string(url)))
            default.append(url)
    return named, default


def _uv_source_urls(entry: object, named: dict[str, str], name: str,
                    scan: _Scan) -> list[str]:
    """The index URLs a ``[tool.uv.sources]`` entry (a table or a list of tables) pins
    ``name`` to; an unknown index name is a skipped entry.
    """
    entries = entry if isinstance(entry, list) else [entry]
    urls: list[str] = []
    for one in entries:
        index = one.get("index") if isinstance(one, dict) else None
        if not isinstance(index, str):
            continue
        if index in named:
            urls.append(named[index])
        else:
            scan.skip(f"[tool.uv.sources] {name}: index {index!r} is not declared in "
                      "[[tool.uv.index]]", scan.lines.key(name))
    return urls


def _apply_uv(doc: dict[str, Any], scan: _Scan, first: int) -> None:
    """Give the PEP 621 / PEP 735 packages (from index ``first`` on) their uv index URLs."""
    uv = _table(doc, "tool", "uv")
    named, default = _uv_indexes(uv, scan)
    pinned: dict[str, list[str]] = {}
    for name, entry in _table(uv, "sources").items():
        urls = _uv_source_urls(entry, named, name, scan)
        if urls:
            pinned[canonicalize_name(name)] = urls
    if not pinned and not default:
        return
    for i in range(first, len(scan.packages)):
        package = scan.packages[i]
        urls = pinned.get(package.name, default)
        scan.packages[i] = replace(package, index_urls=tuple(dict.fromkeys(urls)))


def scan_pyproject(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``pyproject.toml`` at ``path`` (shown as ``display``).

    Returns a :class:`FileScan`: ``packages`` from PEP 621, PEP 735, Poetry (origin
    ``pyproject``) with their index URLs; ``findings`` of kind ``index`` for each CUDA wheel
    index among ``[[tool.uv.index]]``, ``[tool.uv] index-url``/``extra-index-url`` and
    ``[[tool.poetry.source]]`` (:func:`~pinning.audit.indexes.index_findings`);
    ``skipped`` for each entry that is not a requirement. Raises :class:`Skip` when the file
    cannot be read or is not TOML.
    """
    del ctx
    text = read_text(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Skip(f"not valid TOML: {str(exc)[:200]}") from None
    except RecursionError:
        raise Skip("not readable TOML: nested too deeply") from None
    scan = _Scan(display=display, lines=_Lines(text))
    _pep621(doc, scan)
    _groups(doc, scan)
    _apply_uv(doc, scan, 0)
    _poetry(doc, scan)
    return FileScan(findings=index_findings(scan.indexes), packages=scan.packages,
                    skipped=scan.skipped)
