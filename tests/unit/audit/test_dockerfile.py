"""Dockerfiles: base images, pip lines, indexes and TORCH_CUDA_ARCH_LIST, with line numbers."""

from __future__ import annotations

from pathlib import Path

from pinning.audit.model import Context, Kind, Verdict
from pinning.audit.sources.dockerfile import scan_dockerfile

MI300X = Context(gfx_targets=("gfx942",), gpu_name="MI300X")

DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG BASE=nvcr.io/nvidia/pytorch:24.05-py3
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build
# a comment
ENV TORCH_CUDA_ARCH_LIST="8.0 9.0" \\
    OTHER=1
RUN pip install --no-cache-dir \\
      # a comment inside the continuation
      -r requirements.txt torch==2.5.1+cu121 'flash-attn>=2.6' \\
      --extra-index-url https://download.pytorch.org/whl/cu121 && \\
    python3 -m pip install -U xformers[dev]
RUN apt-get update && apt-get install -y git
FROM build
FROM ${BASE}
FROM ${UNKNOWN}
FROM python:3.12-slim
RUN uv pip install --system vllm==0.6.3 ./local
"""


def test_the_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "Dockerfile"
    p.write_text(DOCKERFILE)
    scan = scan_dockerfile(p, "Dockerfile", MI300X)
    got = {(f.rule, f.line, f.verdict, f.subject) for f in scan.findings}
    assert got == {
        ("dockerfile.cuda-base-image", 3, Verdict.SWAP, "nvidia/cuda:12.4.1-devel-ubuntu22.04"),
        ("dockerfile.torch-cuda-arch-list", 5, Verdict.PORT, "TORCH_CUDA_ARCH_LIST=8.0 9.0"),
        ("dockerfile.cuda-index", 7, Verdict.SWAP, "https://download.pytorch.org/whl/cu121"),
        ("dockerfile.cuda-base-image", 14, Verdict.SWAP, "nvcr.io/nvidia/pytorch:24.05-py3"),
    }
    by_rule = {f.rule: f for f in scan.findings}
    assert by_rule["dockerfile.cuda-base-image"].kind is Kind.BASE_IMAGE
    base = next(f for f in scan.findings if f.line == 3)
    assert base.replacement == "rocm/dev-ubuntu-22.04"
    assert base.citation.published is not None
    ngc = next(f for f in scan.findings if f.line == 14)
    assert ngc.replacement == "rocm/pytorch" and "ARG default" in ngc.why
    arch = by_rule["dockerfile.torch-cuda-arch-list"]
    assert arch.kind is Kind.ARCH_LIST and "gfx942" in arch.todo
    assert arch.citation.source.endswith("torch/utils/cpp_extension.py")
    pkgs = {(d.name, d.line, d.version, d.specifier, d.local) for d in scan.packages}
    assert pkgs == {("torch", 7, "2.5.1+cu121", "", "cu121"),
                    ("flash-attn", 7, None, ">=2.6", None),
                    ("xformers", 7, None, "", None),
                    ("vllm", 17, "0.6.3", "", None)}
    torch = next(d for d in scan.packages if d.name == "torch")
    assert torch.origin == "dockerfile"
    assert torch.index_urls == ("https://download.pytorch.org/whl/cu121",)
    skipped = {s.path: s.reason for s in scan.skipped}
    assert "FROM ${UNKNOWN}" in skipped["Dockerfile:15"]
    assert "requirements.txt" in skipped["Dockerfile:7"]
    assert "./local" in skipped["Dockerfile:17"]


def test_rocm_dockerfile_has_no_findings(tmp_path: Path) -> None:
    p = tmp_path / "rocm.Dockerfile"
    p.write_text("FROM rocm/pytorch:latest\nENV PYTORCH_ROCM_ARCH=gfx942\n"
                 "RUN pip install --index-url https://download.pytorch.org/whl/rocm6.2 torch\n"
                 "RUN echo pip install is mentioned\n")
    scan = scan_dockerfile(p, "rocm.Dockerfile", MI300X)
    assert scan.findings == []
    [d] = scan.packages
    assert (d.name, d.line, d.index_urls) == (
        "torch", 3, ("https://download.pytorch.org/whl/rocm6.2",))


def test_escape_directive_and_inline_arch_list(tmp_path: Path) -> None:
    p = tmp_path / "Containerfile"
    p.write_text("# escape=`\nFROM ubuntu:24.04\nRUN TORCH_CUDA_ARCH_LIST=8.6 `\n"
                 "    pip3 install apex\n")
    scan = scan_dockerfile(p, "Containerfile", Context())
    [f] = scan.findings
    assert (f.rule, f.line, f.subject) == ("dockerfile.torch-cuda-arch-list", 3,
                                           "TORCH_CUDA_ARCH_LIST=8.6")
    assert "e.g. gfx942" in f.todo
    [d] = scan.packages
    assert (d.name, d.line) == ("apex", 3)


def test_arg_substitution_forms(tmp_path: Path) -> None:
    p = tmp_path / "Dockerfile"
    p.write_text("ARG REPO=nvidia/cuda\nARG TAG=12.4.1-runtime-ubuntu22.04\nARG EMPTY=\n"
                 "FROM $REPO:${TAG}\n"
                 "FROM ${MISSING:-${REPO}}:${EMPTY:-12.1.0-base-ubuntu20.04}\n"
                 "FROM python:3.12${EMPTY:+-never}${TAG:+-slim}\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    got = [(f.line, f.subject, f.replacement) for f in scan.findings]
    assert got == [(4, "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "rocm/dev-ubuntu-22.04"),
                   (5, "nvidia/cuda:12.1.0-base-ubuntu20.04", "rocm/dev-ubuntu-20.04")]
    assert scan.skipped == []


def test_oversized_arg_value_stops_substitution(tmp_path: Path) -> None:
    # the review's reproducer shape: a 60,000-character ARG referenced 60,000 times
    p = tmp_path / "Dockerfile"
    p.write_text("ARG A=" + "a" * 60_000 + "\nFROM ${A}" + "$A" * 60_000 + "\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    [s] = scan.skipped
    assert s.path == "Dockerfile:2"
    assert "an ARG value longer than 4 KiB" in s.reason and len(s.reason) < 400
    assert scan.findings == []


def test_substituted_line_cap_and_small_values_pass(tmp_path: Path) -> None:
    p = tmp_path / "Dockerfile"
    p.write_text("ARG A=" + "a" * 4000 + "\nFROM ${A}" + "$A" * 20 + "\n"
                 "ARG B=nvidia/cuda:12.4.1-base-ubuntu24.04\nFROM $B\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    [s] = scan.skipped
    assert s.path == "Dockerfile:2" and "longer than 64 KiB after ARG substitution" in s.reason
    [f] = scan.findings
    assert (f.line, f.rule, f.subject) == (4, "dockerfile.cuda-base-image",
                                           "nvidia/cuda:12.4.1-base-ubuntu24.04")


def test_unclosed_brace_is_skipped_not_rescanned(tmp_path: Path) -> None:
    p = tmp_path / "Dockerfile"
    p.write_text("FROM " + "${A:-" * 50_000 + "\nFROM nvidia/cuda:12.4.1-base-ubuntu22.04\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    [s] = scan.skipped
    assert s.path == "Dockerfile:1" and "a ${ without its closing }" in s.reason
    assert [f.line for f in scan.findings] == [2]


def test_pip_continuation_lines_are_capped(tmp_path: Path) -> None:
    # the review's shape: `RUN pip install \` continued for ~1 MB
    from pinning.audit.sources.dockerfile import MAX_REQUIREMENTS

    p = tmp_path / "Dockerfile"
    p.write_text("FROM python:3.12\n" + "RUN pip install \\\n" * 60_000 + "x\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    assert len(scan.packages) == MAX_REQUIREMENTS
    assert {d.name for d in scan.packages} == {"run", "pip", "install"}
    assert all(d.line == 2 for d in scan.packages)
    [s] = scan.skipped
    assert s.path == "Dockerfile:2" and f"more than {MAX_REQUIREMENTS}" in s.reason


def test_shell_quoting_of_pip_words(tmp_path: Path) -> None:
    p = tmp_path / "Dockerfile"
    p.write_text("FROM python:3.12\n"
                 "RUN pip install \"torch==2.5.1\" 'numpy<2' six\\ \"trit\"on \"$PKG\"\n")
    scan = scan_dockerfile(p, "Dockerfile", Context())
    got = [(d.name, d.version, d.specifier) for d in scan.packages]
    assert got == [("torch", "2.5.1", ""), ("numpy", None, "<2")]
    assert {s.reason for s in scan.skipped} == {
        "pip install six triton: not a requirement",
        "pip install $PKG: a path, URL or variable, not a requirement"}
