"""pin serve's dashboard in a real browser: Debian's chromium, headless, driven by
Playwright's Python package with the system browser (``executable_path``; Playwright's own
browser download is never used), against a real ``pin serve`` process (SQLite, 127.0.0.1).
The lock is pushed with ``pin lock push``, reports arrive over HTTP: a matching report of
the recorded MI300X host, then a drifting one from ``pin verify --report-to`` (its firmware
changed): the fleet page shows that host as drifting with its reason, filtering by status
through the form works, no console error, no request leaves the server, and a
screenshot of the fleet page is a PNG. ``PIN_UPDATE_SCREENSHOT=1`` also writes it to
docs/dashboard.png (README shows it): ``PIN_UPDATE_SCREENSHOT=1 pytest
tests/integration/test_dashboard_browser.py``; a plain run leaves the tree unchanged.

Without chromium (or the playwright package) these tests skip, unless ``CI=true``, which
makes a missing browser a failure (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium
from tests.support.hosts import HostCopy

SHOT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"
HOST = "mi300x-node-03"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def _post(url: str, path: str, body: bytes, token: str) -> Any:
    """POST ``body`` (JSON) to the service with a bearer token; its JSON answer."""
    req = urllib.request.Request(url + path, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def _get(url: str, path: str) -> Any:
    with urllib.request.urlopen(url + path, timeout=30) as resp:
        return json.load(resp)


@pytest.fixture()
def fleet(tmp_path: Path, host_copy: HostCopy) -> Iterator[str]:
    """A real ``pin serve`` (SQLite) holding the lock frozen from the recorded MI300X host,
    pushed with ``pin lock push --assign-group mi300x``, and five hosts' reports posted over
    HTTP: four match (the recorded snapshot), and one reports matching first, then drifting
    through ``pin verify --report-to`` on a copy of the recorded host whose GPU 0 CP_MEC1
    firmware changed (as tests/integration/test_slurm.py does). The service's URL.
    """
    from tests.support.cli import pin
    from tests.support.serve import (
        admin_token,
        mi300x_lock_bytes,
        mi300x_snapshot,
        serving,
        snapshot_bytes,
    )

    db = f"sqlite:///{tmp_path / 'pin.db'}"
    lock = tmp_path / "site.lock"
    lock.write_bytes(mi300x_lock_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIN_")}
    with serving(db) as (url, _, _proc):
        publish, report = admin_token(db, "publish"), admin_token(db, "report")
        pushed = pin("lock", "push", str(lock), "--to", url, "--assign-group", "mi300x",
                     env=env | {"PIN_TOKEN": publish})
        assert pushed.returncode == 0, pushed.stderr
        good = snapshot_bytes(mi300x_snapshot())
        for host in (*(f"mi300x-node-0{n}" for n in (1, 2, 4, 5)), HOST):  # HOST matching
            answer = _post(url, f"/api/v1/hosts/{host}/reports?group=mi300x", good, report)
            assert answer["result"] == "match", answer
        recorded = host_copy("mi300x-rocm7.1")  # then drifting
        fw = recorded / "out" / "amd-smi-firmware.txt"
        fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
        done = pin("verify", str(lock), "--root", str(recorded / "root"), "--replay",
                   str(recorded / "commands.toml"), "--report-to", url, "--report-host", HOST,
                   "--report-group", "mi300x", env=env | {"PIN_TOKEN": report})
        assert done.returncode == 6, done.stderr
        assert f"reported to {url}: drift (pin: firmware" in done.stdout + done.stderr
        yield url


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


def test_drifting_host_shows_with_its_reason(browser: Any, fleet: str) -> None:
    url = fleet
    status = _get(url, f"/api/v1/hosts/{HOST}")["host"]
    assert status["result"] == "drift" and status["reason"]
    page, errors, off = _open(browser, url)
    row = page.locator("#fleet tbody tr", has_text=HOST)
    assert row.count() == 1
    assert row.get_attribute("class") == "drift"
    assert "drift" in row.locator(".b").inner_text()
    assert status["reason"] in row.inner_text() and "firmware" in status["reason"]
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
