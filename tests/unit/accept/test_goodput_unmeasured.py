"""Goodput is judged only where pin can count good requests against the gates file's own
SLOs: from per-request data. A file's own ``request_goodput`` counts against SLOs the file
does not record, so without per-request data the check is "not measured" and fails.
Copies of a real ``vllm bench serve`` file (tests/data/acceptance) are edited."""

from __future__ import annotations

import json
from pathlib import Path

from pinning.accept.config import ServeSlo
from pinning.accept.judge import judge_point
from pinning.accept.results import read_results
from tests.support.cli import pin
from tests.support.paths import DATA

C4 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c4.json"
PER_REQUEST = ("ttfts", "itls", "latencies", "output_lens", "errors", "input_lens",
               "start_times", "queue_times", "generated_texts")
TIGHT = {"ttft-p99-ms": 1.0, "goodput-min-rps": 1.0}


def _bare(tmp_path: Path) -> Path:
    """The real c4 file without its per-request arrays."""
    doc = {k: v for k, v in json.loads(C4.read_text()).items() if k not in PER_REQUEST}
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(doc))
    return path


def test_goodput_without_per_request_data_is_not_measured(tmp_path: Path) -> None:
    # The reproduction: a 1 ms TTFT limit; the file's own goodput (4.8 req/s, against
    # vLLM's --goodput ttft:1000 tpot:100) passed goodput-min-rps, true goodput being 0.
    (read,) = read_results(_bare(tmp_path))
    check = next(c for c in judge_point(read, ServeSlo.model_validate(TIGHT)).checks
                 if c.slo == "goodput-min-rps")
    assert not check.passed and check.measured is None and check.basis == "missing"
    assert check.reason.startswith("not measured: no per-request latencies")
    assert "the file's own goodput, 4.80519 req/s" in check.reason
    # A loose TTFT limit does not make the file's own figure count either.
    loose = ServeSlo.model_validate({"ttft-p99-ms": 60000.0, "goodput-min-rps": 0.001})
    assert not judge_point(read, loose).passed


def test_goodput_with_per_request_data_counts_against_the_gates_file(tmp_path: Path) -> None:
    (read,) = read_results(C4)
    check = next(c for c in judge_point(read, ServeSlo.model_validate(TIGHT)).checks
                 if c.slo == "goodput-min-rps")
    assert not check.passed and check.measured == 0.0 and check.basis == "recomputed"
    assert "(0 good of 24 requests)" in check.reason


def test_cli_judge_fails_unmeasured_goodput(tmp_path: Path) -> None:
    cfg = tmp_path / "accept.toml"
    cfg.write_text("[serve]\n[serve.slo]\nttft-p99-ms = 60000\ngoodput-min-rps = 1\n")
    done = pin("accept", "judge", str(cfg), "--from", str(_bare(tmp_path)))
    assert done.returncode == 12, done.stdout + done.stderr
    assert "goodput-min-rps" in done.stderr and "not measured" in done.stdout
    assert pin("accept", "judge", str(cfg), "--from", str(C4)).returncode == 0
