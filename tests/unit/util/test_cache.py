"""pin's pickle cache reads only what the user alone could have written; the matrix loader
uses it and still refuses a bad file."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.matrix import filecache
from pinning.matrix.load import load_file, shipped_paths
from pinning.util.cache import cache_root, load_cached, save_cached


def test_round_trip_and_modes(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    save_cached(folder, "x.pickle", {"a": [1, 2]})
    assert load_cached(folder, "x.pickle") == {"a": [1, 2]}
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert ((folder / "x.pickle").stat().st_mode & 0o777) == 0o600
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("loosen", ["folder", "file"])
def test_writable_by_others_is_a_miss(tmp_path: Path, loosen: str) -> None:
    folder = tmp_path / "c"
    save_cached(folder, "x.pickle", 1)
    os.chmod(folder if loosen == "folder" else folder / "x.pickle", 0o777)
    assert load_cached(folder, "x.pickle") is None


def test_links_torn_files_and_absent_folders_are_misses(tmp_path: Path) -> None:
    real = tmp_path / "real"
    save_cached(real, "x.pickle", 1)
    (tmp_path / "link").symlink_to(real)
    assert load_cached(tmp_path / "link", "x.pickle") is None  # the folder is a link
    (real / "y.pickle").symlink_to(real / "x.pickle")
    assert load_cached(real, "y.pickle") is None  # the file is a link
    (real / "torn.pickle").write_bytes(pickle.dumps(list(range(100)))[:20])
    os.chmod(real / "torn.pickle", 0o600)
    assert load_cached(real, "torn.pickle") is None
    assert load_cached(tmp_path / "absent", "x.pickle") is None


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path / "p"))
    assert cache_root() == tmp_path / "p"
    monkeypatch.delenv("PIN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "x" / "pin"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert cache_root() == Path.home() / ".cache" / "pin"


def test_matrix_file_is_validated_once_then_read_back(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path))
    path = shipped_paths()[0]
    first = load_file(path)
    cached = list((tmp_path / "matrix").iterdir())
    assert len(cached) == 1
    calls: list[object] = []
    monkeypatch.setattr(filecache, "parse_toml", lambda *a, **k: calls.append(a))
    again = load_file(path)
    assert calls == []  # read back, not parsed again
    assert again.data == first.data and again.sha256 == first.sha256


def test_a_changed_or_invalid_file_is_validated(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "m.toml"
    copy.write_bytes(shipped_paths()[0].read_bytes())
    load_file(copy)
    copy.write_bytes(copy.read_bytes() + b"\n[[nonsense]]\nx = 1\n")
    with pytest.raises(MatrixError, match="m.toml"):
        load_file(copy)
    copy.write_bytes(b"name = \n")
    with pytest.raises(MatrixError, match="not valid TOML"):
        load_file(copy)
