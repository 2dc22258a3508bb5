"""Installed environments: the distributions of a site-packages folder (and their compiled
extensions), or of a host snapshot written by ``pin probe``.
"""

from __future__ import annotations

import csv
import os
import posixpath
from email.parser import HeaderParser
from pathlib import Path, PureWindowsPath

from pinning.audit.elf import scan_elf
from pinning.audit.files import read_text
from pinning.audit.model import (
    Context,
    DeclaredPackage,
    FileScan,
    Finding,
    Skip,
    Skipped,
    Verdict,
)
from pinning.errors import PinError
from pinning.util.versions import normalize_name

MAX_METADATA_BYTES = 4 * 1024 * 1024
"""The largest METADATA / PKG-INFO / RECORD read (4 MiB)."""

MAX_EXTENSIONS = 10_000
"""The most shared objects scanned per site-packages folder."""

MAX_WALK_ENTRIES = 200_000
"""The most files and folders looked at under one distribution's top-level folders."""


def _local(version: str) -> str | None:
    """The local version label (``2.5.1+cu121`` -> ``cu121``), or ``None``."""
    return version.split("+", 1)[1] if "+" in version else None


def scan_site_packages(folder: Path, ctx: Context) -> FileScan:
    """Every ``*.dist-info`` / ``*.egg-info`` distribution of the site-packages ``folder``
    as a :class:`DeclaredPackage` (origin ``site-packages``, exact version, local label,
    ``path`` the metadata folder), and every ELF extension its RECORD lists (``.so`` files;
    without a RECORD, the ``.so`` files under its top-level folders) scanned with
    :func:`~pinning.audit.elf.scan_elf` (``package`` = the distribution).

    Paths taken from the metadata (RECORD rows, ``top_level.txt`` names, the metadata
    folders themselves) are read only inside ``folder``: absolute ones, ``..`` and links out
    are :class:`Skipped` with the reason. Metadata without Name/Version and unreadable files
    are :class:`Skipped` entries. Raises
    :class:`Skip` only when ``folder`` cannot be listed.
    """
    try:
        entries = sorted(e for e in os.listdir(folder)
                         if e.endswith((".dist-info", ".egg-info")))
    except OSError as exc:
        raise Skip(f"cannot list the folder ({exc.strerror or exc})") from None
    scan = FileScan()
    budget = [MAX_EXTENSIONS]
    root = folder.resolve()
    for entry in entries:
        info = folder / entry
        display = str(info)
        if not _within(info, root):
            scan.skipped.append(Skipped(path=display, reason="a link leaving the "
                                        "site-packages folder; not read"))
            continue
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
        pkg = DeclaredPackage(name=dist, raw=f"{name}=={version}", origin="site-packages",
                              version=version, local=_local(version), path=display)
        binaries: list[Finding] = []
        for so, rel in _extensions(folder, info, scan, budget):
            try:
                got = scan_elf(so, str(folder / rel), ctx, package=dist)
            except Skip as exc:
                scan.skipped.append(Skipped(path=str(folder / rel), reason=exc.reason))
                continue
            binaries += got.findings
            scan.skipped += got.skipped
        advice = package_advice(pkg, binaries, ctx)
        if advice is None:
            scan.packages.append(pkg)
            scan.findings += binaries
        else:
            scan.findings.append(advice)
    return scan


def package_advice(pkg: DeclaredPackage, binaries: list[Finding],
                   ctx: Context) -> Finding | None:
    """One finding for the installed distribution ``pkg`` and the findings of its compiled
    files (``binaries``): pin's package advice for it (its row's rule, verdict, why, todo,
    replacement and source) with every binary listed in ``binaries`` (``PATH: SUBJECT``,
    sorted), when it has binaries with findings, pin's data has a row for it, and no binary
    is judged worse than that row. ``None`` otherwise: the package is judged on its own and
    the binaries' findings stand. Raises ``MatrixError`` (exit 3) for invalid package data.
    """
    if not binaries:
        return None
    from pinning.audit.packages import load_knowledge

    advice = load_knowledge().classify(pkg, ctx)
    worst = max(f.verdict.rank for f in binaries)
    if advice.verdict is Verdict.NO_DATA or worst > advice.verdict.rank:
        return None
    listed = sorted({f"{f.path}: {f.subject}" for f in binaries})
    return advice.model_copy(update={"binaries": listed})


