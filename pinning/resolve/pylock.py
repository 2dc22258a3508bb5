"""Wheels chosen from uv's PEP 751 ``pylock.toml``: per package, the one wheel the target
Python installs, by the tag order pip and uv rank wheels with (:mod:`packaging.tags`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError
from pinning.lockfile.wheels import Wheel
from pinning.util.text import printable, redact

if TYPE_CHECKING:
    from packaging.tags import Tag

__all__ = ["choose_wheels", "target_tags"]


def _platforms(platform: str) -> list[str]:
    """The platform tags a ``ARCH-manylinux_2_N`` target installs, most specific first:
    ``manylinux_2_N_ARCH`` down to the oldest glibc of the architecture (2.5 for x86_64,
    2.17 for aarch64), each legacy alias after its glibc (``manylinux2014`` = 2.17,
    ``manylinux2010`` = 2.12, ``manylinux1`` = 2.5, PEP 600), the order of
    ``packaging._manylinux.platform_tags`` (packaging 26.4, ``src/packaging/_manylinux.py``;
    date not recorded); then ``linux_ARCH``, which packaging ranks first on a live host but
    pin last: such a wheel was built for one machine, not for a glibc range.
    """
    arch, _, rest = platform.partition("-")
    glibc = 17 if rest == "manylinux2014" else int(rest.rsplit("_", 1)[1])
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    out = []
    for minor in range(glibc, (5 if arch == "x86_64" else 17) - 1, -1):
        out.append(f"manylinux_2_{minor}_{arch}")
        if minor in legacy:
            out.append(f"{legacy[minor]}_{arch}")
    return [*out, f"linux_{arch}"]


def target_tags(python_version: str, python_platform: str) -> list[Tag]:
    """Every wheel tag the target installs, most preferred first (the order pip and uv rank
    wheels by): CPython ``cpXY`` tags, then the interpreter-independent ones
    (:func:`packaging.tags.cpython_tags` then :func:`packaging.tags.compatible_tags`).
    ``python_version`` is ``3.12``, ``python_platform`` a :data:`PYTHON_PLATFORM_PATTERN`.
    """
    from packaging import tags

    major, minor = (int(p) for p in python_version.split("."))
    interp = f"cp{major}{minor}"
    plats = _platforms(python_platform)
    return [*tags.cpython_tags((major, minor), abis=[interp], platforms=plats),
            *tags.compatible_tags((major, minor), interpreter=interp, platforms=plats)]


def _bad(where: str, detail: str) -> UsageError:
    """The error for a pylock.toml entry of uv's that pin cannot read."""
    return UsageError(f"uv printed a pylock.toml pin cannot read: {where} {detail}.",
                      hint="Run again; if it persists, report the uv version "
                           "(`uv --version`) with the command.")


def _kind(value: object) -> str:
    """The TOML name of ``value``'s type, with its article (``a string``, ``an integer``)."""
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
             list: "an array", dict: "a table"}
    return names.get(type(value), f"a {type(value).__name__}")


