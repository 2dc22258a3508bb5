"""Requests to a registry and the sign-in they need: one request, a ``401`` answered once
through its ``WWW-Authenticate`` challenge (Basic, or a bearer token from the token server),
credentials sent only to the registry's own origin, error answers read with a bound.

The token flow is distribution/distribution ``docs/spec/auth/token.md`` and ``oauth.md``
(date not recorded). Failures are :class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pinning.errors import BuildError
from pinning.oci.address import cert_error, url_origin
from pinning.oci.challenge import parse_challenges
from pinning.oci.connection import Connection
from pinning.oci.reference import is_loopback
from pinning.oci.text import HINT, clip_text, error_body, read_body, shown_url
from pinning.util.jsonread import load_json

if TYPE_CHECKING:
    import requests

MAX_TOKEN_BYTES = 1024 * 1024
"""The largest token-server answer pin reads (pin's bound; tokens are a few KiB)."""


@dataclass(frozen=True)
class Answer:
    """A registry's answer: the HTTP status, the headers and the body bytes (read whole)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes


def checked_realm(realm: str, where: str) -> str:
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
        raise BuildError(f"{where}: the token server {shown_url(realm)} is plain HTTP on a host "
                         "that is not loopback; pin sends no credentials there.",
                         hint="Serve the token server over HTTPS.")
    return realm


def token_of(resp: requests.Response, where: str) -> str:
    """The ``token`` (or ``access_token``) of a token server's JSON answer."""
    import requests

    try:
        body = read_body(resp, MAX_TOKEN_BYTES, where)
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


class Transport(Connection):
    """A :class:`~pinning.oci.connection.Connection` that sends requests, signing in on a
    challenge (see :meth:`_send`).
    """

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
            where = f"Registry {self.base}: {method} {shown_url(resp.url or url)}"
            try:
                return Answer(status_code=resp.status_code, headers=resp.headers,
                              content=read_body(resp, limit, where))
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
        own = "://" not in url or url_origin(full) == url_origin(self._base_url())
        where = f"Registry {self.base}: {method} {shown_url(full)}"
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
                if cert_error(exc) is not None:
                    raise self._tls_error(where, exc) from None
                raise BuildError(f"{where} failed: {clip_text(str(exc))}.", hint=HINT) from None
            if resp.status_code in ok:
                return resp
            if resp.status_code == 401 and not own:
                resp.close()
                # http.host: distribution's configuration reference, cited in upload_location.
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
                body = error_body(resp, self._secrets())
            finally:
                resp.close()
            if resp.status_code == 401:
                raise self._refused(where, body, push)
            if resp.status_code == 403:
                raise self._denied(where, body, push)
            raise BuildError(f"{where} answered {resp.status_code}: {body}", hint=HINT)
        raise AssertionError("unreachable")  # pragma: no cover

    def _sign_in(self, header: str, key: str, scopes: list[str], sent: str | None,
                 where: str) -> None:
        """Answer a ``401``'s challenge: remember Basic credentials, or fetch a token for
        ``scopes`` (plus the challenge's own). Raises BuildError when pin has no credentials
        the challenge can use or they were just refused.
        """
        challenges = parse_challenges(header)
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

        realm = checked_realm(params.get("realm", ""), where)
        wanted = list(scopes)
        wanted += [s for s in dict.fromkeys(params.get("scope", "").split()) if s not in scopes]
        service = params.get("service")
        creds = self._credentials()
        token_where = f"Registry {self.host}: token server {shown_url(realm)}"
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
            if cert_error(exc) is not None:
                raise self._tls_error(token_where, exc) from None
            raise BuildError(f"{token_where} failed: {clip_text(str(exc))}.",
                             hint=HINT) from None
        with resp:
            if resp.status_code in (401, 403):
                if creds is None:
                    raise self._no_credentials(where)
                raise self._refused(token_where, error_body(resp, self._secrets()), False)
            if resp.status_code != 200:
                raise BuildError(f"{token_where} answered {resp.status_code}: "
                                 f"{error_body(resp, self._secrets())}", hint=HINT)
            return token_of(resp, token_where)

    def ping(self) -> None:
        """Raise :class:`BuildError` unless ``GET /v2/`` answers 200 (signing in if asked)."""
        self._request("GET", "/v2/", (200,))

