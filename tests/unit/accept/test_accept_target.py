"""``pin accept judge|run``, ``pin cost`` and ``pin report`` with a multi-target lock: a result
is bound to the chosen target's content hash (its view), never to the whole file; with
several targets and none named each command exits 2 naming them; ``--target`` without a
lock is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pinning.accept.runner import judge_files
from pinning.cli import main
from pinning.lockfile.io import read_lock
from tests.support.multilock_targets import CANDIDATE, CURRENT, write_multi
from tests.support.paths import ROOT

DATA = ROOT / "tests" / "data" / "acceptance"
RAW = DATA / "vllm-bench-serve-smollm2-c1.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    return write_multi(tmp_path / "pin.lock")


def test_judge_binds_the_result_to_the_targets_content_hash(multi: Path, tmp_path: Path
                                                             ) -> None:
    out = tmp_path / "result.json"
    res = run("accept", "judge", TEMPLATE, "--from", RAW, "--lock", multi, "--target",
              "candidate", "--unbound-ok", "-o", out)
    assert res.exit_code in (0, 12), res.output  # the gates' verdict, not the lock's
    subject = json.loads(out.read_text())["subject"]
    assert subject["lock-content-hash"] == read_lock(CANDIDATE).content_hash
    assert subject["lock"] == f"{multi} [targets.candidate]"
    other = judge_files(TEMPLATE, [RAW], lock=str(multi), target="current")
    assert other.subject.lock_content_hash == read_lock(CURRENT).content_hash


def test_several_targets_and_none_named_exit_2_naming_them(multi: Path, tmp_path: Path
                                                           ) -> None:
    result = tmp_path / "result.json"
    result.write_text(judge_files(TEMPLATE, [RAW], lock=None).model_dump_json(by_alias=True))
    cases: list[list[str | Path]] = [
        ["accept", "judge", TEMPLATE, "--from", RAW, "--lock", multi],
        ["accept", "run", TEMPLATE, "--lock", multi, "--python", "python3"],
        ["cost", result, "--prices", PRICES, "--lock", multi],
        ["report", "--lock", multi, "-o", tmp_path / "r.md", "--format", "md"]]
    for args in cases:
        res = run(*args)
        assert res.exit_code == 2, (args, res.output)
        assert "2 targets (current, candidate)" in res.output, res.output
        assert "--target" in res.output
    assert not (tmp_path / "r.md").exists()


def test_target_without_a_lock_or_with_a_single_target_lock_is_refused(tmp_path: Path
                                                                       ) -> None:
    no_lock = run("accept", "judge", TEMPLATE, "--from", RAW, "--target", "candidate")
    assert no_lock.exit_code == 2 and "give --lock" in no_lock.output
    report = run("report", "--target", "candidate", "-o", tmp_path / "r.md")
    assert report.exit_code == 2 and "give --lock" in report.output
    single = run("accept", "judge", TEMPLATE, "--from", RAW, "--lock", CURRENT, "--target",
                 "current")
    assert single.exit_code == 2 and "single-target lock" in single.output


def test_cost_prices_the_targets_lock_and_checks_the_binding(multi: Path, tmp_path: Path
                                                             ) -> None:
    bound = tmp_path / "candidate.json"
    bound.write_text(judge_files(TEMPLATE, [RAW], lock=str(multi), target="candidate")
                     .model_dump_json(by_alias=True))
    base: list[str | Path] = ["cost", bound, "--prices", PRICES, "--unbound-ok", "--format",
                              "json", "--lock", multi]
    res = run(*base, "--target", "candidate")
    assert res.exit_code == 0, res.output
    platform = json.loads(res.output)["result"]["platforms"][0]
    assert platform["rate"]["gpu"] == "Instinct MI300X"
    assert platform["rate"]["gpu-from"] == "lock"
    assert platform["lock"] == f"{multi} [targets.candidate]"
    # The other target is another lock: the result names the candidate's content hash.
    other = run(*base, "--target", "current")
    assert other.exit_code == 2, other.output
    assert read_lock(CANDIDATE).content_hash in other.output
    assert f"{multi} [targets.current] has {read_lock(CURRENT).content_hash}" in other.output
    twice = run(*base, "--target", "candidate", "--target", "current")
    assert twice.exit_code == 2 and "once per --lock" in twice.output


def test_report_names_the_target_and_its_stack(multi: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    res = run("report", "--lock", multi, "--target", "candidate", "-o", out, "--format", "md")
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert r"pin.lock \[targets.candidate\] (" + read_lock(CANDIDATE).content_hash in text
    assert "| GPU | Instinct MI300X (gfx942) |" in text
