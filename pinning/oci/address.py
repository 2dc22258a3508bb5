"""Where a registry is and whom pin trusts there: the address grammar
(:func:`parse_address`), the registry's CA (:func:`resolve_ca`) and the TLS plumbing of its
HTTP sessions.

A malformed address is a :class:`~pinning.errors.UsageError` (exit 2); an unusable CA file a
:class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pinning.errors import BuildError, UsageError
from pinning.oci import auth
from pinning.oci.reference import is_loopback, split_host
from pinning.oci.text import clip_text

if TYPE_CHECKING:
    import requests.adapters

DEFAULT_CERTS_D = Path("/etc/docker/certs.d")
"""Docker's per-registry CA folder (https://docs.docker.com/engine/security/certificates/,
date not recorded)."""



@dataclass(frozen=True)
class RegistryAddress:
    """A parsed registry base: ``host`` as image references write it (``docker.io``,
    ``127.0.0.1:5000``), ``endpoint`` the ``HOST[:PORT]`` pin connects to
    (``registry-1.docker.io`` for Docker Hub), ``scheme`` ``https``, ``http`` or ``None``
    (a bare loopback host: HTTPS tried, then plain HTTP).
    """

    host: str
    endpoint: str
    scheme: str | None


def _redacted(text: str) -> str:
    """``text`` for a message: everything before the last ``@`` after the scheme (user-info,
    ``user:password@``, even when the password holds ``/``, ``?`` or ``#``) written as
    ``***@``, clipped to 200 characters. Never echoes a password given in an address.
    """
    if "@" in text:
        scheme, sep, _ = text.partition("://")
        text = (f"{scheme}://***@" if sep and "@" not in scheme else "***@") + \
            text.rpartition("@")[2]
    return clip_text(text, 200)


def parse_address(base: str) -> RegistryAddress:
    """Parse a registry base: ``https://HOST[:PORT]``, ``http://HOST[:PORT]`` (loopback hosts
    only: ``localhost``, ``127.0.0.0/8``, ``::1``) or a bare ``HOST[:PORT]``; a trailing
    ``/`` is allowed, a path is not. Raises :class:`~pinning.errors.UsageError` (exit 2, a
    bad flag value) naming the text, with any ``user:password@`` shown as ``***@``: for an
    empty value, user-info, a scheme other than https/http, a path, query or fragment, a
    character a host name cannot hold, a bad port, or ``http://`` to a host that is not
    loopback.
    """
    text = base.strip()
    shown = _redacted(text)
    form = "Name the registry as image references do, e.g. registry.example.com:5000 or " \
           "https://registry.example.com:5000."
    if not text:
        raise UsageError("The registry address is empty; it must be HOST[:PORT], "
                         "https://HOST[:PORT] or http://HOST[:PORT].", hint=form)
    if "@" in text:
        raise UsageError(f"Registry {shown!r}: the address holds a user name or password "
                         "(user-info before @); pin never takes credentials in an address.",
                         hint="Write HOST[:PORT] alone and sign in with `pin login HOST -u "
                              "USER --password-stdin` or `docker login HOST`; pin reads the "
                              "Docker config.")
    scheme: str | None = None
    rest = text
    if "://" in text:
        given, rest = text.split("://", 1)
        scheme = given.lower()
        if scheme not in ("http", "https"):
            raise UsageError(f"Registry {shown!r}: the scheme {clip_text(given, 40)!r} is not "
                             "https or http.",
                             hint="Write the registry as https://HOST[:PORT] or HOST[:PORT].")
    rest = rest.rstrip("/")
    name, port = split_host(rest)
    if not name or "/" in rest or "@" in rest or "?" in rest or "#" in rest or (
            port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5)):
        raise UsageError(f"Registry {shown!r} is not HOST[:PORT], https://HOST[:PORT] or "
                         "http://HOST[:PORT] (no path, user or query).", hint=form)
    if not all(c.isascii() and (c.isalnum() or c in ".-_:[]") for c in rest):
        raise UsageError(f"Registry {shown!r}: the host holds characters a host name cannot "
                         "(spaces, control or non-ASCII characters).", hint=form)
    if scheme == "http" and not is_loopback(rest):
        raise UsageError(
            f"Registry {shown!r}: pin talks plain HTTP only to a loopback registry "
            f"(localhost, 127.0.0.0/8, ::1); {rest} is not one, and credentials and images "
            "would cross the network unprotected.",
            hint=f"Serve the registry over TLS and write https://{rest} (with --ca-cert FILE "
                 "or PIN_REGISTRY_CA when your own CA signed its certificate).")
    if scheme is None and not is_loopback(rest):
        scheme = "https"
    endpoint = "registry-1.docker.io" if auth.is_docker_hub(rest) else rest
    return RegistryAddress(host=rest, endpoint=endpoint, scheme=scheme)


def resolve_ca(host: str, ca_cert: Path | None = None) -> tuple[Path, str] | None:
    """The CA file for registry ``host`` and where it came from: ``ca_cert``, else the
    ``PIN_REGISTRY_CA`` file, else ``<certs.d>/HOST/ca.crt`` when it exists (``<certs.d>``
    is ``PIN_DOCKER_CERTS_D`` or ``/etc/docker/certs.d``); ``None`` for the system's CAs.
    """
    if ca_cert is not None:
        return Path(ca_cert), "--ca-cert"
    env = os.environ.get("PIN_REGISTRY_CA")
    if env:
        return Path(env), "PIN_REGISTRY_CA"
    certs_d = Path(os.environ.get("PIN_DOCKER_CERTS_D") or DEFAULT_CERTS_D)
    candidate = certs_d / host / "ca.crt"
    if candidate.is_file():
        return candidate, f"Docker's {certs_d}/{host}/ca.crt"
    return None


def ssl_context(path: Path, source: str) -> ssl.SSLContext:
    """The system's CAs plus those in ``path``; BuildError naming the file when unusable."""
    ctx = ssl.create_default_context()
    try:
        ctx.load_verify_locations(cafile=str(path))
    except FileNotFoundError:
        raise BuildError(f"Registry CA {path} (from {source}) does not exist.",
                         hint="Give the PEM file of the CA that signed the registry's "
                              "certificate.") from None
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise BuildError(f"Registry CA {path} (from {source}) is not a PEM certificate file "
                         f"pin can use: {clip_text(str(exc))}.",
                         hint="Give the PEM file of the CA that signed the registry's "
                              "certificate.") from None
    return ctx


def cert_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate-verification failure inside a requests/urllib3 error, if any."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen or len(seen) > 50:
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLCertVerificationError):
            return item
        todo.extend(item.args)
        todo.extend((item.__cause__, item.__context__, getattr(item, "reason", None)))
    return None


def url_origin(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL (host in lower case, the scheme's default
    port filled in); ``None`` for anything else.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)



def tls_adapter(context: ssl.SSLContext) -> requests.adapters.HTTPAdapter:
    """An HTTPS adapter whose connections verify with ``context`` (the system's CAs plus the
    registry's CA).
    """
    import requests.adapters

    class TLSAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            kwargs["ssl_context"] = context
            super().init_poolmanager(*args, **kwargs)

        def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["ssl_context"] = context
            return super().proxy_manager_for(*args, **kwargs)

    return TLSAdapter()
