"""The fetch step of ``pin build``: the lock's wheels downloaded from a PEP 503 index on
127.0.0.1 into a cache, sha256-checked while streaming, reused when already there, and never
left half-written."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from pinning.errors import BuildError
from pinning.image.fetch import default_wheel_cache, fetch_wheels
from pinning.lockfile.io import amend, read_lock
from pinning.lockfile.models import Lockfile, Wheel
from tests.support.paths import ROOT
from tests.support.pyindex import Dist, build_wheels, serve_index

GRAPH: dict[str, list[str]] = {"torch==2.13.0+rocm7.2": [], "filelock==3.0": []}
TAGS = {"torch==2.13.0+rocm7.2": ["cp312-cp312-manylinux_2_28_x86_64"]}


class Recorder:
    """A thread-safe Progress that records each task's label, total, bytes and end."""

    def __init__(self) -> None:
        self.tasks: dict[str, list[int | None]] = {}
        self.lock = threading.Lock()

    def task(self, label: str, total: int | None = None) -> Recorder._Task:
        with self.lock:
            self.tasks[label] = [total, 0, 0]
        return Recorder._Task(self, label)

    class _Task:
        def __init__(self, owner: Recorder, label: str) -> None:
            self.owner, self.label = owner, label

        def advance(self, n: int) -> None:
            with self.owner.lock:
                row = self.owner.tasks[self.label]
                row[1] = (row[1] or 0) + n

        def done(self, note: str = "") -> None:
            with self.owner.lock:
                row = self.owner.tasks[self.label]
                row[2] = (row[2] or 0) + 1


def _lock(url: str, dists: list[Dist], **override: dict[str, object]) -> Lockfile:
    base = url.removesuffix("/simple")
    wheels = []
    for d in dists:
        version = d.filename.split("-")[1]
        data: dict[str, object] = {"name": d.project, "version": version, "filename": d.filename,
                "sha256": d.sha256, "url": f"{base}/files/{d.filename.replace('+', '%2B')}"}
        data.update(override.get(d.project, {}))
        wheels.append(Wheel.model_validate(data))
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    return amend(lk, wheels=wheels, packages={w.name: w.version for w in wheels})


def _dists(tmp_path: Path) -> list[Dist]:
    return build_wheels(tmp_path / "probe", GRAPH, tags=TAGS)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_fetches_every_wheel_hash_checked(tmp_path: Path) -> None:
    progress = Recorder()
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, log):
        dists = _dists(tmp_path)
        torch_size = (tmp_path / "probe" / dists[0].filename).stat().st_size
        lk = _lock(url, dists, torch={"size": torch_size})
        dest = tmp_path / "cache" / "wheels"
        assert fetch_wheels(lk, dest, progress=progress, jobs=2) == dest
    assert lk.wheels is not None
    assert _files(dest) == sorted(w.filename for w in lk.wheels)
    for w in lk.wheels:
        data = (dest / w.filename).read_bytes()
        assert hashlib.sha256(data).hexdigest() == w.sha256
        # The total is the locked size when the index gave one (PyPI does), else unknown.
        assert progress.tasks[f"fetch {w.filename}"] == [w.size, len(data), 1]
    assert next(w for w in lk.wheels if w.name == "torch").size == torch_size
    assert sorted(p for p in log if p.endswith(".whl")) == sorted(
        f"/files/{w.filename}" for w in lk.wheels)


def test_a_cached_wheel_is_reused_and_a_wrong_one_replaced(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, log):
        lk = _lock(url, _dists(tmp_path))
        dest = tmp_path / "cache"
        fetch_wheels(lk, dest)
        log.clear()
        fetch_wheels(lk, dest)
        assert log == []  # nothing downloaded again
        assert lk.wheels is not None
        victim = dest / lk.wheels[0].filename
        victim.write_bytes(b"not the locked bytes")
        fetch_wheels(lk, dest)
        assert log == [f"/files/{lk.wheels[0].filename}"]
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == lk.wheels[0].sha256


