"""Requirements files (pip's format) read into declared packages, and CUDA wheel indexes found.

pip's format (https://pip.pypa.io/en/stable/reference/requirements-file-format/): one
requirement per line (PEP 508, or a URL / path), ``\\`` joins a line with the next, ``#`` after
whitespace starts a comment, options ``-r``/``--requirement`` and ``-c``/``--constraint``
include other files (relative to the including file), ``-i``/``--index-url``,
``--extra-index-url`` and ``-f``/``--find-links`` apply to the whole run (the file and every
file it includes), ``--hash`` belongs to its requirement, ``-e``/``--editable`` names a path or
URL. Nothing is fetched: a remote include is skipped with its reason, and an include that
lies outside the audited folders (:attr:`~pinning.audit.model.Context.roots`) is not read.
One requirement is read by :mod:`pinning.audit.sources.pep508` (nothing of a bad line is
quoted, only :func:`~pinning.audit.sources.pep508.shown` text); a CUDA index is a finding of
:func:`pinning.audit.indexes.index_findings`.

Our own reader, not pip-requirements-parser: that library is a 3,000-line copy of pip's
parser (plus pyparsing) whose errors quote the offending line (a credential may sit there)
and which has no include walk bounded to the audited folders with loop entries, so the same
lines would stay here around it.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.indexes import index_findings, without_userinfo
from pinning.audit.model import Context, DeclaredPackage, FileScan, Skip, Skipped
from pinning.audit.sources.pep508 import (
    looks_like_url_or_path,
    parse_requirement,
    shown,
    url_requirement,
)

__all__ = ["ParsedLines", "logical_lines", "parse_lines", "scan_requirements"]

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
_OPTION_NAME = re.compile(r"--?[a-z][a-z0-9-]{0,39}")


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
                                       reason=_unknown_option(name)))
            return
        if value is None:
            if i >= len(tokens):
                out.skipped.append(Skipped(path=f"{display}:{line}",
                                           reason=f"option {name} without its value"))
                return
            value, i = tokens[i], i + 1
        _option(name, value, line, display, origin, out)


def _unknown_option(name: str) -> str:
    """The reason for an option pip does not know: its name when it looks like one
    (``--no-deps``), else nothing of the text (it may be a credential).
    """
    if _OPTION_NAME.fullmatch(name):
        return f"unknown option {name}"
    return "unknown option (not shown)"


def _option(name: str, value: str, line: int, display: str, origin: str,
            out: ParsedLines) -> None:
    if name in _INDEX_OPTIONS:
        out.indexes.append((without_userinfo(value), line))
    elif name in _INCLUDES:
        out.includes.append((value, line, _INCLUDES[name]))
    elif name in ("-e", "--editable"):
        got = url_requirement(value, origin, display, line)
        if isinstance(got, str):
            out.skipped.append(Skipped(path=f"{display}:{line}",
                                       reason=f"editable requirement '{shown(value)}': {got}"))
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
    if looks_like_url_or_path(requirement) and " @ " not in requirement:
        got = url_requirement(requirement, origin, display, line)
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
    ctx: Context
    packages: list[DeclaredPackage] = field(default_factory=list)
    indexes: list[tuple[str, str, int]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    done: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Edge:
    """One include line: where it is (``file:line``) and what it names."""

    where: str
    target: str

    def loop(self) -> Skipped:
        """The entry for an include on a loop: the same text whichever file the walk began
        at, so the report lists it once.
        """
        return Skipped(path=self.where, reason=f"include '{shown(self.target)}' is part of "
                       "an include loop; each file is read once")


def _child_display(path: Path, display: str, child: Path) -> str:
    """How ``child`` (an include of ``path``, shown as ``display``) is shown: relative to
    ``display``'s folder, as the walker of the tree shows it, so a file met directly and
    through an include gives identical entries. An absolute target inside the tree is shown
    relative too.
    """
    here = os.path.realpath(path.parent)
    there = os.path.join(os.path.realpath(child.parent), child.name)
    rel = os.path.relpath(there, here).replace(os.sep, "/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(display), rel))


def _follow(path: Path, display: str, active: list[tuple[str, _Edge | None]],
            walk: _Walk) -> None:
    """Read ``path`` (raises :class:`Skip` when unreadable) and every file it includes;
    ``active`` is the chain of files being read (real path, the include that led there). A
    file already read through another include is not read again; an include back into the
    chain marks every include of that loop (:meth:`_Edge.loop`).
    """
    parsed = parse_lines(logical_lines(read_text(path)), display)
    walk.done.add(active[-1][0])
    walk.packages += parsed.packages
    walk.indexes += [(url, display, line) for url, line in parsed.indexes]
    walk.skipped += parsed.skipped
    for target, line, _constraint in parsed.includes:
        edge = _Edge(where=f"{display}:{line}", target=target)
        if "://" in target:
            walk.skipped.append(Skipped(path=edge.where, reason=f"include '{shown(target)}' "
                                        "is remote; pin does not fetch it"))
            continue
        child = path.parent / target
        if not walk.ctx.inside(child):
            walk.skipped.append(Skipped(path=edge.where, reason="include outside the audited "
                                        "folders; not read"))
            continue
        real = os.path.realpath(child)
        chain = [file for file, _via in active]
        if real in chain:
            walk.skipped += [via.loop() for _file, via in active[chain.index(real) + 1:]
                             if via is not None]
            walk.skipped.append(edge.loop())
        elif real in walk.done:
            continue
        elif len(active) > MAX_INCLUDE_DEPTH:
            walk.skipped.append(Skipped(path=edge.where, reason=f"include '{shown(target)}' "
                                        f"is deeper than {MAX_INCLUDE_DEPTH} levels"))
        else:
            try:
                _follow(child, _child_display(path, display, child), [*active, (real, edge)],
                        walk)
            except Skip as exc:
                walk.skipped.append(Skipped(path=edge.where,
                                            reason=f"include '{shown(target)}': {exc.reason}"))


def scan_requirements(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan the requirements file ``path`` (shown as ``display``) and the files it includes
    that lie inside the audited folders (``ctx.inside``).

    Returns a :class:`FileScan` whose ``packages`` carry the display path and line of the
    file that declares them and, in ``index_urls``, every index URL of the run (pip's
    index options are global); ``findings`` are :func:`index_findings` for those URLs;
    ``skipped`` names each line or include that could not be read (``file:line``; an
    included file is shown relative to ``display``'s folder, so the entries for a file met
    both directly and through an include are identical, and each include of a loop is one
    entry whichever file the loop was entered from). Raises :class:`Skip` when ``path``
    itself cannot be read (binary, too large, absent).
    """
    walk = _Walk(ctx=ctx)
    _follow(path, display, [(os.path.realpath(path), None)], walk)
    urls = tuple(dict.fromkeys(url for url, _display, _line in walk.indexes))
    packages = [replace(p, index_urls=urls) for p in walk.packages]
    return FileScan(findings=index_findings(walk.indexes), packages=packages,
                    skipped=list(dict.fromkeys(walk.skipped)))
