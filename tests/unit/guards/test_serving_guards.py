"""The serving choices of a lock reach the guards: the Marlin and FlashAttention CK rules judge
``[serving]``, the extension-target rule judges ``[[extensions]]``, and the flags that set them
are validated (exit 2 naming the flag)."""

from __future__ import annotations

import pytest

from pinning.errors import UsageError
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import evaluate
from pinning.guards.serving import (
    host_extensions,
    parse_attention,
    parse_extension,
    parse_quantization,
    serving_flags,
    serving_from_flags,
    with_lock_serving,
)
from pinning.guards.view import EnvView, GpuView
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import Distribution
from pinning.resolve.guards import lock_view
from pinning.resolve.to_lock import with_serving
from tests.support.guards import RULES
from tests.support.locks import lock_for


def served(lock: Lockfile, *, vendor: str | None = None, quantization: str | None = None,
           attention: str | None = None, head_dim: int | None = None, dtype: str | None = None,
           extensions: tuple[str, ...] = ()) -> Lockfile:
    serving, exts = serving_from_flags(vendor or lock.target.vendor, quantization=quantization,
                                       attention=attention, head_dim=head_dim, dtype=dtype,
                                       extensions=extensions)
    return with_serving(lock, serving, exts)


@pytest.fixture(scope="module")
def mi300x(matrix: Matrix) -> Lockfile:
    return lock_for(matrix, "mi300x", "pytorch==2.13.0")


@pytest.fixture(scope="module")
def h200(matrix: Matrix) -> Lockfile:
    return lock_for(matrix, "h200", "pytorch==2.13.0")


def judge(rule_id: str, lock: Lockfile) -> tuple[str, str]:
    res = evaluate(RULES[rule_id], with_lock_serving(lock_view(lock), lock))
    return res.status, res.reason


# --- flags ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("awq", ("awq", None)),
    ("AWQ:Triton", ("awq", "triton")),
    ("awq_marlin", ("awq_marlin", "marlin")),
    ("gptq_marlin:marlin", ("gptq_marlin", "marlin")),
    ("fp8", ("fp8", None)),
    # Every spelling of a Marlin method is the one Marlin guards see.
    ("awq-marlin", ("awq_marlin", "marlin")),
    ("marlin_awq", ("awq_marlin", "marlin")),
    ("MARLIN-GPTQ", ("gptq_marlin", "marlin")),
    ("moe-wna16", ("moe_wna16", None)),
])
def test_quantization_flag(text: str, want: tuple[str, str | None]) -> None:
    assert parse_quantization(text) == want


@pytest.mark.parametrize(("flag", "text"), [
    ("--quantization", "awq_marlin:triton"),
    ("--quantization", "awq:"),
    ("--quantization", ""),
    ("--attention", "sdpa-magic"),
    ("--attention", "ck:triton"),
    ("--attention", "flash-attn==not a version"),
    ("--attention", "flash-attn:cutlass"),
    ("--extension", "flash-attn"),
    ("--extension", "flash-attn==2.8.3:egg"),
    ("--extension", "flash-attn==2.8.3@sm_90"),
    ("--extension", "flash-attn==2.8.3@gfx94x"),
    ("--dtype", "int3"),
])
def test_bad_flag_is_a_usage_error_naming_it(flag: str, text: str) -> None:
    kw: dict[str, object] = {"quantization": None, "attention": None, "head_dim": None,
                             "dtype": None, "extensions": ()}
    key = flag.removeprefix("--").replace("-", "_")
    kw["extensions" if key == "extension" else key] = (text,) if key == "extension" else text
    with pytest.raises(UsageError) as err:
        serving_from_flags("amd", **kw)  # type: ignore[arg-type]
    assert err.value.exit_code == 2
    assert flag in err.value.message


