"""What the rules read (:func:`~pinning.guards.engine.rule_reads`): every package and
variable that changes a rule or coded-check finding is one it names, so a view stripped of
the others gets the same findings (``pin fleet verify`` keys its memory of rule findings
on what is read: :func:`pinning.verify.rulekey.rule_key`)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Literal

import pytest

from pinning.guards.checks import run_checks
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import guard_findings, load_rules, rule_reads
from pinning.guards.view import EnvView, GpuView, PackageView, package_key
from pinning.matrix.load import Matrix
from pinning.util.versions import normalize_name

AMD = [GpuView(vendor="amd", gfx="gfx942", device_id="0x74a1", product="mi300x")]
NV = [GpuView(vendor="nvidia", compute_capability="9.0")]

#: Packages that make some rule or coded check fire (alone or with another), spelled as
#: installers spell them.
TRIGGERS = [("nvidia-cublas-cu12", "12.4.5.8"), ("NVIDIA_cudnn.cu12", "9.1.0"),
            ("jax-rocm60-plugin", "0.4.35"), ("jax-rocm7-pjrt", "0.6.0"), ("jax", "0.4.35"),
            ("jaxlib", "0.4.31"), ("triton", "3.2.0"), ("pytorch-triton-rocm", "3.2.0"),
            ("torch", "2.7.0"), ("amd-aiter", "0.1.0"), ("flash_attn", "2.7.4"),
            ("vllm", "0.9.1")]
OTHERS = [("numpy", "2.1.0"), ("fleetgen-pkg-001", "1.0.1"), ("requests", "2.32.3"),
          ("jaxtyping", "0.2.36"), ("nvidia-ml-py", "12.560.30")]
ENV = {"HSA_OVERRIDE_GFX_VERSION": "9.4.2", "AITER_USE_SYSTEM_TRITON": "1",
       "HIPBLASLT_ALLOW_TF32": "1", "FLASH_ATTENTION_TRITON_AMD_ENABLE": "TRUE",
       "HIP_VISIBLE_DEVICES": "0", "PYTORCH_TUNABLEOP_ENABLED": "1"}


def judged(view: EnvView, matrix: Matrix) -> list[str]:
    ctx = GuardContext(view=view, platform="linux", gpu_ids=["mi300x"],
                       attention="flash-attn")
    found = run_checks(view, matrix) + guard_findings(ctx, "verify", include_skipped=True)
    return [f.model_dump_json() for f in found]


def stripped(view: EnvView) -> EnvView:
    reads = rule_reads(load_rules())
    return dataclasses.replace(
        view, packages=[p for p in view.packages if reads.reads_package(package_key(p.name))],
        environment={k: v for k, v in view.environment.items() if k in reads.env})


def views() -> list[EnvView]:
    out = []
    kinds: list[tuple[list[GpuView], Literal["rocm", "cuda"] | None]] = [
        (AMD, "rocm"), (AMD, "cuda"), (NV, "cuda"), ([], None)]
    for gpus, kind in kinds:
        for size in (1, 2, 3):
            for combo in itertools.islice(itertools.combinations(TRIGGERS, size), 0, None, 7):
                out.append(EnvView(
                    gpus=list(gpus), torch_kind=kind, torch_version="2.7.0" if kind else None,
                    rocm_version="7.1.1" if gpus is AMD else None,
                    packages=[PackageView(n, v) for n, v in [*combo, *OTHERS]],
                    environment=dict(itertools.islice(ENV.items(), size, size + 3))))
    return out


def test_a_view_without_what_no_rule_reads_gets_the_same_findings(matrix: Matrix) -> None:
    fired = set()
    for view in views():
        got = judged(view, matrix)
        assert judged(stripped(view), matrix) == got
        fired.update(got)
    assert len(fired) > 20  # the views make many rules and checks fire


@pytest.mark.parametrize("name", [n for n, _ in TRIGGERS])
def test_every_trigger_is_read(name: str) -> None:
    assert rule_reads(load_rules()).reads_package(package_key(name))


@pytest.mark.parametrize("name", [n for n, _ in OTHERS])
def test_other_packages_are_not_read(name: str) -> None:
    assert not rule_reads(load_rules()).reads_package(package_key(name))


def test_run_scoped_variables_are_not_read() -> None:
    env = rule_reads(load_rules()).env
    assert "HIP_VISIBLE_DEVICES" not in env and "PYTORCH_TUNABLEOP_ENABLED" not in env
    assert {"HSA_OVERRIDE_GFX_VERSION", "FLASH_ATTENTION_TRITON_AMD_ENABLE"} <= env


def test_package_key_is_pep_503() -> None:
    for name in ["Pytorch_Triton.ROCm", "a--b", "A.B_C", "x"]:
        assert package_key(name) == normalize_name(name)


def test_a_package_pattern_makes_every_package_read() -> None:
    rules = load_rules()
    rule = rules[0]
    patterned = rule.model_copy(update={
        "when": rule.when.model_copy(update={"package_pattern": "fleetgen-.*"})})
    assert not rule_reads(rules).reads_package("fleetgen-pkg-001")
    assert rule_reads([*rules, patterned]).reads_package("fleetgen-pkg-001")
    assert rule_reads([*rules, patterned]).reads_package("numpy")