def test_a_hash_mismatch_names_url_and_hashes_and_leaves_nothing(tmp_path: Path) -> None:
    wrong = "0" * 64
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        dists = _dists(tmp_path)
        lk = _lock(url, dists, filelock={"sha256": wrong})
        dest = tmp_path / "cache"
        with pytest.raises(BuildError) as err:
            fetch_wheels(lk, dest, jobs=1)
    real = next(d.sha256 for d in dists if d.project == "filelock")
    msg = err.value.message
    assert f"{url.removesuffix('/simple')}/files/filelock-3.0-py3-none-any.whl" in msg
    assert f"has sha256 {real}" in msg and f"expects {wrong}" in msg
    assert err.value.exit_code == 8
    assert "filelock-3.0-py3-none-any.whl" not in _files(dest)
    assert not [n for n in _files(dest) if n.endswith(".part")]


def test_more_bytes_than_locked_is_refused(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        lk = _lock(url, _dists(tmp_path), filelock={"size": 10})
        with pytest.raises(BuildError, match="more than the 10 bytes"):
            fetch_wheels(lk, tmp_path / "cache")
    assert not [n for n in _files(tmp_path / "cache") if "filelock" in n]


def test_http_errors_and_unreachable_servers(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH, tags=TAGS) as (url, _log):
        lk = _lock(url, _dists(tmp_path),
                   filelock={"url": f"{url.removesuffix('/simple')}/files/gone.whl"})
        with pytest.raises(BuildError, match=r"answered HTTP 404") as err:
            fetch_wheels(lk, tmp_path / "cache")
    assert "--wheelhouse" in err.value.hint
    # The server is gone now: a connection error, named, with no file left.
    with pytest.raises(BuildError, match="cannot download"):
        fetch_wheels(lk, tmp_path / "cache2")
    assert not [n for n in _files(tmp_path / "cache2") if n.endswith(".part")]


def test_a_wheel_without_url_must_be_in_the_cache(tmp_path: Path) -> None:
    dists = _dists(tmp_path)
    lk = _lock("http://127.0.0.1:9/simple", dists, filelock={"url": None},
               torch={"url": None})
    with pytest.raises(BuildError, match="records no URL") as err:
        fetch_wheels(lk, tmp_path / "cache")
    assert "--wheelhouse" in err.value.hint
    # Already in the cache with the locked bytes: nothing to fetch, no server needed.
    cache = tmp_path / "probe"
    assert fetch_wheels(lk, cache) == cache


def test_no_wheels_and_an_unwritable_cache(tmp_path: Path) -> None:
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    with pytest.raises(BuildError, match="records no wheels"):
        fetch_wheels(lk, tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    lk = _lock("http://127.0.0.1:9/simple", _dists(tmp_path))
    with pytest.raises(BuildError, match="cannot be created"):
        fetch_wheels(lk, blocker / "wheels")


def test_only_https_or_loopback_http_is_fetched(tmp_path: Path) -> None:
    # The lock model refuses plain http elsewhere; a wheel made without validation is
    # refused again by the fetch itself.
    good = Wheel(name="a", version="1.0", filename="a-1.0-py3-none-any.whl",
                 sha256="0" * 64, url="https://files.example/a-1.0-py3-none-any.whl")
    bad = good.model_copy(update={"url": "http://files.example/a-1.0-py3-none-any.whl"})
    lk = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    lk = lk.model_copy(update={"wheels": [bad]})
    with pytest.raises(BuildError, match="https only"):
        fetch_wheels(lk, tmp_path / "cache")
    with pytest.raises(ValueError, match="loopback"):
        Wheel.model_validate({**good.model_dump(), "url": bad.url})
    with pytest.raises(ValueError, match="user name or password"):
        Wheel.model_validate({**good.model_dump(), "url": "https://u:p@files.example/a.whl"})
    assert Wheel.model_validate({**good.model_dump(),
                                 "url": "http://[::1]:8/a.whl"}).url == "http://[::1]:8/a.whl"


def test_default_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path))
    assert default_wheel_cache() == tmp_path / "wheels"
    monkeypatch.delenv("PIN_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_wheel_cache() == tmp_path / "home" / ".cache" / "pin" / "wheels"
