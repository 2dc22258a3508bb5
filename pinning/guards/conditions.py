"""The conditions of a data guard rule (``when`` in ``rules.toml``) and the facts they test.

:class:`GuardContext` holds what is known of an environment; each condition function looks at
one field of :class:`~pinning.guards.models.Conditions` and says ``passed`` (it does not
hold), ``skipped`` (its fact is unknown) or nothing (it holds, and what held is appended to
``held``). :data:`CONDITIONS` is their fixed evaluation order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pinning.guards.models import Conditions
from pinning.guards.patterns import MAX_NAME_CHARS
from pinning.guards.view import EnvView, package_key
from pinning.util.versions import in_specifier

Status = Literal["failed", "passed", "skipped"]
"""A rule's outcome: ``failed`` (it fires), ``passed`` or ``skipped`` (a fact is unknown)."""
_Outcome = tuple[Status, str]


@dataclass
class GuardContext:
    """Facts a rule may test; ``None`` = unknown (the rule is then skipped, with why).
    Read, never changed, while rules are judged: :meth:`installed` is worked out once.
    """

    view: EnvView
    runtime_version: str | None = None
    quantization: str | None = None
    quantization_backend: str | None = None
    attention: str | None = None
    attention_backend: str | None = None
    head_dim: int | None = None
    dtype: str | None = None
    platform: str | None = None
    gpu_ids: list[str] = field(default_factory=list)
    device_strings: list[str] | None = None
    _installed: dict[str, str] | None = field(default=None, init=False, repr=False,
                                              compare=False)

    def installed(self) -> dict[str, str]:
        """The view's installed packages, PEP 503 name -> version (the last listed wins),
        built on first use: every package condition of every rule reads it. Raises nothing.
        """
        if self._installed is None:
            self._installed = {package_key(p.name): p.version for p in self.view.packages}
        return self._installed


