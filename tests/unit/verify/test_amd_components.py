"""ROCm components of a lock (AMD's library rows) and what pin verify does with them."""

from __future__ import annotations

from pinning.lockfile.models import Pinned
from pinning.matrix.load import Matrix
from pinning.verify.freeze import freeze
from pinning.verify.report import verify
from tests.support.hosts import recorded
from tests.support.locks import lock_for


def test_lock_carries_the_validated_library_versions(matrix: Matrix) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    comps = {k: v.value for k, v in lock.runtime.components.items()}
    assert set(comps) == {"hipblaslt", "rocblas", "miopen", "rccl", "composable-kernel",
                          "amd-smi", "rocm-smi"}
    rel = next(r.release for r in matrix.releases() if r.release.version == "7.1.1")
    assert comps == rel.components
    assert all(v.ref == "amd-rocm-2026-01-21:rocm-7.1.1" for v in lock.runtime.components.values())


def test_verify_compares_amd_smi_when_the_host_shows_it(matrix: Matrix) -> None:
    facts = recorded("mi300x-rocm7.1")  # amd-smi version prints 26.2.0+021c61fc
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    lock, _, _ = freeze(lock, facts, matrix, host_label="h")
    report = verify(lock, facts, matrix, lock_name="l", host_name="h")
    hit = [f for f in report.findings if f.fact == "runtime.components.amd-smi"]
    assert [f.status for f in hit] == ["match"]
    other = lock.runtime.model_copy(update={"components": {
        **lock.runtime.components,
        "amd-smi": Pinned(value="26.0.0", origin="matrix", ref="x:rocm-7.0.0")}})
    drifted = verify(lock.model_copy(update={"runtime": other}), facts, matrix,
                     lock_name="l", host_name="h")
    assert "runtime.components.amd-smi" in {f.fact for f in drifted.drift}
    # The libraries the host does not show are not judged.
    assert not [f for f in report.findings if f.fact.startswith("runtime.components.rocblas")]
