"""``pin sign`` / ``pin verify-image`` with a multi-target lock: ``--target`` chooses the
target; the attestation holds that target's lock (its view rendered as the lock-version 1
document it is, with the target's name and content hash), not the whole file's bytes, so a
change to another target does not void it and the other target does not verify. Against a
small OCI registry on 127.0.0.1 (:mod:`tests.support.oci_registry`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pinning.lockfile.io import parse_lock_bytes, read_lock
from pinning.oci.documents import LOCK_LABEL
from pinning.oci.reference import parse
from pinning.sign.cosign import LOCK_PREDICATE
from pinning.sign.crypto import generate, load_public
from pinning.sign.policy import verify_signed_image
from pinning.util.digests import sha256_hex
from tests.support.cli import pin
from tests.support.multilock_targets import CANDIDATE, CURRENT, write_multi
from tests.support.oci_registry import Store, serve
from tests.unit.sign.images import built_lock, image, recorded

REPO = "pin/trial"
ENV = {**os.environ, "PIN_KEY_PASSWORD": "correct horse"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("keys") / "pin", b"correct horse")


def test_the_attestation_binds_the_targets_lock(keys: tuple[Path, Path], tmp_path: Path
                                                ) -> None:
    key, pub = keys
    store = Store(referrers_api=True)
    with serve(store) as host:
        lock, label = built_lock()
        digest = image(store, REPO, labels={LOCK_LABEL: label})
        ref = f"{host}/{REPO}@{digest}"
        candidate = recorded(lock, ref, digest)
        path = write_multi(tmp_path / "pin.lock", {"current": read_lock(CURRENT),
                                                    "candidate": candidate})
        none = pin("sign", "--key", str(key), "--lock", str(path), env=ENV)
        assert none.returncode == 2 and "current, candidate" in none.stderr, none.stderr
        done = pin("sign", "--key", str(key), "--lock", str(path), "--target", "candidate",
                   env=ENV)
        assert done.returncode == 0, done.stderr
        result = verify_signed_image(parse(ref), load_public(pub))
        attested = [p["lockfile"] for p in result.bundle_attestations[LOCK_PREDICATE]]
        assert len(attested) == 1
        one = attested[0]
        assert (one["name"], one["target"], one["content-hash"]) == (
            "pin.lock [targets.candidate]", "candidate", candidate.content_hash)
        text = one["content"].encode()
        assert one["sha256"] == sha256_hex(text)
        # The attested text is the target's lock, a lock-version 1 document on its own.
        assert parse_lock_bytes(text, label="attested") == candidate
        assert b"[targets." not in text

        ok = pin("verify-image", "--key", str(pub), "--lock", str(path), "--target",
                 "candidate", env=ENV)
        assert ok.returncode == 0, ok.stderr
        assert "attested lockfile is " in ok.stdout and "[targets.candidate]" in ok.stdout
        # Another target changes (locked again): the candidate's attestation still holds.
        write_multi(path, {"current": read_lock(CANDIDATE), "candidate": candidate})
        again = pin("verify-image", "--key", str(pub), "--lock", str(path), "--target",
                    "candidate", env=ENV)
        assert again.returncode == 0, again.stderr
        # The other target is not what was attested.
        other = pin("verify-image", ref, "--key", str(pub), "--lock", str(path), "--target",
                    "current", env=ENV)
        assert other.returncode == 9, other.stderr
        assert "is not" in other.stderr and "[targets.current]" in other.stderr


def test_target_needs_a_lock_and_a_multi_target_one(keys: tuple[Path, Path]) -> None:
    key, pub = keys
    ref = f"127.0.0.1:9/{REPO}@sha256:{'2' * 64}"
    for args in (["sign", ref, "--key", str(key)], ["verify-image", ref, "--key", str(pub)]):
        done = pin(*args, "--target", "candidate", env=ENV)
        assert done.returncode == 2 and "give --lock" in done.stderr, done.stderr
        single = pin(*args, "--lock", str(CURRENT), "--target", "current", env=ENV)
        assert single.returncode == 2 and "single-target lock" in single.stderr
