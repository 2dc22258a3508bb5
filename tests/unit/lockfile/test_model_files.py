"""The path of a model file in the lock: what a lock can record, and what it refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pinning.lockfile.models import ModelFile, model_content_hash

DIGEST = "ab" * 32


@pytest.mark.parametrize("path", ["config.json", "1_Pooling/config.json", "ünïcode/モデル.bin",
                                  ".hidden", "a" * 4096])
def test_paths_a_lock_records(path: str) -> None:
    f = ModelFile(path=path, size=3, sha256=DIGEST)
    assert f.path == path
    assert model_content_hash([f]).startswith("sha256:")


@pytest.mark.parametrize(("path", "why"), [
    ("bad\udcff.bin", "not valid UTF-8"),  # os.fsdecode(b"bad\xff.bin")
    ("dir\udcfe/inner.bin", "not valid UTF-8"),
    ("\ud800", "not valid UTF-8"),
    ("tab\there", "control character"),
    ("back\\slash", "control character or backslash"),
    ("/abs", "not a path inside"),
    ("a/../b", "not a path inside"),
    ("", "1 to 4096"),
    ("a" * 4097, "1 to 4096"),
])
def test_paths_a_lock_refuses(path: str, why: str) -> None:
    with pytest.raises(ValidationError) as info:
        ModelFile(path=path, size=3, sha256=DIGEST)
    assert why in str(info.value)
