"""Parsers for pasted package listings beyond ``pip list``: ``conda list`` (text and
``--json``), ``pip inspect`` (JSON), and the dependency trees of ``uv tree`` and
``pipdeptree``.

``pip list``, ``pip freeze``, ``uv pip list`` and ``uv pip freeze`` share one layout with
pip and are read by :mod:`pinning.probe.formats.pip_list`. Every parser here returns a
:class:`PackageListing`; the layouts were read from real outputs (``tests/data/dumps``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field

from pinning.errors import FormatError
from pinning.util.models import Strict
from pinning.util.versions import normalize_name

__all__ = [
    "CONDA_HEADER",
    "TREE_BRANCH",
    "PackageEntry",
    "PackageListing",
    "build_tag",
    "conda_json_kind",
    "parse_conda_list",
    "parse_conda_list_json",
    "parse_dep_tree",
    "parse_pip_inspect",
]

Tool = Literal["conda list", "conda list --json", "pip inspect", "uv tree", "pipdeptree"]


class PackageEntry(Strict):
    """One installed package as a listing printed it.

    ``name`` is the PEP 503 name (conda's name as printed for conda), ``version`` the
    version as printed, ``build_tag`` its local-version segment (``rocm6.1`` of
    ``2.4.0+rocm6.1``; ``None`` without one).
    ``build`` and ``channel`` are conda's build string and channel (``pypi`` for a pip
    install conda lists); ``pip_copy`` is true when conda says the entry is pip's own copy
    (``<pip>`` in the build column of conda < 4.6, or the ``pypi`` channel), so it is the
    same distribution ``pip list`` shows, not a second one. ``installer`` is pip inspect's
    ``INSTALLER`` (``pip``, ``uv``).
    """

    name: str
    version: str
    build_tag: str | None = None
    build: str | None = None
    channel: str | None = None
    pip_copy: bool = False
    installer: str | None = None


class PackageListing(Strict):
    """The packages one listing shows, in printed order (the first entry of a name wins)."""

    tool: Tool
    packages: list[PackageEntry] = Field(default_factory=list)


def build_tag(version: str) -> str | None:
    """The local-version segment of ``version`` (after ``+``); ``None`` when there is none."""
    head, sep, tag = version.partition("+")
    return tag if sep and head and tag else None


def _entry(name: str, version: str, *, conda: bool = False, **extra: Any) -> PackageEntry:
    return PackageEntry(name=name if conda else normalize_name(name), version=version,
                        build_tag=build_tag(version), **extra)


def _dedupe(tool: Tool, entries: list[PackageEntry], source: str) -> PackageListing:
    if not entries:
        raise FormatError(f"{source}: no package found in the {tool} output")
    seen: set[str] = set()
    out = []
    for e in entries:
        if e.name not in seen:
            seen.add(e.name)
            out.append(e)
    return PackageListing(tool=tool, packages=out)


CONDA_HEADER = re.compile(r"^#\s*(?:packages in environment at\b|Name\s+Version\s+Build\b)")
"""The ``# packages in environment at ...:`` / ``# Name  Version  Build  Channel`` header of
``conda list``."""

_CONDA_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
"""A ``conda list`` package name (the first column)."""


def parse_conda_list(text: str, *, source: str = "conda list") -> PackageListing:
    """Parse ``conda list`` text: ``name version build [channel]`` rows under ``#`` headers.

    A build of ``<pip>`` (conda < 4.6) or the channel ``pypi`` (``pypi_0``) marks the entry
    as pip's copy (:attr:`PackageEntry.pip_copy`). Raises ``FormatError`` naming ``source``
    when no row is present.
    """
    entries = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        # Columns split on blanks (linear on any line): name, version, [build], [channel].
        cols = s.split()
        if len(cols) < 2 or not _CONDA_NAME.fullmatch(cols[0]) or not cols[1][:1].isdigit():
            continue
        build = cols[2] if len(cols) > 2 else None
        channel = cols[3] if len(cols) > 3 else None
        pip_copy = build == "<pip>" or (channel or "").lower() == "pypi"
        entries.append(_entry(cols[0], cols[1], conda=True, build=build,
                              channel=channel, pip_copy=pip_copy))
    return _dedupe("conda list", entries, source)


def conda_json_kind(data: Any) -> Literal["conda_list_json", "pip_inspect"] | None:
    """Which JSON listing ``data`` is: a list of objects with ``dist_name`` or
    ``build_string`` (``conda list --json``), an object with ``installed`` and
    ``pip_version`` (``pip inspect``); ``None`` for anything else.
    """
    if isinstance(data, list) and data and all(isinstance(d, dict) for d in data) and any(
        "dist_name" in d or "build_string" in d for d in data
    ):
        return "conda_list_json"
    if isinstance(data, dict) and "installed" in data and "pip_version" in data:
        return "pip_inspect"
    return None


def _load_json(text: str, source: str) -> Any:
    try:
        data, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{source}: not JSON ({exc})") from None
    return data


def parse_conda_list_json(text: str, *, source: str = "conda list --json") -> PackageListing:
    """Parse ``conda list --json``: objects with ``name``, ``version``, ``build_string``,
    ``channel``. The channel ``pypi`` marks pip's copy. Raises ``FormatError`` naming
    ``source`` when the text is not such a list.
    """
    data = _load_json(text, source)
    if conda_json_kind(data) != "conda_list_json":
        raise FormatError(f"{source}: not `conda list --json` output (a list of packages)")
    entries = []
    for d in data:
        name, version = d.get("name"), d.get("version")
        if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
            continue
        build = d.get("build_string") if isinstance(d.get("build_string"), str) else None
        channel = d.get("channel") if isinstance(d.get("channel"), str) else None
        entries.append(_entry(name, version, conda=True, build=build, channel=channel,
                              pip_copy=(channel or "").lower() == "pypi"))
    return _dedupe("conda list --json", entries, source)


def parse_pip_inspect(text: str, *, source: str = "pip inspect") -> PackageListing:
    """Parse ``pip inspect`` JSON (report version 1): every ``installed[].metadata`` name and
    version, with ``installer``. Raises ``FormatError`` naming ``source`` otherwise.
    """
    data = _load_json(text, source)
    if conda_json_kind(data) != "pip_inspect" or not isinstance(data["installed"], list):
        raise FormatError(f"{source}: not `pip inspect` output (no 'installed' list)")
    entries = []
    for item in data["installed"]:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict):
            continue
        name, version = meta.get("name"), meta.get("version")
        if isinstance(name, str) and isinstance(version, str) and name and version:
            installer = item.get("installer")
            entries.append(_entry(name, version,
                                  installer=installer if isinstance(installer, str) else None))
    return _dedupe("pip inspect", entries, source)


TREE_BRANCH = re.compile(r"^[│\s]*[├└]── ")
"""A branch line of ``uv tree`` / ``pipdeptree`` (``├── ``, ``└── ``, ``│   └── ``)."""

# Linear: each branch of an alternation starts with a distinct literal.
_UV_NODE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])? v([0-9]\S*)")
_PDT_TOP = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9]\S*)")
_PDT_CHILD = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*) \[required: [^\]]*installed: ([0-9][^\],\s]*)\]"
)


def is_tree_node(line: str) -> bool:
    """True when ``line`` is a branch of ``uv tree`` (``├── jax v0.8.2``) or ``pipdeptree``
    (``└── jaxlib [required: ==0.8.2, installed: 0.8.2]``) naming a package: a line a
    fragment of either tree (``uv tree | grep jax``, no root line) is read from.
    """
    m_branch = TREE_BRANCH.match(line)
    if m_branch is None:
        return False
    body = line[m_branch.end():]
    return bool(_PDT_CHILD.match(body) or _UV_NODE.match(body))


def parse_dep_tree(text: str, *, source: str = "dependency tree") -> PackageListing:
    """Parse ``uv tree`` (``name vX.Y``) or ``pipdeptree`` (``name==X.Y`` at the top,
    ``name [required: ..., installed: X.Y]`` below) into every package the tree names,
    once each. ``(*)`` repeats and ``(extra: ...)`` labels are ignored; the root project of
    ``uv tree`` is listed too. A fragment without the root or the top lines (``uv tree |
    grep jax``: branch lines only) is read the same way. Raises ``FormatError`` naming
    ``source`` when no node is read.
    """
    entries = []
    tool: Tool = "uv tree"
    for line in text.splitlines():
        m_branch = TREE_BRANCH.match(line)
        body = line[m_branch.end():] if m_branch else line.strip()
        if not body:
            continue
        m = _PDT_CHILD.match(body) or _PDT_TOP.match(body)
        if m is not None:
            tool = "pipdeptree"
        else:
            m = _UV_NODE.match(body)
        if m is not None:
            entries.append(_entry(m.group(1), m.group(2)))
    return _dedupe(tool, entries, source)
