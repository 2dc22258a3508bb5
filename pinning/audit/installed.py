"""Installed environments: the distributions of a site-packages folder (and their compiled
extensions), or of a host snapshot written by ``pin probe``.
"""

from __future__ import annotations

import csv
import os
from email.parser import HeaderParser
from pathlib import Path

from pinning.audit.elf import scan_elf
from pinning.audit.files import read_text
from pinning.audit.model import Context, DeclaredPackage, FileScan, Skip, Skipped
from pinning.errors import PinError
from pinning.util.versions import normalize_name

MAX_METADATA_BYTES = 4 * 1024 * 1024
"""The largest METADATA / PKG-INFO / RECORD read (4 MiB)."""

MAX_EXTENSIONS = 10_000
"""The most shared objects scanned per site-packages folder."""


def _local(version: str) -> str | None:
    """The local version label (``2.5.1+cu121`` -> ``cu121``), or ``None``."""
    return version.split("+", 1)[1] if "+" in version else None


def scan_site_packages(folder: Path, ctx: Context) -> FileScan:
    """Every ``*.dist-info`` / ``*.egg-info`` distribution of the site-packages ``folder``
    as a :class:`DeclaredPackage` (origin ``site-packages``, exact version, local label,
    ``path`` the metadata folder), and every ELF extension its RECORD lists (``.so`` files;
    without a RECORD, the ``.so`` files under its top-level folders) scanned with
    :func:`~pinning.audit.elf.scan_elf` (``package`` = the distribution).

    Metadata without Name/Version and unreadable files are :class:`Skipped` entries. Raises
    :class:`Skip` only when ``folder`` cannot be listed.
    """
    try:
        entries = sorted(e for e in os.listdir(folder)
                         if e.endswith((".dist-info", ".egg-info")))
    except OSError as exc:
        raise Skip(f"cannot list the folder ({exc.strerror or exc})") from None
    scan = FileScan()
    budget = [MAX_EXTENSIONS]
    for entry in entries:
        info = folder / entry
        display = str(info)
        meta = info / ("METADATA" if entry.endswith(".dist-info") else "PKG-INFO")
        try:
            headers = HeaderParser().parsestr(read_text(meta, limit=MAX_METADATA_BYTES))
        except Skip as exc:
            scan.skipped.append(Skipped(path=display, reason=f"{meta.name}: {exc.reason}"))
            continue
        name, version = headers.get("Name"), headers.get("Version")
        if not isinstance(name, str) or not isinstance(version, str) \
                or not name.strip() or not version.strip():
            scan.skipped.append(Skipped(path=display,
                                        reason=f"{meta.name} names no Name and Version"))
            continue
        name, version = name.strip(), version.strip()
        dist = normalize_name(name)
        scan.packages.append(DeclaredPackage(
            name=dist, raw=f"{name}=={version}", origin="site-packages", version=version,
            local=_local(version), path=display))
        for so in _extensions(folder, info, scan, budget):
            rel = so.relative_to(folder).as_posix()
            try:
                got = scan_elf(so, str(folder / rel), ctx, package=dist)
            except Skip as exc:
                scan.skipped.append(Skipped(path=str(folder / rel), reason=exc.reason))
                continue
            scan.findings += got.findings
            scan.skipped += got.skipped
    return scan


def _is_so(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


def _extensions(folder: Path, info: Path, scan: FileScan, budget: list[int]) -> list[Path]:
    """The shared objects of the distribution ``info``: those its RECORD lists inside
    ``folder``, else those under the folders ``top_level.txt`` names (no links followed).
    """
    try:
        record = read_text(info / "RECORD", limit=MAX_METADATA_BYTES)
    except Skip:
        record = None
    found = (_recorded(folder, record, budget) if record is not None
             else _under_top_levels(folder, info, budget))
    if budget[0] <= 0:
        scan.skipped.append(Skipped(path=str(info), reason=f"more than {MAX_EXTENSIONS} "
                                    "shared objects; the rest were not scanned"))
    return found


def _recorded(folder: Path, record: str, budget: list[int]) -> list[Path]:
    """The ``.so`` files a RECORD lists that exist inside ``folder``."""
    root = folder.resolve()
    found: list[Path] = []
    for row in csv.reader(record.splitlines()):
        if not row or not _is_so(row[0]) or budget[0] <= 0:
            continue
        path = folder / os.path.normpath(row[0])
        try:
            inside = path.resolve().is_relative_to(root) and path.is_file()
        except (OSError, RuntimeError):
            inside = False
        if inside:
            budget[0] -= 1
            found.append(path)
    return found


def _under_top_levels(folder: Path, info: Path, budget: list[int]) -> list[Path]:
    """The ``.so`` files under the top-level folders ``top_level.txt`` names."""
    try:
        tops = read_text(info / "top_level.txt", limit=MAX_METADATA_BYTES).split()
    except Skip:
        return []
    found: list[Path] = []
    for top in tops:
        base = folder / top
        if not base.is_dir() or base.is_symlink():
            continue
        for dirpath, dirnames, files in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames
                                 if not os.path.islink(os.path.join(dirpath, d)))
            for f in sorted(files):
                if _is_so(f) and budget[0] > 0:
                    budget[0] -= 1
                    found.append(Path(dirpath) / f)
    return found


def scan_host_snapshot(path: Path, ctx: Context) -> FileScan:
    """The Python distributions a host snapshot (``pin probe -o FILE``, read with
    :func:`pinning.probe.snapshot.read_snapshot`) records, as :class:`DeclaredPackage`
    entries (origin ``host``, exact version, local label, ``path`` the snapshot).

    Raises :class:`Skip` with the loader's message when the snapshot cannot be read or is
    invalid (the loader's ``ProbeError`` never escapes).
    """
    from pinning.probe.snapshot import read_snapshot

    try:
        facts = read_snapshot(path)
    except PinError as exc:
        raise Skip(exc.message) from None
    scan = FileScan()
    for dist in facts.python.distributions:
        scan.packages.append(DeclaredPackage(
            name=normalize_name(dist.name), raw=f"{dist.name}=={dist.version}", origin="host",
            version=dist.version, local=_local(dist.version), path=str(path)))
    if not facts.python.distributions and facts.python.reason:
        scan.skipped.append(Skipped(path=str(path), reason=f"the snapshot records no Python "
                                    f"distributions: {facts.python.reason}"))
    return scan
