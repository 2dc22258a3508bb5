"""Requirements files (pip's format) read into declared packages, and CUDA wheel indexes found.

pip's format (https://pip.pypa.io/en/stable/reference/requirements-file-format/): one
requirement per line (PEP 508, or a URL / path), ``\\`` joins a line with the next, ``#`` after
whitespace starts a comment, options ``-r``/``--requirement`` and ``-c``/``--constraint``
include other files (relative to the including file), ``-i``/``--index-url``,
``--extra-index-url`` and ``-f``/``--find-links`` apply to the whole run (the file and every
file it includes), ``--hash`` belongs to its requirement, ``-e``/``--editable`` names a path or
URL. Nothing is fetched: a remote include is skipped with its reason.

An index URL that serves CUDA wheels (``https://download.pytorch.org/whl/cu121``,
``https://pypi.nvidia.com``) is a finding of kind ``index`` (rule :data:`RULE_INDEX`,
verdict ``swap``): PyTorch publishes ROCm wheels on ``https://download.pytorch.org/whl/rocmX.Y``
beside its CUDA indexes (:data:`PYTORCH_INDEXES`).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from pinning.audit.files import read_text
from pinning.audit.model import (
    Citation,
    Context,
    DeclaredPackage,
    FileScan,
    Finding,
    Kind,
    Skip,
    Skipped,
    Verdict,
)
from pinning.audit.packages import index_kind

__all__ = [
    "PYTORCH_INDEXES",
    "ROCM_INDEX",
    "RULE_INDEX",
    "ParsedLines",
    "index_findings",
    "logical_lines",
    "parse_lines",
    "parse_requirement",
    "scan_requirements",
]

RULE_INDEX = "index.cuda-wheel-index"
"""Rule id of a CUDA wheel index named by a requirements file, pyproject or conda pip list."""

PYTORCH_INDEXES = Citation(
    source=("pytorch/pytorch.github.io@e3f009bbc0d7509ed5c85b633313ec72aa2d1a40:"
            "_get_started/previous-versions.md"),
    published_unknown=("PyTorch's install-command page (pytorch.org/get-started/"
                       "previous-versions) carries no date; cited at its commit"),
)
"""PyTorch's install commands per release: for torch 2.3.1 the CUDA wheels come from
``--index-url https://download.pytorch.org/whl/cu121`` (and ``cu118``) and the ROCm wheels
from ``--index-url https://download.pytorch.org/whl/rocm6.0``; conda installs name
``pytorch-cuda=12.1 -c pytorch -c nvidia`` (``cudatoolkit=11.3`` up to 1.12) and list no
ROCm build."""

ROCM_INDEX = "https://download.pytorch.org/whl/rocmX.Y"
"""The replacement named in a finding: PyTorch's ROCm index of the ROCm release you target."""

MAX_INCLUDE_DEPTH = 10
"""How deep ``-r``/``-c`` includes are followed (the top file is depth 0)."""

_WITH_VALUE = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-e", "--editable", "--trusted-host", "--only-binary",
    "--no-binary", "--use-feature", "--hash", "--global-option", "--config-settings",
    "--install-option", "--progress-bar",
})
_FLAGS = frozenset({"--no-index", "--pre", "--prefer-binary", "--require-hashes"})
_INDEX_OPTIONS = {"-i": "--index-url", "--index-url": "--index-url",
                  "--extra-index-url": "--extra-index-url", "-f": "--find-links",
                  "--find-links": "--find-links"}
_INCLUDES = {"-r": False, "--requirement": False, "-c": True, "--constraint": True}
_SHORT = ("-r", "-c", "-i", "-f", "-e")

_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
_NVIDIA_HOSTS = frozenset({"pypi.nvidia.com", "pypi.ngc.nvidia.com"})