def test_attention_spellings_and_extension_targets() -> None:
    assert parse_attention("FlashAttention==2.8.3:CK") == ("flash-attn", "2.8.3", "ck")
    assert parse_attention("aiter") == ("aiter", None, None)
    ext = parse_extension("Flash_Attn==2.8.3:source@gfx950,gfx942:sramecc+:xnack-", "amd")
    assert (ext.name, ext.version, ext.build) == ("flash-attn", "2.8.3", "source")
    assert ext.targets == ["gfx942:sramecc+:xnack-", "gfx950"]
    nv = parse_extension("flash-attn==2.8.3:wheel@sm_90,8.0", "nvidia")
    assert nv.targets == ["8.0", "9.0"] and nv.reason is None
    bare = parse_extension("xformers==0.0.32", "amd")
    assert bare.build is None and bare.targets is None
    assert bare.reason == "build and targets not given to pin resolve"
    with pytest.raises(UsageError, match="more than once"):
        serving_from_flags("amd", quantization=None, attention=None, head_dim=None, dtype=None,
                           extensions=("aiter==0.1.5", "aiter==0.1.6"))


def test_flags_round_trip_through_the_regenerate_command(mi300x: Lockfile) -> None:
    lock = served(mi300x, quantization="awq:triton", attention="flash-attn==2.8.3:ck",
                  head_dim=128, dtype="bfloat16",
                  extensions=("flash-attn==2.8.3:source@gfx942", "amd-aiter==0.1.5"))
    assert lock.serving is not None and lock.extensions is not None
    args = serving_flags(lock.serving, lock.extensions)
    assert args == ["--quantization", "awq:triton", "--attention", "flash-attn==2.8.3:ck",
                    "--head-dim", "128", "--dtype", "bf16",
                    "--extension", "amd-aiter==0.1.5",
                    "--extension", "flash-attn==2.8.3:source@gfx942"]
    assert lock.generator.command.endswith(" ".join(args))
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    again, exts = serving_from_flags(
        "amd", quantization=pairs["--quantization"], attention=pairs["--attention"],
        head_dim=int(pairs["--head-dim"]), dtype=pairs["--dtype"],
        extensions=tuple(args[i + 1] for i, a in enumerate(args) if a == "--extension"))
    assert again == lock.serving and exts == lock.extensions
    assert served(mi300x) == mi300x  # no flag: the lock is unchanged


# --- rules over [serving] ---------------------------------------------------------------------

def test_marlin_on_amd_judges_the_serving_quantization(mi300x: Lockfile, h200: Lockfile) -> None:
    status, reason = judge("marlin-on-amd", mi300x)
    assert status == "skipped" and "--quantization" in reason
    assert judge("marlin-on-amd", served(mi300x, quantization="awq_marlin"))[0] == "failed"
    # AWQ by Triton dequantization (SGLang's and vLLM's ROCm path) is not Marlin.
    status, reason = judge("marlin-on-amd", served(mi300x, quantization="awq:triton"))
    assert status == "passed" and "awq (triton kernels)" in reason
    # The kernels count, not only the method's name.
    assert judge("marlin-on-amd", served(mi300x, quantization="gptq:marlin"))[0] == "failed"
    assert judge("marlin-on-amd", served(h200, quantization="awq_marlin"))[0] == "passed"


