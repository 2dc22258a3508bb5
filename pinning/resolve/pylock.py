"""Wheels chosen from uv's PEP 751 ``pylock.toml``: per package, the one wheel the target
Python installs, by the tag order pip and uv rank wheels with (:mod:`packaging.tags`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError
from pinning.lockfile.models import Wheel
from pinning.util.text import printable

if TYPE_CHECKING:
    from packaging.tags import Tag

__all__ = ["choose_wheels", "redact", "target_tags"]


def redact(url: str) -> str:
    """``url`` without a user name or password (they never reach a lock or a message)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


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


def _filename(wheel: Mapping[str, Any]) -> str:
    name = wheel.get("name")
    if isinstance(name, str) and name:
        return name
    path = urllib.parse.urlsplit(str(wheel.get("url", ""))).path
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


def choose_wheels(pylock: str, tags: Sequence[Tag]) -> tuple[Wheel, ...]:
    """One :class:`~pinning.lockfile.models.Wheel` per package of uv's ``pylock`` text: the
    wheel whose best tag comes first in ``tags`` (:func:`target_tags`), with its URL
    (credentials removed), sha256 and size; sorted by name. Raises :class:`UsageError`
    (exit 2) naming every package that has no wheel (an sdist only, a VCS or folder source)
    or no wheel for the target, and for text that is not a pylock file.
    """
    import tomllib

    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from pydantic import ValidationError

    try:
        packages = tomllib.loads(pylock).get("packages", [])
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"uv printed a pylock.toml pin cannot read ({exc}).") from None
    rank = {t: i for i, t in enumerate(tags)}
    out: list[Wheel] = []
    no_wheel: list[str] = []
    off_target: list[str] = []
    for pkg in packages:
        label = f"{pkg.get('name')}=={pkg.get('version')}"
        best: tuple[int, Mapping[str, Any], str] | None = None
        for wheel in pkg.get("wheels") or []:
            filename = _filename(wheel)
            try:
                score = min((rank[t] for t in parse_wheel_filename(filename)[3] if t in rank),
                            default=None)
            except InvalidWheelFilename:
                score = None
            if score is not None and (best is None or score < best[0]):
                best = (score, wheel, filename)
        if not pkg.get("wheels"):
            kind = next((k for k in ("sdist", "vcs", "directory", "archive") if k in pkg),
                        "no file")
            no_wheel.append(f"{label} ({kind})")
        elif best is None:
            off_target.append(f"{label} ({', '.join(_filename(w) for w in pkg['wheels'])})")
        else:
            try:
                out.append(Wheel(name=pkg["name"], version=pkg["version"], filename=best[2],
                                 sha256=best[1].get("hashes", {}).get("sha256", ""),
                                 url=redact(str(best[1].get("url"))),
                                 size=best[1].get("size")))
            except (ValidationError, KeyError, ValueError) as exc:
                raise UsageError(f"{label}: uv's pylock entry for {best[2]} cannot be "
                                 f"locked ({printable(str(exc), newlines=False)[:300]}).",
                                 hint="pin records https wheel URLs (http only from a "
                                      "loopback host) with a sha256.") from None
    if no_wheel:
        raise UsageError(f"No wheel for {', '.join(no_wheel)}: pin builds images with the "
                         "network off from wheels only.",
                         hint="Pin a version of each that publishes a wheel (--requirement).")
    if off_target:
        raise UsageError(f"No wheel for the target among {'; '.join(off_target)}.",
                         hint="Check --python-version and --python-platform.")
    return tuple(sorted(out, key=lambda w: w.name))