def index_findings(indexes: Iterable[tuple[str, str, int | None]]) -> list[Finding]:
    """One ``index`` finding (rule :data:`RULE_INDEX`, verdict ``swap``) per CUDA wheel
    index among ``indexes`` — ``(url, display path, 1-based line or None)`` — per file; a URL
    named on several lines of one file gives one finding whose ``lines`` lists them all.
    URLs that are not CUDA indexes give nothing. Source: :data:`PYTORCH_INDEXES`.
    """
    seen: dict[tuple[str, str], list[int]] = {}
    for url, display, line in indexes:
        if index_kind(url) != "cuda":
            continue
        lines = seen.setdefault((display, url.rstrip("/")), [])
        if line is not None and line not in lines:
            lines.append(line)
    return [_index_finding(url, display, lines) for (display, url), lines in seen.items()]


def _index_finding(url: str, display: str, lines: list[int]) -> Finding:
    host = (urlsplit(url).hostname or "").lower()
    if host in _NVIDIA_HOSTS:
        why = (f"{url} is NVIDIA's package index: what it serves is built for CUDA and does "
               "not run on ROCm.")
        todo = ("Drop this index for the ROCm build and look up each package it served in the "
                "bill; take torch from PyTorch's ROCm index "
                f"({ROCM_INDEX}) for the ROCm release you target.")
    else:
        why = (f"{url} is a CUDA wheel index: its torch wheels carry CUDA device code and "
               "do not run on ROCm.")
        todo = (f"Point this at PyTorch's ROCm index for the ROCm release you target "
                f"({ROCM_INDEX}; for torch 2.3.1 PyTorch lists rocm6.0) and drop `+cuXXX` "
                "locals from pins.")
    return Finding(kind=Kind.INDEX, rule=RULE_INDEX, verdict=Verdict.SWAP, subject=url,
                   path=display, line=lines[0] if lines else None,
                   lines=lines if len(lines) > 1 else [], why=why, todo=todo,
                   replacement=ROCM_INDEX, citation=PYTORCH_INDEXES)


# -- one requirement --------------------------------------------------------------------------


def _pinned(req: Requirement) -> tuple[str | None, str | None]:
    """``(version, local)`` when ``req`` pins one exact version (``==`` / ``===``, no
    wildcard), else ``(None, None)``.
    """
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        return None, None
    version = specs[0].version
    try:
        return version, Version(version).local
    except InvalidVersion:
        return version, version.partition("+")[2] or None


def parse_requirement(text: str, origin: str, *, path: str | None = None,
                      line: int | None = None) -> DeclaredPackage | str:
    """The PEP 508 requirement ``text`` as a :class:`DeclaredPackage` (name normalised,
    exact version and local label when pinned with one ``==``/``===``, extras sorted,
    marker kept in ``raw``), or a one-line reason why it is not one.
    """
    raw = text.strip()
    try:
        req = Requirement(raw)
    except InvalidRequirement as exc:
        return f"not a PEP 508 requirement: {str(exc).splitlines()[0][:200]}"
    version, local = _pinned(req)
    return DeclaredPackage(
        name=canonicalize_name(req.name), raw=raw, origin=origin, version=version,
        specifier="" if version is not None else str(req.specifier), local=local,
        extras=tuple(sorted(req.extras)), path=path, line=line)


def _url_requirement(target: str, origin: str, path: str, line: int) -> DeclaredPackage | str:
    """A requirement given as a URL or path: its name from ``#egg=NAME``, or name and
    version from a wheel file name; else the reason it has no name statically.
    """
    egg = _EGG.search(target)
    if egg is not None:
        return DeclaredPackage(name=canonicalize_name(egg.group(1)), raw=target,
                               origin=origin, path=path, line=line)
    base = unquote(urlsplit(target).path).rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        try:
            name, version, _build, _tags = parse_wheel_filename(base)
        except (InvalidWheelFilename, InvalidVersion):
            return f"wheel file name {base!r} is not valid"
        return DeclaredPackage(name=name, raw=target, origin=origin, version=str(version),
                               local=version.local, path=path, line=line)
    return ("a URL or path requirement without #egg=NAME: its name is only known by "
            "building it, which pin does not do")