def test_flash_attention_ck_limits_judge_the_serving_attention(mi300x: Lockfile) -> None:
    assert judge("flash-attn-ck-limits", mi300x)[0] == "passed"  # flash-attn not in the stack
    big = served(mi300x, attention="flash-attn==2.8.3:ck", head_dim=512, dtype="bf16")
    status, reason = judge("flash-attn-ck-limits", big)
    assert status == "failed" and "head dim 512" in reason and "ck backend" in reason
    fp32 = served(mi300x, attention="flash-attn==2.8.3:ck", head_dim=128, dtype="fp32")
    assert judge("flash-attn-ck-limits", fp32)[0] == "failed"
    fine = served(mi300x, attention="flash-attn==2.8.3:ck", head_dim=128, dtype="bf16")
    assert judge("flash-attn-ck-limits", fine)[0] == "passed"
    # The Triton backend has no CK limits.
    triton = served(mi300x, attention="flash-attn==2.8.3:triton", head_dim=512, dtype="bf16")
    assert judge("flash-attn-ck-limits", triton)[0] == "passed"
    # No backend given: unknown, unless the variable that selects Triton is set.
    open_backend = served(mi300x, attention="flash-attn==2.8.3", head_dim=512, dtype="bf16")
    status, reason = judge("flash-attn-ck-limits", open_backend)
    assert status == "skipped" and "flash-attn backend" in reason
    ctx = lock_view(open_backend)
    ctx.view.environment["FLASH_ATTENTION_TRITON_AMD_ENABLE"] = "TRUE"
    res = evaluate(RULES["flash-attn-ck-limits"], with_lock_serving(ctx, open_backend))
    assert res.status == "passed"
    # Another attention implementation in use beside an installed flash-attn.
    other = served(mi300x, attention="aiter", head_dim=512, dtype="bf16",
                   extensions=("flash-attn==2.8.3",))
    status, reason = judge("flash-attn-ck-limits", other)
    assert status == "passed" and "attention aiter in use instead" in reason


def test_extension_without_the_gpu_target_is_refused(matrix: Matrix) -> None:
    mi355 = lock_for(matrix, "mi355x", "pytorch==2.13.0")
    status, reason = judge("extension-without-gpu-target",
                           served(mi355, extensions=("flash-attn==2.8.3:source@gfx942",)))
    assert status == "failed" and "gfx942" in reason
    both = served(mi355, extensions=("flash-attn==2.8.3:source@gfx942,gfx950",))
    assert judge("extension-without-gpu-target", both)[0] == "passed"
    status, reason = judge("extension-without-gpu-target",
                           served(mi355, extensions=("flash-attn==2.8.3",)))
    assert status == "passed"  # targets not known: not judged
    assert judge("extension-without-gpu-target", mi355)[0] == "skipped"


def test_extension_targets_are_not_judged_on_nvidia() -> None:
    ctx = GuardContext(view=EnvView(gpus=[GpuView(vendor="nvidia", compute_capability="9.0")]))
    from pinning.guards.checks import check_extension_targets
    from pinning.guards.view import ExtensionView

    ctx.view.extensions.append(ExtensionView("flash-attn", "2.8.3", ["8.0"]))
    assert check_extension_targets(ctx.view) == []


# --- what a host shows ------------------------------------------------------------------------

def test_host_extensions_read_the_build_from_direct_url() -> None:
    dists = [
        Distribution(name="flash_attn", version="2.8.3",
                     direct_url="file:///src/flash-attention"),
        Distribution(name="amd-aiter", version="0.1.5",
                     direct_url="file:///wheels/amd_aiter-0.1.5-cp312-cp312-linux_x86_64.whl"),
        Distribution(name="xformers", version="0.0.32"),
        Distribution(name="numpy", version="2.1.2"),
        Distribution(name="my-ops", version="1.0", direct_url="https://example.org/my-ops.tgz"),
    ]
    locked = [parse_extension("my-ops==1.0:source@gfx942", "amd")]
    got = {e.name: e for e in host_extensions(dists, locked)}
    assert sorted(got) == ["amd-aiter", "flash-attn", "my-ops", "xformers"]
    assert all(e.origin == "host" for e in got.values())
    assert got["flash-attn"].build == "source" and got["amd-aiter"].build == "wheel"
    assert got["xformers"].build is None
    assert "no direct_url.json" in (got["xformers"].reason or "")
    assert got["flash-attn"].targets is None
    assert "does not show" in (got["flash-attn"].reason or "")
    # A locked entry at the same version keeps its targets, saying where they came from.
    assert got["my-ops"].targets == ["gfx942"] and got["my-ops"].build is None
    assert "as recorded before" in (got["my-ops"].reason or "")
