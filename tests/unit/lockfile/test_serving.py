"""``[serving]`` and ``[[extensions]]`` in the lock: optional (older locks stay valid), strict,
written and read back as TOML, and validated against the committed schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from pinning.errors import LockfileError
from pinning.guards.serving import serving_from_flags
from pinning.lockfile.io import lock_json, read_lock, render, write_lock
from pinning.lockfile.models import Lockfile
from pinning.lockfile.serving import Extension, Serving
from pinning.matrix.load import Matrix
from pinning.resolve.to_lock import with_serving
from tests.support.locks import lock_for
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def lock(matrix: Matrix) -> Lockfile:
    serving, exts = serving_from_flags(
        "amd", quantization="awq:triton", attention="flash-attn==2.8.3:ck", head_dim=128,
        dtype="bf16", extensions=("flash-attn==2.8.3:source@gfx942", "amd-aiter==0.1.5:wheel"))
    return with_serving(lock_for(matrix, "mi300x", "pytorch==2.13.0"), serving, exts)


def test_serving_and_extensions_round_trip(lock: Lockfile, tmp_path: Path) -> None:
    text = render(lock)
    assert "[serving]\nquantization = \"awq\"\nquantization-backend = \"triton\"\n" in text
    assert text.count("[[extensions]]") == 2
    path = tmp_path / "pin.lock"
    write_lock(lock, path)
    back = read_lock(path)
    assert back == lock
    assert back.serving == Serving(quantization="awq", quantization_backend="triton",
                                   attention="flash-attn", attention_version="2.8.3",
                                   attention_backend="ck", head_dim=128, dtype="bf16")
    assert back.extensions is not None
    assert [(e.name, e.build, e.targets) for e in back.extensions] == [
        ("amd-aiter", "wheel", None), ("flash-attn", "source", ["gfx942"])]
    schema = json.loads((ROOT / "schemas/lockfile.schema.json").read_text())
    jsonschema.validate(lock_json(lock), schema)


def test_a_lock_without_them_stays_valid(matrix: Matrix) -> None:
    plain = lock_for(matrix, "mi300x", "pytorch==2.13.0")
    assert plain.serving is None and plain.extensions is None
    assert "[serving]" not in render(plain) and "extensions" not in render(plain)


def test_unknown_extension_values_need_a_reason() -> None:
    with pytest.raises(ValidationError, match="needs `reason`"):
        Extension(name="flash-attn", version="2.8.3", build="source")
    Extension(name="flash-attn", version="2.8.3", build="source", targets=["gfx942"])
    with pytest.raises(ValidationError):
        Extension(name="flash-attn", version="2.8.3", build="source", targets=["mi300x"])
    with pytest.raises(ValidationError):
        Extension(name="flash-attn", version="2.8.3", build="egg",
                  targets=["gfx942"])


@pytest.mark.parametrize(("old", "new", "needle"), [
    ('quantization = "awq"', 'quantization = "AWQ Marlin"', "serving.quantization"),
    ('head-dim = 128', 'head-dim = 0', "serving.head-dim"),
    ('head-dim = 128', 'head-dim = 128\nbackend = "x"', "serving"),
    ('build = "source"', 'build = "egg"', "extensions"),
    ('targets = ["gfx942"]', 'targets = ["gfx942; rm -rf /"]', "extensions"),
])
def test_hand_edited_serving_is_refused(lock: Lockfile, tmp_path: Path, old: str, new: str,
                                        needle: str) -> None:
    text = render(lock)
    assert old in text
    path = tmp_path / "pin.lock"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(LockfileError) as err:
        read_lock(path)
    assert err.value.exit_code == 5
    assert needle in err.value.message