def _looks_like_url_or_path(text: str) -> bool:
    head = text.split(";", 1)[0].strip()
    return ("://" in head.split("@", 1)[0] or head.startswith((".", "/", "~"))
            or head.endswith((".whl", ".zip", ".tar.gz")))


# -- lines ------------------------------------------------------------------------------------


def _strip_comment(line: str) -> str:
    """``line`` without a ``#`` comment: ``#`` at the start or after whitespace (pip's rule;
    ``#egg=`` inside a URL stays).
    """
    at = line.find("#")
    while at != -1:
        if at == 0 or line[at - 1].isspace():
            return line[:at]
        at = line.find("#", at + 1)
    return line


def logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first physical line, text)`` for each logical line of a requirements file:
    ``\\`` at a line end joins the next line, comments and blank lines are dropped.
    """
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, physical in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if physical.endswith("\\"):
            pending.append(physical[:-1])
            continue
        pending.append(physical)
        joined = _strip_comment(" ".join(pending)).strip()
        pending = []
        if joined:
            out.append((start, joined))
    if pending:
        joined = _strip_comment(" ".join(pending)).strip()
        if joined:
            out.append((start, joined))
    return out


@dataclass
class ParsedLines:
    """What the lines of one file declare: ``packages`` (without index URLs yet),
    ``indexes`` as ``(url, line)``, ``includes`` as ``(target, line, is_constraint)`` and
    per-line ``skipped`` entries (path ``file:line``).
    """

    packages: list[DeclaredPackage] = field(default_factory=list)
    indexes: list[tuple[str, int]] = field(default_factory=list)
    includes: list[tuple[str, int, bool]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _split_option(token: str) -> tuple[str, str | None]:
    """``--opt=value`` -> (``--opt``, value); ``-rfile`` -> (``-r``, ``file``)."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        return name, value if eq else None
    if len(token) > 2 and token[:2] in _SHORT:
        return token[:2], token[2:]
    return token, None


def _options(tokens: list[str], line: int, display: str, origin: str,
             out: ParsedLines) -> None:
    """Read option ``tokens`` of one line into ``out``; an unknown option or one without its
    value is a skipped entry.
    """
    i = 0
    while i < len(tokens):
        name, value = _split_option(tokens[i])
        i += 1
        if name in _FLAGS:
            continue
        if name not in _WITH_VALUE:
            out.skipped.append(Skipped(path=f"{display}:{line}",
                                       reason=f"unknown option {name[:80]!r}"))
            return
        if value is None:
            if i >= len(tokens):
                out.skipped.append(Skipped(path=f"{display}:{line}",
                                           reason=f"option {name} without its value"))
                return
            value, i = tokens[i], i + 1
        _option(name, value, line, display, origin, out)


def _option(name: str, value: str, line: int, display: str, origin: str,
            out: ParsedLines) -> None:
    if name in _INDEX_OPTIONS:
        out.indexes.append((value, line))
    elif name in _INCLUDES:
        out.includes.append((value, line, _INCLUDES[name]))
    elif name in ("-e", "--editable"):
        got = _url_requirement(value, origin, display, line)
        if isinstance(got, str):
            out.skipped.append(Skipped(path=f"{display}:{line}",
                                       reason=f"editable requirement {value[:200]!r}: {got}"))
        else:
            out.packages.append(got)


