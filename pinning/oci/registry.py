"""Push and fetch exact bytes with an OCI registry over the distribution HTTP API (requests).

What pin needs of a registry, for a team's own registry as much as for one on 127.0.0.1:

- **Where**: ``https://HOST[:PORT]``; ``http://`` only for a loopback host; a bare
  ``HOST[:PORT]`` is HTTPS, and for a loopback host HTTPS is tried first and plain HTTP used
  when the server does not speak TLS. ``docker.io`` is served by ``registry-1.docker.io``,
  where a one-part repository is ``library/NAME`` (moby/moby v28.3.0, package registry,
  ``DefaultRegistryHost``; https://pkg.go.dev/github.com/docker/docker/registry, date not
  recorded).
- **Trust**: the registry's CA is the ``ca_cert`` given, else ``PIN_REGISTRY_CA``, else
  Docker's ``/etc/docker/certs.d/HOST/ca.crt`` (folder overridable by
  ``PIN_DOCKER_CERTS_D``), added to the system's CAs; else the system's CAs alone.
- **Sign-in**: on a ``401`` the ``WWW-Authenticate`` challenge is answered with the Docker
  config's credentials (:mod:`pinning.oci.auth`): ``Basic``, or the token flow
  (``Bearer realm=...,service=...,scope=...``: GET the realm with Basic credentials or
  anonymously, or POST an identity token as ``grant_type=refresh_token``; tokens kept per
  scope). Described in distribution/distribution ``docs/spec/auth/token.md`` and
  ``oauth.md`` (date not recorded).
- **Push** (:meth:`Registry.push_image`): blobs in parallel threads, each skipped when the
  registry has it (HEAD), mounted from another repository of the same registry
  (``POST .../blobs/uploads/?mount=DIGEST&from=REPO``: 201 mounted, 202 upload instead),
  uploaded in :data:`CHUNK_SIZE` chunks (``PATCH`` with ``Content-Range``, then
  ``PUT ?digest=``), or, for a base layer pin does not hold, streamed chunk by chunk from
  the registry that serves it (opencontainers/distribution-spec ``spec.md``, "Pushing
  blobs", v1.1.0, released 2024-02-15 per
  https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/).

The bytes sent are the bytes hashed; the digest the registry answers is checked against ours,
and blobs and manifests read by digest are checked against it. Credentials go only to the
registry's own scheme, host and port (an upload ``Location`` elsewhere gets none), and any
secret pin sent is masked in the registry text it shows. A malformed registry address is a
:class:`~pinning.errors.UsageError` (exit 2); every other failure is a
:class:`~pinning.errors.BuildError` (exit 8) naming the registry, the request and the status,
never a secret.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from pinning.errors import BuildError, UsageError
from pinning.oci import auth
from pinning.oci.documents import MEDIA_LAYER_GZIP, MEDIA_MANIFEST, ImageDocs, LayerBlob
from pinning.oci.reference import is_loopback, parse_pinned, split_host
from pinning.util.digests import sha256_digest
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress, Task

if TYPE_CHECKING:
    import requests
    import requests.adapters

HINT = "Check the registry is running and reachable at that address."

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MEDIA_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (MEDIA_MANIFEST, MEDIA_INDEX, MEDIA_DOCKER_MANIFEST, MEDIA_DOCKER_LIST)
"""Every manifest media type pin reads (OCI image-spec v1.1 manifest and index; Docker image
manifest v2 schema 2 and its manifest list)."""
INDEX_TYPES = (MEDIA_INDEX, MEDIA_DOCKER_LIST)

CHUNK_SIZE = 16 * 1024 * 1024
"""Bytes per ``PATCH`` of a chunked upload, and the largest blob sent in one ``PUT`` (pin's
choice: large enough that a request's overhead is small, small enough to resend a chunk after
an expired token). A registry's ``OCI-Chunk-Min-Length`` raises it."""
DEFAULT_JOBS = 4
"""Blobs pushed at once by :meth:`Registry.push_image` (pin's default)."""

ERROR_TEXT_CHARS = 300
"""The most characters of a registry's (or engine's) error text shown in a message."""
ERROR_READ_BYTES = 64 * 1024
"""The most bytes of an error answer's body kept; the rest is counted, not stored."""
ERROR_COUNT_BYTES = 64 * 1024 * 1024
"""The most bytes of an error answer read at all (to say how many were left out)."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""The largest manifest pin reads, 4 MiB (pin's bound, taken from the distribution spec's
"Client and registry implementations SHOULD expect to be able to support manifest pushes of
at least 4 megabytes": opencontainers/distribution-spec v1.1.0 ``spec.md``, "Pushing
Manifests", released 2024-02-15 per
https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/; the sentence
came in with https://github.com/opencontainers/distribution-spec/pull/293, 2021-08-05). A
registry may accept larger ones; pin refuses to read them."""
MAX_TOKEN_BYTES = 1024 * 1024
"""The largest token-server answer pin reads (pin's bound; tokens are a few KiB)."""
DEFAULT_CERTS_D = Path("/etc/docker/certs.d")
"""Docker's per-registry CA folder (https://docs.docker.com/engine/security/certificates/,
date not recorded)."""


def clip_text(text: str, limit: int = ERROR_TEXT_CHARS, *, more: int = 0,
              squeeze: bool = True) -> str:
    """``text`` cut to ``limit`` characters, followed by ``... (N bytes more)`` saying how
    many UTF-8 bytes were left out (plus ``more``, bytes the caller never read); ``text``
    itself when it is short enough. With ``squeeze`` (the default) runs of white space,
    line breaks included, become one space first, so the text fits in one line.
    """
    if squeeze:
        text = " ".join(text.split())
    if len(text) <= limit and not more:
        return text
    left = len(text[limit:].encode("utf-8", "replace")) + more
    return f"{text[:limit]}... ({left} bytes more)"


MASK = "***"
"""What stands in a message for a secret a registry echoed."""
MIN_MASKED_PASSWORD = 4
"""A password shorter than this is not searched for in error text on its own (pin's choice:
masking every ``a`` of a one-letter password would make the message unreadable); the
``Authorization`` values that carry it are always masked."""


