"""Evaluate guard rules against what is known of an environment (pure).

A :class:`GuardContext` is built from an :class:`~pinning.guards.checks.EnvView` (probed host or
pasted dumps) plus what a resolve or build knows (runtime release, quantization, attention
head dimension, dtype, platform). Each rule gives a :class:`GuardResult`: ``failed`` (every
condition holds: the rule fires), ``passed`` (a condition does not hold) or ``skipped`` with
the reason (a condition needs a fact nobody knows), in the style of pip-audit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import ValidationError

from pinning.errors import MatrixError
from pinning.guards.checks import EnvView
from pinning.guards.models import Conditions, Rule, RuleFile
from pinning.util.files import read_toml
from pinning.util.models import validation_summary
from pinning.util.versions import normalize_name

RULES_FILE = "rules.toml"


def load_rules(path: Path | None = None) -> list[Rule]:
    """The shipped rules (or ``path``). Raises :class:`MatrixError` (exit 3) naming the file
    and the field for an unknown field or condition, a bad value or a duplicate id.
    """
    if path is None:
        path = Path(str(resources.files("pinning.guards") / RULES_FILE))
    _, data = read_toml(path, MatrixError, label=f"Guard rules {path}")
    try:
        rules = RuleFile.model_validate(data).rules
    except ValidationError as exc:
        raise MatrixError(
            f"Guard rules {path}: {validation_summary(exc, data, limit=4)}.") from exc
    for rule in rules:
        when = rule.when
        if not when.model_dump(exclude_none=True):
            raise MatrixError(f"Guard rules {path}: rule {rule.id} has no condition (`when`); "
                              "it would fire on every stack.")
        if when.package_pattern is not None:
            try:
                re.compile(when.package_pattern)
            except re.error as exc:
                raise MatrixError(f"Guard rules {path}: rule {rule.id}: package_pattern "
                                  f"{when.package_pattern!r} is not a regular expression "
                                  f"({exc}).") from exc
        stray = set(when.env_values or {}) - set(when.env_set or []) - set(when.env_unset or [])
        if stray:
            raise MatrixError(f"Guard rules {path}: rule {rule.id}: env_values for "
                              f"{', '.join(sorted(stray))} not named in env_set or env_unset.")
        for spec in [rule.when.runtime, *(rule.when.packages or {}).values()]:
            if spec:
                try:
                    SpecifierSet(spec)
                except InvalidSpecifier as exc:
                    raise MatrixError(f"Guard rules {path}: rule {rule.id}: {spec!r} is not a "
                                      "PEP 440 specifier.") from exc
    return rules


@dataclass
class GuardContext:
    """Facts a rule may test; ``None`` = unknown (the rule is then skipped, with why)."""

    view: EnvView
    runtime_version: str | None = None
    quantization: str | None = None
    head_dim: int | None = None
    dtype: str | None = None
    platform: str | None = None
    gpu_ids: list[str] = field(default_factory=list)
    device_strings: list[str] | None = None


@dataclass(frozen=True)
class GuardResult:
    """One rule's outcome and the reason, in words."""

    rule: Rule
    status: Literal["failed", "passed", "skipped"]
    reason: str


def _installed(view: EnvView) -> dict[str, str]:
    return {normalize_name(p.name): p.version for p in view.packages}


def _version_in(version: str, spec: str) -> bool | None:
    if not spec:
        return True
    try:
        return Version(version.split("+")[0]) in SpecifierSet(spec)
    except InvalidVersion:
        return None