def _is_so(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


def _relative(name: str) -> str | None:
    """``name`` (a RECORD path or a ``top_level.txt`` entry) as a normalised POSIX path
    relative to the site-packages folder, or ``None`` when it is absolute, empty or climbs
    out with ``..``.
    """
    text = name.strip().replace("\\", "/")
    if not text or text.startswith("/") or PureWindowsPath(text).drive:
        return None
    rel = posixpath.normpath(text)
    if rel == "." or rel == ".." or rel.startswith("../"):
        return None
    return rel


def _within(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves (links followed) to ``root`` or below it."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return False
    return real == root or real.is_relative_to(root)


def _extensions(folder: Path, info: Path, scan: FileScan,
                budget: list[int]) -> list[tuple[Path, str]]:
    """``(path, path relative to folder)`` of the shared objects of the distribution
    ``info``: those its RECORD lists inside ``folder``, else those under the folders
    ``top_level.txt`` names (no links followed). Entries that are absolute, climb out with
    ``..`` or resolve outside ``folder`` through a link are :class:`Skipped`, never read.
    """
    root = folder.resolve()
    try:
        record = read_text(info / "RECORD", limit=MAX_METADATA_BYTES)
    except Skip:
        record = None
    found = (_recorded(folder, root, info, record, scan, budget) if record is not None
             else _under_top_levels(folder, root, info, scan, budget))
    if budget[0] <= 0:
        scan.skipped.append(Skipped(path=str(info), reason=f"more than {MAX_EXTENSIONS} "
                                    "shared objects; the rest were not scanned"))
    return found


def _recorded(folder: Path, root: Path, info: Path, record: str, scan: FileScan,
              budget: list[int]) -> list[tuple[Path, str]]:
    """The ``.so`` files a RECORD lists that exist inside ``folder``."""
    found: list[tuple[Path, str]] = []
    outside = 0
    for row in csv.reader(record.splitlines()):
        if not row or not _is_so(row[0]) or budget[0] <= 0:
            continue
        rel = _relative(row[0])
        path = folder / rel if rel is not None else None
        if path is None or not _within(path, root):
            outside += 1
            budget[0] -= 1  # each row listed costs a look, inside or not
            continue
        if path.is_file():
            budget[0] -= 1
            found.append((path, rel or ""))
    if outside:
        scan.skipped.append(Skipped(path=str(info / "RECORD"), reason=f"{outside} shared "
                                    "object(s) listed outside the site-packages folder "
                                    "(absolute, `..` or through a link); not scanned"))
    return found


def _under_top_levels(folder: Path, root: Path, info: Path, scan: FileScan,
                      budget: list[int]) -> list[tuple[Path, str]]:
    """The ``.so`` files under the top-level folders ``top_level.txt`` names, each of which
    must lie inside ``folder`` (an absolute name, ``..`` or a link out is :class:`Skipped`).
    At most :data:`MAX_WALK_ENTRIES` files and folders are looked at per distribution.
    """
    where = str(info / "top_level.txt")
    try:
        tops = read_text(info / "top_level.txt", limit=MAX_METADATA_BYTES).split()
    except Skip:
        return []
    found: list[tuple[Path, str]] = []
    walked = 0
    for top in sorted(set(tops)):
        rel = _relative(top)
        shown = top if len(top) <= 200 else top[:200] + "..."
        if rel is None:
            scan.skipped.append(Skipped(path=where, reason=f"names {shown!r}, outside the "
                                        "site-packages folder; not walked"))
            continue
        base = folder / rel
        if base.is_symlink() or not _within(base, root):
            scan.skipped.append(Skipped(path=where, reason=f"names {shown!r}, a link or a "
                                        "path leaving the site-packages folder; not walked"))
            continue
        if not base.is_dir():
            continue
        for dirpath, dirnames, files in os.walk(base):
            walked += len(dirnames) + len(files)
            if walked > MAX_WALK_ENTRIES:
                scan.skipped.append(Skipped(path=where, reason=f"more than "
                                            f"{MAX_WALK_ENTRIES} files and folders under its "
                                            "top-level names; the rest were not walked"))
                return found
            dirnames[:] = sorted(d for d in dirnames
                                 if not os.path.islink(os.path.join(dirpath, d)))
            sub = posixpath.join(rel, Path(dirpath).relative_to(base).as_posix())
            for f in sorted(files):
                path = Path(dirpath) / f
                if _is_so(f) and budget[0] > 0 and not os.path.islink(path):
                    budget[0] -= 1
                    found.append((path, posixpath.normpath(posixpath.join(sub, f))))
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
