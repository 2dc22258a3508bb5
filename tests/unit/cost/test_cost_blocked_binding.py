"""Issue 30 §2 and §4 reproduced on real files: blocked audit items are priced or waived, not
absolute (the same dollars give the same verdict by ``--migration AUDIT`` and by
``--migration-usd``), and a result is priced only against the lock it names.

The results are ``pin accept judge`` of vLLM's own benchmark file
(tests/data/acceptance/vllm-bench-serve-smollm2-c1.json) and the same file with every time x
0.8 (test_cost_cli.faster); the audit is ``pin audit examples/cuda-project --gpu mi300x``
(one blocked item: inline PTX).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pinning.accept.runner import judge_files
from pinning.cli import main
from tests.support.judged_evidence import as_verified
from tests.unit.cost.test_cost_cli import DATA, H200_LOCK, MI300X_LOCK, PRICES, TEMPLATE, faster

ROOT = Path(__file__).parents[3]
# Every finding kind of examples/cuda-project's audit, priced at 0 hours.
_KINDS = ("package", "index", "base-image", "arch-list", "cuda-api", "warp-size", "arch-macro",
          "library", "build-hook", "nvml", "nvidia-smi", "tf32")


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if both results were bound to their lock and pin had verified their GPU stack
    (the judged CPU files are neither): for the tests of the money."""
    monkeypatch.setattr("pinning.cost.verdict.binding_problems", lambda result: [])
    monkeypatch.setattr("pinning.cost.verdict.unverified", lambda result: [])


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two results judged with the H200 lock: the vLLM run and the same run 25% faster."""
    raw = DATA / "vllm-bench-serve-smollm2-c1.json"
    cur = tmp_path / "current.json"
    cur.write_text(judge_files(TEMPLATE, [raw], lock=str(H200_LOCK)).model_dump_json(
        by_alias=True))
    faster(raw, tmp_path / "fast.json", 0.8)
    cand = tmp_path / "candidate.json"
    cand.write_text(judge_files(TEMPLATE, [tmp_path / "fast.json"], lock=str(H200_LOCK)
                                ).model_dump_json(by_alias=True))
    return cur, cand


@pytest.fixture
def audit(tmp_path: Path) -> tuple[Path, str]:
    """The audit of examples/cuda-project for MI300X, and the id of its blocked finding."""
    out = tmp_path / "audit.json"
    res = run("audit", ROOT / "examples" / "cuda-project", "--gpu", "mi300x",
              "--no-hipify-perl", "--format", "json", "-o", out)
    assert res.exit_code == 11, res.output  # a blocked item
    [blocked] = [f for f in json.loads(out.read_text())["findings"]
                 if f["verdict"] == "blocked"]
    return out, f"{blocked['rule']}: {blocked['subject']} ({blocked['path']}:{blocked['line']})"


def _cost(cur: Path, cand: Path, *extra: str | Path) -> dict[str, Any]:
    res = run("cost", cur, cand, "--prices", PRICES, "--lock", H200_LOCK, "--lock", H200_LOCK,
              "--tokens-per-month", "1e9", "--life-months", "12", "--format", "json", *extra)
    assert res.exit_code == 0, res.output
    report: dict[str, Any] = json.loads(res.output)["result"]
    return report


@pytest.mark.parametrize("usd", [100.0, 50_000.0])  # pays back; does not within 12 months
def test_blocked_priced_at_x_gives_the_verdict_of_migration_usd_x(
        bound: None, pair: tuple[Path, Path], audit: tuple[Path, str], tmp_path: Path,
        usd: float) -> None:
    (cur, cand), (audit_json, blocked) = pair, audit
    given = _cost(cur, cand, "--migration-usd", str(usd))
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\n" + "".join(f"{k} = 0\n" for k in _KINDS)
                      + f"inline-ptx = {{ blocked = {usd} }}\n")
    by_effort = _cost(cur, cand, "--migration", audit_json, "--effort", effort,
                      "--labour-usd-per-hour", "1")
    effort.write_text("[hours]\n" + "".join(f"{k} = 0\n" for k in _KINDS))
    waivers = tmp_path / "waivers.toml"
    waivers.write_text(f'[[price]]\nfinding = "{blocked}"\nusd = {usd}\n'
                       'reason = "rewrite the reduction without PTX"\nby = "kernels team"\n'
                       "date = 2026-12-01\n")
    by_row = _cost(cur, cand, "--migration", audit_json, "--effort", effort,
                   "--labour-usd-per-hour", "1", "--waivers", waivers)
    decisions = {r["verdict"]["decision"] for r in (given, by_effort, by_row)}
    assert decisions == ({"port"} if usd == 100.0 else {"stay"})
    assert given["payback"]["months"] == by_effort["payback"]["months"] \
        == by_row["payback"]["months"]
    for report, how in ((by_effort, "effort"), (by_row, "waivers")):
        [priced] = report["verdict"]["blocked-priced"]
        assert (priced["finding"], priced["usd"], priced["priced-by"]) == (blocked, usd, how)
        assert report["payback"]["migration"]["blocked-unpriced"] == []
    assert by_row["verdict"]["blocked-priced"][0]["by"] == "kernels team"


def test_unpriced_blocked_item_is_still_a_reason_to_stay(
        bound: None, pair: tuple[Path, Path], audit: tuple[Path, str], tmp_path: Path) -> None:
    (cur, cand), (audit_json, blocked) = pair, audit
    report = _cost(cur, cand, "--migration", audit_json, "--migration-usd", "100")
    [reason] = report["verdict"]["reasons"]
    assert report["verdict"]["decision"] == "stay" and reason["code"] == "audit-blocked"
    assert blocked in reason["text"] and "neither priced nor waived" in reason["text"]
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\n" + "".join(f"{k} = 0\n" for k in _KINDS))
    report = _cost(cur, cand, "--migration", audit_json, "--effort", effort,
                   "--labour-usd-per-hour", "1")
    codes = [r["code"] for r in report["verdict"]["reasons"]]
    assert codes == ["audit-blocked", "cost-unknown"]  # never free: its hours are unknown
    assert report["payback"]["migration"]["usd"] is None


def test_waived_blocked_item_is_shown_in_the_verdict(
        bound: None, pair: tuple[Path, Path], audit: tuple[Path, str], tmp_path: Path) -> None:
    (cur, cand), (audit_json, blocked) = pair, audit
    waivers = tmp_path / "waivers.toml"
    waivers.write_text(f'[[waiver]]\nfinding = "{blocked}"\nreason = "only the CUDA build '
                       'uses this kernel"\nby = "A. Maintainer"\ndate = 2026-12-01\n')
    args: list[str | Path] = ["cost", cur, cand, "--prices", PRICES, "--lock", H200_LOCK,
                              "--lock", H200_LOCK, "--migration", audit_json,
                              "--migration-usd", "100", "--waivers", waivers,
                              "--tokens-per-month", "1e9", "--life-months", "12"]
    report = json.loads(run(*args, "--format", "json").output)["result"]
    assert report["verdict"]["decision"] == "port"
    [waived] = report["verdict"]["blocked-waived"]
    assert (waived["finding"], waived["by"], waived["date"]) == (blocked, "A. Maintainer",
                                                                  "2026-12-01")
    assert "waived (1)" in report["verdict"]["reasons"][0]["text"]
    text = run(*args).output
    assert f"blocked, waived: {blocked}: only the CUDA build uses this kernel" in text


@pytest.mark.parametrize(("body", "words"), [
    ('[[waiver]]\nfinding = "x"\nby = "me"\ndate = 2026-12-01\n', "line 1: [[waiver]] 1"),
    ('[[waiver]]\nfinding = "x"\nreason = "r"\nby = "me"\ndate = "soon"\n',
     "line 5: [[waiver]] 1 date"),
    ('[[price]]\nfinding = "x"\nusd = 1\nhours = 2\nreason = "r"\nby = "me"\n'
     "date = 2026-12-01\n", "give either usd or hours"),
    ('[[waiver]]\nfinding = "nothing blocked"\nreason = "r"\nby = "me"\ndate = 2026-12-01\n',
     "is not a blocked finding of the audit"),
    ("[[waiver]\n", "not valid TOML"),
])
def test_bad_waivers_file_exits_2_naming_where(pair: tuple[Path, Path],
                                                audit: tuple[Path, str], tmp_path: Path,
                                                body: str, words: str) -> None:
    (cur, cand), (audit_json, _) = pair, audit
    waivers = tmp_path / "waivers.toml"
    waivers.write_text(body)
    res = run("cost", cur, cand, "--prices", PRICES, "--lock", H200_LOCK, "--lock", H200_LOCK,
              "--migration", audit_json, "--migration-usd", "1", "--waivers", waivers)
    assert res.exit_code == 2 and words in res.output and "waivers.toml" in res.output, \
        res.output


def test_waivers_need_an_audit(pair: tuple[Path, Path], tmp_path: Path) -> None:
    cur, cand = pair
    (tmp_path / "w.toml").write_text("")
    res = run("cost", cur, cand, "--prices", PRICES, "--lock", H200_LOCK, "--lock", H200_LOCK,
              "--migration-usd", "1", "--waivers", tmp_path / "w.toml")
    assert res.exit_code == 2 and "give the audit with --migration" in res.output


def test_result_naming_no_lock_is_not_priced_with_any_lock() -> None:
    c1 = DATA / "judged-c1.json"  # judged without --lock
    res = run("cost", c1, "--lock", H200_LOCK, "--prices", PRICES)
    assert res.exit_code == 2 and "names no lock" in res.output and "--unbound-ok" in res.output
    res = run("cost", c1, "--lock", H200_LOCK, "--prices", PRICES, "--unbound-ok",
              "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)["result"]
    assert "names no lock" in report["platforms"][0]["binding-problems"]
    assert any("because of --unbound-ok" in c for c in report["caveats"])


def test_result_whose_lock_hash_was_deleted_is_refused(pair: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    cur, _ = pair
    doc = json.loads(cur.read_text())
    doc["subject"]["lock-content-hash"] = None
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    res = run("cost", edited, "--lock", MI300X_LOCK, "--prices", PRICES)
    assert res.exit_code == 2 and "names no lock" in res.output


def test_result_priced_against_another_lock_names_both_hashes(pair: tuple[Path, Path]) -> None:
    cur, _ = pair
    recorded = json.loads(cur.read_text())["subject"]["lock-content-hash"]
    res = run("cost", cur, "--lock", MI300X_LOCK, "--prices", PRICES, "--unbound-ok")
    assert res.exit_code == 2 and recorded in res.output and "--lock" in res.output
    res = run("cost", cur, "--gpu", "H100", "--prices", PRICES)  # not the lock it names
    assert res.exit_code == 2 and recorded in res.output


def _unbound(path: Path, difference: str | None) -> None:
    """``path`` as an older pin wrote it (no binding), or with one binding difference."""
    doc = json.loads(path.read_text())
    if difference is None:
        doc.pop("binding", None)
    else:
        doc["binding"]["differences"] = [difference]
    path.write_text(json.dumps(doc))


def test_unbound_results_never_give_port(pair: tuple[Path, Path]) -> None:
    cur, cand = pair
    # The judged CPU runs are unbound to the H200 lock; as if pin had verified them: port.
    as_verified(cur), as_verified(cand)
    assert _cost(cur, cand, "--migration-usd", "100")["verdict"]["decision"] == "port"
    _unbound(cur, None)  # binding not checked: written before pin recorded one
    _unbound(cand, "gpu: ran on the CPU (no GPU found), the lock pins H200")
    report = _cost(cur, cand, "--migration-usd", "100")
    v = report["verdict"]
    assert v["decision"] == "inconclusive"
    assert [r["code"] for r in v["reasons"]] == ["unbound", "unbound", "pays-back"]
    assert any("binding not checked" in x for x in v["binding-problems"])
    assert any("ran on the CPU" in x for x in v["binding-problems"])
    text = run("cost", cur, cand, "--prices", PRICES, "--lock", H200_LOCK, "--lock", H200_LOCK,
               "--migration-usd", "100", "--tokens-per-month", "1e9", "--life-months", "12")
    assert "Verdict: INCONCLUSIVE" in text.output and "not bound to its lock" in text.output
