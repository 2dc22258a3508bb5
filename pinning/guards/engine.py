"""Evaluate guard rules against what is known of an environment (pure).

Loads ``rules.toml`` (checked on load), then judges each rule against a
:class:`~pinning.guards.conditions.GuardContext` (an :class:`~pinning.guards.view.EnvView` of
a probed host or pasted dumps, plus what a resolve or build knows). Each rule gives a
:class:`GuardResult`: ``failed`` (every condition holds: the rule fires), ``passed`` (a
condition does not hold) or ``skipped`` with the reason (a condition needs a fact nobody
knows), in the style of pip-audit. The conditions are in :mod:`pinning.guards.conditions`,
the ``package_pattern`` check in :mod:`pinning.guards.patterns`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import ValidationError

from pinning.errors import MatrixError
from pinning.guards.checks import CHECKED_ENV, CODED_RULES, checked_package
from pinning.guards.conditions import CONDITIONS, GuardContext, Status
from pinning.guards.models import Rule, RuleFile
from pinning.guards.patterns import pattern_problem
from pinning.guards.serving import FLASH_ATTENTION_TRITON
from pinning.guards.view import Finding, package_key
from pinning.util.files import read_toml
from pinning.util.models import validation_summary

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
                               "nvidia-.*-cu12 (see pattern_problem in guards/patterns.py).")


@dataclass(frozen=True)
class GuardResult:
    """One rule's outcome and the reason, in words."""

    rule: Rule
    status: Status
    reason: str


def evaluate(rule: Rule, ctx: GuardContext) -> GuardResult:
    """Check every condition of ``rule`` against ``ctx``, in a fixed order: the first that
    does not hold gives ``passed`` (or ``skipped`` when its fact is unknown), with the reason.
    A coded rule (``check``) then asks :mod:`pinning.guards.checks` for its judgement.
    """
    held: list[str] = []
    for condition in CONDITIONS:
        outcome = condition(rule.when, ctx, held)
        if outcome is not None:
            return GuardResult(rule=rule, status=outcome[0], reason=outcome[1])
    if rule.check is not None:
        return _coded(rule, ctx, held)
    return GuardResult(rule=rule, status="failed", reason="; ".join(held) or "unconditional")


def run_rules(rules: list[Rule], ctx: GuardContext, phase: str) -> list[GuardResult]:
    """Every rule acting in ``phase``, evaluated in file order."""
    ctx = replace(ctx)  # its own memory of the installed packages (GuardContext.installed)
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
    covers = {package_key(n) for n in rule.when.any_packages or []}
    if covers:  # the entry covers only findings about the packages it names
        found = [f for f in found if f.actual and package_key(f.actual) in covers]
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


@dataclass(frozen=True)
class RuleReads:
    """What of an environment's packages and variables some rule reads: the packages of
    PEP 503 ``names`` and those the coded checks read
    (:func:`~pinning.guards.checks.checked_package`), every package when ``all_packages``
    (a rule has a ``package_pattern``), and the variables ``env``. Two views equal but
    for packages and variables outside these (and in whether they list any package at
    all) get the same findings from the rules and the coded checks.
    """

    names: frozenset[str]
    env: frozenset[str]
    all_packages: bool = False

    def reads_package(self, key: str) -> bool:
        """Whether some rule reads the package whose PEP 503 name is ``key``."""
        return self.all_packages or key in self.names or checked_package(key)


def rule_reads(rules: list[Rule]) -> RuleReads:
    """The :class:`RuleReads` of ``rules`` (their ``packages``, ``any_packages``,
    ``package_count`` names, ``package_pattern`` and ``env_set`` / ``env_unset``), of the
    coded checks (:func:`~pinning.guards.checks.checked_package`,
    :data:`~pinning.guards.checks.CHECKED_ENV`) and of
    :func:`~pinning.guards.serving.with_lock_serving`. Raises nothing (the rules were
    checked on load).
    """
    names: set[str] = set()
    env = {*CHECKED_ENV, FLASH_ATTENTION_TRITON}
    every = False
    for rule in rules:
        when = rule.when
        names.update(package_key(n) for n in [*(when.packages or {}), *(when.any_packages or []),
                                                *(when.package_count.names
                                                  if when.package_count else [])])
        every = every or when.package_pattern is not None  # any name may match it
        env.update([*(when.env_set or []), *(when.env_unset or [])])
    return RuleReads(names=frozenset(names), env=frozenset(env), all_packages=every)
