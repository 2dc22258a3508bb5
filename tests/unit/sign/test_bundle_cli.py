"""``pin sign`` and ``pin verify-image`` with Sigstore bundles, against a small OCI registry on
127.0.0.1 (:mod:`tests.unit.sign.oci_fake`), with and without the OCI 1.1 referrers API; and
``--lock`` giving the image reference (REF optional, both must agree, one is needed)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.lockfile.io import write_lock
from pinning.oci.documents import LOCK_LABEL
from pinning.sign.bundle import SIGN_PREDICATE, referrers_tag
from pinning.sign.cosign import LOCK_PREDICATE, SLSA_PREDICATE
from pinning.sign.crypto import generate
from tests.support.cli import json_result, pin
from tests.support.oci_registry import Store, serve
from tests.unit.sign.images import built_lock, image, recorded

REPO = "pin/trial"
ENV = {**os.environ, "PIN_KEY_PASSWORD": "correct horse"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    d = tmp_path_factory.mktemp("keys")
    key, pub = generate(d / "pin", b"correct horse")
    other_key, other_pub = generate(d / "other", b"correct horse")
    return key, pub, other_key, other_pub


@pytest.fixture(params=[False, True], ids=["tag-fallback", "referrers-api"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, Store]]:
    store = Store(referrers_api=request.param)
    with serve(store) as host:
        yield host, store


def run(*args: str) -> tuple[int, object, str]:
    done = pin(*args, "--format", "json", env=ENV)
    return done.returncode, json_result(done), done.stderr


def test_sign_writes_a_bundle_and_verify_image_reports_it(
        served: tuple[str, Store], keys: tuple[Path, Path, Path, Path]) -> None:
    host, store = served
    key, pub, other_key, other_pub = keys
    digest = image(store, REPO)
    ref = f"{host}/{REPO}@{digest}"
    code, out, err = run("sign", ref, "--key", str(key))
    assert code == 0, err
    assert isinstance(out, dict) and len(out["bundles"]) == 1
    tag = (REPO, referrers_tag(digest))
    if store.referrers_api:
        assert out["bundle_source"] == "referrers API" and tag not in store.manifests
    else:
        assert out["bundle_source"] == f"tag {referrers_tag(digest)}"
        index = json.loads(store.manifests[tag][0])
        assert [m["digest"] for m in index["manifests"]] == out["bundles"]
    code, out, err = run("verify-image", ref, "--key", str(pub))
    assert code == 0, err
    assert isinstance(out, dict)
    assert (out["signatures"], out["bundles"], out["bundle_predicates"]) == (1, 1,
                                                                             [SIGN_PREDICATE])
    assert any("1 Sigstore bundle(s)" in c for c in out["checks"])
    # Another key signs too: each verifier finds its own signature and bundle.
    assert run("sign", ref, "--key", str(other_key))[0] == 0
    code, out, err = run("verify-image", ref, "--key", str(other_pub))
    assert code == 0, err
    assert isinstance(out, dict) and out["bundles"] == 1
    assert any("1 of other keys left aside" in c for c in out["checks"])
    text = pin("verify-image", ref, "--key", str(pub), env=ENV)
    assert text.returncode == 0 and "Sigstore bundle(s)" in text.stdout


def test_an_index_entry_whose_manifest_is_gone_fails_verification(
        keys: tuple[Path, Path, Path, Path]) -> None:
    key, pub, _, _ = keys
    store = Store(referrers_api=False)  # only a tag index can list what the registry lacks
    with serve(store) as host:
        digest = image(store, REPO)
        ref = f"{host}/{REPO}@{digest}"
        code, out, err = run("sign", ref, "--key", str(key))
        assert code == 0 and isinstance(out, dict), err
        gone = out["bundles"][0]
        del store.manifests[(REPO, gone)]
        done = pin("verify-image", ref, "--key", str(pub), env=ENV)
    assert done.returncode == 9, done.stderr
    assert f"the index lists manifest {gone}, which cannot be read" in done.stderr
    assert "Traceback" not in done.stderr


def test_lock_gives_the_reference_to_sign_and_verify_image(
        served: tuple[str, Store], keys: tuple[Path, Path, Path, Path],
        tmp_path: Path) -> None:
    host, store = served
    key, pub, _, _ = keys
    lock, label = built_lock()
    digest = image(store, REPO, labels={LOCK_LABEL: label})
    path = tmp_path / "trial.lock"
    write_lock(recorded(lock, f"{host}/{REPO}@{digest}", digest), path)
    code, out, err = run("sign", "--key", str(key), "--lock", str(path))
    assert code == 0, err
    assert isinstance(out, dict) and out["image"] == f"{host}/{REPO}@{digest}"
    assert len(out["bundles"]) == 3
    code, out, err = run("verify-image", "--key", str(pub), "--lock", str(path))
    assert code == 0, err
    assert isinstance(out, dict) and out["bundles"] == 3
    assert out["bundle_predicates"] == sorted([SIGN_PREDICATE, LOCK_PREDICATE, SLSA_PREDICATE])
    # REF and --lock together, naming the same image (REF with a tag and no digest too).
    for same in (f"{host}/{REPO}@{digest}", f"{host}/{REPO}:latest"):
        code, out, err = run("verify-image", same, "--key", str(pub), "--lock", str(path))
        assert code == 0, err


def test_ref_and_lock_that_disagree_or_neither(keys: tuple[Path, Path, Path, Path],
                                              tmp_path: Path) -> None:
    key, pub, _, _ = keys
    lock, _ = built_lock()
    digest = "sha256:" + "2" * 64
    path = tmp_path / "trial.lock"
    write_lock(recorded(lock, f"127.0.0.1:9/{REPO}@{digest}", digest), path)
    other = f"127.0.0.1:9/{REPO}@sha256:{'3' * 64}"
    for args in (["sign", other, "--key", str(key)], ["verify-image", other, "--key", str(pub)]):
        done = pin(*args, "--lock", str(path), env=ENV)
        assert done.returncode == 2, done.stderr
        assert "name different images" in done.stderr
    done = pin("sign", f"127.0.0.1:9/pin/other@{digest}", "--key", str(key), "--lock",
               str(path), env=ENV)
    assert done.returncode == 2 and "name different images" in done.stderr
    for args in (["sign", "--key", str(key)], ["verify-image", "--key", str(pub)]):
        done = pin(*args, env=ENV)
        assert done.returncode == 2, done.stderr
        assert "pass REF" in done.stderr and "--lock" in done.stderr
    unbuilt = tmp_path / "unbuilt.lock"
    write_lock(lock, unbuilt)
    done = pin("verify-image", "--key", str(pub), "--lock", str(unbuilt), env=ENV)
    assert done.returncode == 2 and "records no image reference" in done.stderr
