"""Issue 32 §3: acceptance results record the lock's status in their binding (``run`` and
``judge``): ``validated``, ``unconfirmed`` with each reason, or ``not-recorded`` for a lock
written before pin recorded it; ``None`` without a lock. ``pin accept judge`` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pinning.accept.binding import judge_binding, run_binding
from pinning.accept.result import Subject
from pinning.lockfile.io import lock_json, read_lock, seal
from tests.support.cli import pin
from tests.support.paths import DATA, ROOT

UNCONFIRMED = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
VALIDATED = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
RAW = DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json"


def test_run_and_judge_bindings_record_the_status() -> None:
    lock = read_lock(UNCONFIRMED)
    assert lock.status is not None
    reasons = [r.reason for r in lock.status.reasons]
    run = run_binding(lock, None, "not probed (test)", Subject(), None, in_image=False,
                      allowed_unbound=False)
    assert (run.lock_status, run.lock_unconfirmed) == ("unconfirmed", reasons)
    judged = judge_binding(read_lock(VALIDATED), ["vLLM"], allowed_unbound=False)
    assert (judged.lock_status, judged.lock_unconfirmed) == ("validated", [])
    data = lock_json(read_lock(VALIDATED))
    data.pop("status")
    data.pop("content-hash")
    older = judge_binding(seal(data), ["vLLM"], allowed_unbound=False)
    assert older.lock_status == "not-recorded"
    assert judge_binding(None, ["vLLM"], allowed_unbound=False).lock_status is None


def test_judged_result_file_carries_the_status(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = pin("accept", "judge", str(TEMPLATE), "--from", str(RAW), "--lock", str(UNCONFIRMED),
            "--unbound-ok", "-o", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    binding = json.loads(out.read_text())["binding"]
    assert binding["lock-status"] == "unconfirmed" and binding["lock-unconfirmed"]
    assert "lock status: unconfirmed; ROCm 10.0.0" in p.stdout
