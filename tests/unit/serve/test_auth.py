"""pin serve's bearer tokens: scopes, host binding, the <= 5 s cache and revocation."""

from __future__ import annotations

import pytest

from pinning.serve.auth import CACHE_TTL_S, Authenticator, Need
from pinning.serve.errors import ApiError
from pinning.serve.storage import Store
from pinning.serve.storage.records import TokenInfo


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refused(auth: Authenticator, header: str | None, need: str, host: str | None = None) -> int:
    with pytest.raises(ApiError) as err:
        auth.require(header, need, host)  # type: ignore[arg-type]
    return err.value.status


def test_scopes_and_host_binding(store: Store) -> None:
    auth = Authenticator(store)
    _, report = store.create_token("report")
    _, bound = store.create_token("report", "node-1")
    _, publish = store.create_token("publish")
    _, admin = store.create_token("admin")
    assert auth.require(f"Bearer {report}", "report", "any").scope == "report"
    assert auth.require(f"bearer {bound}", "report", "node-1").host == "node-1"
    assert refused(auth, f"Bearer {bound}", "report", "node-2") == 403
    assert refused(auth, f"Bearer {bound}", "publish") == 403
    assert refused(auth, f"Bearer {report}", "publish") == 403
    assert refused(auth, f"Bearer {publish}", "report", "n") == 403
    assert auth.require(f"Bearer {publish}", "publish").scope == "publish"
    needs: tuple[Need, ...] = ("report", "publish", "admin", "read")
    for need in needs:
        assert auth.require(f"Bearer {admin}", need, "n").scope == "admin"
    assert auth.require(f"Bearer {bound}", "read").id  # any valid token may read
    assert refused(auth, None, "read") == 401
    assert refused(auth, "Basic dXNlcjpwYXNz", "report") == 401
    assert refused(auth, "Bearer ", "report") == 401
    assert refused(auth, "Bearer pin_unknown", "read") == 401


def test_cache_lasts_at_most_the_ttl_then_revocation_applies(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    auth = Authenticator(store, clock=clock)
    token_id, secret = store.create_token("report")
    calls = []
    real = store.token_info

    def counted(s: str) -> TokenInfo | None:
        calls.append(s)
        return real(s)

    monkeypatch.setattr(store, "token_info", counted)
    header = f"Bearer {secret}"
    auth.require(header, "report", "n")
    auth.require(header, "report", "n")
    assert len(calls) == 1  # the second from the cache
    assert store.revoke_token(token_id)
    clock.now += CACHE_TTL_S - 0.1
    auth.require(header, "report", "n")  # still cached (within 5 s)
    clock.now += 0.2
    assert refused(auth, header, "report", "n") == 401
    assert len(calls) == 2
    assert CACHE_TTL_S <= 5.0
