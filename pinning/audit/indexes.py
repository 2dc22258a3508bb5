"""Package indexes and local version labels: which build (CUDA, ROCm, CPU) an index URL or
a ``+local`` label names, and the bill's finding for a CUDA wheel index.

An index URL that serves CUDA wheels (``https://download.pytorch.org/whl/cu121``,
``https://pypi.nvidia.com``) is a finding of kind ``index`` (rule :data:`RULE_INDEX`,
verdict ``swap``): PyTorch publishes ROCm wheels on ``https://download.pytorch.org/whl/rocmX.Y``
beside its CUDA indexes (:data:`PYTORCH_INDEXES`). Shared by the package knowledge
(:mod:`pinning.audit.packages`) and every dependency-file reader (:mod:`pinning.audit.sources`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

from pinning.audit.model import Citation, Finding, Kind, Verdict

__all__ = ["PYTORCH_INDEXES", "ROCM_INDEX", "RULE_INDEX", "IndexKind", "LabelKind",
           "index_findings", "index_kind", "local_kind", "without_userinfo"]

IndexKind = Literal["cuda", "rocm", "cpu"]
LabelKind = Literal["cuda", "rocm", "cpu", "other", "none"]

RULE_INDEX = "index.cuda-wheel-index"
"""Rule id of a CUDA wheel index named by a requirements file, pyproject or conda pip list."""

PYTORCH_INDEXES = Citation(
    source=("pytorch/pytorch.github.io@e3f009bbc0d7509ed5c85b633313ec72aa2d1a40:"
            "_get_started/previous-versions.md"),
    published_unknown=("PyTorch's install-command page (pytorch.org/get-started/"
                       "previous-versions) carries no date; cited at its commit"),
)
"""PyTorch's install commands per release: for torch 2.3.1 the CUDA wheels come from
``--index-url https://download.pytorch.org/whl/cu121`` (and ``cu118``) and the ROCm wheels
from ``--index-url https://download.pytorch.org/whl/rocm6.0``; conda installs name
``pytorch-cuda=12.1 -c pytorch -c nvidia`` (``cudatoolkit=11.3`` up to 1.12) and list no
ROCm build."""

ROCM_INDEX = "https://download.pytorch.org/whl/rocmX.Y"
"""The replacement named in a finding: PyTorch's ROCm index of the ROCm release you target."""

# Hosts whose every index serves one kind of wheel. NVIDIA's pip indexes (pypi.nvidia.com,
# pypi.ngc.nvidia.com); AMD's wheel hosts (repo.radeon.com manylinux folders, the TheRock
# nightlies and the multi-arch framework wheels named in ROCm's install pages).
_CUDA_HOSTS = frozenset({"pypi.nvidia.com", "pypi.ngc.nvidia.com"})
_ROCM_HOSTS = frozenset({"repo.radeon.com", "rocm.nightlies.amd.com",
                         "rocm.frameworks.amd.com"})
_USERINFO = re.compile(r"://[^/?#@\s]*@")


def without_userinfo(text: str) -> str:
    """``text`` with every URL's ``user:password@`` dropped (``https://u:p@host`` ->
    ``https://host``). Never raises.
    """
    return _USERINFO.sub("://", text)


# -- index URLs and local labels ---------------------------------------------------------------


def _cuda_segment(segment: str) -> bool:
    """``cu121``, ``cu118``, ``cu130``: ``cu`` then two or more digits."""
    return segment.startswith("cu") and len(segment) >= 4 and segment[2:].isdigit()


def _rocm_segment(segment: str) -> bool:
    """``rocm6.4``, ``rocm571``, ``rocm7.2.1`` or a bare ``rocm`` folder."""
    rest = segment.removeprefix("rocm")
    if rest == segment:
        return False
    return rest == "" or (rest[0].isdigit() and all(c.isdigit() or c == "." for c in rest))