def mask_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every occurrence of each of ``secrets`` (and its JSON form with ``/``
    written ``\\/``) replaced by :data:`MASK`, longest first. Empty secrets are ignored.
    """
    forms = {form for secret in secrets if secret
             for form in (secret, secret.replace("/", "\\/"))}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


def _error_body(resp: requests.Response, secrets: tuple[str, ...] = ()) -> str:
    """The start of an error answer's body, clipped (:func:`clip_text`) with ``secrets``
    masked first (:func:`mask_secrets`): at most :data:`ERROR_READ_BYTES` are read and kept.
    The bytes left out are counted from ``Content-Length`` when the answer has one, else by
    reading on (discarding) to at most :data:`ERROR_COUNT_BYTES`. When the body was cut,
    its last characters (as many as the longest secret) are dropped too, so no start of a
    secret cut in two is shown.
    """
    import requests

    kept = b""
    skipped = 0
    chunks = resp.iter_content(chunk_size=ERROR_READ_BYTES)
    try:
        for chunk in chunks:
            kept += chunk
            if len(kept) >= ERROR_READ_BYTES:
                break
        kept, skipped = kept[:ERROR_READ_BYTES], len(kept[ERROR_READ_BYTES:])
        length = resp.headers.get("Content-Length", "")
        if length.isascii() and length.isdigit() and len(length) < 19:
            skipped = max(int(length) - len(kept), 0)
        elif len(kept) == ERROR_READ_BYTES:
            for chunk in chunks:
                skipped += len(chunk)
                if skipped > ERROR_COUNT_BYTES:
                    break
    except requests.RequestException:
        pass  # the error body is a courtesy; the status is the message
    text = mask_secrets(kept.decode("utf-8", "replace"), secrets)
    longest = max((len(x) for x in secrets), default=0)
    if skipped and longest:
        dropped, text = text[len(text) - longest:], text[:len(text) - longest]
        skipped += len(dropped.encode("utf-8", "replace"))
    return clip_text(text, more=skipped)


def _read_body(resp: requests.Response, limit: int | None, what: str) -> bytes:
    """The body of ``resp``; :class:`BuildError` naming ``what`` when ``limit`` is given
    and the body is larger (nothing past ``limit`` + 1 MiB is read).
    """
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_content(chunk_size=1024 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise BuildError(f"{what}: the answer is larger than {limit} bytes.", hint=HINT)
    return b"".join(chunks)


def _shown(url: str) -> str:
    """``url`` without its query (an upload's state or a signed redirect), clipped."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return clip_text(url.split("?", 1)[0])
    return clip_text(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))


@dataclass(frozen=True)
class Answer:
    """A registry's answer: the HTTP status, the headers and the body bytes (read whole)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes


@dataclass
class PushStats:
    """What :meth:`Registry.push_image` and :meth:`Registry.put_blob` did, counted over the
    registry object's life: blobs ``skipped`` (already there), ``mounted`` (from another
    repository), ``uploaded`` (sent, ``bytes_uploaded`` bytes in all, streamed copies
    included). Thread-safe.
    """

    skipped: int = 0
    mounted: int = 0
    uploaded: int = 0
    bytes_uploaded: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, skipped: int = 0, mounted: int = 0, uploaded: int = 0,
            nbytes: int = 0) -> None:
        """Count one outcome."""
        with self._lock:
            self.skipped += skipped
            self.mounted += mounted
            self.uploaded += uploaded
            self.bytes_uploaded += nbytes


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


def _ssl_context(path: Path, source: str) -> ssl.SSLContext:
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


def _cert_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
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


def _origin(url: str) -> tuple[str, str, int] | None:
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


def _location(request_url: str, answer: Answer, where: str) -> str:
    """The absolute upload URL of an upload answer's ``Location`` header (a relative one
    resolved against ``request_url``, the URL the request went to: RFC 9110 section 10.2.2,
    https://www.rfc-editor.org/rfc/rfc9110, June 2022).
    A :class:`BuildError` when it is missing, not an http(s) URL, or plain HTTP to a host that
    is not loopback (the blob would cross the network unprotected). A URL on another host is
    returned; :meth:`Registry._send` sends it no credentials.
    """
    location = answer.headers.get("Location")
    if not location:
        raise BuildError(f"{where} answered {answer.status_code} without a Location header.",
                         hint=HINT)
    try:
        url = urljoin(request_url, location)
    except ValueError:
        url = ""
    origin = _origin(url)
    if origin is None:
        raise BuildError(f"{where} answered {answer.status_code} with a Location that is not "
                         f"an http(s) URL ({_shown(url or location)}).", hint=HINT)
    if origin[0] == "http" and not is_loopback(urlsplit(url).netloc.rpartition("@")[2]):
        # The hint's http.host: "A fully-qualified URL for an externally-reachable address for
        # the registry. If present, it is used when creating generated URLs" (distribution/
        # distribution@11f50c034e908fea9b8176f4fef9755853bbd518:docs/content/about/
        # configuration.md, date not recorded).
        raise BuildError(f"{where} sent the upload to plain HTTP on {origin[1]}, which is not "
                         "a loopback host; pin sends no image data or credentials there.",
                         hint="Configure the registry to hand out https upload locations "
                              "(distribution: http.host in its config).")
    return url


def _with_digest(location: str, digest: str) -> str:
    """``location`` with ``digest=DIGEST`` added to its query."""
    return f"{location}{'&' if '?' in location else '?'}digest={digest}"


def _media_type_of(manifest: bytes) -> str:
    """The ``mediaType`` a manifest declares, else the OCI image manifest type."""
    try:
        doc = load_json(manifest, BuildError, label="the manifest")
    except BuildError:
        return MEDIA_MANIFEST
    value = doc.get("mediaType") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else MEDIA_MANIFEST


def _checked_realm(realm: str, where: str) -> str:
    """``realm`` when it is an https URL, or http on a loopback host; else BuildError (pin
    sends no credentials over plain HTTP across a network).
    """
    try:
        parts = urlsplit(realm)
        host = parts.netloc.rsplit("@", 1)[-1]
    except ValueError:
        parts, host = urlsplit(""), ""
    if parts.scheme not in ("https", "http") or not host:
        raise BuildError(f"{where}: the token challenge's realm {clip_text(realm, 200)!r} is "
                         "not an http(s) URL.", hint="Check the registry's auth setup.")
    if parts.scheme == "http" and not is_loopback(host):
        raise BuildError(f"{where}: the token server {_shown(realm)} is plain HTTP on a host "
                         "that is not loopback; pin sends no credentials there.",
                         hint="Serve the token server over HTTPS.")
    return realm


def _token_of(resp: requests.Response, where: str) -> str:
    """The ``token`` (or ``access_token``) of a token server's JSON answer."""
    import requests

    try:
        body = _read_body(resp, MAX_TOKEN_BYTES, where)
    except requests.RequestException:
        body = b""
    try:
        doc = load_json(body, BuildError, label=where)
    except BuildError:  # not JSON: no token, said below
        doc = None
    token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        raise BuildError(f"{where} answered without a token.",
                         hint="Check the registry's auth setup.")
    if not all("!" <= c <= "~" for c in token):
        # RFC 6750 section 2.1 (b64token), https://www.rfc-editor.org/rfc/rfc6750, October 2012.
        raise BuildError(f"{where} answered a token ({len(token)} characters, not shown) with "
                         "a character that is not printable ASCII (a space, a control or a "
                         "non-ASCII character), so it cannot be sent in an Authorization "
                         "header; RFC 6750 section 2.1 allows letters, digits and -._~+/ "
                         "followed by =.",
                         hint="Check the registry's token server; its tokens are normally "
                              "JWTs.")
    return token


