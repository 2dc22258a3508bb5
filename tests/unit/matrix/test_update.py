"""``pin matrix update`` (issue 32 §5) against a loopback vendor: AMD's real copies of
2025-03-21 and 2026-01-21 (tests/data/amd-sources, the same bytes as the shared vendor
copies) served by http.server on 127.0.0.1 as the "old" and "new" states of ROCm/ROCm, laid
out as raw.githubusercontent.com is. Pin runs in-process with its shipped data as it was
before the 2026-01-21 copy (that file left out), so the new state is news to it. No traffic
goes anywhere but 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pinning.cli import main
from tests.support.httpserve import serving
from tests.support.paths import AMD_SOURCES, DATA

CSV = "docs/compatibility/compatibility-matrix-historical-6.0.csv"
PAGE = "docs/compatibility/compatibility-matrix.rst"
OLD, NEW = "state-2025-03-21", "state-2026-01-21"


def _mirror(root: Path) -> Path:
    """The two vendor states (refs OLD and NEW of ROCm/ROCm; PyTorch's RELEASE.md at main)."""
    for ref, date, notes in ((OLD, "2025-03-21", None),
                             (NEW, "2026-01-21", "rocm-7.2.0-RELEASE.md")):
        base = root / "ROCm" / "ROCm" / ref
        (base / "docs" / "compatibility").mkdir(parents=True)
        shutil.copy(AMD_SOURCES / f"rocm-compat-historical-{date}.csv", base / CSV)
        shutil.copy(AMD_SOURCES / f"rocm-compat-matrix-{date}.rst", base / PAGE)
        if notes:
            shutil.copy(AMD_SOURCES / notes, base / "RELEASE.md")
    (root / "pytorch" / "pytorch" / "main").mkdir(parents=True)
    shutil.copy(DATA / "release-compatibility-matrix.md",
                root / "pytorch" / "pytorch" / "main" / "RELEASE.md")
    return root


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No request log on stderr."""


@pytest.fixture
def vendor(tmp_path: Path) -> Iterator[str]:
    """The loopback vendor's base URL."""
    root = _mirror(tmp_path / "mirror")
    with serving(functools.partial(_Quiet, directory=str(root))) as port:  # type: ignore[arg-type]
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run pin in-process: data folder in tmp_path, shipped data without 2026-01-21."""
    import pinning.matrix.load as load

    shipped = [p for p in load.shipped_paths() if p.name != "amd-rocm-2026-01-21.toml"]
    monkeypatch.setattr(load, "shipped_paths", lambda: shipped)
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "PIN_DATA_DIR": "",
           "PIN_CACHE_DIR": str(tmp_path / "cache"), "NO_PROXY": "127.0.0.1",
           "no_proxy": "127.0.0.1"}

    def run(*args: str) -> Result:
        return CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)

    return run


def _update(pin: Any, vendor: str, ref: str, date: str, *extra: str) -> Result:
    done: Result = pin("matrix", "update", "--from", vendor, "--rocm-ref", ref, "--published", date,
               *extra)
    return done


def test_old_vendor_state_is_held(pin: Any, vendor: str) -> None:
    done = _update(pin, vendor, OLD, "2025-03-21", "--check")
    assert done.exit_code == 0, done.output
    assert "No change" in done.output
    assert "amd-notes" in done.output  # the old state has no release notes: said, skipped


def test_new_vendor_state_shows_rows_and_lock_changes(pin: Any, vendor: str,
                                                      tmp_path: Path) -> None:
    lock = tmp_path / "mi300x.lock"
    made = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", "--rocm", "<10",
               "-o", str(lock))
    assert made.exit_code == 0, made.output
    done = _update(pin, vendor, NEW, "2026-01-21", "--check", "--lock", str(lock),
                   "--format", "json")
    assert done.exit_code == 6, done.output
    result = json.loads(done.stdout)["result"]
    added = {c["key"] for c in result["changes"] if c["change"] == "added"}
    assert {"rocm-7.2.0", "rocm-7.1.1", "rocm-7.0.0"} <= added
    assert any(c["kind"] == "firmware" and c["key"].startswith("7.2.0") for c in
               result["changes"])
    rocm720 = next(c for c in result["changes"] if c["key"] == "rocm-7.2.0")
    assert any(d.startswith("gpu ") and "gfx950" in d for d in rocm720["details"])
    [row] = result["locks"]
    assert row["differs"] and any("runtime.version" in x for x in row["after"])
    assert result["written"] is None
    assert not (tmp_path / "data" / "pin" / "matrix").exists()


def test_update_writes_copy_with_provenance(pin: Any, vendor: str, tmp_path: Path) -> None:
    done = _update(pin, vendor, NEW, "2026-01-21")
    assert done.exit_code == 0, done.output
    assert "added    release rocm-7.2.0" in done.output
    folder = tmp_path / "data" / "pin" / "matrix"
    manifest = json.loads((folder / "update.json").read_text())
    ids = {s["id"]: s for s in manifest["sources"]}
    assert set(ids) == {"amd-csv", "amd-page", "amd-notes", "pytorch"}
    assert ids["amd-csv"]["url"] == f"{vendor}/ROCm/ROCm/{NEW}/{CSV}"
    assert ids["amd-csv"]["sha256"].startswith("sha256:")
    assert {f["name"] for f in manifest["files"]} == {"amd-rocm-2026-01-21", "pytorch-wheels"}
    listing = json.loads(pin("matrix", "list", "--format", "json").stdout)["result"]
    origin = {f["name"]: f["origin"] for f in listing["files"]}
    assert origin["amd-rocm-2026-01-21"] == "user" and origin["gpus"] == "shipped"
    assert any(r["version"] == "7.2.0" for r in listing["releases"])
    old = json.loads(pin("matrix", "list", "--as-of", "2025-03-21", "--format", "json")
                     .stdout)["result"]
    assert not any(r["version"].startswith("7.") for r in old["releases"])
    again = _update(pin, vendor, NEW, "2026-01-21", "--check")
    assert again.exit_code == 0, again.output
    reset = pin("matrix", "update", "--reset")
    assert reset.exit_code == 0 and not (folder / "update.json").exists()


def test_site_overlay_keeps_priority(pin: Any, vendor: str, tmp_path: Path) -> None:
    from tests.support.matrix import OVERLAY

    overlay = tmp_path / "site.toml"
    overlay.write_text(OVERLAY)
    assert _update(pin, vendor, NEW, "2026-01-21").exit_code == 0
    listing = json.loads(pin("matrix", "list", "--matrix", str(overlay), "--format", "json")
                         .stdout)["result"]
    assert [f["origin"] for f in listing["files"]][-1] == "overlay"
    assert any(r["ref"] == "site-lab:rocm-7.2.1" for r in listing["releases"])


def test_damaged_vendor_file_writes_nothing(pin: Any, vendor: str, tmp_path: Path) -> None:
    csv = tmp_path / "mirror" / "ROCm" / "ROCm" / NEW / CSV
    csv.write_bytes(csv.read_bytes()[: len(csv.read_bytes()) // 2])
    done = _update(pin, vendor, NEW, "2026-01-21")
    assert done.exit_code == 3, done.output
    assert f"{vendor}/ROCm/ROCm/{NEW}/{CSV}" in done.output
    assert not (tmp_path / "data" / "pin" / "matrix" / "update.json").exists()


@pytest.mark.parametrize("args", [
    ("--from", "http://example.invalid/mirror", "--published", "2026-01-21"),
    ("--from", "file:///etc", "--published", "2026-01-21"),
    ("--offline", "--from", "https://example.invalid/mirror", "--published", "2026-01-21"),
    ("--offline",),
    ("--from", "https://example.invalid/mirror"),
])
def test_refused_before_any_fetch(pin: Any, args: tuple[str, ...]) -> None:
    done = pin("matrix", "update", *args)
    assert done.exit_code == 2, done.output


def test_offline_reads_a_mirror_folder(pin: Any, tmp_path: Path) -> None:
    root = _mirror(tmp_path / "dir")
    done = pin("matrix", "update", "--offline", "--from", str(root), "--rocm-ref", NEW,
               "--published", "2026-01-21", "--dry-run")
    assert done.exit_code == 0, done.output
    assert "added    release rocm-7.2.0" in done.output
    assert not (tmp_path / "data" / "pin" / "matrix").exists()
