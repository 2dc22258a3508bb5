"""One rule system: every rule is stated once in rules.toml; a coded judgement is reached
only through a rule that names it, and its verdict is reported once, under its own code."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.guards.checks import CODED_RULES, run_checks
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import evaluate, guard_findings, load_rules
from pinning.guards.view import EnvView, GpuView, PackageView
from pinning.matrix.load import Matrix
from tests.support.guards import RULES

AMD = [GpuView(vendor="amd", gfx="gfx942", device_id="0x74a1")]


def test_every_coded_judgement_is_named_by_a_rule() -> None:
    named = {r.check for r in RULES.values() if r.check}
    assert named == set(CODED_RULES)


def test_no_rule_is_stated_twice() -> None:
    # A coded rule carries no conditions that restate its judgement: at most a package
    # scope (which plugin the entry covers) and the vendor.
    for rule in RULES.values():
        if rule.check:
            assert set(rule.when.model_dump(exclude_none=True)) <= {"vendor", "any_packages"}


def test_an_unknown_check_fails_to_load(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('schema-version = 1\n[[rules]]\nid = "x"\ntitle = "t"\nwhy = "w."\n'
                    'source = "s source"\ndate = 2026-01-01\nphases = ["verify"]\n'
                    'check = "no-such-check"\nremedy = { kind = "warn", text = "t" }\n')
    with pytest.raises(MatrixError) as exc:
        load_rules(path)
    assert "no-such-check" in exc.value.message and "not a coded rule" in exc.value.message


def test_a_coded_verdict_is_reported_once(matrix: Matrix) -> None:
    view = EnvView(gpus=list(AMD), packages=[PackageView("triton", "3.7.1"),
                                             PackageView("pytorch-triton-rocm", "3.3.0")])
    codes = [f.code for f in run_checks(view, matrix)]
    codes += [f.code for f in guard_findings(GuardContext(view=view), "verify")]
    assert codes.count("multiple-triton-distributions") == 1
    assert "guard:several-tritons" not in codes


def test_a_coded_rule_is_skipped_while_its_facts_are_unknown() -> None:
    result = evaluate(RULES["cuda-torch-on-amd"], GuardContext(view=EnvView(gpus=list(AMD))))
    assert result.status == "skipped" and "torch build" in result.reason


def test_the_jax_entries_cover_only_their_own_plugin() -> None:
    both = EnvView(gpus=list(AMD), packages=[PackageView("jax-rocm7-plugin", "0.8.2"),
                                             PackageView("jax-rocm60-plugin", "0.5.0")])
    on_rocm6 = GuardContext(view=both, runtime_version="6.4.1")
    # ROCm 6: the rocm7 plugin is the wrong one, the rocm60 plugin is right.
    assert evaluate(RULES["jax-rocm7-plugin-on-rocm6"], on_rocm6).status == "failed"
    assert evaluate(RULES["jax-rocm60-plugin-on-rocm7"], on_rocm6).status == "passed"