def _requirement_line(text: str, line: int, display: str, origin: str,
                      out: ParsedLines) -> None:
    """A requirement with its per-requirement options (``--hash``...), pip's split: the
    requirement ends before the first space-separated token that starts with ``-``.
    """
    words = text.split(" ")
    cut = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
    requirement = " ".join(words[:cut]).strip()
    if cut < len(words):
        try:
            tokens = shlex.split(" ".join(words[cut:]))
        except ValueError as exc:
            out.skipped.append(Skipped(path=f"{display}:{line}", reason=f"options: {exc}"))
            tokens = []
        _options(tokens, line, display, origin, out)
    if _looks_like_url_or_path(requirement) and " @ " not in requirement:
        got = _url_requirement(requirement, origin, display, line)
    else:
        got = parse_requirement(requirement, origin, path=display, line=line)
    if isinstance(got, str):
        out.skipped.append(Skipped(path=f"{display}:{line}", reason=got))
    else:
        out.packages.append(got)


def parse_lines(lines: Iterable[tuple[int, str]], display: str,
                origin: str = "requirements") -> ParsedLines:
    """Parse logical lines (:func:`logical_lines`) of a requirements list shown as
    ``display``: requirements, options and includes (not followed here). Never raises.
    """
    out = ParsedLines()
    for line, text in lines:
        if text.startswith("-"):
            try:
                tokens = shlex.split(text)
            except ValueError as exc:
                out.skipped.append(Skipped(path=f"{display}:{line}", reason=f"options: {exc}"))
                continue
            _options(tokens, line, display, origin, out)
        else:
            _requirement_line(text, line, display, origin, out)
    return out


# -- files and includes -----------------------------------------------------------------------


@dataclass
class _Walk:
    packages: list[DeclaredPackage] = field(default_factory=list)
    indexes: list[tuple[str, str, int]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    done: set[str] = field(default_factory=set)


def _follow(path: Path, display: str, depth: int, active: tuple[str, ...],
            walk: _Walk) -> None:
    """Read ``path`` (raises :class:`Skip` when unreadable) and every file it includes;
    a file already read through another include is not read again.
    """
    parsed = parse_lines(logical_lines(read_text(path)), display)
    walk.done.add(active[-1])
    walk.packages += parsed.packages
    walk.indexes += [(url, display, line) for url, line in parsed.indexes]
    walk.skipped += parsed.skipped
    for target, line, _constraint in parsed.includes:
        where = f"{display}:{line}"
        if "://" in target:
            walk.skipped.append(Skipped(path=where, reason=f"include {target[:200]} is "
                                        "remote; pin does not fetch it"))
            continue
        child = path.parent / target
        real = os.path.realpath(child)
        child_display = posixpath.normpath(posixpath.join(posixpath.dirname(display), target))
        if real in walk.done and real not in active:
            continue
        if real in active:
            walk.skipped.append(Skipped(path=where, reason=f"include {target[:200]} is "
                                        "already being read (an include loop)"))
        elif depth + 1 > MAX_INCLUDE_DEPTH:
            walk.skipped.append(Skipped(path=where, reason=f"include {target[:200]} is "
                                        f"deeper than {MAX_INCLUDE_DEPTH} levels"))
        else:
            try:
                _follow(child, child_display, depth + 1, (*active, real), walk)
            except Skip as exc:
                walk.skipped.append(Skipped(path=where,
                                            reason=f"include {target[:200]}: {exc.reason}"))


def scan_requirements(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan the requirements file ``path`` (shown as ``display``) and the files it includes.

    Returns a :class:`FileScan` whose ``packages`` carry the display path and line of the
    file that declares them and, in ``index_urls``, every index URL of the run (pip's
    index options are global); ``findings`` are :func:`index_findings` for those URLs;
    ``skipped`` names each line or include that could not be read (``file:line``). Raises
    :class:`Skip` when ``path`` itself cannot be read (binary, too large, absent).
    """
    del ctx
    walk = _Walk()
    _follow(path, display, 0, (os.path.realpath(path),), walk)
    urls = tuple(dict.fromkeys(url for url, _display, _line in walk.indexes))
    packages = [replace(p, index_urls=urls) for p in walk.packages]
    return FileScan(findings=index_findings(walk.indexes), packages=packages,
                    skipped=walk.skipped)
