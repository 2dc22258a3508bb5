"""Bearer tokens for pin serve: who may write (and, with ``reads = "token"``, read).

A request carries ``Authorization: Bearer <secret>`` (RFC 6750,
https://www.rfc-editor.org/rfc/rfc6750, read 2026-12-01). Scopes: ``report`` (POST host
reports), ``publish`` (locks, assignments, acceptance results, audits, cost verdicts),
``admin`` (everything). A token bound to a host may only post that host's reports. Token
lookups (the store keeps only the secret's sha256) are cached for at most
:data:`CACHE_TTL_S` seconds, so a revoked token stops working within that time; a cached
token costs a dictionary lookup, no hashing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pinning.serve.errors import ApiError

if TYPE_CHECKING:
    from pinning.serve.storage.records import TokenInfo
    from pinning.serve.storage.store import Store

__all__ = ["CACHE_TTL_S", "READ", "Authenticator", "Need"]

#: The longest a token lookup is reused, in seconds (revocation takes effect within it).
CACHE_TTL_S = 5.0
#: The most cached lookups; past it the cache is emptied (bounds memory under guessing).
CACHE_LIMIT = 10_000
Need = Literal["report", "publish", "admin", "read"]
#: The pseudo-scope of a read under ``reads = "token"``: any valid token.
READ: Need = "read"
_CREATE = "Create one with `pin serve token create --scope SCOPE` on the server's database."


class Authenticator:
    """Checks bearer tokens against ``store`` (``store.token_info(secret)``), caching
    each lookup ``ttl_s`` seconds by ``clock`` (monotonic seconds).
    """

    def __init__(self, store: Store, *, ttl_s: float = CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store, self.ttl_s, self.clock = store, ttl_s, clock
        self._cache: dict[str, tuple[float, TokenInfo | None]] = {}

    def lookup(self, secret: str) -> TokenInfo | None:
        """The live token of ``secret`` (``None``: unknown or revoked), cached."""
        now = self.clock()
        hit = self._cache.get(secret)
        if hit is not None and hit[0] > now:
            return hit[1]
        info = self.store.token_info(secret)
        if info is not None and info.revoked_at is not None:
            info = None
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[secret] = (now + self.ttl_s, info)
        return info

    def require(self, authorization: str | None, need: Need,
                host: str | None = None) -> TokenInfo:
        """The token of the ``Authorization`` header value ``authorization`` when it allows
        ``need`` (for ``host``, a report's host). Raises :class:`ApiError` 401 when there is
        no bearer token or it is unknown or revoked, 403 when its scope does not allow
        ``need`` or it is bound to another host.
        """
        if not authorization:
            raise ApiError(401, "This request needs a bearer token (Authorization: Bearer "
                                "<secret>) and none was sent.", _CREATE)
        scheme, _, secret = authorization.partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise ApiError(401, "The Authorization header is not a bearer token "
                                "(expected `Bearer <secret>`).", _CREATE)
        info = self.lookup(secret)
        if info is None:
            raise ApiError(401, "The bearer token is unknown or revoked.", _CREATE)
        if need != READ and info.scope not in (need, "admin"):
            raise ApiError(403, f"Token {info.id} has scope {info.scope!r}; this request "
                                f"needs scope {need!r} (or admin).",
                           f"Use a token created with `pin serve token create --scope {need}`.")
        if info.host is not None and need != READ and host != info.host:
            raise ApiError(403, f"Token {info.id} is bound to host {info.host!r}; it may only "
                                f"post that host's reports, not "
                                f"{'a request for host ' + repr(host) if host else 'this'}.",
                           "Give each node its own host-bound report token.")
        return info
