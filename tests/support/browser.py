"""Debian's chromium, headless, driven by Playwright's Python package with the system browser
(``executable_path``; Playwright's own browser download is never used), for the browser tests
(tests/integration/test_dashboard_browser.py, tests/integration/test_report_browser.py).

``chromium()`` is a context manager yielding a launched Playwright ``Browser``. Without
chromium (or the playwright package) it skips the test, unless ``CI=true``, which makes a
missing browser a failure (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
#: Headless, no sandbox (tests run as root in CI containers), no GPU, no background traffic.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason} (.ci/run installs Debian's chromium; "
                    "`make install` installs playwright)")
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless chromium (a Playwright ``Browser``), closed on exit; skips (or
    fails under ``CI=true``) when /usr/bin/chromium or the playwright package is missing.
    """
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
