"""Model files on a host: a revision in a Hugging Face cache laid out as huggingface_hub lays
it out (tests/support/hfcache.py), a local model folder, and the digest cache."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path

import pytest

from pinning.lockfile.models import model_content_hash
from pinning.probe import digestcache, modelfiles
from pinning.probe.hasher import Hasher, NotRegularFile, default_cache_file
from pinning.probe.hubcache import read_hub_model
from pinning.probe.modelfiles import ModelProblem, read_model_dir
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



def test_the_default_workers_follow_the_cores_pin_may_run_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Under `taskset -c 0` one thread hashes (more would only switch on one core); at most 8.
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert Hasher().workers == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(32)), raising=False)
    assert Hasher().workers == 8 and Hasher(workers=3).workers == 3
    cache, _ = small_cache(tmp_path)
    tree = read_hub_model(cache, MODEL, REV, hasher=Hasher(workers=1))
    assert {f.path: f.sha256 for f in tree.files} == {k: sha(v) for k, v in SMALL.items()}

def edit_in_place_mtime_kept(f: Path, data: bytes) -> None:
    """Rewrite ``f`` in place with ``data`` (same size) and put its mtime back, until its
    ctime differs from before (file systems with coarse timestamps share one per tick)."""
    st = f.stat()
    for _ in range(1000):
        with open(f, "r+b") as out:
            out.write(data)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        if f.stat().st_ctime_ns != st.st_ctime_ns:
            break
        time.sleep(0.002)
    now = f.stat()
    assert (now.st_mtime_ns, now.st_size, now.st_ino) == (st.st_mtime_ns, st.st_size, st.st_ino)
    assert now.st_ctime_ns != st.st_ctime_ns


def test_an_in_place_edit_with_mtime_put_back_is_read_again(tmp_path: Path) -> None:
    """The key holds ctime: bytes rewritten in place, same size, same inode, mtime put back
    with os.utime (which sets ctime) are read again; an untouched file is not."""
    store = tmp_path / "digests.json"
    f, g = tmp_path / "w.bin", tmp_path / "same.bin"
    f.write_bytes(b"A" * 100)
    g.write_bytes(b"G")
    assert Hasher(store).digest_many([f, g]) == {f: (100, sha(b"A" * 100)), g: (1, sha(b"G"))}
    edit_in_place_mtime_kept(f, b"B")
    fresh = Hasher(store)
    assert fresh.digest_many([f, g]) == {f: (100, sha(b"B" + b"A" * 99)), g: (1, sha(b"G"))}
    assert (fresh.bytes_read, fresh.files_read) == (100, 1)
    entry = json.loads(store.read_bytes())["entries"][os.path.realpath(f)]
    assert entry[:5] == [*(getattr(f.stat(), k) for k in (
        "st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"))]
    assert entry[5] == sha(b"B" + b"A" * 99)
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000_000))
    again = Hasher(store)
    assert again.digest_many([f]) == {f: (100, sha(b"B" + b"A" * 99))}
    assert again.bytes_read == 100


@pytest.mark.parametrize("content", [
    b"{not json", b"[]", b'{"version": 2, "entries": []}', b'{"version": 1, "entries": {}}',
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
    assert saved["version"] == 2 and list(saved["entries"]) == [os.path.realpath(f)]


def test_hostile_entries_are_skipped_one_by_one(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    st = f.stat()
    real = os.path.realpath(f)
    lie = "0" * 64
    store = tmp_path / "digests.json"
    store.write_text(json.dumps({"version": 2, "entries": {
        real: [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, lie, None, 1.0],
        "relative": [1, 2, 3, 4, 5, lie, None, 1.0],
        "/x": [1, 2, 3, 4, 5, "ZZ", None, 1.0],
        "/y": [True, 2, 3, 4, 5, lie, None, 1.0],
        "/v1": [1, 2, 3, 4, lie, None, 1.0],
        "/z": "nope"}}))
    hasher = Hasher(store)
    assert hasher.digest_many([f]) == {f: (4, lie)}  # the well-formed entry is trusted
    assert hasher.bytes_read == 0
    assert sorted(hasher._entries) == [real]


def test_the_cache_is_bounded_oldest_dropped(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digestcache, "MAX_CACHE_ENTRIES", 2)
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


# --- the digest cache never writes through a link or into a folder others control --------

def cache_of(store: Path) -> dict[str, list[object]]:
    entries: dict[str, list[object]] = json.loads(store.read_bytes())["entries"]
    return entries


def test_a_cache_file_that_is_a_link_is_never_read_or_written(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    st = f.stat()
    precious = tmp_path / "precious"
    # a well-formed cache with a lie for f: were it read, f's digest would be the lie
    lie = "0" * 64
    body = json.dumps({"version": 2, "entries": {os.path.realpath(f): [
        st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, lie, None, 1.0]}})
    precious.write_text(body)
    (tmp_path / "pin").mkdir(mode=0o700)
    store = tmp_path / "pin" / "model-digests.json"
    os.symlink(precious, store)
    hasher = Hasher(store)
    assert hasher.digest_many([f]) == {f: (4, sha(b"data"))} and hasher.bytes_read == 4
    assert precious.read_text() == body
    assert os.readlink(store) == str(precious)
    assert sorted(os.listdir(tmp_path / "pin")) == ["model-digests.json"]  # no temp left
    second = Hasher(store)  # no persistent cache: read again
    assert second.digest_many([f]) == {f: (4, sha(b"data"))} and second.bytes_read == 4


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    os.symlink(target, tmp_path / "pin")
    hasher = Hasher(tmp_path / "pin" / "model-digests.json")
    assert hasher.digest_many([f]) == {f: (4, sha(b"data"))}
    assert os.listdir(target) == []


def test_a_cache_folder_writable_by_others_is_not_used(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    store = shared / "model-digests.json"
    Hasher(store).digest_many([f])
    assert os.listdir(shared) == []
    shared.chmod(0o700)  # the same folder, private: used
    Hasher(store).digest_many([f])
    assert list(cache_of(store)) == [os.path.realpath(f)]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_cache_folder_or_file_of_another_user_is_not_used(tmp_path: Path) -> None:
    nobody = 65534
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    theirs = tmp_path / "pin-0"  # a /tmp/pin-<uid> another user made first
    theirs.mkdir(mode=0o700)
    os.chown(theirs, nobody, nobody)
    store = theirs / "model-digests.json"
    Hasher(store).digest_many([f])
    assert os.listdir(theirs) == []
    os.chown(theirs, 0, 0)
    store.write_bytes(b"{}")
    os.chown(store, nobody, nobody)  # our folder, their file: neither read nor replaced
    Hasher(store).digest_many([f])
    assert store.read_bytes() == b"{}" and store.stat().st_uid == nobody


def test_a_save_replaces_the_cache_file_whole_and_private(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"data")
    store = tmp_path / "pin" / "model-digests.json"
    Hasher(store).digest_many([f])
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    inode = store.stat().st_ino
    g = tmp_path / "g.bin"
    g.write_bytes(b"g")
    Hasher(store).digest_many([g])
    assert store.stat().st_ino != inode  # a new file renamed over, not written in place
    assert sorted(cache_of(store)) == sorted(map(os.path.realpath, (f, g)))
    assert sorted(os.listdir(store.parent)) == ["model-digests.json"]


# --- names a lock cannot record ------------------------------------------------------------

def test_a_name_that_is_not_utf8_is_a_problem_never_a_crash(tmp_path: Path) -> None:
    top = converted(tmp_path)
    with open(os.fsencode(top) + b"/bad\xff.bin", "wb") as out:
        out.write(b"x")
    os.mkdir(os.fsencode(top) + b"/dir\xfe")
    with open(os.fsencode(top) + b"/dir\xfe/inner.bin", "wb") as out:
        out.write(b"y")
    tree = read_model_dir(top)
    assert [(p.path, p.kind) for p in tree.problems] == [
        ("'bad\\udcff.bin'", "unreadable"), ("'dir\\udcfe/inner.bin'", "unreadable")]
    assert "not UTF-8" in tree.problems[0].detail
    assert [f.path for f in tree.files] == [
        "config.json", "shards/deep/extra.bin", "shards/model-00001.safetensors"]
    assert model_content_hash(tree.files).startswith("sha256:")
    for p in tree.problems:
        (p.path + p.detail).encode("utf-8")


def test_a_hub_snapshot_name_that_is_not_utf8_is_a_problem(tmp_path: Path) -> None:
    cache, repo = small_cache(tmp_path)
    snap = os.fsencode(repo / "snapshots" / REV)
    os.symlink(b"../../blobs/" + os.fsencode(git_blob_id(CONFIG)), snap + b"/x\xff.json")
    tree = read_hub_model(cache, MODEL, REV)
    assert [(p.path, p.kind) for p in tree.problems] == [("'x\\udcff.json'", "unreadable")]
    assert [f.path for f in tree.files] == ["1_Pooling/config.json", "config.json",
                                            "model.safetensors"]


def test_a_link_out_to_a_name_not_utf8_has_a_printable_detail(tmp_path: Path) -> None:
    top = converted(tmp_path)
    outside = os.fsencode(tmp_path) + b"/out\xff"
    with open(outside, "wb") as out:
        out.write(b"z")
    os.symlink(outside, os.fsencode(top) + b"/leak.bin")
    tree = read_model_dir(top)
    assert [(p.path, p.kind) for p in tree.problems] == [("leak.bin", "unreadable")]
    assert "out\\udcff" in tree.problems[0].detail
    tree.problems[0].detail.encode("utf-8")


# --- files a folder walk leaves out ----------------------------------------------------------

def test_an_excluded_lock_in_the_folder_is_left_out(tmp_path: Path) -> None:
    top = converted(tmp_path)
    lock = top / "pin.lock"
    lock.write_bytes(b"[model]\n")
    os.symlink("pin.lock", top / "alias.lock")  # a link to it: the same real path
    tree = read_model_dir(top, exclude=[tmp_path / "ckpt" / "." / "pin.lock"])
    assert tree.problems == []
    assert [f.path for f in tree.files] == [
        "config.json", "shards/deep/extra.bin", "shards/model-00001.safetensors"]
    listed = [f.path for f in read_model_dir(top).files]  # not excluded: listed
    assert listed[:2] == ["alias.lock", "config.json"] and "pin.lock" in listed


def test_the_digest_cache_inside_the_folder_is_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    top = converted(tmp_path)
    monkeypatch.setenv("PIN_CACHE_DIR", str(top / ".pin"))
    store = default_cache_file()
    first = read_model_dir(top, hasher=Hasher(store))
    assert store.is_file()
    (store.parent / ".model-digests.json.123.abcd.tmp").write_bytes(b"{")  # a killed writer's
    (store.parent / "mine.bin").write_bytes(b"m")  # any other file there is the model's
    again = read_model_dir(top, hasher=Hasher(store))
    assert [f.path for f in again.files] == [
        ".pin/mine.bin", *(f.path for f in first.files)]
    assert again.problems == []
    # a Hasher's own cache file, elsewhere than the default, is left out too
    monkeypatch.setenv("PIN_CACHE_DIR", str(tmp_path / "other"))
    own = read_model_dir(top, hasher=Hasher(store))
    assert [f.path for f in own.files] == [f.path for f in again.files]


# --- under a recorded host's root ------------------------------------------------------------

def recorded_host(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    top = root / "models" / "m"
    top.mkdir(parents=True)
    (top / "config.json").write_bytes(CONFIG)
    (root / "etc").mkdir()
    (root / "etc" / "passwd").write_bytes(b"root:x:0:0\n")
    os.symlink("/models/m/config.json", top / "abs.json")  # the host's absolute link
    return root, top


def test_under_a_root_an_absolute_link_inside_the_tree_is_followed(tmp_path: Path) -> None:
    root, top = recorded_host(tmp_path)
    tree = read_model_dir(top, root=root)
    assert tree.problems == []
    assert [(f.path, f.sha256) for f in tree.files] == [
        ("abs.json", sha(CONFIG)), ("config.json", sha(CONFIG))]
    # without the root the same link points at this machine's /models: refused
    plain = read_model_dir(top)
    assert [(p.path, p.kind) for p in plain.problems] == [("abs.json", "unreadable")]


def test_under_a_root_links_leaving_the_folder_or_root_are_refused(tmp_path: Path) -> None:
    root, top = recorded_host(tmp_path)
    os.symlink("/etc/passwd", top / "passwd")  # the host's /etc/passwd: out of the folder
    os.symlink("../../../../../../../../etc/passwd", top / "climb")  # .. stops at the root
    os.symlink("loop2", top / "loop1")
    os.symlink("loop1", top / "loop2")
    tree = read_model_dir(top, root=root)
    assert [(p.path, p.kind) for p in tree.problems] == [
        ("climb", "unreadable"), ("loop1", "unreadable"), ("loop2", "unreadable"),
        ("passwd", "unreadable")]
    assert "(to /etc/passwd); not followed" in tree.problems[0].detail
    assert "(to /etc/passwd); not followed" in tree.problems[3].detail
    assert [f.path for f in tree.files] == ["abs.json", "config.json"]


def test_under_a_root_a_hub_snapshot_with_absolute_links_is_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    cache = root / "hub"
    repo = make_hub_cache(cache, MODEL, REV, SMALL)
    link = repo / "snapshots" / REV / "config.json"
    blob = blob_of(repo, REV, "config.json")
    link.unlink()
    os.symlink("/" + str(blob.relative_to(root.resolve())), link)
    os.symlink("/etc/hostname", repo / "snapshots" / REV / "leak.json")
    tree = read_hub_model(cache, MODEL, REV, root=root)
    assert [(f.path, f.sha256) for f in tree.files] == [
        ("1_Pooling/config.json", sha(b"{}")), ("config.json", sha(CONFIG)),
        ("model.safetensors", sha(WEIGHTS))]
    assert [(p.path, p.kind) for p in tree.problems] == [("leak.json", "unreadable")]
    plain = read_hub_model(cache, MODEL, REV)
    assert [(p.path, p.kind) for p in plain.problems] == [
        ("config.json", "unreadable"), ("leak.json", "unreadable")]
