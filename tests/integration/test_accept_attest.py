"""Signed acceptance results on a real registry: a pin-built, pin-signed trial image, an
acceptance result attached as a DSSE attestation, and ``pin verify-image --lock LOCK
--require-acceptance`` accepting exactly a passing result for that lock and image (exit 0)
and refusing the rest (exit 9; 2 without --lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import pytest

from pinning.accept.attest import attach_result
from pinning.accept.result import PREDICATE_TYPE, AcceptanceResult
from pinning.errors import SignatureError
from pinning.lockfile.io import read_lock, write_lock
from pinning.oci.registry import Registry
from pinning.sign.crypto import load_private
from tests.support.cli import json_result
from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock

pytestmark = pytest.mark.docker
PASSPHRASE = "test-passphrase"
REPO = "pin/accepted"


class Trial(TypedDict):
    """The signed trial image and the files the tests use."""

    dir: Path
    lock: Path
    lock_hash: str
    ref: str
    digest: str
    registry: RegistryProc


def pin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], capture_output=True,
                          text=True, timeout=900,
                          env={**os.environ, "PIN_KEY_PASSWORD": PASSPHRASE})


@pytest.fixture(scope="module")
def trial(dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
          tmp_path_factory: pytest.TempPathFactory) -> Trial:
    d = tmp_path_factory.mktemp("accepted")
    assert pin("keygen", "-o", str(d / "pin")).returncode == 0
    assert pin("keygen", "-o", str(d / "other")).returncode == 0
    lock = d / "trial.lock"
    write_lock(small_lock(), lock)
    r = pin("build", str(lock), "--base", base_image.ref, "--registry", registry.url,
            "--repo", REPO, "--wheelhouse", str(WHEELS), "--engine", dockerd.url,
            "--sign", str(d / "pin.key"), "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json_result(r)
    assert out["signed"]
    return {"dir": d, "lock": lock, "lock_hash": read_lock(lock).content_hash,
            "ref": out["ref"], "digest": out["digest"], "registry": registry}


@pytest.fixture
def fresh(trial: Trial) -> Iterator[Trial]:
    """The trial image with its .att manifest as the build left it, before and after."""
    reg = Registry(trial["registry"].url)
    tag = trial["digest"].replace(":", "-") + ".att"
    saved = reg.get_manifest(REPO, tag)
    yield trial
    reg.put_manifest(REPO, tag, saved)


def acceptance(trial: Trial, *, passed: bool = True, lock_hash: str | None = None,
               digest: str | None = None) -> AcceptanceResult:
    return AcceptanceResult.model_validate({
        "pin-version": "0.1.0", "mode": "host", "config-sha256": "c" * 64,
        "started-at": "2026-03-01T09:00:00Z", "finished-at": "2026-03-01T10:00:00Z",
        "subject": {"lock": "trial.lock", "lock-content-hash": lock_hash or trial["lock_hash"],
                    "image": trial["ref"], "image-digest": digest or trial["digest"],
                    "image-digest-kind": "manifest"},
        "train": {"trainer": "tiny-lm", "steps": 20, "runs": [], "passed": passed,
                  "checks": [{"name": "finite-loss", "measured": None, "limit": None,
                              "passed": passed, "reason": "all 20 losses finite" if passed
                              else "loss was NaN at step 3"}]},
        "gates": {"train": passed}, "passed": passed,
        "failed": [] if passed else ["train: finite-loss: loss was NaN at step 3"],
        # A run pin checked against the lock's stack, with no difference (bound).
        "binding": {"checked": "run"}})


def attach(trial: Trial, result: AcceptanceResult, key: str = "pin") -> str:
    private = load_private(trial["dir"] / f"{key}.key", PASSPHRASE.encode())
    return attach_result(result, trial["ref"], private, registry_url=trial["registry"].url)


def verify(trial: Trial, *extra: str) -> subprocess.CompletedProcess[str]:
    return pin("verify-image", trial["ref"], "--key", str(trial["dir"] / "pin.pub"), *extra)


def require(trial: Trial, *extra: str) -> subprocess.CompletedProcess[str]:
    return verify(trial, "--lock", str(trial["lock"]), "--require-acceptance", *extra)


def test_passing_result_for_this_lock_and_image(fresh: Trial) -> None:
    attach(fresh, acceptance(fresh, passed=False))
    attach(fresh, acceptance(fresh))
    r = require(fresh, "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json_result(r)
    assert PREDICATE_TYPE in out["attestations"]
    assert any("passing acceptance result" in c and "gates train passed" in c
               for c in out["checks"]), out["checks"]
    text = require(fresh)
    assert text.returncode == 0 and "✓ passing acceptance result" in text.stdout


def test_unbound_result_only(fresh: Trial) -> None:
    unbound = acceptance(fresh).model_copy(update={"binding": None})
    attach(fresh, unbound)
    r = require(fresh)
    assert r.returncode == 9 and "not bound to the lock's stack" in r.stderr, r.stderr


def test_no_acceptance_result(fresh: Trial) -> None:
    r = require(fresh)
    assert r.returncode == 9 and "No acceptance attestation" in r.stderr
    assert verify(fresh, "--lock", str(fresh["lock"])).returncode == 0


def test_failing_result_only(fresh: Trial) -> None:
    attach(fresh, acceptance(fresh, passed=False))
    r = require(fresh)
    assert r.returncode == 9 and "Only failing" in r.stderr and "finite-loss" in r.stderr


def test_result_for_another_lock(fresh: Trial) -> None:
    attach(fresh, acceptance(fresh, lock_hash="sha256:" + "2" * 64))
    r = require(fresh)
    assert r.returncode == 9 and "other locks" in r.stderr and "sha256:222222222222" in r.stderr


def test_result_signed_by_another_key_does_not_count(fresh: Trial) -> None:
    attach(fresh, acceptance(fresh), key="other")
    r = require(fresh)
    assert r.returncode == 9 and "No acceptance attestation" in r.stderr


def test_result_for_another_image_is_not_attached(fresh: Trial) -> None:
    with pytest.raises(SignatureError, match="the registry serves"):
        attach(fresh, acceptance(fresh, digest="sha256:" + "b" * 64))
    assert require(fresh).returncode == 9


def test_attach_is_idempotent(fresh: Trial) -> None:
    first = attach(fresh, acceptance(fresh))
    assert attach(fresh, acceptance(fresh)) == first


def test_require_acceptance_needs_lock(trial: Trial) -> None:
    r = verify(trial, "--require-acceptance")
    assert r.returncode == 2 and "needs --lock" in r.stderr