def _vendor(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """A GPU of the rule's vendor is present."""
    view = ctx.view
    if c.vendor is not None:
        vendors = {g.vendor for g in view.gpus if g.vendor}
        if not vendors:
            return ("skipped", "no GPU vendor known")
        if c.vendor not in vendors:
            return ("passed", f"no {c.vendor.upper()} GPU")
        held.append(f"{c.vendor.upper()} GPU")
    return None


def _gfx_targets(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """A GPU has one of the rule's gfx targets."""
    view = ctx.view
    if c.gfx_targets is not None:
        targets = {(g.gfx or "").split(":")[0] for g in view.gpus if g.gfx}
        if not targets:
            return ("skipped", "no gfx target known")
        hit = targets & set(c.gfx_targets)
        if not hit:
            return ("passed", f"gfx target {', '.join(sorted(targets))} not concerned")
        held.append(f"gfx target {', '.join(sorted(hit))}")
    return None


def _gpus(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The GPU product is one of the rule's."""
    if c.gpus is not None:
        if not ctx.gpu_ids:
            return ("skipped", "the GPU product is not known")
        hit = set(ctx.gpu_ids) & set(c.gpus)
        if not hit:
            return ("passed", "GPU not concerned")
        held.append(f"GPU {', '.join(sorted(hit))}")
    return None


def _runtime(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The ROCm/CUDA release satisfies the rule's PEP 440 specifier."""
    view = ctx.view
    if c.runtime is not None:
        version = ctx.runtime_version or view.rocm_version
        if not version:
            return ("skipped", "the ROCm/CUDA release is not known")
        ok = in_specifier(version, c.runtime)
        if ok is None:
            return ("skipped", f"runtime {version!r} is not a version")
        if not ok:
            return ("passed", f"runtime {version} is not {c.runtime}")
        held.append(f"runtime {version} {c.runtime}")
    return None


def _torch_build(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """Torch is the rule's build (rocm, cuda, cpu)."""
    view = ctx.view
    if c.torch_build is not None:
        if view.torch_kind is None:
            return ("skipped", "the torch build is not known")
        if view.torch_kind != c.torch_build:
            return ("passed", f"torch is a {view.torch_kind} build")
        held.append(f"torch {view.torch_version} is a {c.torch_build} build")
    return None


def _packages_known(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """A package condition needs the installed packages to be known."""
    needs_packages = any(x is not None for x in (c.packages, c.any_packages, c.package_count,
                                                  c.package_pattern))
    # No installed packages exactly when the view lists none (the map is keyed by name).
    if needs_packages and not ctx.view.packages:
        return ("skipped", "the installed packages are not known")
    return None


def _packages(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """Each named package is installed at a version in its specifier."""
    if c.packages is not None:
        installed = ctx.installed()
        for name, spec in c.packages.items():
            have = installed.get(package_key(name))
            if have is None:
                return ("passed", f"{name} is not installed")
            ok = in_specifier(have, spec)
            if not ok:
                return ("passed", f"{name} {have} is not {spec}")
            held.append(f"{name} {have}")
    return None


def _any_packages(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """At least one of the named packages is installed."""
    if c.any_packages is not None:
        installed = ctx.installed()
        present = sorted(n for n in c.any_packages if package_key(n) in installed)
        if not present:
            return ("passed", f"none of {', '.join(c.any_packages)} is installed")
        held.append(", ".join(f"{n} {installed[package_key(n)]}" for n in present))
    return None


def _package_count(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """At least ``min`` of the named packages are installed."""
    if c.package_count is not None:
        installed = ctx.installed()
        present = sorted(n for n in c.package_count.names if package_key(n) in installed)
        if len(present) < c.package_count.min:
            return ("passed", f"{len(present)} of {', '.join(c.package_count.names)} "
                                    "installed")
        held.append(", ".join(f"{n} {installed[package_key(n)]}" for n in present))
    return None


def _package_pattern(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """An installed package name (of at most :data:`MAX_NAME_CHARS`) matches the pattern
    (whole name); the pattern passed :func:`pattern_problem` when the rules were loaded.
    """
    if c.package_pattern is not None:
        installed = ctx.installed()
        pattern = re.compile(c.package_pattern)
        hits = sorted(n for n in installed if len(n) <= MAX_NAME_CHARS and pattern.fullmatch(n))
        if not hits:
            return ("passed", f"no package matches {c.package_pattern}")
        held.append(", ".join(hits[:5]))
    return None


def _environment(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """Variables set (to the given values) or unset."""
    view = ctx.view
    env = view.environment
    for name in c.env_set or []:
        want = (c.env_values or {}).get(name)
        if name not in env:
            return ("passed", f"{name} is not set")
        if want is not None and env[name] != want:
            return ("passed", f"{name}={env[name]}, not {want}")
        held.append(f"{name}={env[name]}")
    for name in c.env_unset or []:
        want = (c.env_values or {}).get(name)
        if name in env and (want is None or env[name] == want):
            return ("passed", f"{name}={env[name]} is set")
        held.append(f"{name} is not set" + (f" to {want}" if want is not None else ""))
    return None


def _quantization(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The quantization method, or the kernels behind it (``[serving]
    quantization-backend``), is one of the rule's.
    """
    if c.quantization is not None:
        if ctx.quantization is None and ctx.quantization_backend is None:
            return ("skipped", "the quantization method is not known (pin resolve "
                               "--quantization)")
        used = [q.lower() for q in (ctx.quantization, ctx.quantization_backend) if q]
        hit = [q for q in used if q in [w.lower() for w in c.quantization]]
        shown = ctx.quantization or "?"
        if ctx.quantization_backend:
            shown += f" ({ctx.quantization_backend} kernels)"
        if not hit:
            return ("passed", f"quantization {shown} not concerned")
        held.append(f"quantization {shown}")
    return None


def _attention_impl(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The attention implementation (``NAME`` or ``NAME:BACKEND``) is one of the rule's."""
    if c.attention is not None:
        if ctx.attention is None:
            return ("skipped", "the attention implementation is not known (pin resolve "
                               "--attention)")
        names = {a.split(":")[0] for a in c.attention}
        backend_needed = any(a.startswith(f"{ctx.attention}:") for a in c.attention)
        if backend_needed and ctx.attention_backend is None:
            return ("skipped", f"the {ctx.attention} backend is not known (pin resolve "
                               f"--attention {ctx.attention}:BACKEND)")
        used = {ctx.attention, f"{ctx.attention}:{ctx.attention_backend}"}
        if not used & set(c.attention):
            shown = ctx.attention + (f":{ctx.attention_backend}" if ctx.attention_backend
                                     else "")
            why = "not concerned" if ctx.attention in names else "in use instead"
            return ("passed", f"attention {shown} {why}")
        held.append(f"attention {ctx.attention}"
                    + (f" ({ctx.attention_backend} backend)" if ctx.attention_backend else ""))
    return None


def _attention(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The attention head dimension is above the limit or the dtype is not allowed."""
    if c.head_dim_above is not None or c.dtypes_not is not None:
        if ctx.head_dim is None and ctx.dtype is None:
            return ("skipped", "the attention head dimension and dtype are not known")
        dtype = ctx.dtype.lower().removeprefix("torch.") if ctx.dtype else None
        too_big = (c.head_dim_above is not None and ctx.head_dim is not None
                   and ctx.head_dim > c.head_dim_above)
        bad_dtype = (c.dtypes_not is not None and dtype is not None
                     and dtype not in [d.lower() for d in c.dtypes_not])
        if not (too_big or bad_dtype):
            if ctx.head_dim is None or dtype is None:
                unknown = "head dimension" if ctx.head_dim is None else "dtype"
                return ("skipped", f"the attention {unknown} is not known")
            return ("passed", "head dimension and dtype are supported")
        held.append(f"head dim {ctx.head_dim}" if too_big else f"dtype {ctx.dtype}")
    return None


def _platform(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The platform (linux, windows) is the rule's."""
    if c.platform is not None:
        if ctx.platform is None:
            return ("skipped", "the platform is not known")
        if ctx.platform != c.platform:
            return ("passed", f"platform {ctx.platform}")
        held.append(f"platform {ctx.platform}")
    return None


def _device_strings(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """The audited code uses one of the rule's device strings."""
    if c.device_strings is not None:
        if ctx.device_strings is None:
            return ("skipped", "the code was not audited (pin audit PATH --format json, then "
                               "pin verify --audit REPORT)")
        found = sorted({d.split(":")[0] for d in ctx.device_strings} & set(c.device_strings))
        if not found:
            return ("passed", "no such device string in the code")
        held.append(f"device string {', '.join(found)} in the code")
    return None


CONDITIONS: tuple[Callable[[Conditions, GuardContext, list[str]], _Outcome | None], ...] = (
    _vendor, _gfx_targets, _gpus, _runtime, _torch_build, _packages_known, _packages,
    _any_packages, _package_count, _package_pattern, _environment, _quantization, _attention_impl,
    _attention,
    _platform, _device_strings,
)
