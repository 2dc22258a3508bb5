"""Lock files read into declared packages with their exact versions and index URLs.

- ``uv.lock``: uv's own TOML format ("human-readable TOML ... specific to uv",
  https://docs.astral.sh/uv/concepts/projects/layout/#the-lockfile): ``[[package]]`` tables
  with ``name``, ``version`` and ``source``, an inline table of one kind: ``registry`` (the
  index URL), ``git``, ``url``, ``path``, ``directory``, ``editable`` or ``virtual``
  (``astral-sh/uv@006cca657e2e8292a272104f85fde11c9c065757:crates/uv-resolver/src/lock/mod.rs``).
  ``editable`` and ``virtual`` entries are the project and its workspace members: left out.
- ``pylock.toml`` / ``pylock.<name>.toml``: PEP 751
  (https://packaging.python.org/en/latest/specifications/pylock-toml/, "April 2025: Initial
  version, approved via PEP 751"): ``lock-version`` ``"1.0"``, ``[[packages]]`` with ``name``
  (normalised), optional ``version`` (absent for a source tree) and optional ``index`` (the
  base URL of the index the files came from).
- ``poetry.lock``: Poetry's format (``python-poetry/poetry@025ae585b6a1ae79e4b2905089e7c2e7a1d08fa5:
  src/poetry/packages/locker.py``): ``[[package]]`` with ``name``, ``version`` and an
  optional ``[package.source]`` ``type`` / ``url`` / ``reference``; ``type = "legacy"`` is a
  package index whose URL is ``url``.

Lines: each package's line is the line of its ``[[package]]`` / ``[[packages]]`` header (the
n-th header for the n-th table), or none when the file writes the array another way.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pinning.audit.files import read_text
from pinning.audit.model import Context, DeclaredPackage, FileScan, Skip, Skipped
from pinning.audit.sources.pep508 import valid_name

__all__ = ["scan_poetry_lock", "scan_pylock", "scan_uv_lock"]


def _load(path: Path) -> tuple[str, dict[str, Any]]:
    text = read_text(path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Skip(f"not valid TOML: {str(exc)[:200]}") from None
    except RecursionError:
        raise Skip("not readable TOML: nested too deeply") from None


def _header_lines(text: str, header: str, count: int) -> list[int | None]:
    """The 1-based lines of the ``count`` array-of-tables headers ``header`` in ``text``;
    all ``None`` when the count differs (the array is written inline).
    """
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip() == header]
    if len(lines) != count:
        return [None] * count
    return list(lines)


def _local(version: str) -> str | None:
    try:
        return Version(version).local
    except InvalidVersion:
        return version.partition("+")[2] or None


def _tables(doc: dict[str, Any], key: str, display: str,
            skipped: list[Skipped]) -> list[dict[str, Any]]:
    items = doc.get(key, [])
    if not isinstance(items, list):
        skipped.append(Skipped(path=display, reason=f"`{key}` is not an array of tables"))
        return []
    return [item if isinstance(item, dict) else {} for item in items]


def _package(entry: dict[str, Any], origin: str, display: str, line: int | None,
             index: str | None, skipped: list[Skipped]) -> DeclaredPackage | None:
    name, version = entry.get("name"), entry.get("version")
    where = display if line is None else f"{display}:{line}"
    if not isinstance(name, str) or not name.strip():
        skipped.append(Skipped(path=where, reason="locked package without a name"))
        return None
    if not valid_name(name):
        skipped.append(Skipped(path=where, reason="locked package name is not a valid "
                               "distribution name"))
        return None
    if version is not None and not isinstance(version, str):
        skipped.append(Skipped(path=where, reason=f"{name}: version is not text"))
        return None
    raw = f"{name}=={version}" if version else name
    return DeclaredPackage(
        name=canonicalize_name(name), raw=raw, origin=origin, version=version or None,
        local=_local(version) if version else None,
        index_urls=(index,) if index else (), path=display, line=line)


def scan_uv_lock(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``uv.lock`` at ``path`` (shown as ``display``): one :class:`DeclaredPackage`
    (origin ``uv.lock``, exact version, ``index_urls`` the ``registry`` source) per locked
    package but the project itself (``editable``/``virtual`` sources). Raises :class:`Skip`
    when the file cannot be read or is not TOML; a malformed entry is a skipped entry.
    """
    del ctx
    text, doc = _load(path)
    scan = FileScan()
    tables = _tables(doc, "package", display, scan.skipped)
    for entry, line in zip(tables, _header_lines(text, "[[package]]", len(tables)),
                           strict=True):
        source = entry.get("source")
        source = source if isinstance(source, dict) else {}
        if "editable" in source or "virtual" in source:
            continue
        registry = source.get("registry")
        index = registry if isinstance(registry, str) and "://" in registry else None
        package = _package(entry, "uv.lock", display, line, index, scan.skipped)
        if package is not None:
            scan.packages.append(package)
    return scan


def scan_pylock(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan a PEP 751 lock file (``pylock.toml``, ``pylock.<name>.toml``) at ``path``: one
    :class:`DeclaredPackage` (origin ``pylock``, ``version`` when recorded, ``index_urls``
    from ``packages.index``) per ``[[packages]]`` entry. Raises :class:`Skip` when the file
    cannot be read, is not TOML, or has a ``lock-version`` whose major version is not 1 (the
    spec: a tool that does not support the major version MUST raise an error).
    """
    del ctx
    text, doc = _load(path)
    lock_version = doc.get("lock-version")
    if lock_version is not None and not str(lock_version).startswith("1."):
        raise Skip(f"pylock lock-version {str(lock_version)[:40]!r} is not 1.x")
    scan = FileScan()
    tables = _tables(doc, "packages", display, scan.skipped)
    for entry, line in zip(tables, _header_lines(text, "[[packages]]", len(tables)),
                           strict=True):
        index = entry.get("index")
        package = _package(entry, "pylock", display, line,
                           index if isinstance(index, str) else None, scan.skipped)
        if package is not None:
            scan.packages.append(package)
    return scan


def scan_poetry_lock(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``poetry.lock`` at ``path``: one :class:`DeclaredPackage` (origin
    ``poetry.lock``, exact version, ``index_urls`` the ``legacy`` source URL) per
    ``[[package]]``. Raises :class:`Skip` when the file cannot be read or is not TOML.
    """
    del ctx
    text, doc = _load(path)
    scan = FileScan()
    tables = _tables(doc, "package", display, scan.skipped)
    for entry, line in zip(tables, _header_lines(text, "[[package]]", len(tables)),
                           strict=True):
        source = entry.get("source")
        source = source if isinstance(source, dict) else {}
        url = source.get("url")
        index = url if source.get("type") == "legacy" and isinstance(url, str) else None
        package = _package(entry, "poetry.lock", display, line, index, scan.skipped)
        if package is not None:
            scan.packages.append(package)
    return scan