def evaluate(rule: Rule, ctx: GuardContext) -> GuardResult:
    """Check every condition of ``rule`` against ``ctx``."""
    c: Conditions = rule.when
    view = ctx.view
    installed = _installed(view)
    held: list[str] = []

    def result(status: Literal["failed", "passed", "skipped"], why: str) -> GuardResult:
        return GuardResult(rule=rule, status=status, reason=why)

    if c.vendor is not None:
        vendors = {g.vendor for g in view.gpus if g.vendor}
        if not vendors:
            return result("skipped", "no GPU vendor known")
        if c.vendor not in vendors:
            return result("passed", f"no {c.vendor.upper()} GPU")
        held.append(f"{c.vendor.upper()} GPU")
    if c.gfx_targets is not None:
        targets = {(g.gfx or "").split(":")[0] for g in view.gpus if g.gfx}
        if not targets:
            return result("skipped", "no gfx target known")
        hit = targets & set(c.gfx_targets)
        if not hit:
            return result("passed", f"gfx target {', '.join(sorted(targets))} not concerned")
        held.append(f"gfx target {', '.join(sorted(hit))}")
    if c.gpus is not None:
        if not ctx.gpu_ids:
            return result("skipped", "the GPU product is not known")
        hit = set(ctx.gpu_ids) & set(c.gpus)
        if not hit:
            return result("passed", "GPU not concerned")
        held.append(f"GPU {', '.join(sorted(hit))}")
    if c.runtime is not None:
        version = ctx.runtime_version or view.rocm_version
        if not version:
            return result("skipped", "the ROCm/CUDA release is not known")
        ok = _version_in(version, c.runtime)
        if ok is None:
            return result("skipped", f"runtime {version!r} is not a version")
        if not ok:
            return result("passed", f"runtime {version} is not {c.runtime}")
        held.append(f"runtime {version} {c.runtime}")
    if c.torch_build is not None:
        if view.torch_kind is None:
            return result("skipped", "the torch build is not known")
        if view.torch_kind != c.torch_build:
            return result("passed", f"torch is a {view.torch_kind} build")
        held.append(f"torch {view.torch_version} is a {c.torch_build} build")
    needs_packages = any(x is not None for x in (c.packages, c.any_packages, c.package_count,
                                                  c.package_pattern))
    if needs_packages and not installed:
        return result("skipped", "the installed packages are not known")
    if c.packages is not None:
        for name, spec in c.packages.items():
            have = installed.get(normalize_name(name))
            if have is None:
                return result("passed", f"{name} is not installed")
            ok = _version_in(have, spec)
            if not ok:
                return result("passed", f"{name} {have} is not {spec}")
            held.append(f"{name} {have}")
    if c.any_packages is not None:
        present = sorted(n for n in c.any_packages if normalize_name(n) in installed)
        if not present:
            return result("passed", f"none of {', '.join(c.any_packages)} is installed")
        held.append(", ".join(f"{n} {installed[normalize_name(n)]}" for n in present))
    if c.package_count is not None:
        present = sorted(n for n in c.package_count.names if normalize_name(n) in installed)
        if len(present) < c.package_count.min:
            return result("passed", f"{len(present)} of {', '.join(c.package_count.names)} "
                                    "installed")
        held.append(", ".join(f"{n} {installed[normalize_name(n)]}" for n in present))
    if c.package_pattern is not None:
        pattern = re.compile(c.package_pattern)
        hits = sorted(n for n in installed if pattern.fullmatch(n))
        if not hits:
            return result("passed", f"no package matches {c.package_pattern}")
        held.append(", ".join(hits[:5]))
    env = view.environment
    for name in c.env_set or []:
        want = (c.env_values or {}).get(name)
        if name not in env:
            return result("passed", f"{name} is not set")
        if want is not None and env[name] != want:
            return result("passed", f"{name}={env[name]}, not {want}")
        held.append(f"{name}={env[name]}")
    for name in c.env_unset or []:
        want = (c.env_values or {}).get(name)
        if name in env and (want is None or env[name] == want):
            return result("passed", f"{name}={env[name]} is set")
        held.append(f"{name} is not set" + (f" to {want}" if want is not None else ""))
    if c.quantization is not None:
        if ctx.quantization is None:
            return result("skipped", "the quantization method is not known")
        if ctx.quantization.lower() not in [q.lower() for q in c.quantization]:
            return result("passed", f"quantization {ctx.quantization} not concerned")
        held.append(f"quantization {ctx.quantization}")
    if c.head_dim_above is not None or c.dtypes_not is not None:
        if ctx.head_dim is None and ctx.dtype is None:
            return result("skipped", "the attention head dimension and dtype are not known")
        dtype = ctx.dtype.lower().removeprefix("torch.") if ctx.dtype else None
        too_big = (c.head_dim_above is not None and ctx.head_dim is not None
                   and ctx.head_dim > c.head_dim_above)
        bad_dtype = (c.dtypes_not is not None and dtype is not None
                     and dtype not in [d.lower() for d in c.dtypes_not])
        if not (too_big or bad_dtype):
            if ctx.head_dim is None or dtype is None:
                unknown = "head dimension" if ctx.head_dim is None else "dtype"
                return result("skipped", f"the attention {unknown} is not known")
            return result("passed", "head dimension and dtype are supported")
        held.append(f"head dim {ctx.head_dim}" if too_big else f"dtype {ctx.dtype}")
    if c.platform is not None:
        if ctx.platform is None:
            return result("skipped", "the platform is not known")
        if ctx.platform != c.platform:
            return result("passed", f"platform {ctx.platform}")
        held.append(f"platform {ctx.platform}")
    if c.device_strings is not None:
        if ctx.device_strings is None:
            return result("skipped", "the code was not audited (pin audit PATH)")
        found = sorted({d.split(":")[0] for d in ctx.device_strings} & set(c.device_strings))
        if not found:
            return result("passed", "no such device string in the code")
        held.append(f"device string {', '.join(found)} in the code")
    return result("failed", "; ".join(held) or "unconditional")