class _Aborted(Exception):
    """Another blob of the same push failed: stop between chunks."""


class Registry:
    """A registry at ``base`` (see :func:`parse_address`); ``timeout`` in seconds per request;
    ``ca_cert`` the PEM CA that signed its certificate (see :func:`resolve_ca`);
    ``credentials`` to sign in with instead of the Docker config's (``pin login`` checks
    new ones this way).

    A malformed ``base`` raises :class:`~pinning.errors.UsageError` (exit 2, see
    :func:`parse_address`). Nothing is sent before the first call. Every method raises
    :class:`BuildError` (exit 8)
    naming the registry when it cannot be reached, its TLS certificate is not trusted, it
    asks for credentials pin does not have or refuses them, or it answers an unexpected
    status (its error text cut to :data:`ERROR_TEXT_CHARS` characters, :func:`clip_text`).
    Safe to use from several threads (one HTTP session per thread). ``host`` is the registry
    as image references write it (``docker.io``, ``127.0.0.1:5000``), ``endpoint`` the
    ``HOST[:PORT]`` connected to, ``base`` the URL once the scheme is known; ``stats`` counts
    what pushes did (:class:`PushStats`). ``close()`` (or ``with``) releases the connections.
    """

    def __init__(self, base: str, *, timeout: float = 60.0, ca_cert: Path | None = None,
                 credentials: auth.Credentials | None = None) -> None:
        address = parse_address(base)
        self.host = address.host
        self.endpoint = address.endpoint
        self.timeout = timeout
        self.stats = PushStats()
        self._ca_cert = ca_cert
        self._scheme = address.scheme
        self._ca = resolve_ca(self.host, ca_cert)
        self._context = _ssl_context(*self._ca) if self._ca else None
        self._sessions: dict[threading.Thread, requests.Session] = {}
        self._lock = threading.RLock()  # the scheme probe opens a session under it
        self._auth_lock = threading.Lock()
        self._creds: auth.Credentials | None = credentials
        self._creds_read = credentials is not None
        self._basic: str | None = None
        self._tokens: dict[str, str] = {}
        self._sources: dict[str, Registry] = {}
        self._min_chunk = 0

    # -- connection ------------------------------------------------------------------------

    @property
    def base(self) -> str:
        """``scheme://endpoint`` once the scheme is known, else the bare endpoint."""
        return f"{self._scheme}://{self.endpoint}" if self._scheme else self.endpoint

    def close(self) -> None:
        """Close every HTTP session this object opened (and those of source registries)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
            sources, self._sources = list(self._sources.values()), {}
        for session in sessions:
            session.close()
        for source in sources:
            if source is not self:
                source.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> requests.Session:
        """The calling thread's HTTP session (``requests.Session`` is not documented as
        thread-safe).
        """
        thread = threading.current_thread()
        with self._lock:
            session = self._sessions.get(thread)
            if session is None:
                import requests

                session = requests.Session()
                if self._context is not None:
                    session.mount("https://", _tls_adapter(self._context))
                self._sessions[thread] = session
            return session

    def _close_idle_sessions(self) -> None:
        """Close the sessions of threads that have ended (a push's workers)."""
        with self._lock:
            ended = [t for t in self._sessions if not t.is_alive()]
            sessions = [self._sessions.pop(t) for t in ended]
        for session in sessions:
            session.close()

    def _base_url(self) -> str:
        """``scheme://endpoint``; for a bare loopback host the first call finds the scheme."""
        if self._scheme is None:
            with self._lock:
                if self._scheme is None:
                    self._scheme = self._probe()
        return f"{self._scheme}://{self.endpoint}"

    def _probe(self) -> str:
        """``https`` when the loopback registry speaks TLS, else ``http`` when it answers plain
        HTTP; BuildError when its certificate is not trusted or neither answers.
        """
        import requests

        session = self._session()
        first: Exception
        try:
            with session.get(f"https://{self.endpoint}/v2/", timeout=self.timeout,
                             stream=True, allow_redirects=False):
                return "https"
        except requests.RequestException as exc:
            if _cert_error(exc) is not None:
                raise self._tls_error(f"Registry {self.endpoint}: GET "
                                      f"https://{self.endpoint}/v2/", exc) from None
            first = exc
        try:
            with session.get(f"http://{self.endpoint}/v2/", timeout=self.timeout,
                             stream=True, allow_redirects=False):
                return "http"
        except requests.RequestException as exc:
            raise BuildError(
                f"Registry {self.endpoint}: neither HTTPS nor plain HTTP answered "
                f"(https: {clip_text(str(first), 200)}; http: {clip_text(str(exc), 200)}).",
                hint=HINT) from None

    def _tls_error(self, where: str, exc: BaseException) -> BuildError:
        """The paragraph for a certificate pin cannot verify: names the CA options."""
        cert = _cert_error(exc)
        reason = (cert.verify_message or str(cert)) if cert is not None else str(exc)
        trust = (f"the system's CAs and {self._ca[0]} (from {self._ca[1]})" if self._ca
                 else "the system's CAs")
        certs_d = Path(os.environ.get("PIN_DOCKER_CERTS_D") or DEFAULT_CERTS_D)
        return BuildError(
            f"{where}: the registry's TLS certificate is not trusted by {trust}: "
            f"{clip_text(reason, 200)}.",
            hint=f"Give the CA that signed it: --ca-cert FILE or PIN_REGISTRY_CA=FILE, or "
                 f"install it as {certs_d}/{self.host}/ca.crt (as for Docker).")

    # -- requests and sign-in --------------------------------------------------------------

    def _repo(self, repo: str) -> str:
        """The repository's path on the registry (``library/NAME`` for a one-part Docker Hub
        name).
        """
        if "/" not in repo and auth.is_docker_hub(self.endpoint):
            return f"library/{repo}"
        return repo

    def _scopes(self, repo: str | None, push: bool, mount_from: str | None) -> list[str]:
        """The token scopes a request needs (distribution token spec ``scope``)."""
        if repo is None:
            return []
        scopes = [f"repository:{self._repo(repo)}:{'pull,push' if push else 'pull'}"]
        if mount_from is not None:
            scopes.append(f"repository:{self._repo(mount_from)}:pull")
        return scopes

    def _request(self, method: str, url: str, ok: tuple[int, ...], *,
                 repo: str | None = None, push: bool = False, mount_from: str | None = None,
                 limit: int | None = None, **kw: Any) -> Answer:
        """Send one request (signing in on a challenge) and read its answer (the body at most
        ``limit`` bytes when given); the connection is released before it returns. Raises
        :class:`BuildError` for a failed request, a status not in ``ok`` (with the clipped
        error text) or a body over ``limit``.
        """
        import requests

        with self._send(method, url, ok, repo=repo, push=push, mount_from=mount_from,
                        **kw) as resp:
            where = f"Registry {self.base}: {method} {_shown(resp.url or url)}"
            try:
                return Answer(status_code=resp.status_code, headers=resp.headers,
                              content=_read_body(resp, limit, where))
            except requests.RequestException as exc:
                raise BuildError(f"{where} failed: {clip_text(str(exc))}.", hint=HINT) from None

    def _send(self, method: str, url: str, ok: tuple[int, ...], *, repo: str | None,
              push: bool = False, mount_from: str | None = None,
              headers: Mapping[str, str] | None = None, **kw: Any) -> requests.Response:
        """Send one request and return the open answer (streamed; the caller closes it) when
        its status is in ``ok``. A ``401`` is answered once by signing in (:meth:`_sign_in`)
        and the request sent again (``data`` must be bytes, not a stream).

        Credentials (Basic or a bearer token) go only to the registry's own endpoint: the
        same scheme, host and port as :meth:`_base_url`. An absolute ``url`` elsewhere (an
        upload ``Location`` on another host) is sent without them, and a ``401`` from it is a
        :class:`BuildError`.
        """
        import requests

        full = url if "://" in url else self._base_url() + url
        own = "://" not in url or _origin(full) == _origin(self._base_url())
        where = f"Registry {self.base}: {method} {_shown(full)}"
        scopes = self._scopes(repo, push, mount_from)
        key = " ".join(scopes)
        for attempt in (0, 1):
            sent = (self._tokens.get(key) or self._basic) if own else None
            send_headers = dict(headers or {})
            if sent is not None:
                send_headers["Authorization"] = sent
            try:
                resp = self._session().request(method, full, headers=send_headers,
                                               timeout=self.timeout, stream=True, **kw)
            except requests.RequestException as exc:
                if _cert_error(exc) is not None:
                    raise self._tls_error(where, exc) from None
                raise BuildError(f"{where} failed: {clip_text(str(exc))}.", hint=HINT) from None
            if resp.status_code in ok:
                return resp
            if resp.status_code == 401 and not own:
                resp.close()
                # http.host: distribution's configuration reference, cited in _location.
                raise BuildError(
                    f"{where} answered 401: that URL is not on the registry's own address "
                    f"({self._base_url()}), and pin sends the registry's credentials to no "
                    "other host.",
                    hint="Configure the registry to hand out upload locations on its own "
                         "address (distribution: http.host in its config).")
            if resp.status_code == 401 and attempt == 0:
                challenge = resp.headers.get("WWW-Authenticate", "")
                resp.close()
                self._sign_in(challenge, key, scopes, sent, where)
                continue
            try:
                body = _error_body(resp, self._secrets())
            finally:
                resp.close()
            if resp.status_code == 401:
                raise self._refused(where, body, push)
            if resp.status_code == 403:
                raise self._denied(where, body, push)
            raise BuildError(f"{where} answered {resp.status_code}: {body}", hint=HINT)
        raise AssertionError("unreachable")  # pragma: no cover

    def _credentials(self) -> auth.Credentials | None:
        """The Docker config's credentials for this registry (read once, on demand)."""
        with self._lock:  # a credential helper runs once, not once per thread
            if not self._creds_read:
                self._creds = auth.credentials(self.host)
                self._creds_read = True
            return self._creds

    def _sign_in(self, header: str, key: str, scopes: list[str], sent: str | None,
                 where: str) -> None:
        """Answer a ``401``'s challenge: remember Basic credentials, or fetch a token for
        ``scopes`` (plus the challenge's own). Raises BuildError when pin has no credentials
        the challenge can use or they were just refused.
        """
        challenges = auth.parse_challenges(header)
        with self._auth_lock:
            now = self._tokens.get(key) or self._basic
            if now is not None and now != sent:
                return  # another thread signed in meanwhile
            bearer = next((c for c in challenges if c.scheme == "bearer"), None)
            if bearer is not None:
                token = self._fetch_token(bearer.params, scopes, where)
                self._tokens[key] = f"Bearer {token}"
                return
            if any(c.scheme == "basic" for c in challenges):
                creds = self._credentials()
                basic = creds.basic if creds is not None else None
                if basic is None:
                    raise self._no_credentials(where)
                if sent == basic:
                    raise self._refused(where, "", False)
                self._basic = basic
                return
        raise BuildError(f"{where} answered 401 without a challenge pin can answer "
                         f"(WWW-Authenticate: {clip_text(self._mask(header), 200) or 'none'}).",
                         hint="pin answers Basic and Bearer (token) challenges; check the "
                              "registry's auth setup.")

    def _fetch_token(self, params: Mapping[str, str], scopes: list[str], where: str) -> str:
        """A bearer token from the challenge's realm for ``scopes`` and the challenge's scope
        (identity token: POST ``grant_type=refresh_token``; else GET, with Basic credentials
        when pin has them, anonymously otherwise).
        """
        import requests

        realm = _checked_realm(params.get("realm", ""), where)
        wanted = list(scopes)
        wanted += [s for s in dict.fromkeys(params.get("scope", "").split()) if s not in scopes]
        service = params.get("service")
        creds = self._credentials()
        token_where = f"Registry {self.host}: token server {_shown(realm)}"
        try:
            if creds is not None and creds.identity_token is not None:
                form = {"grant_type": "refresh_token", "refresh_token": creds.identity_token,
                        "client_id": "pin", "scope": " ".join(wanted)}
                if service:
                    form["service"] = service
                resp = self._session().post(realm, data=form, timeout=self.timeout,
                                            stream=True)
            else:
                query = [("service", service)] if service else []
                query += [("scope", s) for s in wanted]
                basic = creds.basic if creds is not None else None
                resp = self._session().get(realm, params=query, timeout=self.timeout,
                                           headers={"Authorization": basic} if basic else {},
                                           stream=True)
        except requests.RequestException as exc:
            if _cert_error(exc) is not None:
                raise self._tls_error(token_where, exc) from None
            raise BuildError(f"{token_where} failed: {clip_text(str(exc))}.",
                             hint=HINT) from None
        with resp:
            if resp.status_code in (401, 403):
                if creds is None:
                    raise self._no_credentials(where)
                raise self._refused(token_where, _error_body(resp, self._secrets()), False)
            if resp.status_code != 200:
                raise BuildError(f"{token_where} answered {resp.status_code}: "
                                 f"{_error_body(resp, self._secrets())}", hint=HINT)
            return _token_of(resp, token_where)

    def _secrets(self) -> tuple[str, ...]:
        """Every secret pin holds for this registry, as it may come back in a hostile
        answer: the credential part of each ``Authorization`` value sent (the Basic
        ``base64(user:password)`` and each bearer token, with and without the scheme word),
        the identity token, and the password when at least :data:`MIN_MASKED_PASSWORD`
        characters long. Reads nothing new (credentials not read yet are not listed).
        """
        values = [self._basic or "", *dict(self._tokens).values()]
        creds = self._creds if self._creds_read else None
        if creds is not None:
            values += [creds.basic or "", creds.identity_token or ""]
            if creds.password and len(creds.password) >= MIN_MASKED_PASSWORD:
                values.append(creds.password)
        out = [v for v in values if v]
        out += [v.split(" ", 1)[1] for v in out if v.startswith(("Basic ", "Bearer "))]
        return tuple(dict.fromkeys(v for v in out if v))

    def _mask(self, text: str) -> str:
        """``text`` (a registry's answer) with every secret of :meth:`_secrets` masked."""
        return mask_secrets(text, self._secrets())

    def _no_credentials(self, where: str) -> BuildError:
        """The paragraph for a registry that asks for credentials pin does not have."""
        return BuildError(
            f"{where} needs credentials, and the Docker config ({auth.docker_config_path()}) "
            f"holds none for {auth.config_key(self.host)}.",
            hint=f"Run `docker login {self.host}` (pin reads what Docker stores: "
                 "DOCKER_CONFIG or ~/.docker/config.json, credsStore and credHelpers).")

    def _refused(self, where: str, body: str, push: bool) -> BuildError:
        """The paragraph for credentials the registry refused (401 after signing in)."""
        creds = self._credentials()
        if creds is None:
            return self._no_credentials(where)
        detail = f": {body}" if body else ""
        return BuildError(
            f"{where} refused the credentials from {creds.source} (401){detail}.",
            hint=f"Run `docker login {self.host}` again with a user that may "
                 f"{'push to' if push else 'read'} this repository, or fix the entry in "
                 f"{auth.docker_config_path()}.")

    def _denied(self, where: str, body: str, push: bool) -> BuildError:
        """The paragraph for a 403: signed in, but not allowed."""
        creds = self._credentials()
        who = f"the credentials from {creds.source}" if creds else "anonymous access"
        return BuildError(
            f"{where} answered 403 (denied) for {who}: {body}",
            hint=f"Ask the registry's admin for {'push' if push else 'pull'} access, or run "
                 f"`docker login {self.host}` as a user that has it.")

    # -- blobs -----------------------------------------------------------------------------

    def ping(self) -> None:
        """Raise :class:`BuildError` unless ``GET /v2/`` answers 200 (signing in if asked)."""
        self._request("GET", "/v2/", (200,))

    def has_blob(self, repo: str, digest: str, *, push: bool = False) -> bool:
        """True when the registry already holds blob ``digest`` in ``repo`` (``push``: ask
        with push rights, as a push does, so one token serves the whole push).
        """
        resp = self._request("HEAD", f"/v2/{self._repo(repo)}/blobs/{digest}", (200, 404),
                             repo=repo, push=push)
        return resp.status_code == 200

    def get_blob(self, repo: str, digest: str) -> bytes:
        """The bytes of blob ``digest``, checked against the digest."""
        data = self._request("GET", f"/v2/{self._repo(repo)}/blobs/{digest}", (200,),
                             repo=repo).content
        if sha256_digest(data) != digest:
            raise BuildError(f"Registry {self.base}: blob {digest} came back with other bytes.")
        return data

    @contextlib.contextmanager
    def open_blob(self, repo: str, digest: str) -> Iterator[requests.Response]:
        """The open answer to ``GET`` blob ``digest`` (stream it with ``iter_content``; the
        caller checks the digest of what it reads).
        """
        resp = self._send("GET", f"/v2/{self._repo(repo)}/blobs/{digest}", (200,), repo=repo)
        with resp:
            yield resp

    def put_blob(self, repo: str, data: bytes) -> str:
        """Upload ``data`` (skipped when present); return its digest."""
        digest = sha256_digest(data)
        self._push_blob(repo, data=data, digest=digest, size=len(data), source=None,
                        task=NULL_PROGRESS.task(digest), abort=threading.Event())
        return digest

    def _start_upload(self, repo: str) -> str:
        """Open an upload session in ``repo``; return its URL."""
        location = self._mount_or_start(repo, None)
        assert location is not None  # 201 is not accepted without a mount
        return location

    def _mount_or_start(self, repo: str, mount: tuple[str, str] | None) -> str | None:
        """Open an upload session in ``repo``, asking to mount ``mount`` = ``(digest,
        from_repo)`` when given: ``None`` when mounted (201), else the upload URL (202).
        """
        path = f"/v2/{self._repo(repo)}/blobs/uploads/"
        params = None
        if mount is not None:
            params = {"mount": mount[0], "from": self._repo(mount[1])}
        answer = self._request("POST", path, (201, 202) if mount else (202,), repo=repo,
                               push=True, mount_from=mount[1] if mount else None,
                               params=params, data=b"")
        if answer.status_code == 201:
            return None
        least = answer.headers.get("OCI-Chunk-Min-Length", "")
        if least.isascii() and least.isdigit() and len(least) < 12:
            self._min_chunk = max(self._min_chunk, int(least))
        return _location(self._base_url() + path, answer,
                         f"Registry {self.base}: POST {path}")

    def _chunk_size(self) -> int:
        """:data:`CHUNK_SIZE` (read at call time, so tests can lower it), or the registry's
        ``OCI-Chunk-Min-Length`` when that is larger.
        """
        return max(CHUNK_SIZE, self._min_chunk)

    def _patch(self, repo: str, location: str, piece: bytes, offset: int) -> str:
        """Send one chunk at ``offset``; return the next upload URL."""
        end = offset + len(piece) - 1
        answer = self._request("PATCH", location, (202,), repo=repo, push=True, data=piece,
                               headers={"Content-Type": "application/octet-stream",
                                        "Content-Range": f"{offset}-{end}"})
        where = f"Registry {self.base}: PATCH {_shown(location)}"
        held = answer.headers.get("Range")
        if held:
            text = held.strip().removeprefix("bytes=")
            last = text.rpartition("-")[2]
            if not (last.isascii() and last.isdigit()) or int(last) != end:
                raise BuildError(f"{where}: the registry holds bytes "
                                 f"{clip_text(self._mask(text), 60)} of the upload, pin sent "
                                 f"up to {end}.", hint=HINT)
        return _location(location, answer, where)

    def _finish(self, repo: str, location: str, digest: str, body: bytes = b"") -> None:
        """Close the upload with ``PUT ?digest=``; check the digest the registry names."""
        answer = self._request("PUT", _with_digest(location, digest), (201,), repo=repo,
                               push=True, data=body,
                               headers={"Content-Type": "application/octet-stream"})
        theirs = answer.headers.get("Docker-Content-Digest", digest)
        if theirs != digest:
            raise BuildError(f"Registry {self.base}: blob stored as "
                             f"{clip_text(self._mask(theirs), 100)}, pin sent {digest}.",
                             hint=HINT)

    def _upload_bytes(self, repo: str, location: str, data: bytes, digest: str,
                      task: Task, abort: threading.Event) -> None:
        """Upload ``data``: one ``PUT`` when it fits a chunk, else ``PATCH`` chunks."""
        chunk = self._chunk_size()
        if len(data) <= chunk:
            self._finish(repo, location, digest, data)
            task.advance(len(data))
            return
        for offset in range(0, len(data), chunk):
            if abort.is_set():
                raise _Aborted
            piece = data[offset:offset + chunk]
            location = self._patch(repo, location, piece, offset)
            task.advance(len(piece))
        self._finish(repo, location, digest)

    def _copy_from(self, source: Registry, source_repo: str, repo: str, location: str,
                   digest: str, size: int | None, task: Task, abort: threading.Event) -> None:
        """Stream blob ``digest`` from ``source`` into the upload at ``location``, chunk by
        chunk (never whole in memory), checking its digest (and size) before committing.
        """
        import requests

        chunk = self._chunk_size()
        hasher = hashlib.sha256()
        buffer = bytearray()
        offset = 0
        where = f"Registry {source.base}: blob {digest} of {source_repo}"
        try:
            with source.open_blob(source_repo, digest) as resp:
                for part in resp.iter_content(chunk_size=1024 * 1024):
                    if abort.is_set():
                        raise _Aborted
                    buffer += part
                    if size is not None and offset + len(buffer) > size:
                        raise BuildError(f"{where} is longer than the {size} bytes its "
                                         "descriptor says.", hint=HINT)
                    while len(buffer) >= chunk:
                        piece = bytes(buffer[:chunk])
                        del buffer[:chunk]
                        hasher.update(piece)
                        location = self._patch(repo, location, piece, offset)
                        offset += len(piece)
                        task.advance(len(piece))
        except requests.RequestException as exc:
            raise BuildError(f"{where}: reading failed: {clip_text(str(exc))}.",
                             hint=HINT) from None
        if buffer:
            piece = bytes(buffer)
            hasher.update(piece)
            location = self._patch(repo, location, piece, offset)
            offset += len(piece)
            task.advance(len(piece))
        if f"sha256:{hasher.hexdigest()}" != digest or (size is not None and offset != size):
            raise BuildError(f"{where} came with other bytes ({offset} bytes, sha256:"
                             f"{hasher.hexdigest()}); nothing was committed.", hint=HINT)
        self._finish(repo, location, digest)

    def _source(self, host: str) -> Registry:
        """Self when ``host`` names this registry, else a (cached) client for ``host``."""
        if self._same_registry(host):
            return self
        with self._lock:
            found = self._sources.get(host)
            if found is None:
                from pinning.oci.reference import registry_url

                found = Registry(registry_url(host), timeout=self.timeout,
                                 ca_cert=self._ca_cert)
                self._sources[host] = found
            return found

    def _same_registry(self, host: str) -> bool:
        """True when image-reference host ``host`` is served by this registry's endpoint."""
        other = "registry-1.docker.io" if auth.is_docker_hub(host) else host
        return other.lower() == self.endpoint.lower()

    def _push_blob(self, repo: str, *, data: bytes | None, digest: str, size: int,
                   source: str | None, task: Task, abort: threading.Event) -> None:
        """Put one blob in ``repo``: HEAD-skip, mount from ``source`` (``HOST/REPO``) on this
        registry, upload ``data``, or stream it from ``source``; ``task`` sees the bytes.
        """
        note = ""
        try:
            if abort.is_set():
                raise _Aborted
            if self.has_blob(repo, digest, push=True):
                self.stats.add(skipped=1)
                note = "already in the registry"
                return
            source_host, _, source_repo = (source or "").partition("/")
            if source and source_repo and self._same_registry(source_host) and (
                    self._repo(source_repo) != self._repo(repo)):
                mounted = self._mount_or_start(repo, (digest, source_repo))
                if mounted is None:
                    self.stats.add(mounted=1)
                    note = f"mounted from {source_repo}"
                    return
                location = mounted
            else:
                location = self._start_upload(repo)
            if data is not None:
                self._upload_bytes(repo, location, data, digest, task, abort)
            elif source and source_repo:
                self._copy_from(self._source(source_host), source_repo, repo, location,
                                digest, size, task, abort)
            else:
                raise BuildError(f"Registry {self.base}: blob {digest} is not in {repo}, and "
                                 "pin holds neither its bytes nor a registry that serves it.",
                                 hint="Push the base image to this registry first, or build "
                                      "from a base pin can read.")
            self.stats.add(uploaded=1, nbytes=size)
        finally:
            task.done(note)

    def push_image(self, repo: str, tag: str, docs: ImageDocs, *,
                   progress: Progress = NULL_PROGRESS, jobs: int = DEFAULT_JOBS) -> str:
        """Push the layers and config of ``docs`` (``jobs`` blobs at once), then its manifest
        under ``tag``; return the manifest digest (checked against the registry's).

        Each blob is skipped when present, mounted from its ``source`` when that is another
        repository of this registry, uploaded (chunked above :data:`CHUNK_SIZE`), or, when
        pin does not hold its bytes, streamed from its ``source``. ``progress`` gets one
        task per blob (``push layer I/N sha256:...``, bytes). The first failure stops the
        other blobs between chunks and is raised.
        """
        count = len(docs.layers)
        work: list[tuple[bytes | None, str, int, str | None, str]] = []
        seen: set[str] = set()
        for index, layer in enumerate(docs.layers, 1):
            if layer.digest in seen:
                continue
            seen.add(layer.digest)
            work.append((layer.data, layer.digest, layer.size, layer.source,
                         f"push layer {index}/{count} {layer.digest[:19]}"))
        config_digest = docs.config_digest
        if config_digest not in seen:
            work.append((docs.config, config_digest, len(docs.config), None,
                         f"push config {config_digest[:19]}"))
        self._base_url()  # find the scheme once, before the threads
        abort = threading.Event()
        tasks = [progress.task(label, size) for _, _, size, _, label in work]
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(work))),
                                thread_name_prefix="pin-push") as pool:
            futures: list[Future[None]] = [
                pool.submit(self._push_blob, repo, data=data, digest=digest, size=size,
                            source=source, task=task, abort=abort)
                for (data, digest, size, source, _), task in zip(work, tasks, strict=True)]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None
                      and not isinstance(f.exception(), _Aborted)]
            if failed:
                abort.set()
                for future, task in zip(futures, tasks, strict=True):
                    if future.cancel():
                        task.done()
        self._close_idle_sessions()
        for source in list(self._sources.values()):
            source._close_idle_sessions()
        if failed:
            error = failed[0].exception()
            assert error is not None
            raise error
        return self.put_manifest(repo, tag, docs.manifest, _media_type_of(docs.manifest))

    # -- manifests -------------------------------------------------------------------------

    def put_manifest(self, repo: str, reference: str, manifest: bytes,
                     media_type: str = MEDIA_MANIFEST) -> str:
        """Put ``manifest`` bytes under ``reference`` (a tag, or its own digest); return the
        digest, checked against the one the registry answers.
        """
        ours = sha256_digest(manifest)
        if reference.startswith("sha256:") and reference != ours:
            raise BuildError(f"Registry {self.base}: manifest put as {reference}, but its "
                             f"bytes hash to {ours}.")
        resp = self._request("PUT", f"/v2/{self._repo(repo)}/manifests/{reference}", (201,),
                             repo=repo, push=True, data=manifest,
                             headers={"Content-Type": media_type})
        theirs = resp.headers.get("Docker-Content-Digest", ours)
        if theirs != ours:
            raise BuildError(f"Registry {self.base}: manifest stored as "
                             f"{clip_text(self._mask(theirs))}, pin sent {ours}; the registry "
                             "rewrote the bytes.")
        return ours

    def manifest_digest(self, repo: str, reference: str, *,
                        accept: tuple[str, ...] = MANIFEST_TYPES) -> str | None:
        """Digest of ``repo:reference`` (tag or digest), or ``None`` when absent."""
        resp = self._request("HEAD", f"/v2/{self._repo(repo)}/manifests/{reference}",
                             (200, 404), repo=repo, headers={"Accept": ", ".join(accept)})
        if resp.status_code == 404:
            return None
        return resp.headers.get("Docker-Content-Digest")

    def fetch_manifest(self, repo: str, reference: str, *,
                       accept: tuple[str, ...] = MANIFEST_TYPES) -> tuple[bytes, str]:
        """The exact manifest bytes of ``repo:reference`` and their media type (the answer's
        ``Content-Type``, else the document's ``mediaType``). At most 4 MiB; a reference that
        is a digest is checked against the bytes.
        """
        answer = self._request("GET", f"/v2/{self._repo(repo)}/manifests/{reference}",
                               (200,), repo=repo, headers={"Accept": ", ".join(accept)},
                               limit=MAX_MANIFEST_BYTES)
        data = answer.content
        if reference.startswith("sha256:") and sha256_digest(data) != reference:
            raise BuildError(f"Registry {self.base}: manifest {reference} of {repo} came back "
                             "with other bytes.", hint=HINT)
        media = answer.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if media not in MANIFEST_TYPES:
            media = _media_type_of(data)
        return data, media

    def get_manifest(self, repo: str, reference: str, *,
                     accept: tuple[str, ...] = (MEDIA_MANIFEST,)) -> bytes:
        """The exact manifest bytes of ``repo:reference`` (at most 4 MiB; a larger answer is
        a :class:`BuildError`; a digest reference is checked against the bytes).
        """
        return self.fetch_manifest(repo, reference, accept=accept)[0]

    def referrers(self, repo: str, digest: str, *,
                  artifact_type: str | None = None) -> bytes | None:
        """The OCI 1.1 referrers index of ``digest`` (``GET /v2/REPO/referrers/DIGEST``,
        optionally filtered by ``artifact_type``), or ``None`` when the registry has no
        referrers API (it answers 404; the API came with opencontainers/distribution-spec
        v1.1.0, released 2024-02-15 per
        https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/;
        observed in pin's tests: Debian's ``docker-registry`` 2.8.2 answers 404 to
        ``GET /v2/<repo>/referrers/<digest>``).
        """
        params = {"artifactType": artifact_type} if artifact_type else None
        answer = self._request("GET", f"/v2/{self._repo(repo)}/referrers/{digest}",
                               (200, 404), repo=repo, headers={"Accept": MEDIA_INDEX},
                               params=params, limit=MAX_MANIFEST_BYTES)
        return answer.content if answer.status_code == 200 else None


