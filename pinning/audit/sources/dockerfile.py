"""Dockerfiles (``Dockerfile``, ``Dockerfile.*``, ``*.Dockerfile``, ``Containerfile``): CUDA
base images, pip installs and ``TORCH_CUDA_ARCH_LIST``.

Read statically: logical lines join the escape-character continuations (``# escape=``
parser directive honoured), comment lines are dropped, and ``ARG`` defaults are substituted
into ``FROM`` as far as they are known (best effort: a ``FROM ${BASE}`` whose ARG has no
default is noted as skipped; a ``FROM stage`` naming an earlier stage is not an image). Shell
words and ARG substitution are read by :mod:`pinning.audit.sources.shell`.

Our own reader, not dockerfile-parse: that library's ARG substitution reads ``${A:-b}`` and
``${A:+b}`` wrongly and is unbounded (600 references to a 60 KB ARG made 36 MB), and its
instruction splitter would replace only the 30 lines of :func:`_logical_lines`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.indexes import index_kind
from pinning.audit.model import (
    CPP_EXTENSION,
    Citation,
    Context,
    FileScan,
    Finding,
    Kind,
    Skipped,
    Verdict,
)
from pinning.audit.sources import shell
from pinning.audit.sources.pep508 import parse_requirement

_ROCM_DOCKER = Citation(
    source="https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html",
    published=dt.date(2026, 1, 20))
_ROCM_PYTORCH = Citation(
    source="https://rocm.docs.amd.com/projects/install-on-linux/en/docs-6.2.0/how-to/"
           "3rd-party/pytorch-install.html",
    published=dt.date(2024, 9, 3))

_DIRECTIVE = re.compile(r"^#[ \t]*([A-Za-z]+)[ \t]*=[ \t]*(\S*)")

MAX_REQUIREMENTS = 10_000
"""The most ``pip install`` words judged per Dockerfile (requirements and skipped words);
the rest are one :class:`Skipped` entry."""

_UBUNTU = re.compile(r"ubuntu(\d\d\.\d\d)")
# pip / uv pip options that take a value (the value is the next word unless `=` joins it)
_VALUED = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "-e", "--editable",
    "--trusted-host", "--platform", "--python-version", "--implementation", "--abi",
    "--no-binary", "--only-binary", "--progress-bar", "--cache-dir", "--log", "--timeout",
    "--retries", "--proxy", "--upgrade-strategy", "-C", "--config-settings",
    "--global-option", "--python", "-p", "--index", "--default-index", "--index-strategy",
    "--torch-backend", "--report", "--exists-action", "--keyring-provider", "--cert",
    "--client-cert", "--build-constraint", "--overrides", "--extra", "--group",
})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
_PREFIXES = frozenset({"sudo", "exec", "then", "do", "else", "time", "env"})


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, instruction text)`` of each instruction in ``text``."""
    escape = "\\"
    lines = text.splitlines()
    i = 0
    while i < len(lines):  # parser directives: only before anything else
        m = _DIRECTIVE.match(lines[i])
        if not m:
            break
        if m.group(1).lower() == "escape" and m.group(2) in ("\\", "`"):
            escape = m.group(2)
        i += 1
    start = 0
    parts: list[str] = []
    for number, raw in enumerate(lines[i:], start=i + 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not parts):
            continue
        if not parts:
            start = number
        body = raw.rstrip()
        if body.endswith(escape):
            parts.append(body[:-1])
            continue
        parts.append(body)
        yield start, " ".join(p.strip() for p in parts)
        parts = []
    if parts:
        yield start, " ".join(p.strip() for p in parts)


