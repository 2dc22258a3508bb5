"""pin audit: the package knowledge (data file, schema) and the package classifier."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.audit.indexes import index_kind, local_kind
from pinning.audit.model import Context, DeclaredPackage, Kind, Verdict
from pinning.audit.packages import (
    DATA_FILE,
    NO_DATA_RULE,
    Knowledge,
    load_knowledge,
)
from pinning.errors import MatrixError
from tests.support.paths import ROOT

SHIPPED = ROOT / DATA_FILE


def pkg(raw: str, name: str | None = None, **kw: object) -> DeclaredPackage:
    """A declared package as the requirements parser would give it (line 7 of a file)."""
    fields: dict[str, object] = {"path": "requirements.txt", "line": 7, **kw}
    return DeclaredPackage(name=name or raw, raw=raw, origin="requirements",
                           **fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def knowledge() -> Knowledge:
    return load_knowledge()


# -- the data file ---------------------------------------------------------------------------


def test_every_row_loads_with_a_unique_id_and_a_real_status(knowledge: Knowledge) -> None:
    ids = [row.id for row in knowledge.rows]
    assert len(ids) == len(set(ids)) >= 50
    assert {row.status for row in knowledge.rows} == {"ready", "swap", "port", "blocked"}
    assert load_knowledge() is knowledge  # the shipped file is read once


def test_every_citation_is_public_and_dated_or_says_why_not(knowledge: Knowledge) -> None:
    for row in knowledge.rows:
        source = row.source
        is_url = source.startswith("https://")
        repo, _, rest = source.partition("@")
        commit, _, path = rest.partition(":")
        is_repo_path = repo.count("/") == 1 and len(commit) >= 7 and bool(path)
        assert is_url or is_repo_path, row.id
        for text in (row.source, row.why, row.todo, row.published_unknown or ""):
            assert "FACTS.md" not in text and "DESIGN.md" not in text, row.id
            assert "shared/" not in text and "/work/" not in text, row.id
        assert (row.published is None) != (row.published_unknown is None), row.id
        if row.published is not None:
            assert dt.date(2020, 1, 1) <= row.published <= dt.date(2026, 12, 1), row.id


def test_the_packages_users_hit_all_have_rows(knowledge: Knowledge) -> None:
    names = ["torch", "torchvision", "torchaudio", "nvidia-cublas-cu12", "cupy-cuda12x",
             "cupy-rocm-5-0", "triton", "pytorch-triton-rocm", "flash-attn", "xformers",
             "bitsandbytes", "apex", "deepspeed", "mamba-ssm", "causal-conv1d", "auto-gptq",
             "autoawq", "exllamav2", "flashinfer-python", "tensorrt", "tensorrt-llm",
             "onnxruntime-gpu", "jax", "jax-cuda12-plugin", "jax-cuda12-pjrt", "pynvml",
             "nvidia-ml-py", "cuda-python", "pycuda", "numba", "vllm", "sglang",
             "transformers", "accelerate", "safetensors", "numpy"]
    missing = [n for n in names if knowledge.match(pkg(n)) is None]
    assert missing == []


# -- each verdict, with a case that is not it -----------------------------------------------


def test_ready_pure_python_package(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("numpy==2.1.0", "numpy", version="2.1.0"), Context())
    assert (f.kind, f.rule, f.verdict) == (Kind.PACKAGE, "package.numpy", Verdict.READY)
    assert (f.path, f.line, f.package, f.subject) == ("requirements.txt", 7, "numpy",
                                                      "numpy==2.1.0")
    assert f.citation.source == "https://pypi.org/project/numpy/"


def test_plain_torch_from_pypi_is_not_ready_but_a_swap(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("torch>=2.4", "torch", specifier=">=2.4"), Context())
    assert (f.rule, f.verdict) == ("package.torch-pypi", Verdict.SWAP)
    assert "https://download.pytorch.org/whl/rocm" in f.todo
    assert f.citation.source == "https://pytorch.org/get-started/locally/"


def test_cuda_local_torch_is_a_swap_to_the_rocm_index(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("torch==2.5.1+cu121", "torch", version="2.5.1+cu121",
                               local="cu121"), Context())
    assert (f.rule, f.verdict) == ("package.torch-cuda-build", Verdict.SWAP)
    assert f.replacement == "https://download.pytorch.org/whl/rocmX.Y"
    assert "https://download.pytorch.org/whl/rocmX.Y" in f.todo


def test_cuda_local_read_from_the_version_when_no_label_is_given(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("torchvision==0.20.1+cu124", "torchvision",
                               version="0.20.1+cu124"), Context())
    assert (f.rule, f.verdict) == ("package.torch-cuda-build", Verdict.SWAP)


def test_rocm_local_torch_is_ready_not_a_swap(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("torch==2.7.0+rocm6.3", "torch", version="2.7.0+rocm6.3",
                               local="rocm6.3"), Context())
    assert (f.rule, f.verdict) == ("package.torch-rocm-build", Verdict.READY)


@pytest.mark.parametrize(("url", "rule", "verdict"), [
    ("https://download.pytorch.org/whl/rocm6.2", "package.torch-rocm-index", Verdict.READY),
    ("https://download.pytorch.org/whl/cu118", "package.torch-cuda-index", Verdict.SWAP),
    ("https://download.pytorch.org/whl/cpu", "package.torch-cpu-index", Verdict.SWAP),
    ("https://pypi.org/simple", "package.torch-pypi", Verdict.SWAP),
])
def test_torch_verdict_follows_the_index_the_file_names(knowledge: Knowledge, url: str,
                                                        rule: str, verdict: Verdict) -> None:
    f = knowledge.classify(pkg("torch", index_urls=(url,)), Context())
    assert (f.rule, f.verdict) == (rule, verdict)


def test_untagged_source_build_of_torch_is_no_data(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("torch==2.6.0a0+git8d4926e", "torch",
                               version="2.6.0a0+git8d4926e", local="git8d4926e"), Context())
    assert (f.rule, f.verdict) == (NO_DATA_RULE, Verdict.NO_DATA)


def test_port_for_a_source_build_package(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("flash-attn==2.7.4", "flash-attn", version="2.7.4"),
                           Context())
    assert (f.rule, f.verdict) == ("package.flash-attn", Verdict.PORT)
    assert f.todo.endswith("Limited to gfx90a, gfx942, gfx950.")
    assert f.citation.source == "https://github.com/Dao-AILab/flash-attention"
    assert f.citation.published is None and f.citation.published_unknown is not None


def test_blocked_for_an_nvidia_only_package(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("tensorrt-llm==0.12", "tensorrt-llm", version="0.12"),
                           Context())
    assert (f.rule, f.verdict, f.replacement) == ("package.tensorrt", Verdict.BLOCKED,
                                                  "MIGraphX")


def test_onnxruntime_gpu_is_a_swap_not_blocked(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("onnxruntime-gpu"), Context())
    assert (f.rule, f.verdict) == ("package.onnxruntime-gpu", Verdict.SWAP)


def test_unknown_package_is_no_data_with_pins_own_file_cited(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("leftpad-gpu==1.0", "leftpad-gpu", version="1.0"), Context())
    assert (f.rule, f.verdict, f.package) == (NO_DATA_RULE, Verdict.NO_DATA, "leftpad-gpu")
    assert f.why == "pin's package data has no entry for leftpad-gpu."
    assert f.todo == "Check its documentation for ROCm support."
    assert f.citation.source == DATA_FILE
    assert f.citation.published_unknown == "pin's data; no source about this package"


# -- bitsandbytes by version --------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "kw", "rule", "verdict"), [
    ("bitsandbytes==0.43.3", {"version": "0.43.3"}, "bitsandbytes-pre-rocm", Verdict.PORT),
    ("bitsandbytes==0.44.1", {"version": "0.44.1"}, "bitsandbytes-pre-rocm", Verdict.PORT),
    ("bitsandbytes==0.45.0", {"version": "0.45.0"}, "bitsandbytes-pre-rocm", Verdict.PORT),
    ("bitsandbytes==0.47.0", {"version": "0.47.0"}, "bitsandbytes-pre-rocm", Verdict.PORT),
    ("bitsandbytes==0.48.1", {"version": "0.48.1"}, "bitsandbytes-experimental",
     Verdict.SWAP),
    ("bitsandbytes==0.49.0", {"version": "0.49.0"}, "bitsandbytes-rocm-wheels", Verdict.SWAP),
    ("bitsandbytes==0.49.2", {"version": "0.49.2"}, "bitsandbytes-rocm-wheels", Verdict.SWAP),
    ("bitsandbytes==0.50.0", {"version": "0.50.0"}, "bitsandbytes-official", Verdict.READY),
    ("bitsandbytes==0.50.2", {"version": "0.50.2"}, "bitsandbytes-official", Verdict.READY),
    ("bitsandbytes==0.51.0.dev1", {"version": "0.51.0.dev1"}, "bitsandbytes-official",
     Verdict.READY),
    ("bitsandbytes", {}, "bitsandbytes-official", Verdict.READY),
    ("bitsandbytes<0.45", {"specifier": "<0.45"}, "bitsandbytes-pre-rocm", Verdict.PORT),
    ("bitsandbytes>=0.46,<0.48", {"specifier": ">=0.46,<0.48"}, "bitsandbytes-pre-rocm",
     Verdict.PORT),
    ("bitsandbytes~=0.49.1", {"specifier": "~=0.49.1"}, "bitsandbytes-rocm-wheels",
     Verdict.SWAP),
    ("bitsandbytes~=0.48.0", {"specifier": "~=0.48.0"}, "bitsandbytes-experimental",
     Verdict.SWAP),
    ("bitsandbytes>=0.42", {"specifier": ">=0.42"}, "bitsandbytes-official", Verdict.READY),
])
def test_bitsandbytes_verdict_depends_on_the_version(knowledge: Knowledge, raw: str,
                                                     kw: dict[str, str], rule: str,
                                                     verdict: Verdict) -> None:
    f = knowledge.classify(pkg(raw, "bitsandbytes", **kw), Context())
    assert (f.rule, f.verdict) == (f"package.{rule}", verdict)


def test_bitsandbytes_version_that_is_not_pep440_matches_no_versioned_row(
        knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("bitsandbytes==latest", "bitsandbytes", version="latest"),
                           Context())
    assert f.verdict is Verdict.NO_DATA


@pytest.mark.parametrize("kw", [
    {"version": "9" * 5000}, {"specifier": ">=>=1"}, {"specifier": "<" + "1." * 3000 + "1"},
    {"index_urls": ("http://[::1", "\x00")}, {"local": "\x1b[31m"}, {"line": 0},
])
def test_hostile_declarations_never_raise(knowledge: Knowledge, kw: dict[str, object]) -> None:
    f = knowledge.classify(pkg("bitsandbytes", None, **kw), Context(gfx_targets=("",)))
    assert f.package == "bitsandbytes" and f.rule.startswith("package.")
    assert f.line in (7, None)


# -- name patterns, normalisation, extras -----------------------------------------------------


@pytest.mark.parametrize(("name", "rule", "verdict", "replacement"), [
    ("nvidia-cublas-cu12", "nvidia-cublas", Verdict.SWAP, "hipBLAS / rocBLAS"),
    ("nvidia-cudnn-cu12", "nvidia-cudnn", Verdict.SWAP, "MIOpen"),
    ("nvidia-nccl-cu12", "nvidia-nccl", Verdict.SWAP, "RCCL"),
    ("nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime", Verdict.SWAP, "HIP runtime"),
    ("nvidia-nvshmem-cu12", "nvidia-wheel", Verdict.BLOCKED, None),
    ("nvidia-ml-py", "nvml-bindings", Verdict.PORT, "amdsmi"),
    ("some-kernels-cu11", "cuda-major-suffix", Verdict.BLOCKED, None),
    ("some-kernels-cu12", "cuda12-suffix", Verdict.BLOCKED, None),
    ("some-kernels-cu13", "cuda13-suffix", Verdict.BLOCKED, None),
    ("cupy-cuda12x", "cupy-cuda", Verdict.SWAP, "cupy-rocm-7-0"),
    ("cupy-rocm-5-0", "cupy-rocm", Verdict.READY, None),
    ("jax-cuda12-plugin", "jax-cuda-plugin", Verdict.SWAP, "jax-rocmN-plugin + jax-rocmN-pjrt"),
    ("jax-rocm7-pjrt", "jax-rocm-plugin", Verdict.READY, None),
])
def test_name_patterns(knowledge: Knowledge, name: str, rule: str, verdict: Verdict,
                       replacement: str | None) -> None:
    f = knowledge.classify(pkg(name), Context())
    assert (f.rule, f.verdict, f.replacement) == (f"package.{rule}", verdict, replacement)


def test_a_name_that_only_resembles_a_pattern_is_no_data(knowledge: Knowledge) -> None:
    for name in ("nvidiax", "cupy", "my-cu12-tools", "jaxtyping"):
        assert knowledge.classify(pkg(name), Context()).verdict is Verdict.NO_DATA, name


def test_names_are_normalised_before_matching(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("Flash_Attn==2.7.4", "Flash_Attn", version="2.7.4"),
                           Context())
    assert (f.rule, f.package) == ("package.flash-attn", "Flash_Attn")
    assert knowledge.classify(pkg("NVIDIA.cuBLAS_cu12"), Context()).rule == \
        "package.nvidia-cublas"


def test_jax_cuda_extra_is_a_swap_and_plain_jax_is_ready(knowledge: Knowledge) -> None:
    cuda = knowledge.classify(pkg("jax[cuda12]==0.4.35", "jax", version="0.4.35",
                                  extras=("cuda12",)), Context())
    plain = knowledge.classify(pkg("jax==0.4.35", "jax", version="0.4.35"), Context())
    assert (cuda.rule, cuda.verdict) == ("package.jax-cuda-extra", Verdict.SWAP)
    assert (plain.rule, plain.verdict) == ("package.jax", Verdict.READY)


def test_triton_from_pypi_is_a_swap_and_the_rocm_build_is_ready(knowledge: Knowledge) -> None:
    pypi = knowledge.classify(pkg("triton==3.3.0", "triton", version="3.3.0"), Context())
    rocm = knowledge.classify(pkg("triton==3.7.0+amd.rocm7.2.0.git89002410", "triton",
                                  version="3.7.0+amd.rocm7.2.0.git89002410"), Context())
    assert (pypi.rule, pypi.verdict) == ("package.triton-pypi", Verdict.SWAP)
    assert (rocm.rule, rocm.verdict) == ("package.triton-rocm-build", Verdict.READY)


def test_vllm_from_pypi_is_a_swap_and_its_rocm_wheel_ready(knowledge: Knowledge) -> None:
    pypi = knowledge.classify(pkg("vllm==0.11.2", "vllm", version="0.11.2"), Context())
    rocm = knowledge.classify(pkg("vllm==0.22.1+rocm722", "vllm", version="0.22.1+rocm722",
                                  local="rocm722"), Context())
    assert (pypi.rule, pypi.verdict) == ("package.vllm-pypi", Verdict.SWAP)
    assert (rocm.rule, rocm.verdict) == ("package.vllm-rocm-build", Verdict.READY)


# -- GPU limits ------------------------------------------------------------------------------


def test_limited_row_on_a_covered_gpu_keeps_its_verdict(knowledge: Knowledge) -> None:
    ctx = Context(gfx_targets=("gfx942:sramecc+:xnack-",), gpu_name="AMD Instinct MI300X")
    f = knowledge.classify(pkg("flashinfer-python"), ctx)
    assert (f.rule, f.verdict) == ("package.flashinfer", Verdict.PORT)
    assert "not among them" not in f.why


def test_limited_row_on_another_gpu_says_so(knowledge: Knowledge) -> None:
    ctx = Context(gfx_targets=("gfx1100",), gpu_name="AMD Radeon RX 7900 XTX")
    blocked = knowledge.classify(pkg("flashinfer-python"), ctx)
    assert (blocked.rule, blocked.verdict) == ("package.flashinfer", Verdict.BLOCKED)
    assert blocked.why.endswith("Its ROCm path covers only gfx942, gfx950; "
                                "AMD Radeon RX 7900 XTX (gfx1100) is not among them.")
    port = knowledge.classify(pkg("flash-attn"), Context(gfx_targets=("gfx908",)))
    assert port.verdict is Verdict.PORT and port.why.endswith("gfx908 is not among them.")
    inside = knowledge.classify(pkg("flash-attn"), Context(gfx_targets=("gfx90a",)))
    assert inside.verdict is Verdict.PORT and "not among them" not in inside.why


def test_ready_row_outside_its_gpus_becomes_port(knowledge: Knowledge) -> None:
    raw = "vllm==0.22.1+rocm722"
    f = knowledge.classify(pkg(raw, "vllm", version="0.22.1+rocm722"),
                           Context(gfx_targets=("gfx908",), gpu_name="AMD Instinct MI100"))
    assert (f.rule, f.verdict) == ("package.vllm-rocm-build", Verdict.PORT)
    assert "AMD Instinct MI100 (gfx908)" in f.why


# -- index URLs and local labels ------------------------------------------------------------


@pytest.mark.parametrize(("url", "kind"), [
    ("https://download.pytorch.org/whl/cu121", "cuda"),
    ("https://download.pytorch.org/whl/nightly/cu128/", "cuda"),
    ("https://download.pytorch.org/whl/rocm6.2.4", "rocm"),
    ("https://download.pytorch.org/whl/nightly/rocm7.0", "rocm"),
    ("https://download.pytorch.org/whl/cpu", "cpu"),
    ("https://pypi.nvidia.com", "cuda"),
    ("https://repo.radeon.com/rocm/manylinux/rocm-rel-7.2/", "rocm"),
    ("https://wheels.vllm.ai/rocm/", "rocm"),
    ("https://huggingface.github.io/autogptq-index/whl/rocm571/", "rocm"),
    ("https://pypi.org/simple", None),
    ("https://example.com/cpu", None),
    ("https://example.com/cuda-tools/", None),
    ("http://[::1", None),
    ("", None),
])
def test_index_kind(url: str, kind: str | None) -> None:
    assert index_kind(url) == kind


@pytest.mark.parametrize(("label", "kind"), [
    ("cu121", "cuda"), ("rocm6.2", "rocm"), ("rocm7.2.0.lw.git7e1940d4", "rocm"),
    ("amd.rocm7.2.0.git89002410", "rocm"), ("git85db5b6d.rocm7.12.0a20260211", "rocm"),
    ("cpu", "cpu"), ("git2e4abc8", "other"), ("cuda", "other"), (None, "none"), ("", "none"),
])
def test_local_kind(label: str | None, kind: str) -> None:
    assert local_kind(label) == kind


# -- bad data files ---------------------------------------------------------------------------


def _copy_with(tmp_path: Path, old: str, new: str) -> Path:
    text = SHIPPED.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "packages.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_row_without_a_source_is_refused_naming_the_row(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'source = "https://pytorch.org/get-started/locally/"\n', "")
    with pytest.raises(MatrixError) as err:
        load_knowledge(path)
    assert err.value.exit_code == 3
    assert str(path) in err.value.message
    assert "packages[0] (torch-rocm-build).source" in err.value.message


def test_a_bad_status_is_refused_naming_the_row(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'status = "port"', 'status = "no-data"')
    with pytest.raises(MatrixError) as err:
        load_knowledge(path)
    assert "(nvidia-cuda-runtime)" not in err.value.message
    assert "(flash-attn).status" in err.value.message


def test_a_bad_specifier_is_refused_naming_the_row(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'versions = "<0.48"', 'versions = "<<0.48"')
    with pytest.raises(MatrixError) as err:
        load_knowledge(path)
    assert "(bitsandbytes-pre-rocm)" in err.value.message
    assert "'<<0.48' is not a PEP 440 specifier" in err.value.message


def test_a_source_citing_pins_notes_is_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'source = "https://pypi.org/project/numpy/"',
                      'source = "https://example.com/shared/FACTS.md"')
    with pytest.raises(MatrixError) as err:
        load_knowledge(path)
    assert "(numpy)" in err.value.message and "never pin's own notes" in err.value.message


def test_a_source_in_a_shared_folder_is_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'source = "https://pypi.org/project/numpy/"',
                      'source = "https://example.com/shared/notes.md"')
    with pytest.raises(MatrixError, match=r"\(numpy\): .*'shared' folder"):
        load_knowledge(path)


@pytest.mark.parametrize("source", [
    "someone/notes@0123456789abcdef0123456789abcdef01234567:shared/notes.md",
    "https://example.com/x/SHARED/notes.md",
])
def test_a_repo_path_in_a_shared_folder_is_refused(tmp_path: Path, source: str) -> None:
    path = _copy_with(tmp_path, 'source = "https://pypi.org/project/numpy/"',
                      f'source = "{source}"')
    with pytest.raises(MatrixError, match=r"\(numpy\): .*'shared' folder"):
        load_knowledge(path)


def test_a_repo_whose_name_only_contains_shared_is_accepted(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'source = "https://pypi.org/project/numpy/"',
                      'source = "org/sharedlib@0123456789abcdef0123456789abcdef01234567:README.md"')
    row = next(r for r in load_knowledge(path).rows if r.id == "numpy")
    assert row.source.startswith("org/sharedlib@")


def test_bitsandbytes_rows_cite_the_maintainers_threads(knowledge: Knowledge) -> None:
    by_id = {row.id: row for row in knowledge.rows}
    assert by_id["bitsandbytes-experimental"].published == dt.date(2026, 2, 24)
    assert by_id["bitsandbytes-rocm-wheels"].source.endswith("/pull/1887")
    assert by_id["bitsandbytes-rocm-wheels"].replacement == "bitsandbytes>=0.50.0"


def test_apex_row_warns_that_the_pypi_name_is_another_project(knowledge: Knowledge) -> None:
    f = knowledge.classify(pkg("apex==0.9.10", "apex", version="0.9.10"), Context())
    assert (f.rule, f.verdict) == ("package.apex", Verdict.PORT)
    assert "Pyramid" in f.why and "check which apex" in f.todo


def test_a_row_with_two_dates_is_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'published = 2025-12-19\n',
                      'published = 2025-12-19\npublished-unknown = "also unknown"\n')
    with pytest.raises(MatrixError) as err:
        load_knowledge(path)
    assert "(xformers-rocm-index)" in err.value.message


def test_a_duplicate_id_is_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, 'id = "accelerate"', 'id = "transformers"')
    with pytest.raises(MatrixError, match="row id 'transformers' appears twice"):
        load_knowledge(path)


def test_an_unreadable_file_is_a_matrix_error(tmp_path: Path) -> None:
    bad = tmp_path / "packages.toml"
    bad.write_text("packages = [", encoding="utf-8")
    with pytest.raises(MatrixError, match="not valid TOML"):
        load_knowledge(bad)
    with pytest.raises(MatrixError):
        load_knowledge(tmp_path / "absent.toml")