def _tls_adapter(context: ssl.SSLContext) -> requests.adapters.HTTPAdapter:
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


def _platform_entry(index: dict[str, Any], platform: str, ref: str) -> dict[str, Any]:
    """The ``manifests`` entry of an index for ``platform`` (``os/arch[/variant]``)."""
    want_os, _, rest = platform.partition("/")
    want_arch, _, want_variant = rest.partition("/")
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise ValueError("the index has no manifests list")
    offered = []
    for entry in entries:
        plat = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(plat, dict):
            continue
        offered.append("/".join(str(plat.get(k)) for k in ("os", "architecture", "variant")
                                if plat.get(k)))
        if plat.get("os") == want_os and plat.get("architecture") == want_arch and (
                not want_variant or plat.get("variant") == want_variant):
            return dict(entry)
    raise BuildError(f"Image {ref} is an index without a {platform} manifest (it has: "
                     f"{clip_text(', '.join(offered) or 'none', 200)}).",
                     hint="Pick a base built for the trial's platform, by the digest of that "
                          "platform's manifest or of an index that has it.")


def _descriptor(value: Any) -> tuple[str, int, str]:
    """``(digest, size, mediaType)`` of a descriptor; ValueError when malformed."""
    if not isinstance(value, dict):
        raise ValueError("a descriptor is not an object")
    digest, size = value.get("digest"), value.get("size")
    media = value.get("mediaType", MEDIA_LAYER_GZIP)
    if not (isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 71
            and all(c in "0123456789abcdef" for c in digest[7:])):
        raise ValueError(f"descriptor digest {str(digest)[:80]!r} is not sha256:<64 hex>")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"descriptor size {str(size)[:40]!r} is not a byte count")
    if not isinstance(media, str):
        raise ValueError("descriptor mediaType is not a string")
    return digest, size, media


