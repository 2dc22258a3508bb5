"""The lock's Python packaging sections: ``[[wheels]]`` (each wheel by file name, sha256 and
where it was found) and ``[python]`` (the interpreter, platform and indexes they were resolved
for).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from pinning.util.models import DistName, OneLine, Strict, Token
from pinning.util.net import is_loopback_host


def _wheel_url(value: str) -> str:
    """``value`` unchanged when it is where a wheel can be fetched from: an ``https://`` URL,
    or ``http://`` to a loopback host (``127.0.0.0/8``, ``::1``, ``localhost``: a test or a
    local mirror), with a host, no user name or password (a lock is committed and shared), no
    whitespace or control character, at most 4096 characters.
    """
    import urllib.parse

    if len(value) > 4096 or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ValueError("a wheel URL has at most 4096 characters, no whitespace or control "
                         "character")
    try:
        parts = urllib.parse.urlsplit(value)
        host = parts.hostname or ""
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a URL ({exc})") from None
    if not host or "@" in parts.netloc:
        raise ValueError(f"{value!r} needs a host and no user name or password")
    if parts.scheme == "https":
        return value
    if parts.scheme == "http" and is_loopback_host(host):
        return value
    raise ValueError(f"{value!r}: a wheel is fetched over https (plain http only from a "
                     "loopback host)")


WheelUrl = Annotated[str, AfterValidator(_wheel_url)]


class Wheel(Strict):
    """One wheel the image installs, by file name and sha256 (``pip --require-hashes``).

    ``name`` is a PEP 508 name, ``version`` one word (it is written into the image's
    requirements file), ``filename`` a plain ``*.whl`` file name (no folder). ``url`` is
    where ``pin lock packages`` found it (https, or http from a loopback host; ``pin build``
    fetches it from there when no wheel house holds it) and ``size`` its length in bytes
    when the index said; both are absent for a wheel taken from a wheel house.
    """

    name: DistName
    version: Token
    filename: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    url: WheelUrl | None = None
    size: int | None = Field(default=None, ge=0)


PYTHON_PLATFORM_PATTERN = r"^(x86_64|aarch64)-manylinux(2014|_2_[0-9]{1,2})$"
"""A Linux target as uv's ``--python-platform`` names it: ``x86_64-manylinux_2_28``,
``aarch64-manylinux2014``."""


class PythonTarget(Strict):
    """The Python environment ``pin lock packages`` resolved ``[packages]`` and ``[[wheels]]``
    for: the interpreter's ``version`` (``3.12``), the ``platform`` (a uv manylinux target,
    :data:`PYTHON_PLATFORM_PATTERN`), the simple-API ``indexes`` read (the first is the default
    index, the others searched first; no user name or password) and the ``requirements``
    given besides the frameworks and ``[packages]`` (PEP 508, one line each). A later
    ``pin lock packages`` reuses each of them unless a flag replaces it.
    """

    version: str = Field(pattern=r"^3\.[0-9]{1,2}$")
    platform: str = Field(pattern=PYTHON_PLATFORM_PATTERN)
    indexes: list[OneLine] = Field(min_length=1)
    requirements: list[OneLine] = Field(default_factory=list)
