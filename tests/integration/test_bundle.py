"""Sigstore bundles (v0.3) against the real distribution registry (Debian docker-registry 2.8,
which has no referrers API): ``pin sign --lock`` writes them through the referrers tag schema
(an OCI index under ``sha256-<hex>``), ``pin verify-image --lock`` verifies them, the bundles
read back are verified by sigstore-python's code, and every tamper case is exit 9 with its
reason. The same over HTTPS with a registry CA (``--ca-cert``) and a login."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.image.plan import expected_label
from pinning.lockfile.io import write_lock
from pinning.oci.documents import LOCK_LABEL, epoch_iso, image_docs
from pinning.oci.registry import MEDIA_INDEX, Registry
from pinning.sign.bundle import (
    BUNDLE_MEDIA,
    SIGN_PREDICATE,
    index_entry,
    key_hint,
    make_bundle,
    referrers_tag,
)
from pinning.sign.cosign import LOCK_PREDICATE, SLSA_PREDICATE, statement
from pinning.sign.crypto import load_private, load_public
from pinning.util.digests import canonical_json, sha256_digest
from tests.support.cli import json_result
from tests.support.components import RegistryProc, start_registry
from tests.unit.sign.images import EPOCH, built_lock, recorded
from tests.unit.sign.test_bundle_sigstore import independently_verified

pytestmark = pytest.mark.docker
PASSWORD = "test-passphrase"


def pin(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PIN_KEY_PASSWORD": PASSWORD, **(env or {})})


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bundle-keys")
    for name in ("pin", "other"):
        assert pin("keygen", "-o", str(d / name)).returncode == 0
    return d


class Trial:
    """A small labelled image pushed to ``repo`` and the lock that records it."""

    def __init__(self, reg: Registry, host: str, repo: str, lock_dir: Path) -> None:
        lock, label = built_lock()
        docs = image_docs([], epoch=EPOCH, labels={LOCK_LABEL: label})
        reg.put_blob(repo, docs.config)
        self.digest = reg.put_manifest(repo, "trial", docs.manifest)
        self.repo, self.reg = repo, reg
        self.ref = f"{host}/{repo}@{self.digest}"
        self.lock = lock_dir / f"{repo.replace('/', '-')}.lock"
        write_lock(recorded(lock, self.ref, self.digest), self.lock)
        assert expected_label(recorded(lock, self.ref, self.digest)) == label

    def index(self) -> dict[str, Any]:
        raw = self.reg.get_manifest(self.repo, referrers_tag(self.digest), accept=(MEDIA_INDEX,))
        doc: dict[str, Any] = json.loads(raw)
        return doc

    def bundle_of(self, referrer: str) -> bytes:
        doc = json.loads(self.reg.get_manifest(self.repo, referrer))
        return self.reg.get_blob(self.repo, doc["layers"][0]["digest"])


@pytest.fixture
def trial(registry: RegistryProc, tmp_path: Path, request: pytest.FixtureRequest) -> Trial:
    repo = "bundle/" + request.node.name.lower().replace("_", "-")[:60]
    return Trial(Registry(registry.url), registry.host, repo, tmp_path)


def sign(trial: Trial, keys: Path, key: str = "pin", *extra: str) -> dict[str, Any]:
    done = pin("sign", "--key", str(keys / f"{key}.key"), "--lock", str(trial.lock),
               "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json_result(done)
    return out


def verify(trial: Trial, keys: Path, key: str = "pin") -> subprocess.CompletedProcess[str]:
    return pin("verify-image", "--key", str(keys / f"{key}.pub"), "--lock", str(trial.lock),
               "--format", "json")


def test_sign_and_verify_by_lock_through_the_tag_index(trial: Trial, keys: Path) -> None:
    out = sign(trial, keys)
    assert out["image"] == trial.ref and len(out["bundles"]) == 3
    assert out["bundle_source"] == f"tag {referrers_tag(trial.digest)}"
    index = trial.index()
    assert index["mediaType"] == MEDIA_INDEX
    assert [m["digest"] for m in index["manifests"]] == out["bundles"]
    predicates = []
    for entry in index["manifests"]:
        assert entry["artifactType"] == BUNDLE_MEDIA
        manifest = json.loads(trial.reg.get_manifest(trial.repo, entry["digest"]))
        assert manifest["subject"]["digest"] == trial.digest
        assert manifest["annotations"]["org.opencontainers.image.created"] == epoch_iso(EPOCH)
        assert entry["annotations"] == manifest["annotations"]
        predicates.append(manifest["annotations"]["dev.sigstore.bundle.predicateType"])
    assert predicates == [SIGN_PREDICATE, LOCK_PREDICATE, SLSA_PREDICATE]
    done = verify(trial, keys)
    assert done.returncode == 0, done.stderr
    result = json_result(done)
    assert (result["signatures"], result["bundles"]) == (1, 3)
    assert result["bundle_predicates"] == sorted(predicates)
    # Signing again with the same key adds nothing; another key appends, entries are kept.
    assert sign(trial, keys)["bundles"] == out["bundles"]
    other = sign(trial, keys, "other")
    assert [m["digest"] for m in trial.index()["manifests"]] == out["bundles"] + other["bundles"]
    for key in ("pin", "other"):
        done = verify(trial, keys, key)
        assert done.returncode == 0, done.stderr
        assert json_result(done)["bundles"] == 3


def test_pins_bundles_from_the_registry_verify_with_sigstore_python(trial: Trial,
                                                                    keys: Path) -> None:
    out = sign(trial, keys)
    pub = load_public(keys / "pin.pub")
    for referrer in out["bundles"]:
        hint, stmt = independently_verified(trial.bundle_of(referrer), pub)
        assert hint == key_hint(pub)
        assert [s.digest.root for s in stmt.subjects] == [
            {"sha256": trial.digest.removeprefix("sha256:")}]


def _repoint(trial: Trial, old: str, bundle: bytes) -> str:
    """Put ``bundle`` in a copy of referrer ``old`` and list the copy in its place."""
    doc = json.loads(trial.reg.get_manifest(trial.repo, old))
    trial.reg.put_blob(trial.repo, bundle)
    doc["layers"][0].update(digest=sha256_digest(bundle), size=len(bundle))
    raw = canonical_json(doc)
    new = trial.reg.put_manifest(trial.repo, sha256_digest(raw), raw)
    index = trial.index()
    index["manifests"] = [index_entry(raw) if m["digest"] == old else m
                          for m in index["manifests"]]
    trial.reg.put_manifest(trial.repo, referrers_tag(trial.digest), canonical_json(index),
                           MEDIA_INDEX)
    return new


def _refused(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 9, done.stderr
    assert "Sigstore bundle check failed" in done.stderr and reason in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_edited_bundle(trial: Trial, keys: Path) -> None:
    first = sign(trial, keys)["bundles"][0]
    doc = json.loads(trial.bundle_of(first))
    body = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    body["predicate"] = {"edited": True}
    doc["dsseEnvelope"]["payload"] = base64.b64encode(canonical_json(body)).decode()
    _repoint(trial, first, canonical_json(doc))
    _refused(verify(trial, keys), "No signature of the DSSE envelope verifies with this key")


def test_bundle_by_another_key_claiming_this_keys_hint(trial: Trial, keys: Path) -> None:
    first = sign(trial, keys)["bundles"][0]
    other = load_private(keys / "other.key", PASSWORD.encode())
    doc = json.loads(make_bundle(other, statement(trial.digest, trial.ref.split("@")[0],
                                                  SIGN_PREDICATE, {})))
    doc["verificationMaterial"]["publicKey"]["hint"] = key_hint(load_public(keys / "pin.pub"))
    _repoint(trial, first, canonical_json(doc))
    _refused(verify(trial, keys), "No signature of the DSSE envelope verifies with this key")


def test_bundles_of_another_image(registry: RegistryProc, trial: Trial, keys: Path) -> None:
    sign(trial, keys)
    # Another image in the same repository, whose tag index is a copy of the trial's.
    docs = image_docs([], epoch=EPOCH, labels={"other": "image"})
    trial.reg.put_blob(trial.repo, docs.config)
    other = trial.reg.put_manifest(trial.repo, "other", docs.manifest)
    trial.reg.put_manifest(trial.repo, referrers_tag(other),
                           canonical_json(trial.index()), MEDIA_INDEX)
    done = pin("verify-image", f"{registry.host}/{trial.repo}@{other}", "--key",
               str(keys / "pin.pub"))
    assert done.returncode == 9, done.stderr
    # The legacy signature is checked first: this image has none.
    assert "No signature for this digest" in done.stderr
    # With a legacy signature of its own, the foreign bundles are what fails.
    assert pin("sign", f"{registry.host}/{trial.repo}@{other}", "--key",
               str(keys / "pin.key")).returncode == 0
    done = pin("verify-image", f"{registry.host}/{trial.repo}@{other}", "--key",
               str(keys / "pin.pub"))
    _refused(done, f"is attached to {trial.digest}, not {other}")


def test_index_pointing_at_a_deleted_manifest(registry: RegistryProc, trial: Trial,
                                              keys: Path) -> None:
    import requests

    gone = sign(trial, keys)["bundles"][0]
    # The test registry allows deletes; the tag index still lists the deleted manifest.
    answer = requests.delete(f"{registry.url}/v2/{trial.repo}/manifests/{gone}", timeout=30)
    assert answer.status_code == 202, answer.text
    _refused(verify(trial, keys), f"the index lists manifest {gone}, which cannot be read")


def test_wrong_key(trial: Trial, keys: Path) -> None:
    sign(trial, keys)
    done = verify(trial, keys, "other")
    assert done.returncode == 9 and "does not verify" in done.stderr


@pytest.fixture(scope="module")
def tls_registry() -> Iterator[RegistryProc]:
    try:
        reg = start_registry(auth=("pin", "secret"), tls=True)
    except RuntimeError as exc:
        if os.environ.get("PIN_REQUIRE_DOCKER") == "1":
            pytest.fail(f"PIN_REQUIRE_DOCKER=1 but {exc}")
        pytest.skip(str(exc))
    try:
        yield reg
    finally:
        reg.stop()


def test_sign_and_verify_over_tls_with_ca_cert_and_login(tls_registry: RegistryProc,
                                                         keys: Path, tmp_path: Path) -> None:
    assert tls_registry.ca is not None
    config = tls_registry.docker_config(tmp_path / "docker")
    env = {"DOCKER_CONFIG": str(config)}
    reg = Registry(tls_registry.url, ca_cert=tls_registry.ca)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_CONFIG", str(config))
        trial = Trial(reg, tls_registry.host, "bundle/tls", tmp_path)
    for args in (["sign", "--key", str(keys / "pin.key")],
                 ["verify-image", "--key", str(keys / "pin.pub")]):
        done = pin(*args, "--lock", str(trial.lock), "--ca-cert", str(tls_registry.ca),
                   "--format", "json", env=env)
        assert done.returncode == 0, done.stderr
    assert json_result(done)["bundles"] == 3
    # The CA from PIN_REGISTRY_CA works the same; without any CA the TLS check fails (exit 8).
    done = pin("verify-image", "--key", str(keys / "pin.pub"), "--lock", str(trial.lock),
               env={**env, "PIN_REGISTRY_CA": str(tls_registry.ca)})
    assert done.returncode == 0, done.stderr
    done = pin("verify-image", "--key", str(keys / "pin.pub"), "--lock", str(trial.lock),
               env={**env, "PIN_DOCKER_CERTS_D": str(tmp_path / "no-certs")})
    assert done.returncode == 8, done.stderr