def fetch_docs(registry_url: str, ref: str, *, layers: bool = True,
               platform: str = "linux/amd64", ca_cert: Path | None = None) -> ImageDocs:
    """The image ``ref`` (``HOST/REPO[:TAG]@sha256:<digest>``) as stored in the registry at
    ``registry_url``: its exact manifest and config bytes, and its layers.

    An OCI index or Docker manifest list is resolved to the ``platform`` manifest
    (``os/arch[/variant]``); OCI and Docker v2 manifests are read. With ``layers`` each
    layer's bytes are downloaded and checked; without, the :class:`LayerBlob` objects carry
    ``data=None``, the descriptor's size and media type and ``source`` = ``HOST/REPO`` of
    the registry read (nothing but manifests and config is downloaded). Raises
    :class:`BuildError` (exit 8) for a reference without a digest, a registry failure or a
    document that is not a well-formed image.
    """
    image = parse_pinned(ref)
    repo, digest = image.repository, image.required_digest
    with Registry(registry_url, ca_cert=ca_cert) as reg:
        try:
            manifest, media = reg.fetch_manifest(repo, digest)
            doc = load_json(manifest, BuildError, label=f"Registry {reg.base}: {ref}")
            if media in INDEX_TYPES or (isinstance(doc, dict) and "manifests" in doc
                                        and "layers" not in doc):
                entry = _platform_entry(doc, platform, ref)
                manifest, media = reg.fetch_manifest(repo, _descriptor(entry)[0])
                doc = load_json(manifest, BuildError, label=f"Registry {reg.base}: {ref}")
                if media in INDEX_TYPES:
                    raise ValueError(f"the {platform} entry is itself an index")
            config_digest = _descriptor(doc["config"])[0]
            config = reg.get_blob(repo, config_digest)
            diff_ids = load_json(config, BuildError, label=f"Registry {reg.base}: the "
                                 f"config of {ref}")["rootfs"]["diff_ids"]
            descriptors = [_descriptor(d) for d in doc["layers"]]
            if not isinstance(diff_ids, list) or len(diff_ids) != len(descriptors):
                raise ValueError("the config's diff_ids do not match the manifest's layers")
            source = f"{reg.host}/{repo}"
            blobs = tuple(
                LayerBlob(data=reg.get_blob(repo, layer_digest) if layers else None,
                          digest=layer_digest, diff_id=str(diff_id), media_type=layer_media,
                          source=source, length=size)
                for (layer_digest, size, layer_media), diff_id in zip(descriptors, diff_ids,
                                                                      strict=True))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise BuildError(f"Registry {reg.base}: {ref} is not a well-formed OCI or Docker "
                             f"image ({clip_text(str(exc))}).") from None
    return ImageDocs(layers=blobs, config=config, manifest=manifest)