def scan_dockerfile(path: Path, display: str, ctx: Context) -> FileScan:
    """Findings and pip-installed packages of the Dockerfile ``path`` (shown as ``display``).

    Rules: ``dockerfile.cuda-base-image`` (``FROM nvidia/cuda``, ``nvcr.io/nvidia/...``,
    ``vllm/vllm-openai``: swap, naming the ROCm image), ``dockerfile.cuda-index`` (a CUDA
    wheel index in a pip line: swap), ``dockerfile.torch-cuda-arch-list`` (``ENV`` / ``ARG``
    / inline ``TORCH_CUDA_ARCH_LIST``: port). Each requirement of a ``pip install`` /
    ``pip3`` / ``python -m pip`` / ``uv pip install`` becomes a :class:`DeclaredPackage`
    (origin ``dockerfile``, the RUN's line). CUDA indexes are told by
    :func:`pinning.audit.indexes.index_kind`, as in requirements files. Raises
    :class:`~pinning.audit.model.Skip` for an unreadable file.
    """
    scan = FileScan()
    args: dict[str, str] = {}
    stages: set[str] = set()
    budget = [MAX_REQUIREMENTS]
    for line, text in _logical_lines(read_text(path)):
        word, _, rest = text.partition(" ")
        op = word.upper()
        if op == "ARG":
            for key, value in _assignments(rest):
                if value is not None:
                    args.setdefault(key, value)
                _arch(scan, key, value, display, line, ctx)
        elif op == "ENV":
            for key, value in _assignments(rest, legacy=True):
                _arch(scan, key, value, display, line, ctx)
        elif op == "FROM":
            _from(scan, rest, args, stages, display, line)
        elif op == "RUN":
            _run(scan, rest, display, line, ctx, budget)
    return scan


def _assignments(text: str, *, legacy: bool = False) -> list[tuple[str, str | None]]:
    """``KEY=VALUE ...`` pairs (``ENV KEY VALUE`` with ``legacy``; ``ARG KEY`` -> None)."""
    words = shell.words(text)
    if legacy and words and "=" not in words[0]:
        return [(words[0], " ".join(words[1:]))]
    out: list[tuple[str, str | None]] = []
    for w in words:
        key, eq, value = w.partition("=")
        out.append((key, value if eq else None))
    return out


def _arch(scan: FileScan, key: str, value: str | None, display: str, line: int,
          ctx: Context) -> None:
    if key != "TORCH_CUDA_ARCH_LIST":
        return
    targets = ";".join(ctx.gfx_targets) if ctx.gfx_targets else None
    todo = ("set PYTORCH_ROCM_ARCH to the gfx targets"
            + (f" ({targets})" if targets else " (e.g. gfx942 for MI300X)"))
    scan.findings.append(Finding(
        kind=Kind.ARCH_LIST, rule="dockerfile.torch-cuda-arch-list", verdict=Verdict.PORT,
        subject=f"TORCH_CUDA_ARCH_LIST={value}" if value is not None else
        "TORCH_CUDA_ARCH_LIST", path=display, line=line,
        why="TORCH_CUDA_ARCH_LIST picks NVIDIA compute capabilities for extension builds; a "
            "ROCm build of PyTorch reads PYTORCH_ROCM_ARCH instead",
        todo=todo, replacement=f"PYTORCH_ROCM_ARCH={targets}" if targets else
        "PYTORCH_ROCM_ARCH", citation=CPP_EXTENSION))


def _rocm_image(image: str) -> str | None:
    """The ROCm image to move to for the CUDA image ``image``, or ``None`` when it is not
    a CUDA image.
    """
    name = image.split("@", 1)[0].lower().removeprefix("docker.io/")
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    if repo == "nvidia/cuda" or repo == "nvcr.io/nvidia/cuda":
        m = _UBUNTU.search(name)
        return f"rocm/dev-ubuntu-{m.group(1)}" if m else "rocm/dev-ubuntu-24.04"
    if repo == "vllm/vllm-openai" or repo.endswith("/vllm"):
        return "rocm/vllm"
    if repo.startswith("nvcr.io/nvidia/"):
        return "rocm/vllm or rocm/pytorch" if "triton" in repo else "rocm/pytorch"
    return None


def _from(scan: FileScan, rest: str, args: dict[str, str], stages: set[str], display: str,
          line: int) -> None:
    words = [w for w in rest.split() if not w.startswith("--")]
    if not words:
        return
    if len(words) >= 3 and words[1].lower() == "as":
        stages.add(words[2].lower())
    shown = words[0] if len(words[0]) <= 200 else words[0][:200] + "..."
    image, problem = shell.substitute(words[0], args)
    if problem is not None:
        scan.skipped.append(Skipped(path=f"{display}:{line}", reason=f"FROM {shown}: "
                                    f"{problem}; the base image is not known"))
        return
    if image.lower() in stages:
        return  # an earlier stage: judged where it was defined
    rocm = _rocm_image(image)
    if rocm is None:
        return
    via = f" (from `{words[0]}` with its ARG default)" if image != words[0] else ""
    scan.findings.append(Finding(
        kind=Kind.BASE_IMAGE, rule="dockerfile.cuda-base-image", verdict=Verdict.SWAP,
        subject=image, path=display, line=line, replacement=rocm,
        why=f"the base image{via} is an NVIDIA CUDA image; its CUDA user space does not run "
            "on AMD GPUs",
        todo=f"build FROM {rocm} (Docker Hub) at the ROCm version you lock",
        citation=_ROCM_PYTORCH if rocm == "rocm/pytorch" else _ROCM_DOCKER))


