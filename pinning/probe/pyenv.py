"""The Python environment of a host: site-packages discovery, installed distributions, the
torch build (read from ``torch/version.py`` without importing torch) and every Triton
distribution (FACTS.md §2.8, §3.1–3.3).
"""

from __future__ import annotations

import ast
import json
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pinning.errors import UsageError
from pinning.probe.models import (
    TRITON_DISTRIBUTIONS,
    Distribution,
    PythonFacts,
    TorchBuild,
    TritonDist,
    normalize_name,
)
from pinning.probe.root import HostRoot, read_regular

# Where Python environments live on common images when no VIRTUAL_ENV/CONDA_PREFIX is set.
_SITE_GLOBS: tuple[str, ...] = (
    "usr/local/lib/python3*/dist-packages",
    "usr/local/lib/python3*/site-packages",
    "usr/lib/python3/dist-packages",
    "usr/lib/python3*/site-packages",
    "opt/conda/lib/python3*/site-packages",
    "opt/venv/lib/python3*/site-packages",
)


def site_dirs(host: HostRoot, env: Mapping[str, str], live: bool,
               explicit: Sequence[str]) -> tuple[list[str], str | None]:
    """Host paths of the site-packages to read, and why none were found.

    Raises :class:`~pinning.errors.UsageError` (exit 2) for an explicit directory that does
    not exist on the host (under the root).
    """
    if explicit:
        for d in explicit:
            if not host.is_dir(d):
                where = "" if host.live else f" under {host.root}"
                raise UsageError(f"--site-packages {d}: no such directory on the host{where}.",
                                 hint="Give the site-packages path as the host sees it.")
        return list(explicit), None
    dirs: list[str] = []
    looked: list[str] = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix:
            looked.append(f"{var}={prefix}")
            dirs += host.glob(f"{prefix}/lib/python3*/site-packages")
    if dirs:
        return dirs, None
    if looked:
        return [], (f"{' and '.join(looked)} has no lib/python3*/site-packages on the host; "
                    "pass --site-packages DIR")
    if live:
        paths = sysconfig.get_paths()
        return sorted({paths["purelib"], paths["platlib"]}), None
    dirs = [d for pattern in _SITE_GLOBS for d in host.glob(pattern)]
    why = None if dirs else ("no site-packages in the usual places (" + ", ".join(
        "/" + g for g in _SITE_GLOBS) + "); pass --site-packages DIR")
    return dirs, why


def _torch_build(dist_dir: Path, version: str, location: str) -> TorchBuild:
    """Read ``torch/version.py`` literals (``__version__``, ``cuda``, ``hip``) with :mod:`ast`."""
    path = dist_dir / "torch" / "version.py"
    src = f"{location}/torch/version.py"
    values: dict[str, object] = {}
    text = read_regular(path)
    try:
        tree = ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        for node in tree.body:
            target = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            if isinstance(target, ast.Name):
                try:
                    values[target.id] = ast.literal_eval(value)
                except ValueError:
                    continue
    hip, cuda = values.get("hip"), values.get("cuda")
    hip_s = hip if isinstance(hip, str) else None
    cuda_s = cuda if isinstance(cuda, str) else None
    if tree is None:
        kind = "unknown"
        if "+rocm" in version:
            kind = "rocm"
        elif "+cu" in version:
            kind = "cuda"
        src = f"{location} (dist-info version; torch/version.py unreadable)"
    else:
        kind = "rocm" if hip_s else "cuda" if cuda_s else "cpu"
    return TorchBuild(version=version, kind=kind, hip=hip_s, cuda=cuda_s, source=src)


def probe_python(host: HostRoot, dirs: list[str], why_none: str | None,
                 notes: list[str]) -> PythonFacts:
    """Distributions in the site-packages ``dirs`` (host paths; the first copy of a name on
    the path wins), the torch build and every Triton distribution. Unreadable metadata is
    skipped with a line in ``notes``; no ``dirs`` gives facts with ``reason`` = ``why_none``.
    """
    from importlib import metadata

    if not dirs:
        return PythonFacts(reason=why_none or "no Python site-packages directory found")
    dists: dict[str, Distribution] = {}
    tritons: list[TritonDist] = []
    torch: TorchBuild | None = None
    real_dirs = []
    for d in dirs:
        try:
            real_dirs.append(str(host.path(d)))
        except OSError:
            notes.append(f"{d}: {host.why(d)}")
    for dist in metadata.distributions(path=real_dirs):
        try:
            got = _read_distribution(dist)
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            where = getattr(dist, "_path", "a dist-info")
            notes.append(f"skipped unreadable Python metadata {host.show(Path(str(where)))}: "
                         f"{type(exc).__name__}")
            continue
        if got is None:
            continue
        name, version, installer, direct_url, record = got
        key = normalize_name(name)
        if key in dists:  # first on the path wins, as for the import system
            continue
        dists[key] = Distribution(name=key, version=version, installer=installer,
                                  direct_url=direct_url)
        location = Path(str(dist.locate_file("")))
        if key in TRITON_DISTRIBUTIONS:
            tritons.append(TritonDist(
                name=key, version=version, installer=installer, direct_url=direct_url,
                owns_import="triton/__init__.py," in record if record else None,
            ))
        if key == "torch":
            torch = _torch_build(location, version, host.show(location))
    return PythonFacts(
        site_packages=list(dirs),
        distributions=sorted(dists.values(), key=lambda d: d.name),
        torch=torch,
        tritons=sorted(tritons, key=lambda t: t.name),
    )


def _read_distribution(
    dist: Any,
) -> tuple[str, str, str | None, str | None, str] | None:
    """``(name, version, installer, direct_url, RECORD text)`` of one dist-info, or ``None``
    when its METADATA names no Name/Version. Raises ``OSError`` / ``ValueError`` (undecodable
    or unreadable metadata) for the caller to skip it.
    """
    name, version = dist.name, dist.version
    if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
        return None
    installer = ((dist.read_text("INSTALLER") or "").strip() or None)
    direct_url = None
    raw = dist.read_text("direct_url.json")
    if raw:
        try:
            url = json.loads(raw).get("url")
            direct_url = str(url) if url else None
        except (ValueError, AttributeError):
            direct_url = None
    record = dist.read_text("RECORD") or ""
    return name, version, installer, direct_url, record
