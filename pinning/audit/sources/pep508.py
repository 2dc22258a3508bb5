"""One requirement as text: a PEP 508 string or a URL / path read into a
:class:`~pinning.audit.model.DeclaredPackage`, and :func:`shown`, the one way a reader quotes a
file's text in a report. Shared by every dependency-file reader of :mod:`pinning.audit.sources`.

Nothing of a text that is not a requirement is copied into a reason (a dependency file may
hold a credential by mistake): the reason names the problem, not the text; text that is shown
(an option name, an include target, a URL) goes through :func:`shown`, which cuts it short,
escapes control characters and drops a URL's ``user:password@``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier
from packaging.utils import (
    InvalidName,
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from pinning.audit.indexes import without_userinfo
from pinning.audit.model import DeclaredPackage
from pinning.util.text import printable

__all__ = ["SHOWN_CHARS", "looks_like_url_or_path", "parse_requirement", "shown", "url_requirement",
           "valid_name"]

SHOWN_CHARS = 80
"""At most this many characters of a file's text are quoted in a skipped reason."""

_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` made safe to quote in a report: a URL's ``user:password@`` dropped, cut to
    ``limit`` characters (``...`` appended when cut) and control characters escaped
    (:func:`pinning.util.text.printable`, one line).
    """
    short = without_userinfo(text[: limit * 8])
    cut = short[:limit] + ("..." if len(short) > limit else "")
    return printable(cut, newlines=False)


def valid_name(name: str) -> bool:
    """Whether ``name`` is a valid distribution name (PEP 508: ASCII letters and digits,
    with ``.``, ``_``, ``-`` inside), as :mod:`packaging` checks it.
    """
    try:
        canonicalize_name(name, validate=True)
    except InvalidName:
        return False
    return True


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
    marker kept in ``raw``), or a one-line reason why it is not one: ``not a requirement
    (<what packaging expected>)``, never the text itself (it may be a credential).
    """
    raw = text.strip()
    try:
        req = Requirement(raw)
    except InvalidRequirement as exc:
        return f"not a requirement ({_problem(exc)})"
    version, local = _pinned(req)
    return DeclaredPackage(
        name=canonicalize_name(req.name), raw=raw, origin=origin, version=version,
        specifier="" if version is not None else str(req.specifier), local=local,
        extras=tuple(sorted(req.extras)), path=path, line=line)


def _problem(exc: InvalidRequirement) -> str:
    """What packaging found wrong, without the text it was given: the message of its parser
    (``Expected end or semicolon ...``), or a fixed phrase for a bad version specifier (whose
    message quotes the text).
    """
    if isinstance(exc.__cause__, InvalidSpecifier):
        return "invalid version specifier"
    message = getattr(exc, "message", None)
    first = message if isinstance(message, str) else str(exc).split("\n", 1)[0]
    return shown(first)


def url_requirement(target: str, origin: str, path: str, line: int) -> DeclaredPackage | str:
    """A requirement given as a URL or path (``target``, declared at ``path``:``line``): its
    name from ``#egg=NAME``, or name and version from a wheel file name; else the one-line
    reason it has no name statically. Never raises.
    """
    egg = _EGG.search(target)
    if egg is not None and not valid_name(egg.group(1)):
        return "#egg= names no valid distribution name"
    if egg is not None:
        return DeclaredPackage(name=canonicalize_name(egg.group(1)), raw=target,
                               origin=origin, path=path, line=line)
    base = unquote(urlsplit(target).path).rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        try:
            name, version, _build, _tags = parse_wheel_filename(base)
        except (InvalidWheelFilename, InvalidVersion):
            return f"wheel file name '{shown(base)}' is not valid"
        return DeclaredPackage(name=name, raw=target, origin=origin, version=str(version),
                               local=version.local, path=path, line=line)
    return ("a URL or path requirement without #egg=NAME: its name is only known by "
            "building it, which pin does not do")


def looks_like_url_or_path(text: str) -> bool:
    """Whether a requirement ``text`` names a URL, a wheel / archive file or a path rather
    than a PEP 508 name.
    """
    head = text.split(";", 1)[0].strip()
    return ("://" in head.split("@", 1)[0] or head.startswith((".", "/", "~"))
            or head.endswith((".whl", ".zip", ".tar.gz")))