def _run(scan: FileScan, rest: str, display: str, line: int, ctx: Context,
         budget: list[int]) -> None:
    """The TORCH_CUDA_ARCH_LIST assignments and pip installs of one ``RUN``; ``budget`` is
    the one-element count of pip words still to judge in the file.
    """
    words = shell.words(rest)
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key.removeprefix("export ") == "TORCH_CUDA_ARCH_LIST":
            _arch(scan, "TORCH_CUDA_ARCH_LIST", value, display, line, ctx)
    i = 0
    while i < len(words):
        j = _pip_install_at(words, i)
        if j is None:
            i += 1
            continue
        end = next((k for k in range(j, len(words)) if words[k] in _SEPARATORS), len(words))
        _pip_args(scan, words[j:end], display, line, budget)
        i = end


def _pip_install_at(words: list[str], i: int) -> int | None:
    """The index after ``pip install`` when one starts at ``words[i]``, else None."""
    prev = words[i - 1] if i else "&&"
    if prev not in _SEPARATORS and "=" not in prev and prev not in _PREFIXES:
        return None  # not at the start of a command (`echo pip install`)
    w = words[i].rsplit("/", 1)[-1]
    if (w.startswith("pip") and w[3:].replace(".", "").isdigit()) or w == "pip":
        nxt = i + 1
    elif w.startswith("python") and words[i + 1:i + 3] == ["-m", "pip"]:
        nxt = i + 3
    elif w == "uv" and words[i + 1:i + 2] == ["pip"]:
        nxt = i + 2
    else:
        return None
    while nxt < len(words) and words[nxt].startswith("-"):  # pip's global options
        nxt += 1
    return nxt + 1 if words[nxt:nxt + 1] == ["install"] else None


def _pip_args(scan: FileScan, args: list[str], display: str, line: int,
              budget: list[int]) -> None:
    indexes: list[str] = []
    reqs: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        opt, eq, val = a.partition("=")
        if a.startswith("-"):
            if opt in _VALUED and not eq:
                val = args[k + 1] if k + 1 < len(args) else ""
                k += 1
            if opt in ("-i", "--index-url", "--extra-index-url", "--index", "--default-index"):
                indexes.append(val)
            elif opt in ("-r", "--requirement"):
                scan.skipped.append(Skipped(path=f"{display}:{line}", reason=f"pip -r {val}: "
                                            "not followed from the Dockerfile; it is audited "
                                            "as a requirements file when it is in the tree"))
        else:
            reqs.append(a)
        k += 1
    for url in indexes:
        if index_kind(url) == "cuda":
            scan.findings.append(Finding(
                kind=Kind.INDEX, rule="dockerfile.cuda-index", verdict=Verdict.SWAP,
                subject=url, path=display, line=line,
                why="a CUDA wheel index: the wheels it serves are NVIDIA builds",
                todo="install from the ROCm wheel index (download.pytorch.org/whl/rocmX.Y) "
                     "matching the ROCm version you lock", citation=_ROCM_PYTORCH))
    for r in reqs:
        if budget[0] <= 0:
            if budget[0] == 0:
                scan.skipped.append(Skipped(path=f"{display}:{line}", reason=f"more than "
                                            f"{MAX_REQUIREMENTS} pip install words in the "
                                            "file; the rest were not read"))
                budget[0] = -1
            return
        budget[0] -= 1
        _declare(scan, r, tuple(indexes), display, line)


def _declare(scan: FileScan, text: str, indexes: tuple[str, ...], display: str,
             line: int) -> None:
    if "$" in text or text.startswith((".", "/", "~")) or "://" in text \
            or text.endswith((".whl", ".tar.gz", ".zip")):
        scan.skipped.append(Skipped(path=f"{display}:{line}", reason=f"pip install {text}: "
                                    "a path, URL or variable, not a requirement"))
        return
    got = parse_requirement(text, "dockerfile", path=display, line=line)
    if isinstance(got, str):
        scan.skipped.append(Skipped(path=f"{display}:{line}",
                                    reason=f"pip install {text}: not a requirement"))
    else:
        scan.packages.append(replace(got, index_urls=indexes))
