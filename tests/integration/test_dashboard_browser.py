"""pin serve's dashboard in a real browser: Debian's chromium, headless, driven by
Playwright's Python package with the system browser (``executable_path``; Playwright's own
browser download is never used), against a real server (uvicorn on 127.0.0.1) over a real
Store. A matching report of the recorded MI300X host, then a drifting one (its firmware
changed; tests/support/serve.py): the fleet page shows that host as drifting with its reason, filtering by
status through the form works, no console error, no request leaves the server, and a
screenshot of the fleet page is a PNG. ``PIN_UPDATE_SCREENSHOT=1`` also writes it to
docs/dashboard.png (README shows it): ``PIN_UPDATE_SCREENSHOT=1 pytest
tests/integration/test_dashboard_browser.py``; a plain run leaves the tree unchanged.

Without chromium (or the playwright package) these tests skip, unless ``CI=true``, which
makes a missing browser a failure (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.serve.storage.store import Store

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"
HOST = "mi300x-node-03"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason} (.ci/run installs Debian's chromium; "
                    "`make install` installs playwright)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).is_file() and shutil.which(CHROMIUM)):
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _serve(store: Store) -> Iterator[str]:
    """Serve the dashboard over ``store`` with uvicorn on a free loopback port; its URL."""
    import uvicorn
    from fastapi import FastAPI

    from pinning.serve.dashboard import make_router

    app = FastAPI()
    app.include_router(make_router(store))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the dashboard's server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture()
def fleet(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    """A served store holding the lock frozen from the recorded MI300X host and five hosts'
    reports, verified as the service verifies a posted snapshot (``Verifiers``): four
    match, and one reports matching first, then drifting (its firmware changed).
    """
    from pinning.serve.ingest import Verifiers
    from tests.support.serve import (
        drifting,
        mi300x_lock_bytes,
        mi300x_snapshot,
        snapshot_bytes,
    )

    store = Store(f"sqlite:///{tmp_path / 'pin.db'}")
    lock = store.store_lock(mi300x_lock_bytes())
    good = snapshot_bytes(mi300x_snapshot())
    bad = snapshot_bytes(drifting(mi300x_snapshot()))
    verifiers = Verifiers(store)

    def post(host: str, snapshot: bytes) -> None:
        outcome, gpu = verifiers.check_gpu(lock, snapshot, host)
        store.add_report(host, lock, result=outcome.result, reason=outcome.reason,
                         reasons=outcome.reasons, gpu=gpu, group="mi300x")

    for n in (1, 2, 4, 5):
        post(f"mi300x-node-0{n}", good)
    post(HOST, good)  # matching first,
    post(HOST, bad)  # then drifting
    try:
        for url in _serve(store):
            yield url, store
    finally:
        store.close()


def _open(browser: Any, url: str) -> tuple[Any, list[str], list[str]]:
    """A page at ``url``; console errors (and page errors), requests off the server."""
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    errors: list[str] = []
    off: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: off.append(r.url) if not r.url.startswith(url) else None)
    page.goto(url + "/", wait_until="load")
    return page, errors, off


def test_drifting_host_shows_with_its_reason(browser: Any, fleet: tuple[str, Store]) -> None:
    url, store = fleet
    status = store.host_status(HOST)
    assert status is not None and status.result == "drift" and status.reason
    page, errors, off = _open(browser, url)
    row = page.locator("#fleet tbody tr", has_text=HOST)
    assert row.count() == 1
    assert row.get_attribute("class") == "drift"
    assert "drift" in row.locator(".b").inner_text()
    assert status.reason in row.inner_text() and "firmware" in status.reason
    assert page.locator("#fleet tbody tr.match").count() == 4
    assert page.locator("#count-drift strong").inner_text() == "1"
    shot = page.screenshot(full_page=True)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
    if os.environ.get("PIN_UPDATE_SCREENSHOT") == "1":
        from pinning.util.files import atomic_write_bytes

        SHOT.parent.mkdir(exist_ok=True)
        atomic_write_bytes(SHOT, shot)

    page.select_option("select[name=status]", "drift")  # filter through the form
    page.click("form.filter button[type=submit]")
    page.wait_for_load_state("load")
    assert "status=drift" in page.url
    assert page.locator("#fleet tbody tr").count() == 1
    assert page.locator("#fleet tbody tr.drift", has_text=HOST).count() == 1

    page.click(f"#fleet a:text-is('{HOST}')")  # the host's page: its history
    page.wait_for_load_state("load")
    assert page.locator("#history tbody tr").count() == 2
    assert "drift" in page.locator("#history tbody tr").first.inner_text()
    page.click("#status a")  # its lock's page
    page.wait_for_load_state("load")
    assert "firmware" in page.locator("#reasons").inner_text()
    assert errors == [] and off == []
    assert page.locator("script").count() == 0
    page.close()
