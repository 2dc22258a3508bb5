"""A guard rule's ``package_pattern`` is checked when the rules load: a pattern that could
backtrack catastrophically (nested or alternated repeats, backreferences, too many
quantifiers, too long) is exit 3 naming the rule and the field, and matching only looks at
names of bounded length."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.errors import MatrixError
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import evaluate, load_rules
from pinning.guards.patterns import MAX_NAME_CHARS, MAX_PATTERN_CHARS, pattern_problem
from pinning.guards.view import EnvView, PackageView

RULE = """schema-version = 1

[[rules]]
id = "pattern-rule"
title = "A rule with a name pattern"
why = "Test."
source = "test"
date = 2026-11-29
phases = ["verify"]
when = {{ package_pattern = {pattern} }}
remedy = {{ kind = "warn", text = "Test." }}
"""


def _rules(tmp_path: Path, pattern: str) -> Path:
    path = tmp_path / "rules.toml"
    escaped = pattern.replace("\\", "\\\\").replace('"', '\\"')
    path.write_text(RULE.format(pattern=f'"{escaped}"'))
    return path


@pytest.mark.parametrize("pattern,why", [
    ("(a+)+", "quantifier inside a quantified group"),
    ("(a*)*", "quantifier inside a quantified group"),
    ("(a?a?)+b", "quantifier inside a quantified group"),
    ("(.*a){10}", "quantifier inside a quantified group"),
    ("(?:x(?:y+))*", "quantifier inside a quantified group"),
    ("(a|a)*", "alternation inside a quantified group"),
    ("(nvidia|nv)+", "alternation inside a quantified group"),
    ("(a)\\1", "backreference"),
    (".*.*.*.*", "4 quantified parts"),
    ("a" * (MAX_PATTERN_CHARS + 1), "characters"),
    ("(", "not a regular expression"),
])
def test_dangerous_pattern_is_exit_3_naming_rule_and_field(
        tmp_path: Path, pattern: str, why: str) -> None:
    assert why in (pattern_problem(pattern) or "")
    with pytest.raises(MatrixError) as exc:
        load_rules(_rules(tmp_path, pattern))
    assert exc.value.exit_code == 3
    assert "rule pattern-rule: package_pattern" in exc.value.message and why in exc.value.message


@pytest.mark.parametrize("pattern", [
    "nvidia-.*-cu1[23]", "(torch|jax)-rocm.*", "pytorch-triton(-rocm)?", "(a|b)*",
    "[a-z]+-plugin", "(?:ab)+", "flash.attn",
])
def test_ordinary_patterns_load_and_match(tmp_path: Path, pattern: str) -> None:
    assert pattern_problem(pattern) is None
    (rule,) = load_rules(_rules(tmp_path, pattern))
    assert rule.when.package_pattern == pattern


def test_shipped_rules_pass_the_check() -> None:
    for rule in load_rules():
        if rule.when.package_pattern is not None:
            assert pattern_problem(rule.when.package_pattern) is None, rule.id


@given(st.text(alphabet="a()|*+?{}.,0123\\[]-^$", max_size=24))
def test_every_accepted_pattern_compiles(pattern: str) -> None:
    if pattern_problem(pattern) is None:
        re.compile(pattern)


def test_long_names_are_not_matched(tmp_path: Path) -> None:
    (rule,) = load_rules(_rules(tmp_path, "x.*"))
    ok = EnvView(packages=[PackageView("x" * MAX_NAME_CHARS, "1.0")])
    assert evaluate(rule, GuardContext(view=ok)).status == "failed"
    long = EnvView(packages=[PackageView("x" * (MAX_NAME_CHARS + 1), "1.0")])
    assert evaluate(rule, GuardContext(view=long)).status == "passed"
