"""Guard checks on odd versions. (Regressions found by trying to break probe / verify /
freeze / doctor.)"""

from __future__ import annotations

from pinning.guards.checks import check_distributions
from pinning.guards.view import EnvView, PackageView
from pinning.matrix.load import Matrix


def test_jax_plugin_for_rocm_10_is_not_read_as_1x() -> None:
    view = EnvView(rocm_version="10.0.0", packages=[
        PackageView("jax", "0.9.0"), PackageView("jaxlib", "0.9.0"),
        PackageView("jax-rocm10-plugin", "0.9.0"), PackageView("jax-rocm10-pjrt", "0.9.0")])
    assert check_distributions(view) == []
    view.rocm_version = "7.2.0"
    assert [f.code for f in check_distributions(view)] == ["jax-plugin-rocm-major"]


def test_doctor_hip_series_uses_its_newest_release(matrix: Matrix) -> None:
    from pinning.guards.matrix_checks import check_gfx_targets
    from pinning.guards.view import GpuView

    view = EnvView(rocm_version="6.3", gpus=[GpuView(vendor="amd", gfx="gfx1012")])
    found = check_gfx_targets(view, matrix)
    assert [f.code for f in found] == ["unsupported-gfx-target"]
    assert "ROCm 6.3.3" in found[0].message
