"""Evaluate guard rules against what is known of an environment (pure).

A :class:`GuardContext` is built from an :class:`~pinning.guards.checks.EnvView` (probed host or
pasted dumps) plus what a resolve or build knows (runtime release, quantization, attention
head dimension, dtype, platform). Each rule gives a :class:`GuardResult`: ``failed`` (every
condition holds: the rule fires), ``passed`` (a condition does not hold) or ``skipped`` with
the reason (a condition needs a fact nobody knows), in the style of pip-audit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import ValidationError

from pinning.errors import MatrixError
from pinning.guards.checks import CODED_RULES
from pinning.guards.models import Conditions, Rule, RuleFile
from pinning.guards.view import EnvView, Finding
from pinning.util.files import read_toml
from pinning.util.models import validation_summary
from pinning.util.versions import in_specifier, normalize_name

RULES_FILE = "rules.toml"

# The shipped rules, once read and checked (they are frozen models and the file ships with
# the package, so every later call gets a new list of the same rules: pin verify over a
# fleet reads them once, not once per host).
_SHIPPED: list[Rule] | None = None


def load_rules(path: Path | None = None) -> list[Rule]:
    """The shipped rules (or ``path``), as a new list on each call; the shipped file is read
    once per process. Raises :class:`MatrixError` (exit 3) naming the file and the field for
    an unknown field or condition, a bad value or a duplicate id.
    """
    global _SHIPPED
    if path is None:
        if _SHIPPED is None:
            _SHIPPED = _read_rules(Path(str(resources.files("pinning.guards") / RULES_FILE)))
        return list(_SHIPPED)
    return _read_rules(path)


def _read_rules(path: Path) -> list[Rule]:
    """Read and check the rules file at ``path`` (see :func:`load_rules`)."""
    _, data = read_toml(path, MatrixError, label=f"Guard rules {path}")
    try:
        rules = RuleFile.model_validate(data, strict=True).rules
    except ValidationError as exc:
        raise MatrixError(
            f"Guard rules {path}: {validation_summary(exc, data, limit=4)}.") from exc
    for rule in rules:
        when = rule.when
        if rule.check is not None and rule.check not in CODED_RULES:
            raise MatrixError(f"Guard rules {path}: rule {rule.id}: check {rule.check!r} is not "
                              f"a coded rule (known: {', '.join(sorted(CODED_RULES))}).")
        if rule.check is None and not when.model_dump(exclude_none=True):
            raise MatrixError(f"Guard rules {path}: rule {rule.id} has no condition (`when`); "
                              "it would fire on every stack.")
        if when.package_pattern is not None:
            _check_pattern(path, rule.id, when.package_pattern)
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


MAX_PATTERN_CHARS = 200
"""The most characters a rule's ``package_pattern`` may have."""
MAX_PATTERN_REPEATS = 3
"""The most quantified parts (``*``, ``+``, ``?``, ``{m,n}``) one pattern may have: the time
a match can take grows with the name length to this power (128**3 steps at most)."""
MAX_NAME_CHARS = 128
"""Installed names longer than this are never matched against a pattern (no PEP 503 name
pin has met is near it)."""

