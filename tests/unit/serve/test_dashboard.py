"""pin serve's dashboard: the page bodies as pure functions of records (escaping hostile
names and reasons, filters, empty fleet, ages), and the routes over a real Store (SQLite
and PostgreSQL): fleet filters and counts, host history, locks with their artefacts, HTML
404/400/401 pages, the Content-Security-Policy header.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from pinning.serve.auth import CACHE_TTL_S, Authenticator
from pinning.serve.config import ServeConfig
from pinning.serve.dashboard import make_router
from pinning.serve.dashboard.fleet import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Filters,
    render_fleet,
    render_host,
)
from pinning.serve.dashboard.locks import cost_decision, render_lock, render_locks, request_line
from pinning.serve.dashboard.page import CSP, age, frame, t, when
from pinning.serve.dashboard.router import store_read_check
from pinning.serve.storage.records import (
    ArtefactInfo,
    FleetSummary,
    HostStatus,
    LockInfo,
    NewReport,
    ReasonCount,
    ReportRecord,
)
from pinning.serve.storage.store import Store

ROOT = Path(__file__).resolve().parents[3]
LOCK_A = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
LOCK_B = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
HASH = "sha256:" + "ab" * 32
HOSTILE = "<script>alert(1)</script>"
EVIL = '"><img src=x onerror=alert(2)>'


def status(host: str, result: str = "match", **kw: object) -> HostStatus:
    fields: dict[str, object] = {
        "host": host, "group": "rack1", "lock_hash": HASH, "result": result,
        "reason": None, "reasons": [], "gpu": "mi300x",
        "received_at": NOW - dt.timedelta(minutes=5), "report_id": 1}
    fields.update(kw)
    return HostStatus.model_validate(fields)


def counts(match: int = 0, drift: int = 0, unknown: int = 0) -> dict[str, int]:
    return {"match": match, "drift": drift, "unknown": unknown}


# Pure rendering


def test_hostile_values_are_escaped_everywhere() -> None:
    bad = status(HOSTILE, "drift", group=EVIL, gpu=HOSTILE, reason="pin: " + HOSTILE,
                 reasons=[EVIL])
    body = render_fleet([bad], total=1, counts=counts(drift=1),
                        filters=Filters(gpu=EVIL, group=HOSTILE), locks=[HASH], now=NOW)
    page = frame(HOSTILE, body)
    assert "<script" not in page and "<img" not in page and "onerror=alert(2)>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'value="&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"' in page  # the GPU filter
    assert "/hosts/%3Cscript%3Ealert%281%29%3C%2Fscript%3E" in page  # the host's link
    host = render_host(HOSTILE, bad, [], now=NOW)
    assert "<script" not in host and "<img" not in host


def test_hidden_characters_are_shown_as_escapes() -> None:
    assert t("a\u202eb\x1b[2Jc") == "a\\u202eb\\x1b[2Jc"
    assert t(None) == "" and t(3) == "3"


def test_fleet_rows_counts_and_reasons() -> None:
    hosts = [status("n1"), status("n2", "drift", reason="pin: firmware[0] 1.2!=1.3",
                                  reasons=["firmware"]), status("n3", "unknown", gpu=None)]
    body = render_fleet(hosts, total=3, counts=counts(1, 1, 1), filters=Filters(),
                        locks=[HASH], now=NOW)
    assert body.count('<tr class="') == 3
    assert '<tr class="drift">' in body and "pin: firmware[0] 1.2!=1.3" in body
    assert 'title="firmware"' in body
    assert f'href="/locks/{HASH}"' in body and ">abababababab<" in body
    assert "2026-05-01 11:55:00Z" in body and "5 min ago" in body
    assert "<strong>3</strong>hosts" in body and "Hosts 1\u20133 of 3" in body
    assert "No host" not in body and 'rel="next"' not in body


def test_empty_fleet_and_no_match_say_so() -> None:
    empty = render_fleet([], total=0, counts=counts(), filters=Filters(), locks=[], now=NOW)
    assert "No host has reported yet." in empty and '<tr class="' not in empty
    none = render_fleet([], total=0, counts=counts(match=4), filters=Filters(status="drift"),
                        locks=[HASH], now=NOW, note="a note <b>")
    assert "No host matches these filters." in none and "a note &lt;b&gt;" in none
    assert '<option value="drift" selected>' in none


def test_pages_link_previous_and_next_keeping_filters() -> None:
    hosts = [status(f"n{i}") for i in range(10)]
    body = render_fleet(hosts, total=35, counts=counts(35), now=NOW, locks=[HASH],
                        filters=Filters(status="match", gpu="mi300x", limit=10, offset=10))
    assert "Hosts 11\u201320 of 35" in body
    assert 'href="?status=match&amp;gpu=mi300x&amp;limit=10" rel="prev"' in body
    assert 'href="?status=match&amp;gpu=mi300x&amp;limit=10&amp;offset=20" rel="next"' in body
    assert Filters().params() == {"lock": None, "status": None, "gpu": None, "group": None,
                                  "limit": None, "offset": None}


def test_the_default_page_lists_500_and_links_the_rest() -> None:
    """A page of 500 rows loads in chromium in a fraction of a second; 10,000 do not."""
    assert DEFAULT_LIMIT == 500 and Filters().limit == DEFAULT_LIMIT
    hosts = [status(f"n{i:04d}") for i in range(DEFAULT_LIMIT)]
    body = render_fleet(hosts, total=1200, counts=counts(1200), now=NOW, locks=[HASH],
                        filters=Filters())
    assert "Hosts 1–500 of 1,200" in body and body.count("<tr class=") == 500
    assert 'href="?offset=500" rel="next"' in body
    every = Filters(limit=MAX_LIMIT)
    assert every.params()["limit"] == MAX_LIMIT


def test_host_history_newest_first() -> None:
    history = [ReportRecord(id=i, host="n1", group=None, lock_hash=HASH, snapshot_hash=None,
                            result=r, reason="pin: kmd" if r == "drift" else None, reasons=[],
                            gpu=None, received_at=NOW - dt.timedelta(hours=i))
               for i, r in ((2, "drift"), (1, "match"))]
    body = render_host("n1", status("n1", "drift", reason="pin: kmd", reasons=["kmd"]),
                       history, now=NOW)
    assert body.index(">2</td>") < body.index(">1</td>")
    assert "<li>kmd</li>" in body and "5 min ago" in body and "History (2 newest)" in body
    assert "History (0 newest)" in render_host("n2", None, [], now=NOW)


def test_ages_and_times() -> None:
    assert age(NOW - dt.timedelta(seconds=42), NOW) == "42 s ago"
    assert age(NOW - dt.timedelta(days=3, hours=5), NOW) == "3 d ago"
    assert age(NOW + dt.timedelta(seconds=5), NOW) == "in the future"
    assert age(None, NOW) == "" and when(None) == ""
    assert age(dt.datetime(2026, 5, 1, 11, 0), NOW) == "1 h ago"  # naive: UTC
    cet = dt.timezone(dt.timedelta(hours=2))
    assert when(dt.datetime(2026, 5, 1, 14, 0, tzinfo=cet)) == "2026-05-01 12:00:00Z"


def test_locks_and_lock_page() -> None:
    info = LockInfo(content_hash=HASH, request={"gpu": "mi300x", "frameworks": [
        "pytorch==2.7"], "rocm": "7.1.1"}, size=4096, created_at=NOW)
    summary = FleetSummary(lock_hash=HASH, hosts=counts(7, 2, 0),
                           top_reasons=[ReasonCount(reason=HOSTILE, hosts=2)])
    listing = render_locks([info], {HASH: summary}, now=NOW)
    assert "gpu mi300x \u00b7 pytorch==2.7 \u00b7 rocm 7.1.1" in listing
    assert '<td class="r">7</td><td class="r">2</td><td class="r">0</td>' in listing
    assert "No lock is stored" in render_locks([], {}, now=NOW)
    acc = ArtefactInfo(kind="acceptance", id=4, lock_hash=HASH, received_at=NOW, passed=True,
                       signature_verified=True, image_digest="sha256:" + "cd" * 32)
    aud = ArtefactInfo(kind="audit", id=5, lock_hash=HASH, received_at=NOW,
                       totals={"ready": 3, "port": 1})
    cost = ArtefactInfo(kind="cost", id=6, lock_hash=HASH, received_at=NOW)
    body = render_lock(info, summary, [acc], [aud], [(cost, "port")], now=NOW)
    assert "\u2713 passed" in body and "<td>yes</td>" in body
    assert "ready 3 \u00b7 port 1" in body and "<td>port</td>" in body
    assert f'href="/api/v1/locks/{HASH}" download' in body
    assert "&lt;script&gt;" in body and "<script" not in body
    assert f'href="/?lock={HASH.replace(":", "%3A")}&amp;status=drift"' in body
    bare = render_lock(info, None, [], [], [], now=NOW)
    assert "No acceptance result" in bare and "No audit" in bare and "No cost verdict" in bare
    assert request_line({"gpu": "h200", "frameworks": [], "cuda": "13.0"}).endswith("cuda 13.0")


def test_cost_decision_reads_the_envelope_or_the_report() -> None:
    report = {"verdict": {"decision": "stay", "reasons": []}}
    assert cost_decision(json.dumps({"result": report}).encode()) == "stay"
    assert cost_decision(json.dumps(report).encode()) == "stay"
    assert cost_decision(b"not json") is None and cost_decision(None) is None
    assert cost_decision(b'{"verdict": null}') is None and cost_decision(b"[1]") is None


# Routes over a real store (SQLite and PostgreSQL)


@pytest.fixture()
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url, clock=lambda: NOW - dt.timedelta(minutes=3))
    try:
        yield s
    finally:
        s.close()


def client(store: Store, config: ServeConfig | None = None, **kw: Any) -> TestClient:
    app = FastAPI()
    app.include_router(make_router(store, config, clock=lambda: NOW, **kw))
    return TestClient(app)


def add_report(store: Store, host: str, lock_hash: str, **fields: Any) -> int:
    """Store one report of ``host`` (a batch of one); its id."""
    fields["reasons"] = tuple(fields.get("reasons", ()))
    return store.add_reports([NewReport(host, lock_hash, **fields)])[0]


def fill(store: Store) -> tuple[str, str]:
    a = store.store_lock(LOCK_A.read_bytes())
    b = store.store_lock(LOCK_B.read_bytes())
    add_report(store, "mi-1", a, result="match", group="amd", gpu="mi300x")
    add_report(store, "mi-2", a, result="drift", group="amd", gpu="mi300x",
                      reason="pin: firmware[0] 1.2!=1.3", reasons=["firmware"])
    add_report(store, HOSTILE, a, result="drift", group="amd", gpu="mi300x",
                      reason="pin: " + EVIL, reasons=["kmd"])
    add_report(store, "nv-1", b, result="match", group="nvidia", gpu="h200")
    add_report(store, "nv-1", b, result="unknown", group="nvidia", gpu="h200")
    return a, b


def test_fleet_page_lists_filters_and_counts(store: Store) -> None:
    a, b = fill(store)
    c = client(store)
    r = c.get("/")
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    assert r.headers["content-type"].startswith("text/html")
    assert r.text.count('<tr class="') == 4 and "<script" not in r.text and "<img" not in r.text
    assert 'id="count-drift"><strong>2</strong>' in r.text
    drift = c.get("/", params={"status": "drift"}).text
    assert drift.count('<tr class="drift">') == 2 and "mi-1" not in drift
    assert "pin: firmware[0] 1.2!=1.3" in drift
    nv = c.get("/", params={"gpu": "h200"}).text
    assert nv.count('<tr class="') == 1 and '<tr class="unknown">' in nv
    assert c.get("/", params={"group": "amd", "status": "match"}).text.count('<tr class="') == 1
    by_prefix = c.get("/", params={"lock": b.removeprefix("sha256:")[:12]}).text
    assert by_prefix.count('<tr class="') == 1 and f'<option value="{b}" selected>' in by_prefix
    unknown = c.get("/", params={"lock": "0" * 12}).text
    assert "No stored lock matches" in unknown and '<tr class="' not in unknown
    paged = c.get("/", params={"limit": 2, "offset": 1}).text
    assert paged.count('<tr class="') == 2 and "Hosts 2\u20133 of 4" in paged
    assert c.get("/", params={"lock": a}).text.count('<tr class="') == 3


def test_fleet_page_of_an_empty_store(store: Store) -> None:
    r = client(store).get("/")
    assert r.status_code == 200 and "No host has reported yet." in r.text


@pytest.mark.parametrize("query", ["status=broken", "limit=0", f"limit={MAX_LIMIT + 1}",
                                   "offset=-1", "limit=\u00b2"])
def test_bad_query_is_an_html_400(store: Store, query: str) -> None:
    r = client(store).get("/?" + query)
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert 'id="error">Bad request' in r.text


def test_host_page_and_404(store: Store) -> None:
    fill(store)
    c = client(store)
    r = c.get("/hosts/nv-1")
    assert r.status_code == 200 and r.text.count("<td class=r>") == 2
    assert r.text.index("unknown</span>") < r.text.index("match</span>")  # newest first
    hostile = c.get("/hosts/%3Cscript%3Ealert%281%29%3C%2Fscript%3E")
    assert hostile.status_code == 200 and "<script" not in hostile.text
    assert "&lt;script&gt;" in hostile.text
    missing = c.get("/hosts/nope")
    assert missing.status_code == 404 and "No host named &#x27;nope&#x27;" in missing.text
    assert missing.headers["content-security-policy"] == CSP


def test_locks_pages(store: Store) -> None:
    a, _ = fill(store)
    store.add_acceptance(a, b'{"passed": true}', passed=True, signature_verified=False)
    store.add_audit(b"{}", {"ready": 4, "blocked": 1}, lock_hash=a)
    store.add_cost_verdict(json.dumps({"result": {"verdict": {"decision": "port"}}}).encode(),
                           lock_hash=a)
    c = client(store)
    listing = c.get("/locks").text
    assert listing.count("<tr><td><a href=\"/locks/") == 2 and "gpu mi300x" in listing
    page = c.get(f"/locks/{a}")
    assert page.status_code == 200 and "\u2713 passed" in page.text
    assert "ready 4 \u00b7 blocked 1" in page.text and "<td>port</td>" in page.text
    assert "<td>firmware</td>" in page.text and f'href="/api/v1/locks/{a}"' in page.text
    assert c.get(f"/locks/{a.removeprefix('sha256:')[:12]}").status_code == 200
    for ref in ("sha256:" + "0" * 64, "abc", HOSTILE):
        missing = c.get(f"/locks/{ref}")
        assert missing.status_code == 404 and "<script" not in missing.text


def test_reads_token_guards_every_page(store: Store) -> None:
    fill(store)
    token_id, secret = store.create_token("report", host="mi-1")
    seconds = [0.0]
    auth = Authenticator(store, clock=lambda: seconds[0])
    c = client(store, ServeConfig(reads="token"),
               read_check=lambda s: s is not None and auth.lookup(s) is not None)
    for path in ("/", "/hosts/mi-1", "/locks"):
        refused = c.get(path)
        assert refused.status_code == 401 and 'realm="pin"' in refused.headers["www-authenticate"]
        assert "Token needed" in refused.text and "mi-1" not in refused.text
        assert c.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.get(path, headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    store.revoke_token(token_id)
    assert c.get("/", headers={"Authorization": f"Bearer {secret}"}).status_code == 200  # cached
    seconds[0] += CACHE_TTL_S + 1
    assert c.get("/", headers={"Authorization": f"Bearer {secret}"}).status_code == 401


def test_default_read_check_takes_live_tokens_only(store: Store) -> None:
    _, secret = store.create_token("publish")
    check = store_read_check(store)
    assert check(secret) and not check(None) and not check("") and not check("pin_nope")
    assert client(store, ServeConfig()).get("/").status_code == 200