def _array(value: object, where: str) -> list[Any]:
    """``value`` when it is a TOML array (absent: empty); :class:`UsageError` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(where, f"is {_kind(value)}, not an array")
    return value


def _table(value: object, where: str) -> Mapping[str, Any]:
    """``value`` when it is a TOML table; :class:`UsageError` otherwise."""
    if not isinstance(value, Mapping):
        raise _bad(where, f"is {_kind(value)}, not a table")
    return value


def _filename(wheel: Mapping[str, Any], where: str) -> str:
    """The file name of a wheel entry: its ``name``, else the last segment of its ``url``
    (percent-decoded). Raises :class:`UsageError` for a ``url`` that is not a string or
    not a URL (``https://[::1``).
    """
    name = wheel.get("name")
    if isinstance(name, str) and name:
        return name
    url = wheel.get("url", "")
    if not isinstance(url, str):
        raise _bad(f"{where}.url", f"is {_kind(url)}, not a string")
    try:
        path = urllib.parse.urlsplit(url).path
    except ValueError as exc:
        raise _bad(f"{where}.url", f"'{printable(redact(url, mask='***')[:200], newlines=False)}'"
                   f" is not a URL ({exc})") from None
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


def _sha256(wheel: Mapping[str, Any], where: str) -> str:
    """The ``hashes.sha256`` of a wheel entry ("" when absent: the lock model refuses it)."""
    hashes = _table(wheel.get("hashes", {}), f"{where}.hashes")
    value = hashes.get("sha256", "")
    if not isinstance(value, str):
        raise _bad(f"{where}.hashes.sha256", f"is {_kind(value)}, not a string")
    return value


def _best(pkg: Mapping[str, Any], i: int, rank: Mapping[Tag, int]
          ) -> tuple[tuple[Mapping[str, Any], str, str] | None, list[str]]:
    """Of ``packages[i]``'s wheels, the one whose best tag ranks first in ``rank`` as
    ``(wheel, file name, where)`` (``None``: no wheel for the target), and every wheel's
    file name.
    """
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    best: tuple[int, Mapping[str, Any], str, str] | None = None
    names: list[str] = []
    for j, entry in enumerate(_array(pkg.get("wheels"), f"packages[{i}].wheels")):
        where = f"packages[{i}].wheels[{j}]"
        wheel = _table(entry, where)
        filename = _filename(wheel, where)
        names.append(filename)
        try:
            score = min((rank[t] for t in parse_wheel_filename(filename)[3] if t in rank),
                        default=None)
        except InvalidWheelFilename:
            score = None
        if score is not None and (best is None or score < best[0]):
            best = (score, wheel, filename, where)
    return (best[1:] if best else None), names


def _locked(pkg: Mapping[str, Any], label: str, wheel: Mapping[str, Any], filename: str,
            where: str) -> Wheel:
    """The lock's :class:`~pinning.lockfile.models.Wheel` for the chosen ``wheel`` of
    ``pkg``; :class:`UsageError` when the lock model refuses it.
    """
    from pydantic import ValidationError

    sha256 = _sha256(wheel, where)
    try:
        return Wheel(name=pkg["name"], version=pkg["version"], filename=filename, sha256=sha256,
                     url=redact(str(wheel.get("url"))), size=wheel.get("size"))
    except (ValidationError, KeyError, ValueError) as exc:
        raise UsageError(f"{label}: uv's pylock entry for {printable(filename)} ({where}) "
                         f"cannot be locked ({printable(str(exc), newlines=False)[:300]}).",
                         hint="pin records https wheel URLs (http only from a loopback host) "
                              "with a sha256.") from None


def choose_wheels(pylock: str, tags: Sequence[Tag]) -> tuple[Wheel, ...]:
    """One :class:`~pinning.lockfile.models.Wheel` per package of uv's ``pylock`` text: the
    wheel whose best tag comes first in ``tags`` (:func:`target_tags`), with its URL
    (credentials removed), sha256 and size; sorted by name. Raises :class:`UsageError`
    (exit 2) naming every package that has no wheel (an sdist only, a VCS or folder source)
    or no wheel for the target; for text that is not a pylock file, or whose ``packages``,
    ``wheels`` or ``hashes`` are not of their PEP 751 shapes (arrays of tables, a table),
    naming the field (``packages[3].wheels[0].hashes``); and for a chosen wheel the lock
    model refuses (no sha256, a URL that is not https or not a URL).
    """
    import tomllib

    try:
        doc = tomllib.loads(pylock)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"uv printed a pylock.toml pin cannot read ({exc}).") from None
    rank = {t: i for i, t in enumerate(tags)}
    out: list[Wheel] = []
    no_wheel: list[str] = []
    off_target: list[str] = []
    for i, entry in enumerate(_array(doc.get("packages"), "packages")):
        pkg = _table(entry, f"packages[{i}]")
        label = printable(f"{pkg.get('name')}=={pkg.get('version')}", newlines=False)
        best, names = _best(pkg, i, rank)
        if not names:
            kind = next((k for k in ("sdist", "vcs", "directory", "archive") if k in pkg),
                        "no file")
            no_wheel.append(f"{label} ({kind})")
        elif best is None:
            off_target.append(f"{label} ({printable(', '.join(names), newlines=False)})")
        else:
            out.append(_locked(pkg, label, *best))
    if no_wheel:
        raise UsageError(f"No wheel for {', '.join(no_wheel)}: pin builds images with the "
                         "network off from wheels only.",
                         hint="Pin a version of each that publishes a wheel (--requirement).")
    if off_target:
        raise UsageError(f"No wheel for the target among {'; '.join(off_target)}.",
                         hint="Check --python-version and --python-platform.")
    return tuple(sorted(out, key=lambda w: w.name))