def run_rules(rules: list[Rule], ctx: GuardContext, phase: str) -> list[GuardResult]:
    """Every rule acting in ``phase``, evaluated in file order."""
    return [evaluate(r, ctx) for r in rules if phase in r.phases]


# Rules whose verdict pinning.guards.checks already reports under its own code (same fact, same
# source); their guard finding would only repeat it.
COVERED_BY_CHECKS: dict[str, str] = {
    "several-tritons": "multiple-triton-distributions",
    "cuda-torch-on-amd": "cuda-torch-on-amd",
    "cuda-wheels-on-amd": "cuda-libraries-on-amd",
    "hsa-override-gfx-version": "hsa-override-gfx-version",
    "jax-rocm60-plugin-on-rocm7": "jax-plugin-rocm-major",
    "jax-rocm7-plugin-on-rocm6": "jax-plugin-rocm-major",
}


def guard_findings(ctx: GuardContext, phase: str, already: set[str],
                   rules: list[Rule] | None = None, *,
                   include_skipped: bool = False) -> list[Any]:
    """Findings for the rules that fire in ``phase`` (``already``: codes reported by
    :mod:`pinning.guards.checks`, whose rules are not repeated). Refusals and set-env remedies are
    errors; warnings stay warnings.
    """
    from pinning.guards.checks import Finding

    out = []
    for res in run_rules(rules if rules is not None else load_rules(), ctx, phase):
        rule = res.rule
        if res.status == "skipped":
            if not include_skipped:
                continue
            out.append(Finding(
                code=f"guard:{rule.id}", fact=f"guard.{rule.id}", status="not-probed",
                severity="info", message=f"Guard {rule.id} not evaluated: {res.reason}.",
                source=f"{rule.source} ({rule.date})"))
            continue
        if res.status != "failed" or COVERED_BY_CHECKS.get(rule.id) in already:
            continue
        out.append(Finding(
            code=f"guard:{rule.id}", fact=f"guard.{rule.id}", status="hazard",
            severity="warning" if rule.remedy.kind == "warn" else "error",
            message=f"{rule.title}: {res.reason}. {rule.why} {rule.remedy.text}",
            source=f"{rule.source} ({rule.date})"))
    return out


def apply_at_resolve(lock: Any, rules: list[Rule] | None = None) -> tuple[Any, list[str]]:
    """Run the resolve-phase rules on a freshly resolved lock (its GPU, runtime and
    frameworks): a refusal raises :class:`~pinning.errors.GuardRefused` (exit 10, nothing
    written); a ``set-env`` remedy is recorded in the lock's ``[environment]`` with a note;
    a warning becomes a note. Returns the (re-sealed) lock and the messages for the user.
    """
    from pinning.errors import GuardRefused
    from pinning.guards.checks import GpuView, PackageView
    from pinning.lockfile.io import lock_json, seal
    from pinning.matrix.names import FRAMEWORK_DISTRIBUTIONS

    target = lock.target
    gfx = target.gfx_target.value if target.gfx_target is not None else None
    packages = []
    for fw in lock.frameworks:
        version = fw.version.value or (fw.version.allowed or [""])[0]
        packages.append(PackageView(FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name), version))
    view = EnvView(gpus=[GpuView(vendor=target.vendor, gfx=gfx)], packages=packages,
                   environment=dict(lock.environment))
    ctx = GuardContext(view=view, runtime_version=lock.runtime.version.value,
                       gpu_ids=[lock.request.gpu])
    env = dict(lock.environment)
    messages: list[str] = []
    for res in run_rules(rules if rules is not None else load_rules(), ctx, "resolve"):
        if res.status != "failed":
            continue
        rule = res.rule
        if rule.remedy.kind == "refuse":
            raise GuardRefused(f"Guard {rule.id} refuses this stack: {rule.title} ({res.reason})."
                               f" {rule.why} Source: {rule.source} ({rule.date}).",
                               hint=rule.remedy.text)
        if rule.remedy.kind == "set-env" and rule.remedy.name:
            env[rule.remedy.name] = str(rule.remedy.value)
        messages.append(f"Guard {rule.id}: {rule.remedy.text} ({rule.source}, {rule.date})")
    if not messages:
        return lock, []
    data = lock_json(lock)
    data["environment"] = env
    data["notes"] = [*data.get("notes", []), *messages]
    data.pop("content-hash", None)
    return seal(data), messages
