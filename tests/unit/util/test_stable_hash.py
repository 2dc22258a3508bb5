"""A file that changes while pin hashes it: read again once, then refused with exit 6 naming
it (pinning.util.digests.stable_file_digests), never a digest of bytes that were on disk at
no moment. Real files, rewritten by a real writer at a chosen moment of pin's read."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import DriftError
from pinning.lockfile.models import Model
from pinning.probe.hasher import Hasher
from pinning.probe.hostmodel import probe_model
from pinning.probe.hubcache import read_hub_model
from pinning.probe.modelfiles import read_model_dir
from pinning.probe.root import HostRoot
from pinning.util import digests
from pinning.util.digests import file_identity, stable_file_digests
from tests.support.hfcache import make_hub_cache
from tests.support.rewrite import grow, replace_by_rename, rewrite_while_hashing


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_only(_st: os.stat_result) -> list[hashlib._Hash]:
    return [hashlib.sha256()]


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    f = tmp_path / "model.safetensors"
    f.write_bytes(bytes(range(256)) * 64)
    return f


def test_an_unchanged_file_is_read_once(monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    seen = rewrite_while_hashing(monkeypatch, weights, grow(weights), times=0)
    got = stable_file_digests(weights, sha256_only)
    assert got.hexdigests == (sha(weights.read_bytes()),) and got.size == 256 * 64
    assert file_identity(got.stat) == file_identity(weights.stat())
    assert (seen.reads, seen.rewrites) == (1, 0)


def test_a_file_changed_once_is_read_again_and_the_new_bytes_hashed(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    seen = rewrite_while_hashing(monkeypatch, weights, grow(weights), times=1)
    got = stable_file_digests(weights, sha256_only)
    after = weights.read_bytes()
    assert after.startswith(b"v1")
    assert got.hexdigests == (sha(after),) and got.size == len(after)
    assert (seen.reads, seen.rewrites) == (2, 1)


def test_a_file_changing_at_every_read_is_exit_6_naming_it(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    seen = rewrite_while_hashing(monkeypatch, weights, grow(weights), times=99)
    with pytest.raises(DriftError) as err:
        stable_file_digests(weights, sha256_only, label="model file model.safetensors")
    assert err.value.exit_code == 6
    assert err.value.message.startswith("model file model.safetensors: the file changed "
                                        "while pin was hashing it, twice")
    assert "Stop whatever writes it" in err.value.hint and "again" in err.value.hint
    assert (seen.reads, seen.rewrites) == (2, 2)  # read twice, never a third time


def edit_in_place(path: Path, offset: int, data: bytes, *, mtime_ns: int | None = None) -> None:
    """Write ``data`` at ``offset`` of ``path`` (same size, same inode; its mtime put back to
    ``mtime_ns`` when given), again until its ctime moved: file systems with coarse
    timestamps share one per clock tick."""
    before = path.stat()
    for _ in range(1000):
        with open(path, "r+b") as f:
            f.seek(offset)
            f.write(data)
        if mtime_ns is not None:
            os.utime(path, ns=(before.st_atime_ns, mtime_ns))
        if path.stat().st_ctime_ns != before.st_ctime_ns:
            return
        time.sleep(0.002)
    raise AssertionError("the ctime never moved")


def test_a_change_to_bytes_already_read_is_seen(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    # Same size: only the timestamps tell. Without the check the digest would be of the
    # old first piece and the new rest: bytes that were on disk at no moment.
    monkeypatch.setattr(digests, "READ_BYTES", 1000)  # 17 pieces
    rewrite_while_hashing(monkeypatch, weights, lambda _n: edit_in_place(weights, 10, b"X"),
                          times=1)
    got = stable_file_digests(weights, sha256_only)
    now = weights.read_bytes()
    assert now[10:11] == b"X" and got.hexdigests == (sha(now),)


def test_a_file_renamed_over_the_name_is_seen_by_its_inode(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    # The open file never changes; the name now points to another file, same size.
    new = bytes(reversed(range(256))) * 64
    seen = rewrite_while_hashing(monkeypatch, weights,
                                 replace_by_rename(weights, lambda _n: new), times=1)
    got = stable_file_digests(weights, sha256_only)
    assert got.hexdigests == (sha(new),) and seen.rewrites == 1
    assert got.stat.st_ino == weights.stat().st_ino


def test_an_in_place_edit_with_its_mtime_put_back_is_seen(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    # Same size, same inode, mtime restored: only the ctime moves.
    mtime = weights.stat().st_mtime_ns
    rewrite_while_hashing(monkeypatch, weights,
                          lambda _n: edit_in_place(weights, 0, b"B", mtime_ns=mtime), times=1)
    got = stable_file_digests(weights, sha256_only)
    assert weights.stat().st_mtime_ns == mtime
    assert got.hexdigests == (sha(b"B" + (bytes(range(256)) * 64)[1:]),)


def test_a_file_deleted_while_read_is_gone_not_a_digest(
        monkeypatch: pytest.MonkeyPatch, weights: Path) -> None:
    rewrite_while_hashing(monkeypatch, weights, lambda _n: weights.unlink(), times=1)
    with pytest.raises(FileNotFoundError):
        stable_file_digests(weights, sha256_only)


# --- where pin hashes files: model files for a lock, probes ----------------------------------

def model_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 rewrites: int) -> tuple[Path, Path, Path]:
    """A model folder whose weights are rewritten ``rewrites`` times while hashed: the
    folder, the digest cache file and the weights file.
    """
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_bytes(b'{"hidden_size": 384}\n')
    weights = ckpt / "model.safetensors"
    weights.write_bytes(bytes(range(256)) * 64)
    rewrite_while_hashing(monkeypatch, weights, grow(weights), times=rewrites)
    return ckpt, tmp_path / "cache" / "model-digests.json", weights


def test_a_folder_file_changed_once_is_pinned_with_its_new_bytes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ckpt, store, weights = model_folder(tmp_path, monkeypatch, rewrites=1)
    tree = read_model_dir(ckpt, hasher=Hasher(store, workers=2))
    got = {f.path: (f.size, f.sha256) for f in tree.files}
    now = weights.read_bytes()
    assert got["model.safetensors"] == (len(now), sha(now)) and tree.problems == []
    entry = json.loads(store.read_bytes())["entries"][os.path.realpath(weights)]
    assert entry[:6] == [*file_identity(weights.stat()), sha(now)]  # the cache agrees


def test_a_folder_file_that_keeps_changing_refuses_the_read(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ckpt, store, weights = model_folder(tmp_path, monkeypatch, rewrites=99)
    with pytest.raises(DriftError, match=r"model\.safetensors: the file changed") as err:
        read_model_dir(ckpt, hasher=Hasher(store, workers=1))
    assert err.value.exit_code == 6 and str(weights) in err.value.message
    # config.json (read first) is remembered; the changing file is not.
    entries = json.loads(store.read_bytes())["entries"]
    assert set(entries) == {os.path.realpath(ckpt / "config.json")}


def test_a_hub_blob_that_keeps_changing_refuses_the_read(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model, rev = "org/model", "0123456789abcdef0123456789abcdef01234567"
    repo = make_hub_cache(tmp_path / "hub", model, rev,
                          {"config.json": b"{}", "model.safetensors": bytes(256) * 9})
    blob = Path(os.path.realpath(repo / "snapshots" / rev / "model.safetensors"))
    rewrite_while_hashing(monkeypatch, blob, grow(blob), times=99)
    with pytest.raises(DriftError) as err:
        read_hub_model(tmp_path / "hub", model, rev, hasher=Hasher(None, workers=4))
    assert err.value.message.startswith(f"{blob}: the file changed while pin was hashing it")


def test_a_probe_of_a_changing_model_file_is_exit_6_not_a_reason(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "root"
    _, _, weights = model_folder(root / "models", monkeypatch, rewrites=0)
    always = rewrite_while_hashing(monkeypatch, weights, grow(weights), times=99)
    with pytest.raises(DriftError, match="changed while pin was hashing it"):
        probe_model(HostRoot(root), {"HOME": "/root"}, model=Model(path="/models/ckpt"),
                    hasher=Hasher(None))
    always.times = 0
    rewrite_while_hashing(monkeypatch, weights, grow(weights, b"w"), times=1)
    facts = probe_model(HostRoot(root), {"HOME": "/root"}, model=Model(path="/models/ckpt"),
                        hasher=Hasher(None))
    now = weights.read_bytes()
    assert now.startswith(b"w1") and facts.reason is None
    assert {f.path: f.sha256 for f in facts.files}["model.safetensors"] == sha(now)


def test_each_file_is_read_in_pieces_sized_to_it(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    # A small file gets a buffer of its size (a 1 MiB buffer per tokenizer file cost more to
    # zero than hashing it), never below MIN_READ_BYTES; a large one READ_BYTES pieces.
    monkeypatch.setattr(digests, "READ_BYTES", 8192)
    monkeypatch.setattr(digests, "MIN_READ_BYTES", 1024)
    seen: list[tuple[int, int]] = []
    real = digests._read_into

    def read(f: Any, buf: bytearray) -> int:
        got = real(f, buf)
        seen.append((len(buf), got))
        return got

    monkeypatch.setattr(digests, "_read_into", read)
    for size, pieces in ((10, [(1024, 10), (1024, 0)]), (3000, [(3001, 3000), (3001, 0)]),
                         (20000, [(8192, 8192), (8192, 8192), (8192, 3616), (8192, 0)])):
        f = tmp_path / f"f{size}"
        f.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        seen.clear()
        got = stable_file_digests(f, sha256_only)
        assert got.hexdigests == (sha(f.read_bytes()),) and got.size == size
        assert seen == pieces