_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_BACKREFS = frozenset({"GROUPREF", "GROUPREF_EXISTS"})


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` may not be a rule's ``package_pattern``, or ``None`` when it may.

    Python's ``re`` backtracks, so some patterns take exponential time on a name that
    almost matches. Refused, from the parsed pattern: a quantified part inside another
    (``(a+)+``, ``(a*)*``, ``(a?a?)+``, ``(.*a){10}``), an alternation inside a quantified group
    (``(a|a)*``, ``(a|ab)+``), a backreference, more than :data:`MAX_PATTERN_REPEATS`
    quantified parts, more than :data:`MAX_PATTERN_CHARS` characters, or text that is not
    a regular expression. The check is conservative (``(\\d+\\.)*`` is safe but refused):
    a name pattern never needs these forms. A pattern ``re`` warns about (``[[``, a
    possible nested set) is refused as well. Matching is bounded too: names over
    :data:`MAX_NAME_CHARS` characters are not matched.
    """
    import importlib
    import warnings

    if len(pattern) > MAX_PATTERN_CHARS:
        return f"{len(pattern)} characters, more than the {MAX_PATTERN_CHARS} a pattern may have"
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: refused too
            warnings.simplefilter("error")
            re.compile(pattern)
            parsed = importlib.import_module("re._parser").parse(pattern)
    except (re.error, RecursionError, OverflowError, Warning) as exc:
        return f"not a regular expression ({exc})"
    repeats = [0]
    problem = _scan(list(parsed), inside=False, repeats=repeats)
    if problem is None and repeats[0] > MAX_PATTERN_REPEATS:
        problem = (f"{repeats[0]} quantified parts, more than the {MAX_PATTERN_REPEATS} a "
                   "pattern may have (the match time grows with their number)")
    return problem


def _scan(items: list[tuple[Any, Any]], *, inside: bool, repeats: list[int]) -> str | None:
    """The first refused form in the parsed ``items`` (``re._parser`` opcodes and
    arguments); ``inside`` is true within a part repeated more than once. Counts the
    repeated parts in ``repeats[0]``.
    """
    for op, av in items:
        name = str(op)
        subs: list[list[tuple[Any, Any]]] = []
        nested = inside
        if name in _REPEATS:
            _lo, hi, sub = av
            if inside:
                return "a quantifier inside a quantified group, e.g. (a+)+ or (a?a?)* " \
                       "(catastrophic backtracking)"
            repeats[0] += 1
            nested = hi > 1
            subs = [list(sub)]
        elif name == "BRANCH":
            if inside:
                return "an alternation inside a quantified group, e.g. (a|a)* (catastrophic " \
                       "backtracking)"
            subs = [list(alt) for alt in av[1]]
        elif name in _BACKREFS:
            return "a backreference (matching time is not bounded)"
        elif name == "SUBPATTERN":
            subs = [list(av[3])]
        elif name in ("ASSERT", "ASSERT_NOT"):
            subs = [list(av[1])]
        elif name == "ATOMIC_GROUP":
            subs = [list(av)]
        for sub_items in subs:
            problem = _scan(sub_items, inside=nested, repeats=repeats)
            if problem:
                return problem
    return None


def _check_pattern(path: Path, rule_id: str, pattern: str) -> None:
    """Raise :class:`MatrixError` (exit 3) naming the rule and ``package_pattern`` when
    :func:`pattern_problem` refuses ``pattern``.
    """
    problem = pattern_problem(pattern)
    if problem:
        shown = pattern if len(pattern) <= 80 else pattern[:80] + "..."
        raise MatrixError(f"Guard rules {path}: rule {rule_id}: package_pattern {shown!r}: "
                          f"{problem}.",
                          hint="Write the pattern without nested or alternated repeats, e.g. "
                               "nvidia-.*-cu12 (see pattern_problem in guards/engine.py).")


@dataclass
class GuardContext:
    """Facts a rule may test; ``None`` = unknown (the rule is then skipped, with why)."""

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


@dataclass(frozen=True)
class GuardResult:
    """One rule's outcome and the reason, in words."""

    rule: Rule
    status: Status
    reason: str


def _installed(view: EnvView) -> dict[str, str]:
    return {normalize_name(p.name): p.version for p in view.packages}


Status = Literal["failed", "passed", "skipped"]
_Outcome = tuple[Status, str]


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
        installed = _installed(ctx.view)
        for name, spec in c.packages.items():
            have = installed.get(normalize_name(name))
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
        installed = _installed(ctx.view)
        present = sorted(n for n in c.any_packages if normalize_name(n) in installed)
        if not present:
            return ("passed", f"none of {', '.join(c.any_packages)} is installed")
        held.append(", ".join(f"{n} {installed[normalize_name(n)]}" for n in present))
    return None


def _package_count(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """At least ``min`` of the named packages are installed."""
    if c.package_count is not None:
        installed = _installed(ctx.view)
        present = sorted(n for n in c.package_count.names if normalize_name(n) in installed)
        if len(present) < c.package_count.min:
            return ("passed", f"{len(present)} of {', '.join(c.package_count.names)} "
                                    "installed")
        held.append(", ".join(f"{n} {installed[normalize_name(n)]}" for n in present))
    return None


def _package_pattern(c: Conditions, ctx: GuardContext, held: list[str]) -> _Outcome | None:
    """An installed package name (of at most :data:`MAX_NAME_CHARS`) matches the pattern
    (whole name); the pattern passed :func:`pattern_problem` when the rules were loaded.
    """
    if c.package_pattern is not None:
        installed = _installed(ctx.view)
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


_CONDITIONS: tuple[Callable[[Conditions, GuardContext, list[str]], _Outcome | None], ...] = (
    _vendor, _gfx_targets, _gpus, _runtime, _torch_build, _packages_known, _packages,
    _any_packages, _package_count, _package_pattern, _environment, _quantization, _attention_impl,
    _attention,
    _platform, _device_strings,
)


def evaluate(rule: Rule, ctx: GuardContext) -> GuardResult:
    """Check every condition of ``rule`` against ``ctx``, in a fixed order: the first that
    does not hold gives ``passed`` (or ``skipped`` when its fact is unknown), with the reason.
    A coded rule (``check``) then asks :mod:`pinning.guards.checks` for its judgement.
    """
    held: list[str] = []
    for condition in _CONDITIONS:
        outcome = condition(rule.when, ctx, held)
        if outcome is not None:
            return GuardResult(rule=rule, status=outcome[0], reason=outcome[1])
    if rule.check is not None:
        return _coded(rule, ctx, held)
    return GuardResult(rule=rule, status="failed", reason="; ".join(held) or "unconditional")



def run_rules(rules: list[Rule], ctx: GuardContext, phase: str) -> list[GuardResult]:
    """Every rule acting in ``phase``, evaluated in file order."""
    return [evaluate(r, ctx) for r in rules if phase in r.phases]


def _coded(rule: Rule, ctx: GuardContext, held: list[str]) -> GuardResult:
    """The judgement of a coded rule (``check``): failed when its check reports a finding with
    that code; skipped when a fact it needs is unknown. The runtime release known to a resolve
    stands in for the host's ROCm release on AMD.
    """
    assert rule.check is not None
    coded = CODED_RULES[rule.check]
    view = ctx.view
    if view.rocm_version is None and ctx.runtime_version and view.amd:
        view = replace(view, rocm_version=ctx.runtime_version)
    unknown = [need for need in coded.needs if not getattr(view, need)]
    if unknown:
        return GuardResult(rule=rule, status="skipped",
                           reason=f"{coded.needs_text(unknown)} not known")
    found = [f for f in coded.run(view) if f.code == rule.check]
    covers = {normalize_name(n) for n in rule.when.any_packages or []}
    if covers:  # the entry covers only findings about the packages it names
        found = [f for f in found if f.actual and normalize_name(f.actual) in covers]
    if not found:
        return GuardResult(rule=rule, status="passed", reason=f"{rule.check}: not found")
    held += [f.actual or f.fact for f in found]
    return GuardResult(rule=rule, status="failed", reason="; ".join(held))


def guard_findings(ctx: GuardContext, phase: str, rules: list[Rule] | None = None, *,
                   include_skipped: bool = False) -> list[Finding]:
    """Findings for the data rules that fire in ``phase``. Coded rules (``check``) are not
    repeated here: :func:`pinning.guards.checks.run_checks` reports them under their own code.
    Refusals and set-env remedies are errors; warnings stay warnings; with
    ``include_skipped``, rules that could not be evaluated are listed as ``info``.
    """
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
        if res.status != "failed" or rule.check is not None:
            continue
        out.append(Finding(
            code=f"guard:{rule.id}", fact=f"guard.{rule.id}", status="hazard",
            severity="warning" if rule.remedy.kind == "warn" else "error",
            message=f"{rule.title}: {res.reason}. {rule.why} {rule.remedy.text}",
            source=f"{rule.source} ({rule.date})"))
    return out
