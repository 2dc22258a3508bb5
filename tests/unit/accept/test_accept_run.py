"""pin accept run (the serving gate against a local streaming endpoint, the subject of a
result), pin accept show and compare, and a signed result through the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.accept.config import load_config
from pinning.accept.runner import RunRequest, detect_vendor, run_gates, subject_for
from pinning.accept.serve import token_agreement
from pinning.errors import UsageError
from pinning.probe.models import snapshot_hash
from pinning.probe.snapshot import read_snapshot
from tests.support.cli import json_result, pin
from tests.support.paths import ROOT
from tests.support.sse_server import SseConfig, SseServer

LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
KEY_ENV = {"PIN_KEY_PASSWORD": "test-pass"}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with SseServer(SseConfig(delay_s=0.001)) as server:
        yield server.url


def _gates(tmp_path: Path, endpoint: str, slo: str = "ttft-p99-ms = 60000\nfailed-max = 0\n",
           extra: str = "") -> Path:
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "one two three"}\n{"prompt": "four"}\n')
    (tmp_path / "ref.jsonl").write_text(
        '{"prompt": "a", "max_tokens": 3, "text": " the the the"}\n'
        '{"prompt": "b", "max_tokens": 2, "text": " the the"}\n')
    path = tmp_path / "accept.toml"
    path.write_text(f'[serve]\nendpoint = "{endpoint}"\nmodel = "fake"\n'
                    '[serve.workload]\nprompts = "prompts.jsonl"\noutput-tokens = 4\n'
                    'requests = 6\nconcurrency = [1, 3]\nwarmup-requests = 1\n'
                    f"[serve.slo]\n{slo}{extra}")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, **KEY_ENV, "PIN_CACHE_DIR": str(tmp_path / "cache")}


def test_serve_gate_passes_with_quality_and_sustained(tmp_path: Path, endpoint: str) -> None:
    extra = ('[serve.quality]\nreference = "ref.jsonl"\nexact-match-min = 1.0\n'
             "token-agreement-min = 1.0\n"
             "[serve.sustained]\nduration-s = 0.6\nconcurrency = 2\nmax-drop-pct = 100\n")
    out = tmp_path / "result.json"
    done = pin("accept", "run", str(_gates(tmp_path, endpoint, extra=extra)), "-o", str(out),
               "--format", "json", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    result = json_result(done)
    assert json.loads(out.read_text()) == result
    assert result["mode"] == "host" and result["gates"] == {"serve": True}
    serve = result["serve"]
    assert serve["harness"] == "pin-loadgen" and serve["workload"]["concurrency"] == [1, 3]
    assert [p["summary"]["max-concurrency"] for p in serve["points"]] == [1, 3]
    assert all(p["summary"]["completed"] == 6 for p in serve["points"])  # warm-up excluded
    assert serve["quality"]["exact-match-rate"] == 1.0
    assert serve["sustained"]["first-third-tps"] > 0
    assert "serve: concurrency 3" in done.stderr  # progress on standard error
    assert result["subject"]["unknown"]["lock-content-hash"] == "no --lock given"


def test_tightened_slo_and_wrong_reference_fail_for_their_reason(tmp_path: Path,
                                                                  endpoint: str) -> None:
    (tmp_path / "other.jsonl").write_text('{"prompt": "a", "max_tokens": 2, "text": " a b"}\n')
    extra = '[serve.quality]\nreference = "other.jsonl"\nexact-match-min = 1.0\n'
    done = pin("accept", "run", str(_gates(tmp_path, endpoint, slo="ttft-p99-ms = 0.0001\n",
                                           extra=extra)), env=_env(tmp_path))
    assert done.returncode == 12
    assert "ttft-p99-ms" in done.stderr and "(limit)" in done.stdout
    assert "quality: exact-match-min" in done.stderr
    assert "serves: NO" in done.stdout


def test_refused_endpoint_is_a_usage_error(tmp_path: Path) -> None:
    from tests.support.components import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    done = pin("accept", "run", str(_gates(tmp_path, url)), env=_env(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert url in done.stderr


def test_failed_requests_say_why(tmp_path: Path) -> None:
    with SseServer(SseConfig(fail_every=1)) as server:
        done = pin("accept", "run", str(_gates(tmp_path, server.url)), "--format", "json",
                   env=_env(tmp_path))
    assert done.returncode == 12
    check = next(c for c in json_result(done)["serve"]["points"][0]["checks"]
                 if c["slo"] == "failed-max")
    assert "errors: 6x" in check["reason"] and "500" in check["reason"]


def test_subject_records_lock_snapshot_and_model(tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    assert pin("probe", "--root", str(ROOT / "tests/data/hosts/h200-cuda13/root"), "--replay",
               str(ROOT / "tests/data/hosts/h200-cuda13/commands.toml"), "-o",
               str(snap)).returncode == 0
    subject = subject_for(RunRequest(config=tmp_path / "x.toml", lock=str(LOCK),
                                     snapshot=str(snap)))
    from pinning.lockfile.io import read_lock

    assert subject.lock_content_hash == read_lock(LOCK).content_hash
    assert subject.host_snapshot_hash == snapshot_hash(read_snapshot(snap))
    assert "image-digest" in subject.unknown and subject.image_digest is None


def test_detect_vendor_reads_device_nodes(tmp_path: Path) -> None:
    assert detect_vendor(tmp_path) == "cpu"
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()
    assert detect_vendor(tmp_path) == "nvidia"
    (tmp_path / "dev" / "kfd").touch()
    assert detect_vendor(tmp_path) == "amd"


def test_gate_selection_and_missing_python(tmp_path: Path, endpoint: str) -> None:
    path = _gates(tmp_path, endpoint, extra='[train]\nbuiltin = "tiny-lm"\nsteps = 4\n')
    with pytest.raises(UsageError, match="need --python"):
        run_gates(RunRequest(config=path, snapshot=None))
    result = run_gates(RunRequest(config=path, gates=("serve",)))
    assert result.gates == {"serve": True} and result.train is None


def test_token_agreement() -> None:
    assert token_agreement([], []) == 1.0
    assert token_agreement(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert token_agreement(["a", "b", "c", "d"], ["a", "x", "c"]) == 0.5
    assert token_agreement(["a"], []) == 0.0


def test_score_file_check(tmp_path: Path, endpoint: str) -> None:
    (tmp_path / "lm-eval.json").write_text(json.dumps(
        {"results": {"gsm8k": {"exact_match,strict-match": 0.92}}}))
    extra = ('[serve.quality]\nscore-file = "lm-eval.json"\nscore-task = "gsm8k"\n'
             'score-metric = "exact_match,strict-match"\nscore-min = 0.95\n')
    done = pin("accept", "run", str(_gates(tmp_path, endpoint, extra=extra)), "--format",
               "json", env=_env(tmp_path))
    assert done.returncode == 12
    quality = json_result(done)["serve"]["quality"]
    assert quality["score"] == 0.92 and quality["checks"][0]["passed"] is False
    bad = extra.replace('"gsm8k"\n', '"mmlu"\n')
    done = pin("accept", "run", str(_gates(tmp_path, endpoint, extra=bad)), env=_env(tmp_path))
    assert done.returncode == 2 and "results.mmlu.exact_match,strict-match" in done.stderr


def test_show_compare_and_signed_result(tmp_path: Path, endpoint: str) -> None:
    env = _env(tmp_path)
    assert pin("keygen", "-o", str(tmp_path / "k"), env=env).returncode == 0
    assert pin("keygen", "-o", str(tmp_path / "other"), env=env).returncode == 0
    gates = _gates(tmp_path, endpoint)
    signed = tmp_path / "signed.json"
    # This CPU host is not the H200 the lock pins: the result is kept only as unbound.
    done = pin("accept", "run", str(gates), "--lock", str(LOCK), "-o", str(signed),
               "--sign", str(tmp_path / "k.key"), "--unbound-ok", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("UNBOUND: gpu: ran on the CPU")
    assert json.loads(signed.read_text())["payloadType"] == "application/vnd.in-toto+json"
    shown = pin("accept", "show", str(signed), "--key", str(tmp_path / "k.pub"), "--format",
                "json", env=env)
    assert shown.returncode == 0, shown.stderr
    body = json_result(shown)
    assert body["signature-verified"] is True and body["result"]["passed"] is True
    assert body["result"]["subject"]["lock"] == str(LOCK)
    assert body["result"]["binding"]["allowed-unbound"] is True  # signed with the result
    wrong = pin("accept", "show", str(signed), "--key", str(tmp_path / "other.pub"), env=env)
    assert wrong.returncode == 9 and "Traceback" not in wrong.stderr
    tampered = json.loads(signed.read_text())
    tampered["payload"] = tampered["payload"][:-8] + "AAAAAAA="
    (tmp_path / "t.json").write_text(json.dumps(tampered))
    assert pin("accept", "show", str(tmp_path / "t.json"), "--key",
               str(tmp_path / "k.pub"), env=env).returncode in (2, 9)

    plain = tmp_path / "slow.json"
    tight = _gates(tmp_path, endpoint, slo="ttft-p99-ms = 0.0001\n")
    assert pin("accept", "run", str(tight), "-o", str(plain), env=env).returncode == 12
    text = pin("accept", "show", str(plain), env=env)
    assert text.returncode == 0 and "FAIL" in text.stdout and "ttft-p99-ms" in text.stdout
    cmp = pin("accept", "compare", str(signed), str(plain), "--format", "json", env=env)
    assert cmp.returncode == 0, cmp.stderr
    table = json_result(cmp)
    assert table["gates"]["serve"] == {"a": True, "b": False}
    rows = {r["metric"]: r for r in table["rows"]}
    assert rows["c1 ttft p99"]["a"] is not None and rows["c1 ttft p99"]["b"] is not None
    assert "c3 output-tokens" in rows
    human = pin("accept", "compare", str(signed), str(plain), env=env)
    assert human.returncode == 0 and "B-A" in human.stdout
    not_result = tmp_path / "nope.json"
    not_result.write_text('{"a": 1}')
    done = pin("accept", "show", str(not_result), env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_template_serving_keys_load() -> None:
    cfg = load_config(ROOT / "pinning" / "accept" / "template.toml")
    assert cfg.serve is not None and cfg.serve.sustained is not None
    assert cfg.serve.quality is not None and cfg.serve.quality.exact_match_min == 1.0


def test_reference_records_greedy_outputs_the_quality_gate_then_passes(
        tmp_path: Path, endpoint: str) -> None:
    gates = _gates(tmp_path, endpoint)
    ref = tmp_path / "recorded.jsonl"
    done = pin("accept", "reference", str(gates), "--prompts", str(tmp_path / "prompts.jsonl"),
               "-o", str(ref), env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in ref.read_text().splitlines()]
    assert [x["prompt"] for x in lines] == ["one two three", "four"]
    assert lines[0]["text"] == " the" * 4 and lines[0]["max_tokens"] == 4
    gates.write_text(gates.read_text() + f'[serve.quality]\nreference = "{ref}"\n'
                     "exact-match-min = 1.0\n")
    assert pin("accept", "run", str(gates), env=_env(tmp_path)).returncode == 0
    refused = pin("accept", "reference", str(gates), "-o", str(gates), env=_env(tmp_path))
    assert refused.returncode == 2
    assert f"is one of the inputs of pin accept reference: ACCEPT.TOML {gates}" in refused.stderr
    with SseServer(SseConfig(fail_every=1)) as bad:
        failing = _gates(tmp_path, bad.url)
        done = pin("accept", "reference", str(failing), "-o", str(tmp_path / "x.jsonl"),
                   env=_env(tmp_path))
    assert done.returncode == 2 and "must be complete" in done.stderr
    assert not (tmp_path / "x.jsonl").exists()