def index_kind(url: str) -> IndexKind | None:
    """What wheels the package index ``url`` serves: ``"cuda"`` for NVIDIA's pip indexes
    and any index whose path has a ``cuXXX`` folder (``https://download.pytorch.org/whl/cu121``,
    ``.../whl/nightly/cu128``), ``"rocm"`` for a ``rocmX.Y`` folder
    (``https://download.pytorch.org/whl/rocm6.4``, ``https://wheels.vllm.ai/rocm/``) or AMD's
    wheel hosts (``repo.radeon.com``), ``"cpu"`` for PyTorch's ``/whl/cpu``; ``None`` for
    anything else (PyPI, a private mirror) and for a string that is not a URL. Never raises.
    """
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        return None
    if host in _CUDA_HOSTS:
        return "cuda"
    if host in _ROCM_HOSTS:
        return "rocm"
    for segment in parts.path.lower().split("/"):
        if _cuda_segment(segment):
            return "cuda"
        if _rocm_segment(segment):
            return "rocm"
        if segment == "cpu" and host == "download.pytorch.org":
            return "cpu"
    return None


def local_kind(local: str | None) -> LabelKind:
    """The build a PEP 440 local version label names: ``"cuda"`` for ``cu121``
    (``2.5.1+cu121``), ``"rocm"`` for ``rocm6.2`` / ``rocm7.2.0.lw.git7e1940d4`` / ``rocm571``,
    ``"cpu"`` for ``cpu``; ``"other"`` for any other label (``git2e4abc8``, an untagged
    source build); ``"none"`` without a label.
    """
    if not local:
        return "none"
    segments = local.lower().replace("_", ".").replace("-", ".").split(".")
    for segment in segments:
        if _cuda_segment(segment):
            return "cuda"
        if segment.startswith("rocm") and (segment == "rocm" or segment[4].isdigit()):
            return "rocm"
    return "cpu" if segments[0] == "cpu" else "other"


# -- findings ----------------------------------------------------------------------------------


def index_findings(indexes: Iterable[tuple[str, str, int | None]]) -> list[Finding]:
    """One ``index`` finding (rule :data:`RULE_INDEX`, verdict ``swap``) per CUDA wheel
    index among ``indexes`` — ``(url, display path, 1-based line or None)`` — per file; a URL
    named on several lines of one file gives one finding whose ``lines`` lists them all.
    URLs that are not CUDA indexes give nothing. Source: :data:`PYTORCH_INDEXES`.
    """
    seen: dict[tuple[str, str], list[int]] = {}
    for url, display, line in indexes:
        if index_kind(url) != "cuda":
            continue
        lines = seen.setdefault((display, url.rstrip("/")), [])
        if line is not None and line not in lines:
            lines.append(line)
    return [_index_finding(without_userinfo(url), display, lines)
            for (display, url), lines in seen.items()]


def _index_finding(url: str, display: str, lines: list[int]) -> Finding:
    host = (urlsplit(url).hostname or "").lower()
    if host in _CUDA_HOSTS:
        why = (f"{url} is NVIDIA's package index: what it serves is built for CUDA and does "
               "not run on ROCm.")
        todo = ("Drop this index for the ROCm build and look up each package it served in the "
                "bill; take torch from PyTorch's ROCm index "
                f"({ROCM_INDEX}) for the ROCm release you target.")
    else:
        why = (f"{url} is a CUDA wheel index: its torch wheels carry CUDA device code and "
               "do not run on ROCm.")
        todo = (f"Point this at PyTorch's ROCm index for the ROCm release you target "
                f"({ROCM_INDEX}; for torch 2.3.1 PyTorch lists rocm6.0) and drop `+cuXXX` "
                "locals from pins.")
    return Finding(kind=Kind.INDEX, rule=RULE_INDEX, verdict=Verdict.SWAP, subject=url,
                   path=display, line=lines[0] if lines else None,
                   lines=lines if len(lines) > 1 else [], why=why, todo=todo,
                   replacement=ROCM_INDEX, citation=PYTORCH_INDEXES)
