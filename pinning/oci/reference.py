"""The one image-reference grammar pin reads and writes.

An image reference is ``HOST[:PORT]/REPOSITORY[:TAG][@sha256:<64 hex>]``: a registry host
(letters, digits, ``.``, ``_``, ``-`` or a bracketed IPv6 address, up to the first ``/``), a
repository of lower-case letters, digits, ``.``, ``_``, ``-`` and ``/``, an optional tag of
ASCII word characters, ``.`` and ``-``, and an optional manifest digest. The registry host
is always written; pin never implies ``docker.io``: a first part without ``.`` or ``:`` that
is not ``localhost`` (``rocm/pytorch``) is what Docker reads as a Docker Hub repository
(distribution/reference ``splitDockerDomain``, normalize.go, date not recorded), so pin
refuses it and asks for ``docker.io/rocm/pytorch``. Every command that takes or records an
image reference (``pin build --base``, ``pin rebuild``, ``pin sign``, ``pin verify-image``,
the lock's ``image.ref`` and ``image.base``) parses it here, and ``str()`` of a parsed
reference gives back exactly the text that was parsed.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from pinning.errors import BuildError, PinError, UsageError
from pinning.util.net import is_loopback_host

# The host is letters, digits, `.`, `_`, `-` (or a bracketed IPv6 address) and an optional
# port: nothing that could end a Dockerfile `FROM` line or a shell word. ASCII only.
_GRAMMAR = re.compile(
    r"(?P<registry>(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?)"
    r"/(?P<repository>[a-z0-9._/-]+?)(?::(?P<tag>[\w.-]+))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?", re.ASCII)


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference.

    ``registry`` is ``host`` or ``host:port`` as written; ``repository`` the path inside the
    registry (``pin/trial``); ``tag`` the tag or ``None``; ``digest`` the manifest digest
    (``sha256:<64 hex>``) or ``None``. Build one with :func:`parse` (validated); the
    constructor itself checks nothing, so values composed by pin (a registry's host and a
    ``--repo``) print exactly as given.
    """

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    def __str__(self) -> str:
        """``HOST/REPO[:TAG][@DIGEST]``: the text :func:`parse` read, unchanged."""
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text

    @property
    def name(self) -> str:
        """``HOST/REPO`` without tag or digest: the cosign ``docker-reference``."""
        return f"{self.registry}/{self.repository}"

    @property
    def required_digest(self) -> str:
        """The digest of a reference known to name one (from :func:`parse_pinned`); raises
        ``ValueError`` (a bug in the caller) when it names none.
        """
        if self.digest is None:
            raise ValueError(f"image reference {self} names no digest")
        return self.digest

    @property
    def manifest_reference(self) -> str:
        """What to ask the registry's manifest endpoint for: the digest, else the tag,
        else ``latest``.
        """
        return self.digest or self.tag or "latest"

    @property
    def registry_url(self) -> str:
        """The base URL of this reference's registry (see :func:`registry_url`)."""
        return registry_url(self.registry)

    def without_digest(self) -> ImageRef:
        """The same reference without its digest (``HOST/REPO[:TAG]``)."""
        return dataclasses.replace(self, digest=None)


def split_host(host: str) -> tuple[str, str | None]:
    """``(name, port)`` of ``HOST[:PORT]`` (``[v6]:PORT`` too; the brackets dropped); ``port``
    is ``None`` when absent. Text that is neither gives ``("", None)``.
    """
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return "", None
        return name, (rest[1:] if rest else None)
    if host.count(":") > 1:
        return "", None
    name, colon, port = host.partition(":")
    return name, (port if colon else None)


def is_loopback(host: str) -> bool:
    """True for a loopback registry host (``HOST[:PORT]``): ``localhost``, an address in
    ``127.0.0.0/8`` or ``[::1]``.
    """
    return is_loopback_host(split_host(host)[0])


def registry_url(host: str) -> str:
    """What :class:`~pinning.oci.registry.Registry` takes for an image host (``host`` or
    ``host:port``): ``https://HOST`` for a remote registry; the bare ``HOST[:PORT]`` for a
    loopback one (HTTPS tried first, then plain HTTP). No trailing slash.
    """
    return host if is_loopback(host) else f"https://{host}"


def _names_a_host(registry: str) -> bool:
    """Docker's test for a reference's first part being a registry host: it holds ``.`` or
    ``:``, is bracketed, is ``localhost``, or has an upper-case letter.
    """
    return (any(c in registry for c in ".:[") or registry == "localhost"
            or registry.lower() != registry)


def _no_host(text: str, error: type[PinError]) -> PinError:
    return error(f"Image reference {text!r} names no registry host: Docker reads it as a "
                 f"Docker Hub image, and pin never implies docker.io.",
                 hint=f"Write the registry: docker.io/{text} (or HOST[:PORT]/... for "
                      "another registry).")


def parse(text: str, *, error: type[PinError] = UsageError) -> ImageRef:
    """Parse ``HOST/REPO[:TAG][@sha256:DIGEST]`` (the whole text must match).

    Raises ``error`` (a :class:`~pinning.errors.PinError` subclass chosen by the caller:
    :class:`~pinning.errors.UsageError`, exit 2, for a command-line argument by default)
    naming the text and the accepted form.
    """
    m = _GRAMMAR.fullmatch(text)
    if m is None:
        raise error(f"Image reference {text!r} is not HOST/REPO[:TAG][@sha256:DIGEST].")
    if not _names_a_host(m["registry"]):
        raise _no_host(text, error)
    return ImageRef(registry=m["registry"], repository=m["repository"], tag=m["tag"],
                    digest=m["digest"])


def parse_pinned(text: str, *, error: type[PinError] = BuildError) -> ImageRef:
    """Parse a reference that must name a digest (``HOST/REPO[:TAG]@sha256:DIGEST``), such
    as a lock's recorded image or base. Raises ``error`` (default
    :class:`~pinning.errors.BuildError`, exit 8) when the text is malformed or has no digest.
    """
    m = _GRAMMAR.fullmatch(text)
    if m is None or m["digest"] is None:
        raise error(f"Image reference {text!r} is not HOST/REPO@sha256:<digest>.")
    if not _names_a_host(m["registry"]):
        raise _no_host(text, error)
    return ImageRef(registry=m["registry"], repository=m["repository"], tag=m["tag"],
                    digest=m["digest"])
