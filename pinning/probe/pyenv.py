"""The Python environment of a host: site-packages discovery, installed distributions, the
torch build (read from ``torch/version.py`` without importing torch) and every Triton
distribution.
"""

from __future__ import annotations

import ast
import re
import sysconfig
from collections.abc import Mapping, Sequence

from pinning.errors import UsageError
from pinning.matrix.names import TRITON_DISTRIBUTIONS
from pinning.probe.models import Distribution, PythonFacts, TorchBuild, TritonDist
from pinning.probe.root import HostRoot
from pinning.util.jsonread import load_json
from pinning.util.models import DIST_NAME_PATTERN
from pinning.util.text import is_word
from pinning.util.versions import normalize_name

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


def _torch_build(host: HostRoot, site: str, version: str) -> TorchBuild:
    """Read ``<site>/torch/version.py`` literals (``__version__``, ``cuda``, ``hip``) with
    :mod:`ast`, through the host root.
    """
    src = f"{site}/torch/version.py"
    values: dict[str, object] = {}
    text = host.read(src)
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
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
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
        src = f"{site} (dist-info version; torch/version.py unreadable)"
    else:
        kind = "rocm" if hip_s else "cuda" if cuda_s else "cpu"
    files = values.get("__version__")
    return TorchBuild(version=version, kind=kind, hip=hip_s, cuda=cuda_s, source=src,
                      files_version=files if isinstance(files, str) else None)


_METADATA_FILES = (("{}.dist-info", "METADATA"), ("{}.egg-info", "PKG-INFO"))


def probe_python(host: HostRoot, dirs: list[str], why_none: str | None,
                 notes: list[str]) -> PythonFacts:
    """Distributions in the site-packages ``dirs`` (host paths; the first copy of a name on
    the path wins, as for the import system), the torch build and every Triton distribution.

    Every file is read through ``host`` (links stay inside the root, only regular files, a
    bounded size). Unreadable metadata is skipped with a line in ``notes``; several copies of
    one name are noted; no ``dirs`` gives facts with ``reason`` = ``why_none``.
    """
    if not dirs:
        return PythonFacts(reason=why_none or "no Python site-packages directory found")
    dists: dict[str, Distribution] = {}
    copies: dict[str, list[str]] = {}
    tritons: list[TritonDist] = []
    torch: TorchBuild | None = None
    for site in dirs:
        for pattern, meta_name in _METADATA_FILES:
            for info in host.glob(f"{site}/{pattern.format('*')}"):
                got = _read_distribution(host, info, meta_name)
                if got is None:
                    notes.append(f"skipped {info}: no readable {meta_name} with Name and Version")
                    continue
                name, version, installer, direct_url, record = got
                key = normalize_name(name)
                copies.setdefault(key, []).append(version)
                if key in dists:
                    continue
                dists[key] = Distribution(name=key, version=version, installer=installer,
                                          direct_url=direct_url)
                if key in TRITON_DISTRIBUTIONS:
                    tritons.append(TritonDist(
                        name=key, version=version, installer=installer, direct_url=direct_url,
                        owns_import="triton/__init__.py," in record if record else None,
                    ))
                if key == "torch":
                    torch = _torch_build(host, site, version)
    for key, versions in sorted(copies.items()):
        if len(versions) > 1:
            notes.append(f"several metadata copies of {key} ({', '.join(versions)}); the first "
                         f"on the path ({versions[0]}) is the one recorded")
    return PythonFacts(
        site_packages=list(dirs),
        distributions=sorted(dists.values(), key=lambda d: d.name),
        torch=torch,
        tritons=sorted(tritons, key=lambda t: t.name),
    )


def _read_distribution(
    host: HostRoot, info: str, meta_name: str,
) -> tuple[str, str, str | None, str | None, str] | None:
    """``(name, version, installer, direct_url, RECORD text)`` of the dist-info (or
    egg-info) folder ``info``, or ``None`` when its metadata names no Name/Version.
    """
    from email.parser import HeaderParser

    text = host.read(f"{info}/{meta_name}")
    if not text:
        return None
    headers = HeaderParser().parsestr(text)
    name, version = headers.get("Name"), headers.get("Version")
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    name, version = name.strip(), version.strip()
    if not name or not version or len(name) > 200 or len(version) > 200:
        return None
    if not re.fullmatch(DIST_NAME_PATTERN, name) or not is_word(version):
        return None  # not a name and version pip could install: broken or hostile metadata
    installer = ((host.read(f"{info}/INSTALLER") or "").strip()[:100] or None)
    direct_url = None
    raw = host.read(f"{info}/direct_url.json")
    if raw:
        try:
            url = load_json(raw, UsageError, label="direct_url.json").get("url")
            direct_url = str(url) if url else None
        except (UsageError, AttributeError):
            direct_url = None
    record = host.read(f"{info}/RECORD") or ""
    return name, version, installer, direct_url, record
