"""pin cost never says PORT on results that are not evidence about the stacks priced, on
the shipped files (tests/data/acceptance): the example migration's reproduction (the same
CPU files judged for an H100 and an MI300X lock, a made-up MI300X price in a temporary file
only) is INCONCLUSIVE, unbound and one measurement first; files that record nothing leave
the GPU stack unverified (inconclusive, unverified first); the report's headline says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pinning.cli import main
from tests.support.judged_evidence import C1, C4, without_engine
from tests.unit.cost.test_cost_cli import H200_LOCK, MI300X_LOCK, PRICES, TEMPLATE, faster


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def judge(src: list[Path], lock: Path, out: Path) -> Path:
    r = run("accept", "judge", TEMPLATE, "--from", *src, "--lock", lock, "--unbound-ok",
            "-o", out)
    assert r.exit_code == 0, r.output
    return out


def made_up_prices(tmp: Path) -> Path:
    """The article's prices with a made-up MI300X price (a test input, nowhere else)."""
    text = PRICES.read_text().replace(
        'gpu = "MI300X"\nunknown = "none in stock: the article lists no price or provider"',
        'gpu = "MI300X"\nusd-per-gpu-hour = 1.0\nprovider = "made up for a test"', 1)
    assert "made up" in text
    out = tmp / "prices.toml"
    out.write_text(text)
    return out


def cost(tmp: Path, cur: Path, cand: Path, locks: tuple[Path, Path], *extra: str) -> Any:
    return run("cost", cur, cand, "--lock", locks[0], "--lock", locks[1], "--prices",
               made_up_prices(tmp), "--migration-usd", "0", "--tokens-per-month", "1e9",
               "--life-months", "12", *extra)


def test_same_cpu_files_for_two_gpu_locks_are_inconclusive(tmp_path: Path) -> None:
    cur = judge([C1, C4], H200_LOCK, tmp_path / "cur.json")
    cand = judge([C1, C4], MI300X_LOCK, tmp_path / "cand.json")
    report = json.loads(cost(tmp_path, cur, cand, (H200_LOCK, MI300X_LOCK), "--format",
                             "json").output)["result"]
    v = report["verdict"]
    assert v["decision"] == "inconclusive"
    assert [r["code"] for r in v["reasons"]] == ["unbound", "unbound", "same-measurement",
                                                 "pays-back"]
    assert "ran on the CPU, the lock pins Instinct MI300X (amd)" in v["reasons"][1]["text"]
    assert "same sha256" in v["reasons"][2]["text"]
    text = cost(tmp_path, cur, cand, (H200_LOCK, MI300X_LOCK)).output
    assert "Verdict: INCONCLUSIVE" in text and "PORT" not in text.split("Verdict:")[1][:20]
    out = tmp_path / "cost.json"
    assert cost(tmp_path, cur, cand, (H200_LOCK, MI300X_LOCK), "-o", str(out)).exit_code == 0
    md = run("report", "--lock", MI300X_LOCK, "--accept", cur, "--accept", cand, "--cost", out,
             "--format", "md", "-o", tmp_path / "r.md")
    assert md.exit_code == 0, md.output
    page = (tmp_path / "r.md").read_text()
    assert "Verdict: INCONCLUSIVE" in page and "Verdict: PORT" not in page
    assert not re.search(r"bound to its stack\W+yes", page)


def test_files_that_record_nothing_are_unverified_not_port(tmp_path: Path) -> None:
    plain = without_engine(C1, tmp_path / "c1.json")
    faster(plain, tmp_path / "fast.json", 0.8)
    cur = judge([plain], H200_LOCK, tmp_path / "cur.json")
    cand = judge([tmp_path / "fast.json"], H200_LOCK, tmp_path / "cand.json")
    res = cost(tmp_path, cur, cand, (H200_LOCK, H200_LOCK), "--format", "json")
    v = json.loads(res.output)["result"]["verdict"]
    assert v["decision"] == "inconclusive" and v["binding-problems"] == []
    assert [r["code"] for r in v["reasons"]] == ["unverified", "unverified", "pays-back"]
    assert v["reasons"][0]["text"].startswith(
        "the current result ") and "gpu, kernel-driver, runtime: not verified" in \
        v["reasons"][0]["text"]
    text = cost(tmp_path, cur, cand, (H200_LOCK, H200_LOCK)).output
    assert "GPU stack not verified: gpu, kernel-driver, runtime" in text


def test_same_files_without_sha256_are_still_one_measurement(tmp_path: Path) -> None:
    plain = without_engine(C1, tmp_path / "c1.json")
    cur = judge([plain], H200_LOCK, tmp_path / "cur.json")
    cand = judge([plain], H200_LOCK, tmp_path / "cand.json")
    for path in (cur, cand):  # as an older pin wrote them: no source-sha256
        doc = json.loads(path.read_text())
        for p in doc["serve"]["points"]:
            del p["summary"]["source-sha256"]
        path.write_text(json.dumps(doc))
    v = json.loads(cost(tmp_path, cur, cand, (H200_LOCK, H200_LOCK), "--format",
                        "json").output)["result"]["verdict"]
    assert v["decision"] == "inconclusive"
    assert "same-measurement" in [r["code"] for r in v["reasons"]]
    assert any("identical runs (c1.json)" in r["text"] for r in v["reasons"])
