"""Signed acceptance results: statement subjects, DSSE sign/open, tampering, and the
``--require-acceptance`` check over verified attestations."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.accept.attest import (
    GATES_SUBJECT,
    acceptance_statement,
    attach_result,
    open_signed_result,
    sign_result,
)
from pinning.accept.require import require_acceptance
from pinning.accept.result import PREDICATE_TYPE, AcceptanceResult, Subject
from pinning.errors import SignatureError, UsageError
from pinning.sign.cosign import LOCK_PREDICATE, STATEMENT_V1, ImageVerification, statement
from pinning.sign.crypto import IN_TOTO, dsse_envelope, pae, sign
from pinning.util.digests import canonical_json
from tests.support.cli import pin

LOCK_HASH = "sha256:" + "1" * 64
OTHER_LOCK = "sha256:" + "2" * 64
DIGEST = "sha256:" + "a" * 64
OTHER_DIGEST = "sha256:" + "b" * 64
GATES_HEX = "c" * 64
IMAGE = "127.0.0.1:5000/pin/trial:v1@" + DIGEST


def result(*, passed: bool = True, lock_hash: str | None = LOCK_HASH,
           digest: str | None = DIGEST, kind: str | None = "manifest",
           finished: str | None = "2026-03-01T10:00:00Z", config: str = GATES_HEX,
           differences: tuple[str, ...] = ()) -> AcceptanceResult:
    subject = Subject.model_validate({
        "lock": "trial.lock", "lock-content-hash": lock_hash,
        "image": IMAGE if digest else None, "image-digest": digest,
        "image-digest-kind": kind if digest else None})
    # A consistent result (check_consistent): the train gate its verdict and failure name.
    train = {"trainer": "tiny-lm", "steps": 20, "runs": [], "passed": passed, "checks": [
        {"name": "loss-ratio", "measured": 0.2 if passed else 0.9, "limit": 0.3,
         "passed": passed, "reason": "final/initial loss 0.2 within 0.3" if passed
         else "final/initial loss 0.9 above 0.3"}]}
    return AcceptanceResult.model_validate({
        "pin-version": "0.1.0", "mode": "host", "config-sha256": config,
        "started-at": "2026-03-01T09:00:00Z", "finished-at": finished, "subject": subject,
        "train": train, "gates": {"train": passed}, "passed": passed,
        "failed": [] if passed else ["train: loss-ratio: final/initial loss 0.9 above 0.3"],
        "binding": {"checked": "run", "differences": list(differences),
                    "allowed-unbound": bool(differences)}})


def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def body(envelope: bytes) -> Any:
    return json.loads(base64.b64decode(json.loads(envelope)["payload"]))


# --- statement subjects ---------------------------------------------------------------


def test_statement_about_the_image_is_cosigns_statement() -> None:
    r = result()
    raw = acceptance_statement(r, image_name="127.0.0.1:5000/pin/trial")
    predicate = r.model_dump(mode="json", by_alias=True)
    assert raw == statement(DIGEST, "127.0.0.1:5000/pin/trial", PREDICATE_TYPE, predicate)
    doc = json.loads(raw)
    assert doc["_type"] == STATEMENT_V1 and doc["predicateType"] == PREDICATE_TYPE
    assert doc["subject"] == [{"name": "127.0.0.1:5000/pin/trial",
                               "digest": {"sha256": "a" * 64}}]
    assert doc["predicate"]["subject"]["lock-content-hash"] == LOCK_HASH
    # Without a name, the result's reference without tag and digest.
    assert json.loads(acceptance_statement(r, image_name=None))["subject"][0]["name"] == \
        "127.0.0.1:5000/pin/trial"


def test_statement_about_the_lock_when_the_image_has_only_an_image_id() -> None:
    r = result(kind="image-id")
    doc = json.loads(acceptance_statement(r, image_name="ignored/name"))
    assert doc["subject"] == [{"name": "trial.lock", "digest": {"sha256": "1" * 64}}]
    assert json.loads(acceptance_statement(result(digest=None), image_name=None))[
        "subject"] == doc["subject"]


def test_statement_about_the_gates_file_with_neither() -> None:
    for config in (GATES_HEX, "sha256:" + GATES_HEX):
        doc = json.loads(acceptance_statement(result(digest=None, lock_hash=None,
                                                     config=config), image_name=None))
        assert doc["subject"] == [{"name": GATES_SUBJECT, "digest": {"sha256": GATES_HEX}}]


def test_statement_refuses_a_result_naming_no_digest() -> None:
    with pytest.raises(UsageError, match="names nothing to sign"):
        acceptance_statement(result(digest=None, lock_hash=None, config="not-a-hash"),
                             image_name=None)


# --- sign and open ----------------------------------------------------------------------


def test_sign_open_roundtrip() -> None:
    k = key()
    r = result()
    env = sign_result(r, k, image_name="127.0.0.1:5000/pin/trial")
    assert json.loads(env)["payloadType"] == IN_TOTO
    got, verified = open_signed_result(env, k.public_key(), label="res.json")
    assert (got, verified) == (r, True)
    got, verified = open_signed_result(env, None, label="res.json")
    assert (got, verified) == (r, False)


def test_tampered_payload_is_exit_9() -> None:
    k = key()
    env = json.loads(sign_result(result(passed=False), k))
    doc = json.loads(base64.b64decode(env["payload"]))
    doc["predicate"]["passed"] = True
    doc["predicate"]["gates"] = {"train": True}
    doc["predicate"]["failed"] = []
    env["payload"] = base64.b64encode(canonical_json(doc)).decode()
    with pytest.raises(SignatureError, match="res.json") as exc:
        open_signed_result(canonical_json(env), k.public_key(), label="res.json")
    assert exc.value.exit_code == 9


def test_wrong_key_is_exit_9() -> None:
    env = sign_result(result(), key())
    with pytest.raises(SignatureError, match="does not verify|No signature") as exc:
        open_signed_result(env, key().public_key(), label="res.json")
    assert exc.value.exit_code == 9


def test_plain_result_json() -> None:
    r = result()
    data = canonical_json(r.model_dump(mode="json", by_alias=True))
    assert open_signed_result(data, None, label="res.json") == (r, False)
    # A key asks for a signature a plain file does not carry.
    with pytest.raises(SignatureError, match="plain acceptance result"):
        open_signed_result(data, key().public_key(), label="res.json")


def _envelope(k: ec.EllipticCurvePrivateKey, doc: Any, payload_type: str = IN_TOTO) -> bytes:
    return dsse_envelope(k, payload_type, canonical_json(doc))


def test_wrong_predicate_type_is_refused() -> None:
    k = key()
    doc = json.loads(acceptance_statement(result(), image_name=None))
    doc["predicateType"] = LOCK_PREDICATE
    with pytest.raises(UsageError, match=r"res\.json: .*predicateType") as exc:
        open_signed_result(_envelope(k, doc), k.public_key(), label="res.json")
    assert exc.value.exit_code == 2


def test_other_payload_type_and_non_statement_are_refused() -> None:
    k = key()
    doc = json.loads(acceptance_statement(result(), image_name=None))
    with pytest.raises(UsageError, match="payload type"):
        open_signed_result(_envelope(k, doc, "text/plain"), k.public_key(), label="r")
    doc["_type"] = "https://example.org/other"
    with pytest.raises(UsageError, match="not an in-toto Statement v1"):
        open_signed_result(_envelope(k, doc), None, label="r")


def test_invalid_predicate_names_the_file() -> None:
    k = key()
    doc = json.loads(acceptance_statement(result(), image_name=None))
    doc["predicate"]["surprise"] = 1
    with pytest.raises(UsageError, match=r"res\.json: not a valid pin acceptance result.*"
                                         "surprise"):
        open_signed_result(_envelope(k, doc), k.public_key(), label="res.json")
    plain = canonical_json({"mode": "host"})
    with pytest.raises(UsageError, match=r"plain\.json: not a valid"):
        open_signed_result(plain, None, label="plain.json")


def test_statement_about_something_else_is_refused() -> None:
    k = key()
    doc = json.loads(acceptance_statement(result(), image_name=None))
    doc["subject"][0]["digest"]["sha256"] = "b" * 64
    with pytest.raises(UsageError, match="subject is not what its result"):
        open_signed_result(_envelope(k, doc), k.public_key(), label="r")


def test_not_json_and_bad_base64() -> None:
    with pytest.raises(UsageError, match="r: not JSON"):
        open_signed_result(b"\xff{", None, label="r")
    bad = canonical_json({"payload": "!!!", "payloadType": IN_TOTO, "signatures": []})
    with pytest.raises(UsageError, match="not valid base64"):
        open_signed_result(bad, None, label="r")


def test_hand_made_envelope_with_pae_verifies() -> None:
    # An envelope another DSSE implementation writes (signature over PAE, standard base64).
    k = key()
    raw = acceptance_statement(result(), image_name="h/r")
    env = canonical_json({"payload": base64.b64encode(raw).decode(), "payloadType": IN_TOTO,
                          "signatures": [{"keyid": "x", "sig": sign(k, pae(IN_TOTO, raw))}]})
    assert open_signed_result(env, k.public_key(), label="r")[1] is True


def test_attach_needs_a_manifest_digest() -> None:
    with pytest.raises(UsageError, match="no registry manifest digest"):
        attach_result(result(kind="image-id"), IMAGE, key(), registry_url="http://127.0.0.1:9")


# --- require_acceptance ----------------------------------------------------------------------


def verification(*results: AcceptanceResult | dict[str, Any]) -> ImageVerification:
    preds = [r.model_dump(mode="json", by_alias=True) if isinstance(r, AcceptanceResult)
             else r for r in results]
    atts: dict[str, list[Any]] = {LOCK_PREDICATE: [{"lockfile": {}}]}
    if preds:
        atts[PREDICATE_TYPE] = preds
    return ImageVerification(digest=DIGEST, signatures=1, attestations=atts)


def require(v: ImageVerification) -> str:
    return require_acceptance(v, lock_content_hash=LOCK_HASH, digest=DIGEST)


def refused(v: ImageVerification) -> str:
    with pytest.raises(SignatureError) as exc:
        require(v)
    assert exc.value.exit_code == 9
    return exc.value.message


def test_require_acceptance_passes() -> None:
    line = require(verification(result(passed=False), result()))
    assert "passing acceptance result" in line and "gates train passed" in line
    assert "2026-03-01T10:00:00Z" in line and "sha256:111111111111" in line


def test_require_acceptance_refuses_a_passing_result_not_bound_to_the_lock() -> None:
    """A CPU run kept with --unbound-ok passes its gates but is no evidence for a GPU lock."""
    cpu = "gpu: ran on the CPU (no GPU found), the lock pins Instinct MI300X (gfx942)"
    message = refused(verification(result(differences=(cpu,))))
    assert "not bound to the lock's stack" in message and cpu in message
    old = result().model_dump(mode="json", by_alias=True)
    del old["binding"]  # written by a pin that did not check bindings
    assert "not bound" in refused(verification(old))
    assert "passing acceptance result" in require(verification(result(differences=(cpu,)),
                                                               result()))


def test_require_acceptance_takes_the_latest_passing() -> None:
    line = require(verification(result(finished="2026-03-01T10:00:00Z"),
                                result(finished="2026-04-02T08:00:00Z")))
    assert "finished 2026-04-02T08:00:00Z" in line


def test_require_acceptance_without_any() -> None:
    assert "No acceptance attestation" in refused(verification())


def test_require_acceptance_invalid_only() -> None:
    assert "valid pin acceptance result" in refused(verification({"passed": True}))


def test_require_acceptance_ignores_a_result_whose_verdicts_disagree() -> None:
    """A signed predicate edited to say "passed" over a failing check is not evidence."""
    forged = result(passed=False).model_dump(mode="json", by_alias=True)
    forged.update({"passed": True, "gates": {"train": True}, "failed": []})
    message = refused(verification(forged))
    assert "valid pin acceptance result" in message and "train" in message


def test_require_acceptance_failing_only() -> None:
    message = refused(verification(result(passed=False)))
    assert "Only failing" in message and "loss-ratio" in message


def test_require_acceptance_other_lock() -> None:
    message = refused(verification(result(lock_hash=OTHER_LOCK)))
    assert "other locks" in message and "sha256:222222222222" in message


def test_require_acceptance_other_image() -> None:
    message = refused(verification(result(digest=OTHER_DIGEST)))
    assert "other images" in message and "sha256:bbbbbbbbbbbb" in message


def test_require_acceptance_is_for_exactly_this_image_and_lock() -> None:
    # A passing result for another lock and a failing one for this: still refused.
    message = refused(verification(result(lock_hash=OTHER_LOCK), result(passed=False)))
    assert "Only failing" in message


def test_cli_require_acceptance_needs_lock() -> None:
    done = pin("verify-image", IMAGE, "--key", "no.pub", "--require-acceptance")
    assert done.returncode == 2 and "--require-acceptance needs --lock" in done.stderr
