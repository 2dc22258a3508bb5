"""The serving choices the guards judge: ``[serving]`` and ``[[extensions]]`` of a lock.

The migration article's advice: "Record the selected quantization backend, attention
implementation and custom extensions, then test the exact combination you plan to serve."
This module parses the ``pin resolve`` flags that set them (:func:`parse_quantization`,
:func:`parse_attention`, :func:`parse_extension`), reads the extensions a host shows
(:func:`host_extensions`, for ``pin freeze``) and adds a lock's choices to a
:class:`~pinning.guards.conditions.GuardContext` (:func:`with_lock_serving`), so the Marlin and
FlashAttention rules judge them instead of being skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from pinning.errors import UsageError
from pinning.guards.conditions import GuardContext
from pinning.guards.view import ExtensionView, PackageView, package_key
from pinning.lockfile.models import Lockfile
from pinning.lockfile.serving import TARGET_PATTERN, Extension, Serving
from pinning.util.versions import normalize_name

if TYPE_CHECKING:
    from pinning.probe.models import Distribution

_WORD = r"[a-z0-9][a-z0-9._-]*"
_QUANT = re.compile(rf"^(?P<method>{_WORD})(?::(?P<backend>{_WORD}))?$")
_ATTENTION = re.compile(
    rf"^(?P<name>{_WORD})(?:==(?P<version>[^:\s]+))?(?::(?P<backend>{_WORD}))?$")
_EXTENSION = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^:@\s]+)"
    r"(?::(?P<build>[A-Za-z]+))?(?:@(?P<targets>\S+))?$")

ATTENTION_ALIASES: dict[str, str] = {
    "flash-attn": "flash-attn", "flash_attn": "flash-attn", "flashattention": "flash-attn",
    "flash-attention": "flash-attn", "fa": "flash-attn", "aiter": "aiter", "amd-aiter": "aiter",
    "ck": "ck", "composable-kernel": "ck", "triton": "triton",
}
"""Spellings of the attention implementations, to one name each."""

FLASH_ATTN_BACKENDS = ("ck", "triton")
FLASH_ATTENTION_TRITON = "FLASH_ATTENTION_TRITON_AMD_ENABLE"
"""The variable that picks FlashAttention's Triton backend on ROCm (``TRUE``): the one
variable :func:`with_lock_serving` reads."""
"""FlashAttention's ROCm backends: Composable Kernel (default) and Triton
(``FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE``); Dao-AILab/flash-attention@0251105:README.md."""

DTYPES: dict[str, str] = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16",
                          "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32",
                          "float": "fp32", "fp8": "fp8"}
"""``--dtype`` spellings, to one name each."""

ATTENTION_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "flash-attn": ("flash-attn",), "aiter": ("amd-aiter", "aiter")}
"""The distributions that install an attention implementation (ROCm/aiter@0132896:setup.py
names its distribution ``amd-aiter``)."""

EXTENSION_SOURCES: dict[str, str] = {
    "flash-attn": "Dao-AILab/flash-attention@0251105:README.md (CK and Triton backends on ROCm)",
    "amd-aiter": "ROCm/aiter@0132896:setup.py",
    "aiter": "ROCm/aiter@0132896:setup.py",
    "xformers": "facebookresearch/xformers#1365 (ROCm wheels, CK ops)",
    "flashinfer": "https://rocm.docs.amd.com/en/docs-7.1.0/reference/api-libraries.html",
    "bitsandbytes": "https://huggingface.co/docs/bitsandbytes/v0.50.2/en/installation.md",
    "mamba-ssm": "state-spaces/mamba:README.md (source build on ROCm)",
    "causal-conv1d": "Dao-AILab/causal-conv1d:README.md (source build on ROCm)",
    "deepspeed": "deepspeedai/DeepSpeed#7843 (op builds on ROCm)",
    "apex": "NVIDIA/apex PR #1979 (ROCm fork)",
    "sgl-kernel": "sgl-project/sglang#4778 (a CUDA sgl_kernel in a ROCm environment)",
    "vllm": "vllm-project/vllm#19727 (vLLM's compiled quantization kernels, vllm._C)",
}
"""Distributions with compiled GPU kernels (attention, quantization, custom ops) that
``pin freeze`` records as ``[[extensions]]`` when a host has them, each with the public
source that says it carries its own kernels."""

NOT_SHOWN_TARGETS = "the host does not show which gfx targets or compute capabilities it holds"


def _canonical_version(flag: str, text: str, version: str) -> str:
    try:
        Version(version)
    except InvalidVersion:
        raise UsageError(f"{flag} {text!r}: {version!r} is not a version (PEP 440), e.g. "
                         "2.8.3.") from None
    return version


def parse_quantization(text: str) -> tuple[str, str | None]:
    """``--quantization METHOD[:BACKEND]`` as ``(method, backend)``, lower case.

    ``-`` and ``_`` are one separator. A Marlin method in any spelling (``awq_marlin``,
    ``awq-marlin``, ``marlin_awq``, ``gptq_marlin``, ``marlin``) is written ``<base>_marlin``
    and names its backend (``marlin``), so no spelling slips past the Marlin guard. Raises
    :class:`UsageError` (exit 2) naming the flag for a malformed value
    or a backend that contradicts the method.
    """
    m = _QUANT.match(text.strip().lower())
    if not m:
        raise UsageError(f"--quantization {text!r}: expected METHOD[:BACKEND], e.g. awq:triton "
                         "(AWQ by Triton dequantization) or awq_marlin.")
    method = m["method"].replace("-", "_")
    backend = m["backend"].replace("-", "_") if m["backend"] else None
    tokens = method.split("_")
    marlin = "marlin" in tokens
    if marlin:
        base = "_".join(t for t in tokens if t != "marlin")
        method = f"{base}_marlin" if base else "marlin"
    if marlin and backend not in (None, "marlin"):
        raise UsageError(f"--quantization {text!r}: {method} runs Marlin kernels, not "
                         f"{backend}; write {method} or {method.removesuffix('_marlin')}:"
                         f"{backend}.")
    return method, "marlin" if marlin else backend


def parse_attention(text: str) -> tuple[str, str | None, str | None]:
    """``--attention NAME[==VERSION][:BACKEND]`` as ``(name, version, backend)``.

    ``NAME`` is ``ck``, ``triton``, ``aiter`` or ``flash-attn`` (spellings in
    :data:`ATTENTION_ALIASES`); ``BACKEND`` only for FlashAttention (``ck`` or ``triton``).
    Raises :class:`UsageError` (exit 2) naming the flag otherwise.
    """
    m = _ATTENTION.match(text.strip().lower())
    name = ATTENTION_ALIASES.get(m["name"]) if m else None
    if not m or name is None:
        raise UsageError(f"--attention {text!r}: expected NAME[==VERSION][:BACKEND] with NAME "
                         f"one of {', '.join(sorted(set(ATTENTION_ALIASES.values())))}, e.g. "
                         "flash-attn==2.8.3:ck.")
    backend = m["backend"]
    if backend is not None and (name != "flash-attn" or backend not in FLASH_ATTN_BACKENDS):
        raise UsageError(f"--attention {text!r}: only flash-attn takes a backend, "
                         f"{' or '.join(FLASH_ATTN_BACKENDS)}.")
    version = m["version"]
    if version is not None:
        version = _canonical_version("--attention", text, version)
    return name, version, backend


def parse_dtype(text: str) -> str:
    """``--dtype`` as ``fp16``, ``bf16``, ``fp32`` or ``fp8``; raises :class:`UsageError`
    (exit 2) for another value.
    """
    dtype = DTYPES.get(text.strip().lower().removeprefix("torch."))
    if dtype is None:
        raise UsageError(f"--dtype {text!r}: expected one of {', '.join(sorted(DTYPES))}.")
    return dtype


def _target(flag_text: str, raw: str, vendor: str) -> str:
    t = raw.strip().lower()
    sm = re.fullmatch(r"sm_(\d+)(\d)([a-z]?)", t)
    if sm:
        t = f"{sm[1]}.{sm[2]}{sm[3]}"
    if not re.fullmatch(TARGET_PATTERN, t):
        raise UsageError(f"--extension {flag_text!r}: target {raw!r} is neither a gfx target "
                         "(gfx942) nor a compute capability (9.0 or sm_90).")
    if (vendor == "amd") != t.startswith("gfx"):
        kind = "gfx targets (gfx942)" if vendor == "amd" else "compute capabilities (9.0)"
        raise UsageError(f"--extension {flag_text!r}: the lock's GPU is {vendor.upper()}; "
                         f"give {kind}.")
    return t


def parse_extension(text: str, vendor: str) -> Extension:
    """``--extension NAME==VERSION[:source|wheel][@TARGET,...]`` as an :class:`Extension`
    (``origin = "user"``) for a GPU of ``vendor`` (``amd``: gfx targets; ``nvidia``: compute
    capabilities, ``sm_90`` written ``9.0``). Raises :class:`UsageError` (exit 2) naming the
    flag for a malformed value, an unknown build kind or a target of the other vendor.
    """
    m = _EXTENSION.match(text.strip())
    if not m:
        raise UsageError(f"--extension {text!r}: expected NAME==VERSION[:source|wheel]"
                         "[@TARGET,...], e.g. flash-attn==2.8.3:source@gfx942.")
    build = m["build"].lower() if m["build"] else None
    if build not in (None, "source", "wheel"):
        raise UsageError(f"--extension {text!r}: build {m['build']!r} is neither source nor "
                         "wheel.")
    version = _canonical_version("--extension", text, m["version"])
    targets = None
    if m["targets"]:
        targets = sorted({_target(text, t, vendor) for t in m["targets"].split(",")})
    unknown = [w for w, v in (("build", build), ("targets", targets)) if v is None]
    return Extension(name=normalize_name(m["name"]), version=version, build=build,
                     targets=targets, origin="user",
                     reason=f"{' and '.join(unknown)} not given to pin resolve"
                     if unknown else None)


def serving_flags(serving: Serving | None, extensions: Sequence[Extension]) -> list[str]:
    """The canonical ``pin resolve`` arguments (flag, value, flag, value...) that record
    ``serving`` and ``extensions`` (for the lock's regenerate command), in a fixed order.
    """
    out: list[str] = []
    if serving is not None:
        if serving.quantization:
            backend = serving.quantization_backend
            implied = backend == "marlin" and serving.quantization.endswith("marlin")
            out += ["--quantization", serving.quantization
                                   + (f":{backend}" if backend and not implied else "")]
        if serving.attention:
            out += ["--attention", serving.attention
                       + (f"=={serving.attention_version}" if serving.attention_version else "")
                       + (f":{serving.attention_backend}" if serving.attention_backend
                          else "")]
        if serving.head_dim is not None:
            out += ["--head-dim", str(serving.head_dim)]
        if serving.dtype:
            out += ["--dtype", serving.dtype]
    for ext in extensions:
        out += ["--extension", f"{ext.name}=={ext.version}"
                + (f":{ext.build}" if ext.build else "")
                + (f"@{','.join(ext.targets)}" if ext.targets else "")]
    return out


def serving_from_flags(vendor: str, *, quantization: str | None, attention: str | None,
                       head_dim: int | None, dtype: str | None,
                       extensions: Sequence[str]) -> tuple[Serving | None, list[Extension]]:
    """The ``[serving]`` table and ``[[extensions]]`` the ``pin resolve`` flags ask for, for a
    GPU of ``vendor``; ``(None, [])`` when no flag was given. Raises :class:`UsageError`
    (exit 2) naming the flag for a malformed value or an extension named twice.
    """
    fields: dict[str, object] = {}
    if quantization is not None:
        fields["quantization"], fields["quantization_backend"] = parse_quantization(quantization)
    if attention is not None:
        (fields["attention"], fields["attention_version"],
         fields["attention_backend"]) = parse_attention(attention)
    if head_dim is not None:
        if head_dim < 1:
            raise UsageError(f"--head-dim {head_dim}: a head dimension is a positive number.")
        fields["head_dim"] = head_dim
    if dtype is not None:
        fields["dtype"] = parse_dtype(dtype)
    exts = [parse_extension(e, vendor) for e in extensions]
    names = [e.name for e in exts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--extension names {', '.join(twice)} more than once.")
    serving = Serving.model_validate({k: v for k, v in fields.items() if v is not None}) \
        if fields else None
    return serving, sorted(exts, key=lambda e: e.name)


def _build_kind(dist: Distribution) -> tuple[str | None, str | None]:
    """``(build, why unknown)`` from the distribution's ``direct_url.json`` URL: a ``.whl``
    is a wheel, another local ``file:`` URL a source build (PEP 610).
    """
    url = dist.direct_url
    if not url:
        return None, "installed from an index (no direct_url.json): wheel or source build " \
                     "not shown"
    if url.split("?")[0].endswith(".whl"):
        return "wheel", None
    if url.startswith("file:"):
        return "source", None
    return None, f"installed from {url.split('://')[0]} URL: wheel or source build not shown"


def host_extensions(distributions: Sequence[Distribution],
                    locked: Sequence[Extension] = ()) -> list[Extension]:
    """The extensions a host shows (``origin = "host"``): each installed distribution named
    in :data:`EXTENSION_SOURCES` or in ``locked``, with its version and, from
    ``direct_url.json``, whether it was built from source or installed as a wheel. The
    targets are not shown by the host: a locked entry's targets are kept for the same
    version (the reason says so), else they are unknown.
    """
    by_name = {e.name: e for e in locked}
    out: list[Extension] = []
    for dist in sorted(distributions, key=lambda d: normalize_name(d.name)):
        name = normalize_name(dist.name)
        if name not in EXTENSION_SOURCES and name not in by_name:
            continue
        build, why = _build_kind(dist)
        before = by_name.get(name)
        targets = before.targets if before and before.version == dist.version else None
        reasons = [why] if why else []
        reasons.append(f"targets as recorded before; {NOT_SHOWN_TARGETS}" if targets
                       else f"targets: {NOT_SHOWN_TARGETS}")
        out.append(Extension(name=name, version=dist.version, build=build, targets=targets,
                             origin="host", reason="; ".join(reasons)))
    return out


def with_lock_serving(ctx: GuardContext, lock: Lockfile, *,
                      lock_packages: bool = True) -> GuardContext:
    """``ctx`` with what ``lock`` records of serving: the quantization method and backend,
    the attention implementation, backend, head dimension and dtype, the extensions (their
    distributions count as installed when the view does not list them) and, when the view
    knows no GPU, the lock's GPU. Values ``ctx`` already has are kept. With
    ``lock_packages`` false (a probed host: its packages are the truth) the lock's
    distributions are not added to the view's packages.
    """
    view = ctx.view
    packages = list(view.packages)
    s = lock.serving
    extra: list[tuple[str, str]] = []
    if s is not None and s.attention in ATTENTION_DISTRIBUTIONS and s.attention_version:
        extra.append((ATTENTION_DISTRIBUTIONS[s.attention][0], s.attention_version))
    extra += [(e.name, e.version or "") for e in lock.extensions or []]
    if lock_packages and extra:
        have = {package_key(p.name) for p in packages}
        for name, version in extra:
            if package_key(name) not in have:
                packages.append(PackageView(name, version, source="lock"))
                have.add(package_key(name))
    exts = [ExtensionView(e.name, e.version, e.targets) for e in lock.extensions or []]
    view = replace(view, packages=packages, extensions=view.extensions or exts)
    backend = s.attention_backend if s else None
    if backend is None and s is not None and s.attention == "flash-attn":
        flag = view.environment.get(FLASH_ATTENTION_TRITON)
        backend = "triton" if flag is not None and flag.upper() == "TRUE" else None
    return replace(
        ctx, view=view,
        quantization=ctx.quantization or (s.quantization if s else None),
        quantization_backend=ctx.quantization_backend or (s.quantization_backend if s else None),
        attention=ctx.attention or (s.attention if s else None),
        attention_backend=ctx.attention_backend or backend,
        head_dim=ctx.head_dim if ctx.head_dim is not None else (s.head_dim if s else None),
        dtype=ctx.dtype or (s.dtype if s else None),
    )
