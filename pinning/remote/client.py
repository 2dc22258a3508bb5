"""The HTTP client of a pin service (``pin serve``, API v1: the contract is the service's
``/openapi.json``).

:class:`ServiceClient` sends exact bytes (a lock's TOML, a snapshot's or a result's JSON),
``Authorization: Bearer <token>`` when it has a token, ``User-Agent: pin/<version>``; it
follows no redirect and reads at most :data:`MAX_ANSWER_BYTES` of an answer. Every failure
is a :class:`~pinning.errors.ServiceError` (exit 13) naming the service (credentials in its
URL masked) and, when the service answered with its JSON error body (``{"error": {"status",
"code", "message", "hint"}}``), quoting its message and hint; another body is quoted
bounded (:data:`QUOTE_CHARS` characters, control characters removed). The token never
appears in a message.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from pinning import __version__
from pinning.errors import ServiceError, UsageError
from pinning.util.jsonread import load_json
from pinning.util.text import redact

if TYPE_CHECKING:
    import requests

__all__ = ["API", "DEFAULT_TIMEOUT_S", "MAX_ANSWER_BYTES", "NAME", "NAME_RULE", "QUOTE_CHARS",
           "SITE_CONFIG", "ServiceClient", "is_loopback", "is_name", "service_label"]

#: Where the JSON API lives under the service's base URL.
API = "/api/v1"
#: Bound on each connect and each read, in seconds, unless the caller gives one.
DEFAULT_TIMEOUT_S = 10.0
#: The most bytes of an answer pin reads (a lock, a JSON answer): 64 MiB.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: How much of an answer that is not the service's JSON error a message quotes.
QUOTE_CHARS = 200
#: A host or group name as the service accepts it in a path (the same rule as
#: ``pinning.serve.api.context.NAME`` and ``check_name``; a test holds them equal): 1-253
#: (a DNS name's bound, RFC 1035 section 2.3.4, https://www.rfc-editor.org/rfc/rfc1035,
#: read 2026-12-01) letters, digits, ``.``, ``_``, ``-``, not dots alone. Use with
#: ``fullmatch``; see :func:`is_name`.
NAME = re.compile(r"[A-Za-z0-9._-]{1,253}")
#: The rule of :data:`NAME` in words, for messages.
NAME_RULE = "1-253 letters, digits, '.', '_' or '-', not dots alone"
#: Where the site configuration is read from, for messages.
SITE_CONFIG = ("the site configuration (--config FILE where the command has it, else "
               "$PIN_CONFIG, else /etc/pin/config.toml)")
_LOCK_TYPE = "application/toml"
_JSON_TYPE = "application/json"


def service_label(url: str) -> str:
    """``url`` for messages: the ``USER:PASSWORD@`` of its authority replaced by ``***@``
    (``https://***@host/``, :func:`pinning.util.text.redact` with ``mask="***"``); works on
    text ``urlsplit`` refuses. Pure; never raises.
    """
    return redact(url, mask="***")


def is_name(value: str) -> bool:
    """Whether ``value`` is a host or group name the service accepts (:data:`NAME`, not dots
    alone). Pure.
    """
    return NAME.fullmatch(value) is not None and bool(value.strip("."))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host name) is this machine: ``localhost``, 127.0.0.0/8 or
    ``::1``. Pure.
    """
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _clean(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line: control characters dropped, blanks squeezed, at most ``limit``
    characters (``...`` when cut).
    """
    kept = "".join(ch if ch.isprintable() else " " for ch in text[:limit * 4])
    one = " ".join(kept.split())
    return one if len(one) <= limit else one[:limit].rstrip() + "..."


def _os_reason(exc: BaseException) -> str:
    """The innermost operating-system reason in ``exc``'s chain (``Connection refused``,
    ``Name or service not known``), else the exception's own text, cleaned.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    found = ""
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.strerror:
            found = cur.strerror
        todo.extend(a for a in (cur.__cause__, cur.__context__) if a is not None)
        todo.extend(a for a in cur.args if isinstance(a, BaseException))
        reason = getattr(cur, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
    return _clean(found or str(exc) or type(exc).__name__, 160)


class ServiceClient:
    """A pin service at ``url`` (``http://`` or ``https://``, optionally with a path prefix;
    no query or fragment). ``token``: the bearer secret (``None``: send none; reads may be
    open). ``timeout_s``: bound on the connection and on each read, in seconds.
    ``ca_cert``: a PEM CA bundle for a service whose TLS certificate a private CA signed
    (default: the system's CAs). ``warn`` gets one line when a token is about to travel over
    plain http to a host other than this one (it still does: the user named the URL).
    ``token_source``: where the token came from (:attr:`~pinning.remote.token.Token.source`,
    e.g. ``$PIN_TOKEN``), named when the service refuses it (401/403); never the secret.
    ``config``: the configuration file the timeout came from, named in the timeout's hint
    (``None``: :data:`SITE_CONFIG`).

    Raises :class:`~pinning.errors.UsageError` (exit 2) for a URL that is not one.
    """

    def __init__(self, url: str, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 ca_cert: str | None = None, *,
                 warn: Callable[[str], None] | None = None, token_source: str | None = None,
                 config: str | None = None) -> None:
        self.label = service_label(url)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"{self.label}: not a pin service URL; expected http://HOST[:PORT] "
                             "or https://HOST[:PORT] (optionally with a path).")
        if parts.query or parts.fragment:
            raise UsageError(f"{self.label}: a pin service URL has no ?query or #fragment.")
        try:
            parts.port  # noqa: B018 - validates the port
        except ValueError as exc:
            raise UsageError(f"{self.label}: the port is not a number from 0 to 65535.") from exc
        self.url = url.rstrip("/")
        self.token = token
        self.token_source = token_source
        self.config = config
        self.timeout_s = timeout_s
        self.ca_cert = ca_cert
        self._warned = False
        self._warn = warn
        self._plain_remote = parts.scheme == "http" and not is_loopback(parts.hostname)
        self._session: requests.Session | None = None

    def __repr__(self) -> str:
        return f"ServiceClient({self.label!r})"

    # --- the API ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``GET /api/v1/health``: the service's status, database and version."""
        return self._json("GET", "/health")

    def upload_lock(self, data: bytes) -> dict[str, Any]:
        """``POST /api/v1/locks`` with the lock's exact TOML bytes: the service's answer
        ``{"content_hash", "created", "url"}``.
        """
        answer = self._json("POST", "/locks", body=data, content_type=_LOCK_TYPE)
        if not isinstance(answer.get("content_hash"), str):
            raise self._bad_answer("POST", "/locks", "no content_hash in the answer")
        return answer

    def pull_lock(self, ref: str) -> bytes:
        """``GET /api/v1/locks/{ref}``: the stored lock's exact bytes; ``ref`` is
        ``sha256:<64 hex>`` or a unique prefix of at least 12 hex digits. The caller checks
        the bytes' content hash.
        """
        return self._request("GET", f"/locks/{quote(ref, safe=':')}")

    def assign_host(self, host: str, lock: str) -> dict[str, Any]:
        """``PUT /api/v1/assignments/hosts/{host}``: ``host`` must match ``lock`` (hash or
        prefix); the answer ``{"host", "lock"}``.
        """
        return self._json("PUT", f"/assignments/hosts/{quote(host, safe='')}",
                          body=json.dumps({"lock": lock}).encode(), content_type=_JSON_TYPE)

    def assign_group(self, group: str, lock: str) -> dict[str, Any]:
        """``PUT /api/v1/assignments/groups/{group}``: the answer ``{"group", "lock"}``."""
        return self._json("PUT", f"/assignments/groups/{quote(group, safe='')}",
                          body=json.dumps({"lock": lock}).encode(), content_type=_JSON_TYPE)

    def post_report(self, host: str, snapshot: bytes, group: str | None = None,
                    lock: str | None = None, *, node_only: bool = False) -> dict[str, Any]:
        """``POST /api/v1/hosts/{host}/reports`` with the snapshot's exact JSON bytes
        (``?group=``, ``?lock=`` when given; ``?scope=node`` with ``node_only``, judged as
        ``pin verify --node-only``): the service's verdict ``{"id", "host", "group",
        "lock_hash", "scope", "result", "reason", "reasons", "received_at"}``.
        """
        params = {k: v for k, v in (("group", group), ("lock", lock),
                                    ("scope", "node" if node_only else None)) if v}
        return self._json("POST", f"/hosts/{quote(host, safe='')}/reports", body=snapshot,
                          content_type=_JSON_TYPE, params=params)

    def post_acceptance(self, data: bytes) -> dict[str, Any]:
        """``POST /api/v1/acceptance`` with a result's exact bytes (plain or signed):
        ``{"id", "lock_hash", "passed", "signature_verified"}``.
        """
        return self._json("POST", "/acceptance", body=data, content_type=_JSON_TYPE)

    def post_audit(self, data: bytes, lock: str | None = None) -> dict[str, Any]:
        """``POST /api/v1/audits`` with an audit report's exact JSON bytes: ``{"id",
        "totals"}``.
        """
        return self._json("POST", "/audits", body=data, content_type=_JSON_TYPE,
                          params={"lock": lock} if lock else None)

    def post_cost(self, data: bytes, lock: str | None = None) -> dict[str, Any]:
        """``POST /api/v1/cost-verdicts`` with a cost report's exact JSON bytes: ``{"id"}``."""
        return self._json("POST", "/cost-verdicts", body=data, content_type=_JSON_TYPE,
                          params={"lock": lock} if lock else None)

    def close(self) -> None:
        """Close the connections kept open."""
        if self._session is not None:
            self._session.close()
            self._session = None

    # --- the transport ------------------------------------------------------------------

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        raw = self._request(method, path, **kwargs)
        try:
            answer = load_json(raw, ServiceError, label="the answer")
        except ServiceError as exc:  # not JSON, too deep, a number too long, not UTF-8
            what = exc.message.removeprefix("the answer: ").rstrip(".")
            raise self._bad_answer(method, path, f"{what}: {_clean(self._hide(raw))!r}") \
                from exc
        if not isinstance(answer, dict):
            raise self._bad_answer(method, path, "not a JSON object")
        return answer

    def _bad_answer(self, method: str, path: str, what: str) -> ServiceError:
        return ServiceError(f"{self.label} answered {method} {API}{path} with something pin "
                            f"does not understand ({what}).",
                            hint="Check that the URL is a pin service (pin serve) of a "
                                 "compatible version: GET /api/v1/health names it.")

    def _hide(self, raw: bytes | str) -> str:
        """``raw`` as text with the token (should a service echo it) replaced by ``***``."""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        return text.replace(self.token, "***") if self.token else text

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"User-Agent": f"pin/{__version__}", "Accept": _JSON_TYPE}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
            if self._plain_remote and not self._warned and self._warn is not None:
                self._warned = True
                self._warn(f"pin: warning: sending the token to {self.label} over plain http "
                           "(anyone on the network path can read it); use https://")
        return headers

    def _request(self, method: str, path: str, *, body: bytes | None = None,
                 content_type: str | None = None,
                 params: dict[str, str] | None = None) -> bytes:
        """Send one request; the answer's bytes for a 2xx, else :class:`ServiceError`."""
        import requests

        if self._session is None:
            self._session = requests.Session()
            self._session.trust_env = True  # proxies from the environment, as curl does
        url = f"{self.url}{API}{path}"
        where = f"{method} {API}{path}"
        try:
            resp = self._session.request(
                method, url, data=body, params=params, headers=self._headers(content_type),
                timeout=self.timeout_s, verify=self.ca_cert or True, allow_redirects=False,
                stream=True, auth=_NoAuth())
            try:
                raw = _read_bounded(resp)
            finally:
                resp.close()
        except requests.exceptions.SSLError as exc:
            raise ServiceError(
                f"TLS with {self.label} failed ({where}): {_os_reason(exc)}.",
                hint="If a private CA signed the service's certificate, give it with "
                     "--ca-cert FILE (or PIN_CA_CERT).") from exc
        except requests.exceptions.Timeout as exc:
            raise ServiceError(
                f"{self.label} did not answer {where} within {self.timeout_s:g} s.",
                hint=f"Check that the service is up and not overloaded (GET {API}/health), "
                     f"or raise [report] timeout-s in {self.config or SITE_CONFIG}.") from exc
        except requests.exceptions.RequestException as exc:
            raise ServiceError(
                f"Cannot reach the pin service at {self.label} ({where}): "
                f"{_os_reason(exc)}.",
                hint="Check that pin serve is running and listening where the URL says: it "
                     "binds 127.0.0.1 unless given --host ADDRESS or [serve] host, so other "
                     f"machines reach it only then; try {self.label.rstrip('/')}{API}/health "
                     "(e.g. with curl).") from exc
        except _TooLarge as exc:
            raise self._bad_answer(method, path, f"more than {MAX_ANSWER_BYTES} bytes") \
                from exc
        if 200 <= resp.status_code < 300:
            return raw
        raise self._refused(resp, raw, where)

    def _refused(self, resp: requests.Response, raw: bytes, where: str) -> ServiceError:
        """The :class:`ServiceError` for a non-2xx answer."""
        status = resp.status_code
        if 300 <= status < 400:
            target = service_label(resp.headers.get("Location", "") or "(no Location)")
            return ServiceError(f"{self.label} redirected {where} (HTTP {status}) to "
                                f"{_clean(target)}; pin follows no redirect.",
                                hint="Give the URL the service redirects to.")
        body = _error_body(raw)
        if body is not None:
            message = _clean(self._hide(str(body.get("message") or "")), 1000)
            hint = _clean(self._hide(str(body.get("hint") or "")), 1000) or None
            code = _clean(str(body.get("code") or ""), 40)
            text = f"{self.label} refused {where}: HTTP {status}" + (f" {code}" if code else "")
            text += f": {message}" if message else "."
        else:
            quoted = _clean(self._hide(raw))
            text = (f"{self.label} refused {where}: HTTP {status} {resp.reason or ''}".rstrip()
                    + (f": {quoted!r}" if quoted else "."))
            hint = None
        if status in (401, 403):
            hint = " ".join(h for h in (hint, self._auth_hint(status)) if h)
        return ServiceError(text if text.endswith((".", "!", "?")) else text + ".", hint=hint)

    def _auth_hint(self, status: int) -> str:
        """The advice pin adds to a 401 or 403: where the token came from (never the token)
        and, for 403, how to get one the service accepts.
        """
        if self.token is None:
            return ("No token was sent: give --token-file FILE, or set PIN_TOKEN or "
                    "PIN_TOKEN_FILE (`pin serve token create` makes one).")
        sent = "The token sent" + (f" (from {self.token_source})" if self.token_source else "")
        if status == 401:
            return (f"{sent} is not one the service knows (revoked, mistyped, or made for "
                    "another service's database).")
        return (f"{sent} lacks the scope this needs or is bound to another host name. "
                "Use a token of the needed scope (`pin serve token create --scope "
                "report|publish`, with the same --db/--config as the server), or, for a "
                "host-bound token, report as its host (--report-host NAME; pin reports this "
                "machine's short host name by default, so bind tokens to that name).")


class _TooLarge(Exception):
    """An answer longer than :data:`MAX_ANSWER_BYTES`."""


def _read_bounded(resp: requests.Response) -> bytes:
    """The body of ``resp`` (streamed), at most :data:`MAX_ANSWER_BYTES`; :class:`_TooLarge`
    beyond.
    """
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_content(64 * 1024):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _error_body(raw: bytes) -> dict[str, Any] | None:
    """The ``error`` object of the service's JSON error body, else ``None``."""
    try:
        data = load_json(raw, ServiceError, label="the error body")
    except ServiceError:  # not the service's JSON error body: quoted as it is
        return None
    err = data.get("error") if isinstance(data, dict) else None
    return err if isinstance(err, dict) else None


class _NoAuth:
    """A requests auth that changes nothing, so credentials in the URL or ``~/.netrc``
    never replace pin's bearer header.
    """

    def __call__(self, request: Any) -> Any:
        return request
