"""Locks resolved from the shipped matrix, as ``pin resolve`` would write them."""

from __future__ import annotations

from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import (
    Constraints,
    parse_framework,
    parse_model,
    parse_runtime_spec,
)
from pinning.resolve.resolver import resolve
from pinning.resolve.to_lock import lock_from_resolution


def lock_for(matrix: Matrix, gpu: str, framework: str, *, rocm: str | None = None,
             cuda: str | None = None, model: str | None = None) -> Lockfile:
    c = Constraints(
        gpu=gpu, frameworks=(parse_framework(framework, matrix.framework_names()),),
        rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
        cuda=parse_runtime_spec("--cuda", cuda) if cuda else None,
        model=parse_model(model) if model else None,
    )
    return lock_from_resolution(resolve(matrix, c), matrix)


def frozen_mi300x(matrix: Matrix) -> Lockfile:
    """The MI300X / PyTorch 2.7 / ROCm 7.1.1 lock frozen from the recorded host
    ``tests/data/hosts/mi300x-rocm7.1`` (nothing outside what the lock validated)."""
    from pinning.verify.freeze import freeze
    from tests.support.hosts import recorded

    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    out, found, _ = freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="mi300x")
    assert found == [], found
    return out
