"""Model files on a host: a revision in a Hugging Face cache laid out as huggingface_hub lays
it out (tests/support/hfcache.py), a local model folder, and the digest cache."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pinning.lockfile.models import model_content_hash
from pinning.probe import modelfiles
from pinning.probe.modelfiles import (
    Hasher,
    ModelProblem,
    NotRegularFile,
    default_cache_file,
    read_hub_model,
    read_model_dir,
)
from tests.support.hfcache import blob_of, git_blob_id, gt_model_dir, make_hub_cache

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
REV = "0123456789abcdef0123456789abcdef01234567"  # a made-up commit: the cache is synthetic
WEIGHTS = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + bytes(range(256)) * 64
CONFIG = b'{"hidden_size": 384}\n'
SMALL = {"config.json": CONFIG, "model.safetensors": WEIGHTS, "1_Pooling/config.json": b"{}"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def small_cache(tmp_path: Path) -> tuple[Path, Path]:
    cache = tmp_path / "hub"
    return cache, make_hub_cache(cache, MODEL, REV, SMALL)


# --- the Hugging Face cache ---------------------------------------------------------------

def test_real_model_in_a_hub_cache_every_file_matches(tmp_path: Path) -> None:
    folder = gt_model_dir()
    cache = tmp_path / "hub"
    repo = make_hub_cache(cache, MODEL, REV, folder)
    tree = read_hub_model(cache, MODEL, REV)
    assert tree.reason is None and tree.problems == []
    assert (tree.source, tree.id, tree.revision) == ("hf-cache", MODEL, REV)
    assert tree.location == str(repo / "snapshots" / REV)
    paths = [f.path for f in tree.files]
    assert paths == sorted(p.relative_to(folder).as_posix()
                           for p in folder.rglob("*") if p.is_file())
    assert "1_Pooling/config.json" in paths and len(paths) == 13
    weights = next(f for f in tree.files if f.path == "model.safetensors")
    data = (folder / "model.safetensors").read_bytes()
    assert (weights.size, weights.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert blob_of(repo, REV, "model.safetensors").name == weights.sha256
    config = (folder / "config.json").read_bytes()
    assert blob_of(repo, REV, "config.json").name == git_blob_id(config)
    # the same bytes as a local folder: the same content hash
    assert model_content_hash(read_model_dir(folder).files) == model_content_hash(tree.files)


def test_blob_names_lfs_by_sha256_and_small_by_git_blob_id(tmp_path: Path) -> None:
    _, repo = small_cache(tmp_path)
    assert blob_of(repo, REV, "model.safetensors").name == sha(WEIGHTS)
    assert blob_of(repo, REV, "config.json").name == git_blob_id(CONFIG)
    # git's own id of a known blob: `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert os.readlink(repo / "snapshots" / REV / "1_Pooling" / "config.json") \
        == f"../../../blobs/{git_blob_id(b'{}')}"
    tree = read_hub_model(tmp_path / "hub", MODEL, REV)
    assert [(f.path, f.size, f.sha256) for f in tree.files] == [
        ("1_Pooling/config.json", 2, sha(b"{}")), ("config.json", len(CONFIG), sha(CONFIG)),
        ("model.safetensors", len(WEIGHTS), sha(WEIGHTS))]
    assert tree.problems == []


@pytest.mark.parametrize(("rel", "what"), [("model.safetensors", "sha256"),
                                           ("config.json", "git blob id")])
def test_a_tampered_blob_is_a_blob_mismatch_and_still_listed(
        tmp_path: Path, rel: str, what: str) -> None:
    cache, repo = small_cache(tmp_path)
    blob = blob_of(repo, REV, rel)
    tampered = SMALL[rel][:-1] + b"X"
    blob.write_bytes(tampered)
    tree = read_hub_model(cache, MODEL, REV)
    assert [(p.path, p.kind) for p in tree.problems] == [(rel, "blob-mismatch")]
    assert what in tree.problems[0].detail and blob.name in tree.problems[0].detail
    listed = next(f for f in tree.files if f.path == rel)
    assert listed.sha256 == sha(tampered)
    assert len(tree.files) == 3


def test_a_deleted_blob_is_missing(tmp_path: Path) -> None:
    cache, repo = small_cache(tmp_path)
    blob_of(repo, REV, "model.safetensors").unlink()
    tree = read_hub_model(cache, MODEL, REV)
    assert tree.problems == [ModelProblem("model.safetensors", "missing",
                                          tree.problems[0].detail)]
    assert "is not in the cache" in tree.problems[0].detail
    assert [f.path for f in tree.files] == ["1_Pooling/config.json", "config.json"]


def test_an_incomplete_download_is_incomplete(tmp_path: Path) -> None:
    cache, repo = small_cache(tmp_path)
    blob = blob_of(repo, REV, "model.safetensors")
    blob.rename(blob.with_name(blob.name + ".incomplete"))
    tree = read_hub_model(cache, MODEL, REV)
    assert [(p.path, p.kind) for p in tree.problems] == [
        (f"blobs/{blob.name}.incomplete", "incomplete"), ("model.safetensors", "incomplete")]
    assert [f.path for f in tree.files] == ["1_Pooling/config.json", "config.json"]


def test_a_complete_cache_has_no_incomplete_problem(tmp_path: Path) -> None:
    cache, _ = small_cache(tmp_path)
    assert not [p for p in read_hub_model(cache, MODEL, REV).problems if p.kind == "incomplete"]


def test_a_snapshot_absent_is_a_reason_naming_the_cache(tmp_path: Path) -> None:
    cache, _ = small_cache(tmp_path)
    other = "f" * 40
    tree = read_hub_model(cache, MODEL, other)
    assert tree.files == [] and tree.problems == []
    assert tree.reason is not None and str(cache) in tree.reason and other in tree.reason
    absent = read_hub_model(tmp_path / "empty", "org/other", REV)
    assert absent.reason is not None and "not in the Hugging Face cache" in absent.reason


def test_a_branch_name_resolves_through_refs(tmp_path: Path) -> None:
    cache, _ = small_cache(tmp_path)
    tree = read_hub_model(cache, MODEL, "main")
    assert tree.revision == REV and len(tree.files) == 3
    unknown = read_hub_model(cache, MODEL, "dev")
    assert unknown.reason is not None and "refs/dev" in unknown.reason
    assert read_hub_model(cache, MODEL, "../../etc").reason is not None


def test_a_malformed_model_id_is_a_reason(tmp_path: Path) -> None:
    tree = read_hub_model(tmp_path, "../../etc", REV)
    assert tree.reason is not None and "not a Hugging Face model id" in tree.reason


def test_a_snapshot_link_out_of_the_cache_folder_is_not_followed(tmp_path: Path) -> None:
    cache, repo = small_cache(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not the model's")
    os.symlink(secret, repo / "snapshots" / REV / "leak.json")
    hasher = Hasher()
    tree = read_hub_model(cache, MODEL, REV, hasher=hasher)
    assert [(p.path, p.kind) for p in tree.problems] == [("leak.json", "unreadable")]
    assert "leak.json" not in [f.path for f in tree.files]
    assert hasher.bytes_read == sum(len(v) for v in SMALL.values())


# --- a local folder -----------------------------------------------------------------------

def converted(tmp_path: Path) -> Path:
    top = tmp_path / "ckpt"
    (top / "shards" / "deep").mkdir(parents=True)
    (top / "config.json").write_bytes(CONFIG)
    (top / "shards" / "model-00001.safetensors").write_bytes(WEIGHTS)
    (top / "shards" / "deep" / "extra.bin").write_bytes(b"\x00" * 10)
    (top / ".git").mkdir()
    (top / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (top / ".cache" / "huggingface").mkdir(parents=True)
    (top / ".cache" / "huggingface" / "config.json.metadata").write_bytes(b"x")
    return top


def test_a_local_folder_lists_nested_files_sorted(tmp_path: Path) -> None:
    top = converted(tmp_path)
    os.symlink("config.json", top / "alias.json")  # a link inside: followed
    tree = read_model_dir(top)
    assert (tree.source, tree.location, tree.reason, tree.problems) == (
        "directory", str(top), None, [])
    assert [(f.path, f.size, f.sha256) for f in tree.files] == [
        ("alias.json", len(CONFIG), sha(CONFIG)), ("config.json", len(CONFIG), sha(CONFIG)),
        ("shards/deep/extra.bin", 10, sha(b"\x00" * 10)),
        ("shards/model-00001.safetensors", len(WEIGHTS), sha(WEIGHTS))]


def test_links_out_of_the_folder_are_refused(tmp_path: Path) -> None:
    top = converted(tmp_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"elsewhere")
    os.symlink(outside, top / "shards" / "out.bin")
    os.symlink("../../outside.bin", top / "shards" / "rel.bin")
    os.symlink(top / "nowhere", top / "dangling.bin")
    os.symlink(top / "shards", top / "dirlink")
    tree = read_model_dir(top)
    assert [(p.path, p.kind) for p in tree.problems] == [
        ("dangling.bin", "missing"), ("dirlink", "not-a-file"),
        ("shards/out.bin", "unreadable"), ("shards/rel.bin", "unreadable")]
    assert "not followed" in tree.problems[2].detail
    assert len(tree.files) == 3


def test_a_fifo_is_a_problem_never_a_hang(tmp_path: Path) -> None:
    top = converted(tmp_path)
    os.mkfifo(top / "pipe.bin")
    tree = read_model_dir(top)
    assert [(p.path, p.kind) for p in tree.problems] == [("pipe.bin", "not-a-file")]
    assert "FIFO" in tree.problems[0].detail
    got = Hasher().digest_many([top / "pipe.bin", top / "config.json"])
    assert isinstance(got[top / "pipe.bin"], NotRegularFile)
    assert got[top / "config.json"] == (len(CONFIG), sha(CONFIG))


def test_a_fifo_behind_a_snapshot_link_is_not_a_file(tmp_path: Path) -> None:
    cache, repo = small_cache(tmp_path)
    os.mkfifo(repo / "blobs" / "pipe")
    os.symlink("../../blobs/pipe", repo / "snapshots" / REV / "pipe.bin")
    tree = read_hub_model(cache, MODEL, REV)
    assert [(p.path, p.kind) for p in tree.problems] == [("pipe.bin", "not-a-file")]


def test_a_missing_or_non_folder_is_a_reason(tmp_path: Path) -> None:
    assert read_model_dir(tmp_path / "none").reason is not None
    (tmp_path / "f").write_bytes(b"x")
    tree = read_model_dir(tmp_path / "f")
    assert tree.files == [] and tree.reason is not None and "not a folder" in tree.reason


def test_folders_nested_too_deep_are_a_problem(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modelfiles, "MAX_DEPTH", 3)
    deep = tmp_path / "m" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "x.bin").write_bytes(b"x")
    (tmp_path / "m" / "a" / "y.bin").write_bytes(b"y")
    tree = read_model_dir(tmp_path / "m")
    assert [f.path for f in tree.files] == ["a/y.bin"]
    assert [(p.path, p.kind) for p in tree.problems] == [("a/b/c", "unreadable")]


def test_a_name_a_lock_cannot_hold_is_a_problem(tmp_path: Path) -> None:
    top = converted(tmp_path)
    (top / "bad\\name.bin").write_bytes(b"x")
    tree = read_model_dir(top)
    assert [(p.kind, p.path) for p in tree.problems] == [("unreadable", "'bad\\\\name.bin'")]


# --- the digest cache ---------------------------------------------------------------------

def test_a_second_run_reads_no_bytes(tmp_path: Path) -> None:
    cache, _ = small_cache(tmp_path)
    store = tmp_path / "pin" / "model-digests.json"
    first = Hasher(store, workers=4)
    tree = read_hub_model(cache, MODEL, REV, hasher=first)
    assert first.bytes_read == sum(len(v) for v in SMALL.values()) and first.files_read == 3
    assert store.is_file()
    second = Hasher(store)
    again = read_hub_model(cache, MODEL, REV, hasher=second)
    assert (second.bytes_read, second.files_read) == (0, 0)
    assert again.files == tree.files and again.problems == []


def test_the_cache_trusts_dev_inode_size_and_mtime(tmp_path: Path) -> None:
    """Documented: bytes rewritten in place, same size, mtime put back, keep the old digest;
    a changed mtime makes the file read again."""
    store = tmp_path / "digests.json"
    f = tmp_path / "w.bin"
    f.write_bytes(b"A" * 100)
    Hasher(store).digest_many([f])
    st = f.stat()
    with open(f, "r+b") as out:
        out.write(b"B")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    trusted = Hasher(store)
    assert trusted.digest_many([f]) == {f: (100, sha(b"A" * 100))}
    assert trusted.bytes_read == 0
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    fresh = Hasher(store)
    assert fresh.digest_many([f]) == {f: (100, sha(b"B" + b"A" * 99))}
    assert fresh.bytes_read == 100


@pytest.mark.parametrize("content", [
    b"{not json", b"[]", b'{"version": 1, "entries": []}', b'{"version": 2, "entries": {}}',
    b"[" * 100_000, b"\xff\xfe",
])
def test_a_corrupt_cache_file_is_ignored_and_rewritten(tmp_path: Path, content: bytes) -> None:
    store = tmp_path / "digests.json"
    store.write_bytes(content)
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    hasher = Hasher(store)
    assert hasher.digest_many([f]) == {f: (4, sha(b"data"))}
    saved = json.loads(store.read_bytes())
    assert saved["version"] == 1 and list(saved["entries"]) == [os.path.realpath(f)]


def test_hostile_entries_are_skipped_one_by_one(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    st = f.stat()
    real = os.path.realpath(f)
    lie = "0" * 64
    store = tmp_path / "digests.json"
    store.write_text(json.dumps({"version": 1, "entries": {
        real: [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, lie, None, 1.0],
        "relative": [1, 2, 3, 4, lie, None, 1.0],
        "/x": [1, 2, 3, 4, "ZZ", None, 1.0],
        "/y": [True, 2, 3, 4, lie, None, 1.0],
        "/z": "nope"}}))
    hasher = Hasher(store)
    assert hasher.digest_many([f]) == {f: (4, lie)}  # the well-formed entry is trusted
    assert hasher.bytes_read == 0
    assert sorted(hasher._entries) == [real]


def test_the_cache_is_bounded_oldest_dropped(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modelfiles, "MAX_CACHE_ENTRIES", 2)
    store = tmp_path / "digests.json"
    paths = []
    for i in range(3):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]))
        paths.append(p)
        Hasher(store).digest_many([p])
    kept = json.loads(store.read_bytes())["entries"]
    assert sorted(kept) == [os.path.realpath(paths[1]), os.path.realpath(paths[2])]


def test_a_fifo_named_as_the_cache_is_never_read_or_written(tmp_path: Path) -> None:
    store = tmp_path / "digests.json"
    os.mkfifo(store)
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    assert Hasher(store).digest_many([f]) == {f: (4, sha(b"data"))}
    assert not store.is_file()


def test_two_writers_merge_their_entries(tmp_path: Path) -> None:
    store = tmp_path / "digests.json"
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    one, two = Hasher(store), Hasher(store)  # both loaded an empty cache
    one.digest_many([a])
    two.digest_many([b])
    assert sorted(json.loads(store.read_bytes())["entries"]) == [
        os.path.realpath(a), os.path.realpath(b)]


def test_default_cache_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PIN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_file() == tmp_path / "xdg" / "pin" / "model-digests.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_file() == tmp_path / "home" / ".cache" / "pin" / "model-digests.json"
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path / "pc"))
    assert default_cache_file() == tmp_path / "pc" / "model-digests.json"
