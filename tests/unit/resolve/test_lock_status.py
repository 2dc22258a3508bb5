"""Issue 32 §3 reproductions: a lock whose GPU target no source confirms (ROCm 10.0.0 names
gfx942 only through vLLM's row) is written ``unconfirmed`` with the reason and the source that
would settle it, said on the first line of ``pin resolve``; ``--require-validated`` refuses it
(exit 4, nothing written); a validated stack is written ``validated``. The resolver's
unconfirmed reasons (a restriction past its source's last release too) become
``[status]`` reasons one for one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pinning.lockfile.io import read_lock
from pinning.lockfile.status import StatusReason
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import Constraints, parse_framework
from pinning.resolve.resolver import resolve
from pinning.resolve.to_lock import lock_from_resolution
from tests.support.cli import pin

MI300X_2_13 = ("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0")
H200_2_13 = ("resolve", "--gpu", "h200", "--framework", "pytorch==2.13.0")


def test_rocm_10_target_known_only_through_vllm_is_unconfirmed(tmp_path: Path) -> None:
    out = tmp_path / "a.lock"
    p = pin(*MI300X_2_13, "-o", str(out))
    assert p.returncode == 0, p.stderr
    status = read_lock(out).status
    assert status is not None and status.value == "unconfirmed"
    [reason] = status.reasons
    assert "ROCm 10.0.0" in reason.reason and "GPU targets pytorch" in reason.reason
    assert "gfx942" in reason.reason
    assert "compatibility matrix" in reason.settled_by and "10.0.0" in reason.settled_by
    first = p.stdout.splitlines()[0]
    assert first.startswith("Status: unconfirmed: 1 thing no source confirms")
    assert "Warning:" not in p.stderr  # said once, at the top, not as a warning that scrolls


def test_require_validated_refuses_unconfirmed_with_exit_4(tmp_path: Path) -> None:
    out = tmp_path / "a.lock"
    p = pin(*MI300X_2_13, "--require-validated", "-o", str(out))
    assert p.returncode == 4, p.stdout + p.stderr
    assert not out.exists()
    assert "unconfirmed" in p.stderr and "GPU targets pytorch" in p.stderr
    assert "settled by:" in p.stderr
    dry = pin(*MI300X_2_13, "--require-validated", "-o", "-")
    assert dry.returncode == 4 and dry.stdout == ""


def test_require_validated_writes_a_validated_lock(tmp_path: Path) -> None:
    out = tmp_path / "h.lock"
    p = pin(*H200_2_13, "--require-validated", "-o", str(out))
    assert p.returncode == 0, p.stderr
    status = read_lock(out).status
    assert status is not None and status.value == "validated" and status.reasons == []
    assert p.stdout.splitlines()[0].startswith("Status: validated")


def test_stdout_lock_says_the_status_first_on_stderr() -> None:
    p = pin(*MI300X_2_13, "-o", "-")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[0].startswith("Status: unconfirmed")
    assert '[status]\nvalue = "unconfirmed"' in p.stdout


def test_every_resolver_reason_becomes_a_status_reason(matrix: Matrix) -> None:
    """A restriction past its source's last release reaches the lock as it left the
    resolver: reason text and the source that would settle it, in order.
    """
    c = Constraints(gpu="h200", frameworks=(parse_framework("pytorch==2.13.0",
                                                             matrix.framework_names()),))
    res = resolve(matrix, c)
    assert res.status.value == "validated" and res.warnings == []
    extra = [StatusReason(reason="ROCm 6.4.3: AMD's per-GPU OS restriction is stated for "
                                 "ROCm 6.1.1 to 6.3.3; whether it still applies is unknown.",
                          settled_by="AMD's system requirements for ROCm 6.4.3"),
             StatusReason(reason="second", settled_by="another source")]
    lock = lock_from_resolution(dataclasses.replace(res, unconfirmed=extra), matrix)
    assert lock.status is not None and lock.status.value == "unconfirmed"
    assert list(lock.status.reasons) == extra
    assert lock.warnings == []


def test_restriction_past_its_source_is_an_unconfirmed_reason(matrix: Matrix) -> None:
    """MI250X + PyTorch 2.6 on ROCm < 7 resolves to 6.4.3: the per-GPU OS restriction of the
    2025-03-21 page copy stops at 6.3.3, and no source pin holds speaks for 6.4.3.
    """
    from pinning.resolve.constraints import parse_runtime_spec

    c = Constraints(gpu="mi250x", frameworks=(parse_framework("pytorch==2.6",
                                                              matrix.framework_names()),),
                    rocm=parse_runtime_spec("--rocm", "<7"))
    res = resolve(matrix, c)
    lock = lock_from_resolution(res, matrix)
    assert lock.status is not None and lock.status.value == "unconfirmed"
    texts = [(r.reason, r.settled_by) for r in lock.status.reasons]
    assert any("per-GPU OS restriction" in why and f"ROCm {res.runtime_version}" in why
               and "system requirements" in by and f"ROCm {res.runtime_version}" in by
               for why, by in texts), texts
