"""The bill of a ``--requirement`` closure: every package judged by pin's package knowledge,
then by what the closure itself shows.

- **Pulled in by the CUDA framework.** An ``nvidia-*`` wheel that only ``torch`` pulls in
  (directly, or through other ``nvidia-*`` wheels torch pulls in; uv's ``# via``
  annotations, :func:`~pinning.audit.closure.parse_via`) goes with torch's CUDA build:
  PyTorch's own build matrix gives its Linux CUDA wheels these requirements and its ROCm
  wheels none, so it is "swap" (rule :data:`FRAMEWORK_RULE`). One the user asks for on
  their own, or that another package also requires, keeps its row's verdict: code may use it
  directly, and a row like ``nvidia-wheel`` (blocked) says what that costs.
- **Pure Python.** A package pin's data says nothing about whose wheels are all
  ``*-none-any`` is read in memory (:mod:`pinning.audit.wheels`) and is "ready (pure
  Python)" when its modules import no CUDA-only module. On by default: ``-r`` already reads
  the index, the reads are bounded, nothing is installed or run, and without it most of a
  real closure is "no data".
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from pinning.audit.model import Citation, Context, FileScan, Finding, Verdict

__all__ = ["FRAMEWORKS", "FRAMEWORK_RULE", "closure_scan", "pulled_by_framework",
           "with_framework"]

FRAMEWORKS = frozenset({"torch"})
"""The frameworks whose ROCm build replaces the ``nvidia-*`` wheels their CUDA build pulls in."""

FRAMEWORK_RULE = "package.nvidia-with-framework"
"""Rule id of an ``nvidia-*`` wheel that only the CUDA build of a framework pulls in."""

_TORCH_MATRIX = Citation(
    source="pytorch/pytorch@00018c9487224886f1c839167a56f4471ab1ebc4:"
           ".github/scripts/generate_binary_build_matrix.py",
    published_unknown="the source file carries no date; the commit was read from a code "
                      "index without its commit date")
"""PyTorch's wheel build matrix: Linux CUDA wheels get ``pytorch_extra_install_requirements``
(the ``nvidia-*`` wheels, ``PYTORCH_EXTRA_INSTALL_REQUIREMENTS``); every other Linux build,
ROCm included, gets ``""``."""


def pulled_by_framework(name: str, via: Mapping[str, tuple[str, ...]]) -> str | None:
    """The framework of :data:`FRAMEWORKS` that alone pulls the ``nvidia-*`` package
    ``name`` into the closure (through other ``nvidia-*`` packages or directly), or ``None``
    when it is not an ``nvidia-*`` package, the user asked for it (no parent), or another
    package also requires it. Raises nothing.
    """
    if not name.startswith("nvidia-"):
        return None
    found: set[str] = set()
    seen: set[str] = set()
    todo = [name]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        parents = via.get(node, ())
        if not parents:
            return None
        for parent in parents:
            if parent in FRAMEWORKS:
                found.add(parent)
            elif parent.startswith("nvidia-"):
                todo.append(parent)
            else:
                return None
    return min(found) if found else None


def with_framework(finding: Finding, framework: str) -> Finding:
    """``finding`` (an ``nvidia-*`` package's) as "swap": it goes with ``framework``'s CUDA
    build, which the ROCm build replaces.
    """
    return finding.model_copy(update={
        "rule": FRAMEWORK_RULE, "verdict": Verdict.SWAP,
        "why": f"Pulled in only by the CUDA build of {framework}; {framework}'s ROCm wheels "
               "do not require it (PyTorch gives the nvidia-* wheels to its Linux CUDA "
               "builds only).",
        "todo": f"Drop it with {framework}'s CUDA build: install {framework} from a ROCm "
                "index (download.pytorch.org/whl/rocmX.Y), which does not pull it in.",
        "replacement": f"{framework} (ROCm build)", "citation": _TORCH_MATRIX})


def closure_scan(requirements: list[str], *, index_urls: list[str], ctx: Context,
                 say: Callable[[str], None], read_wheels: bool = True) -> FileScan:
    """The judged closure of ``requirements``: one package finding per distribution (pin's
    knowledge, then :func:`with_framework`, then the pure-Python reading of
    :mod:`pinning.audit.wheels` for a no-data package when ``read_wheels``), plus the
    Python rules' findings inside wheels read. uv runs twice at once (``# via`` and
    ``pylock.toml``). Raises what :func:`~pinning.audit.closure.resolve_closure` raises
    (``UsageError``, exit 2) and ``MatrixError`` (exit 3) for invalid package data.
    """
    from pinning.audit import closure
    from pinning.audit.packages import load_knowledge
    from pinning.audit.wheels import pylock_wheels, read_pure_wheels
    from pinning.util.proc import find_uv

    packages, skipped = closure.resolve_closure(requirements, index_urls=index_urls)
    if not packages:
        return FileScan(skipped=skipped)
    reqs = [r.strip() for r in requirements]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    uv = find_uv("pin audit --requirement")
    shapes = ("via", "pylock") if read_wheels else ("via",)
    cmds = [closure.uv_compile_command(uv, index_urls, version, closure.DEFAULT_PLATFORM,
                                       output=o) for o in shapes]
    with ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(lambda c: closure.run_uv(c, reqs, closure.DEFAULT_TIMEOUT_S),
                              cmds))
    via = closure.parse_via(texts[0])
    knowledge = load_knowledge()
    scan = FileScan(skipped=skipped)
    findings = {p.name: knowledge.classify(p, ctx) for p in packages}
    for name, finding in findings.items():
        framework = pulled_by_framework(name, via)
        if framework is not None:
            findings[name] = with_framework(finding, framework)
    if read_wheels:
        wheels = pylock_wheels(texts[1])
        unknown = [(p.name, p.version or "", wheels.get(p.name, [])) for p in packages
                   if findings[p.name].verdict is Verdict.NO_DATA]
        for name, verdict in read_pure_wheels(unknown, ctx, say).items():
            if verdict.finding is not None:
                findings[name] = verdict.finding.model_copy(
                    update={"subject": findings[name].subject})
            scan.findings += verdict.findings
            scan.skipped += verdict.skipped
    scan.findings[:0] = list(findings.values())
    return scan
