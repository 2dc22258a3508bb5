"""The environment the uv-backed audit tests run uv in."""

from __future__ import annotations

from pathlib import Path

import pytest


def isolate_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private uv cache (so every test reads the index) and no proxy for 127.0.0.1."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
