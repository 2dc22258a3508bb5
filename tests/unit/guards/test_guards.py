"""Guard rules: load from data with strict validation, and every shipped rule fires on its
positive case and not on its negative case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from pinning.errors import MatrixError
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import evaluate, load_rules
from pinning.guards.view import EnvView, ExtensionView, GpuView, PackageView
from pinning.matrix.load import Matrix
from tests.support.guards import RULES
from tests.support.hosts import HostCopy, recorded
from tests.support.locks import lock_for
from tests.support.paths import DATA

AMD = [GpuView(vendor="amd", gfx="gfx942", device_id="0x74a1")]
MI355 = [GpuView(vendor="amd", gfx="gfx950", device_id="0x75a3")]
NV = [GpuView(vendor="nvidia", compute_capability="9.0")]


def ctx(gpus: Sequence[GpuView] = AMD, packages: Sequence[tuple[str, str]] = (),
        env: Mapping[str, str] | None = None,
        torch: Literal["rocm", "cuda", "cpu", "unknown"] | None = None,
        **extra: Any) -> GuardContext:
    view = EnvView(gpus=list(gpus), packages=[PackageView(n, v) for n, v in packages],
                   environment=dict(env or {}), torch_kind=torch,
                   torch_version="2.7.0" if torch else None)
    return GuardContext(view=view, **extra)


FA_CK: dict[str, Any] = {"attention": "flash-attn", "attention_backend": "ck"}

CASES = {
    "aiter-replaces-triton": (
        ctx(packages=[("amd-aiter", "0.1.5"), ("torch", "2.9.1+rocm6.4")]),
        ctx(packages=[("amd-aiter", "0.1.5"), ("torch", "2.9.1+rocm6.4")],
            env={"AITER_USE_SYSTEM_TRITON": "1"})),
    "cuda-torch-on-amd": (ctx(torch="cuda"), ctx(torch="rocm")),
    "cuda-wheels-on-amd": (
        ctx(packages=[("nvidia-cuda-runtime-cu13", "13.0.96")]),
        ctx(gpus=NV, packages=[("nvidia-cuda-runtime-cu13", "13.0.96")])),
    "several-tritons": (
        ctx(packages=[("triton", "3.7.1"), ("pytorch-triton-rocm", "3.3.0")]),
        ctx(packages=[("pytorch-triton-rocm", "3.3.0")])),
    "marlin-on-amd": (ctx(quantization="awq_marlin"), ctx(quantization="awq")),
    "jax-rocm60-plugin-on-rocm7": (
        ctx(packages=[("jax-rocm60-plugin", "0.5.0")], runtime_version="7.1.1"),
        ctx(packages=[("jax-rocm60-plugin", "0.5.0")], runtime_version="6.4.1")),
    "jax-rocm7-plugin-on-rocm6": (
        ctx(packages=[("jax-rocm7-plugin", "0.8.2")], runtime_version="6.4.1"),
        ctx(packages=[("jax-rocm7-plugin", "0.8.2")], runtime_version="7.2.0")),
    "vllm-mi350-rocm-lt-7": (
        ctx(gpus=MI355, packages=[("vllm", "0.10.1")], runtime_version="6.4.1"),
        ctx(gpus=MI355, packages=[("vllm", "0.11.2")], runtime_version="7.0.0")),
    "hsa-override-gfx-version": (ctx(env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}), ctx()),
    "tf32-on-rocm": (
        ctx(torch="rocm", packages=[("torch", "2.7.0+rocm6.3")],
            env={"HIPBLASLT_ALLOW_TF32": "1"}),
        ctx(torch="rocm", packages=[("torch", "2.7.0+rocm6.3")],
            env={"HIPBLASLT_ALLOW_TF32": "0"})),
    "jax-rocm-on-windows": (
        ctx(packages=[("jax-rocm7-plugin", "0.8.2")], platform="windows"),
        ctx(packages=[("jax-rocm7-plugin", "0.8.2")], platform="linux")),
    "torch-device-rocm": (ctx(device_strings=["hip:0"]), ctx(device_strings=[])),
    "flash-attn-ck-limits": (
        ctx(packages=[("flash-attn", "2.8.3")], head_dim=512, dtype="bf16", **FA_CK),
        ctx(packages=[("flash-attn", "2.8.3")], head_dim=128, dtype="bf16", **FA_CK)),
    "extension-without-gpu-target": (
        GuardContext(view=EnvView(gpus=list(MI355), extensions=[
            ExtensionView("flash-attn", "2.8.3", ["gfx942"])])),
        GuardContext(view=EnvView(gpus=list(MI355), extensions=[
            ExtensionView("flash-attn", "2.8.3", ["gfx942", "gfx950"])]))),
}


def test_every_shipped_rule_has_cases() -> None:
    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires_on_positive_not_on_negative(rule_id: str) -> None:
    positive, negative = CASES[rule_id]
    fired = evaluate(RULES[rule_id], positive)
    assert fired.status == "failed", fired.reason
    quiet = evaluate(RULES[rule_id], negative)
    assert quiet.status == "passed", quiet.reason


def test_unknown_facts_skip_with_a_reason() -> None:
    result = evaluate(RULES["marlin-on-amd"], ctx())
    assert result.status == "skipped" and "quantization" in result.reason


def test_every_rule_names_a_source_and_date() -> None:
    for rule in RULES.values():
        assert len(rule.source) > 10 and rule.date.year >= 2025 and rule.why.endswith(".")


@pytest.mark.parametrize(("text", "needle"), [
    ('schema-version = 1\n[[rules]]\nid = "x"\nbogus = 1\n', "bogus"),
    ('schema-version = 1\n[[rules]]\nid = "x"\ntitle = "t"\nwhy = "w."\nsource = "s source"\n'
     'date = 2026-01-01\nphases = ["verify"]\nwhen = { gpu_color = "red" }\n'
     'remedy = { kind = "warn", text = "t" }\n', "gpu_color"),
    ('schema-version = 1\n[[rules]]\nid = "x"\ntitle = "t"\nwhy = "w."\nsource = "s source"\n'
     'date = 2026-01-01\nphases = ["verify"]\nwhen = { runtime = "~~7" }\n'
     'remedy = { kind = "warn", text = "t" }\n', "PEP 440"),
])
def test_bad_rule_files_fail_with_their_path(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(MatrixError) as exc:
        load_rules(path)
    assert exc.value.exit_code == 3 and str(path) in exc.value.message
    assert needle in exc.value.message


def test_guards_run_in_verify_and_doctor(matrix: Matrix, host_copy: HostCopy) -> None:
    from pinning.doctor.report import doctor
    from pinning.verify.report import verify

    host = host_copy("mi300x-rocm7.1")
    info = host / "root/opt/venv/lib/python3.12/site-packages/amd_aiter-0.1.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: amd-aiter\nVersion: 0.1.5\n")
    torch_meta = host / "root/opt/venv/lib/python3.12/site-packages/torch-2.7.0+rocm6.3.dist-info"
    (torch_meta / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1+rocm6.4\n")
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    report = verify(lock, recorded("", host), matrix, lock_name="l", host_name="h")
    guard = [f for f in report.findings if f.code == "guard:aiter-replaces-triton"]
    assert len(guard) == 1 and guard[0].severity == "error"
    assert guard[0].source is not None
    assert "AITER_USE_SYSTEM_TRITON=1" in guard[0].message and "ROCm/aiter" in guard[0].source
    rec = host / "commands.toml"
    rec.write_text(rec.read_text() + 'AITER_USE_SYSTEM_TRITON = "1"\n')
    report = verify(lock, recorded("", host), matrix, lock_name="l", host_name="h")
    assert not [f for f in report.findings if f.code.startswith("guard:aiter")]

    rocminfo = (DATA / "dumps" / "rocminfo-full.txt").read_text()
    pasted = doctor([("pip", "amd-aiter 0.1.5\ntorch 2.9.1+rocm6.4\n"), ("info", rocminfo)],
                    matrix)
    assert "guard:aiter-replaces-triton" in {f.code for f in pasted.findings}


def test_condition_details() -> None:
    aiter = RULES["aiter-replaces-triton"]
    base = [("amd-aiter", "0.1.5"), ("torch", "2.9.1+rocm6.4")]
    # Set to another value than the remedy's: still fires.
    assert evaluate(aiter, ctx(packages=base, env={"AITER_USE_SYSTEM_TRITON": "0"})).status \
        == "failed"
    # torch older than 2.9.1: AITER's setup skips the replacement.
    old = [("amd-aiter", "0.1.5"), ("torch", "2.7.0+rocm6.3")]
    assert evaluate(aiter, ctx(packages=old)).status == "passed"
    # No package list at all: unknown, not "passed".
    assert evaluate(aiter, ctx()).status == "skipped"
    fa = RULES["flash-attn-ck-limits"]
    pkgs = [("flash-attn", "2.8.3")]
    assert evaluate(fa, ctx(packages=pkgs, head_dim=128, dtype="torch.float32",
                            **FA_CK)).status == "failed"
    assert evaluate(fa, ctx(packages=pkgs, head_dim=128, dtype="torch.float16",
                            **FA_CK)).status == "passed"
    assert evaluate(fa, ctx(packages=pkgs, head_dim=128, **FA_CK)).status == "skipped"
    jax = RULES["jax-rocm60-plugin-on-rocm7"]
    nvidia = ctx(gpus=NV, packages=[("jax-rocm60-plugin", "0.5.0")], runtime_version="12.8")
    assert evaluate(jax, nvidia).status == "passed"
    tf32 = RULES["tf32-on-rocm"]
    mi250 = ctx(gpus=[GpuView(vendor="amd", gfx="gfx90a")], torch="rocm",
                packages=[("torch", "2.7.0+rocm6.3")], env={"HIPBLASLT_ALLOW_TF32": "1"})
    assert evaluate(tf32, mi250).status == "passed"


@pytest.mark.parametrize(("when", "needle"), [
    ("{ package_pattern = \"([\" }", "regular expression"),
    ("{ env_set = [\"A\"], env_values = { B = \"1\" } }", "env_values"),
    ("{}", "no condition"),
])
def test_more_bad_rules(tmp_path: Path, when: str, needle: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('schema-version = 1\n[[rules]]\nid = "x"\ntitle = "t"\nwhy = "w."\n'
                    'source = "s source"\ndate = 2026-01-01\nphases = ["verify"]\n'
                    f'when = {when}\nremedy = {{ kind = "warn", text = "t" }}\n')
    with pytest.raises(MatrixError) as exc:
        load_rules(path)
    assert needle in exc.value.message
