"""Signed acceptance results: the in-toto statement, its DSSE envelope, reading one back
(plain or signed) and the attestation on the image. The check ``pin verify-image
--require-acceptance`` makes is :mod:`pinning.accept.require`.

A signed result is an in-toto Statement v1 (``https://in-toto.io/Statement/v1``) whose
``predicateType`` is :data:`~pinning.accept.result.PREDICATE_TYPE` and whose ``predicate``
is the :class:`~pinning.accept.result.AcceptanceResult` in its JSON form (kebab-case keys),
inside a DSSE envelope of payload type ``application/vnd.in-toto+json`` signed with pin's
ECDSA P-256 key (:mod:`pinning.sign.crypto`). Its subject is what the gates ran against,
the most specific known: the image (its name and registry manifest digest), else the lock
(its file name and content hash), else the gates file (its sha256). On the image, it is one
more layer of cosign's ``sha256-<hex>.att`` manifest (:func:`pinning.sign.cosign.attest_image`).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import ValidationError

from pinning.accept.consistency import check_consistent
from pinning.accept.result import PREDICATE_TYPE, AcceptanceResult
from pinning.errors import SignatureError, UsageError
from pinning.sign.cosign import STATEMENT_V1, attest_image, statement
from pinning.sign.crypto import IN_TOTO, dsse_envelope, open_envelope
from pinning.util.digests import canonical_json
from pinning.util.jsonread import load_json
from pinning.util.models import validation_summary
from pinning.util.text import printable

__all__ = ["acceptance_statement", "attach_result", "open_signed_result", "read_result_file",
           "sign_result"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
# The subject name of a statement about the gates file alone (the result does not record
# the file's path, only its sha256).
GATES_SUBJECT = "pin-accept-gates"
_HINT = "Pass the result file pin accept run or pin accept judge wrote."


def _hex(value: str | None) -> str | None:
    """The 64-hex part of ``sha256:<hex>`` (or of bare hex), ``None`` for anything else."""
    if value is None:
        return None
    text = value.removeprefix("sha256:")
    return text if _HEX64.fullmatch(text) else None


def _manifest_hex(result: AcceptanceResult) -> str | None:
    """The hex of the result's image manifest digest, ``None`` when it records none."""
    s = result.subject
    return _hex(s.image_digest) if s.image_digest_kind == "manifest" else None


def _image_name(result: AcceptanceResult, image_name: str | None) -> str:
    """The statement subject name of the result's image: ``image_name`` when given, else
    the reference the result records without tag and digest (as written when it does not
    parse as ``HOST/REPO...``).
    """
    if image_name:
        return image_name
    ref = result.subject.image or ""
    from pinning.oci.reference import parse

    try:
        return parse(ref).name
    except UsageError:
        return ref or "image"


def _subject(result: AcceptanceResult, image_name: str | None) -> dict[str, Any]:
    """The one in-toto subject of the result's statement (see :func:`acceptance_statement`).
    Raises :class:`UsageError` when the result records none of the three digests.
    """
    s = result.subject
    image_hex = _manifest_hex(result)
    if image_hex is not None:
        return {"name": _image_name(result, image_name), "digest": {"sha256": image_hex}}
    lock_hex = _hex(s.lock_content_hash)
    if lock_hex is not None:
        return {"name": s.lock or "lock", "digest": {"sha256": lock_hex}}
    gates_hex = _hex(result.config_sha256)
    if gates_hex is not None:
        return {"name": GATES_SUBJECT, "digest": {"sha256": gates_hex}}
    raise UsageError(f"The acceptance result names nothing to sign: no image manifest digest, "
                     f"no lock content hash and config-sha256 {result.config_sha256!r} is not "
                     "a sha256.")


def acceptance_statement(result: AcceptanceResult, *, image_name: str | None) -> bytes:
    """The in-toto Statement v1 of ``result`` as canonical JSON bytes (keys sorted, no
    whitespace, non-ASCII escaped; these exact bytes are what the DSSE envelope signs).

    ``predicateType`` is :data:`PREDICATE_TYPE`, ``predicate`` is
    ``result.model_dump(mode="json", by_alias=True)``. The one subject is, the first that
    the result records: the image (``name`` = ``image_name``, default the result's image
    reference without tag and digest; ``digest.sha256`` = the manifest digest's hex, only
    when ``subject.image-digest-kind`` is ``manifest``: the same bytes
    :func:`pinning.sign.cosign.statement` makes), else the lock (``name`` = ``subject.lock``,
    ``digest.sha256`` = its content hash's hex), else the gates file (``name``
    ``pin-accept-gates``, ``digest.sha256`` = ``config-sha256``). Raises :class:`UsageError`
    (exit 2) when none of the three is a sha256.
    """
    subject = _subject(result, image_name)
    predicate = result.model_dump(mode="json", by_alias=True)
    if _manifest_hex(result) is not None:  # cosign's statement about an image, byte for byte
        return statement(f"sha256:{subject['digest']['sha256']}", subject["name"],
                         PREDICATE_TYPE, predicate)
    doc = {"_type": STATEMENT_V1, "subject": [subject], "predicateType": PREDICATE_TYPE,
           "predicate": predicate}
    return canonical_json(doc, ascii_only=True)


def sign_result(result: AcceptanceResult, key: ec.EllipticCurvePrivateKey, *,
                image_name: str | None = None) -> bytes:
    """The DSSE envelope (canonical JSON bytes: ``payload`` base64, ``payloadType``
    ``application/vnd.in-toto+json``, one ECDSA P-256 signature over the pre-authentication
    encoding) of :func:`acceptance_statement` of ``result``. Raises :class:`UsageError` as
    that function does.
    """
    return dsse_envelope(key, IN_TOTO, acceptance_statement(result, image_name=image_name))


def _is_envelope(doc: object) -> bool:
    """Whether the parsed JSON ``doc`` has the shape of a DSSE envelope."""
    return isinstance(doc, dict) and "payloadType" in doc and "payload" in doc


def _unverified_body(doc: dict[str, Any], label: str) -> tuple[str, bytes]:
    """``(payloadType, body)`` of an envelope read without a key; :class:`UsageError`."""
    try:
        payload_type = doc["payloadType"]
        body = base64.b64decode(str(doc["payload"]), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UsageError(f"{label}: the DSSE envelope's payload is not valid base64.") from exc
    return str(payload_type), body


def _predicate(body: bytes, payload_type: str, label: str) -> tuple[Any, list[Any]]:
    """The acceptance predicate and the subjects of the in-toto statement ``body``. Raises
    :class:`UsageError` naming ``label`` for another payload type, a body that is not an
    in-toto statement, or another predicate type.
    """
    if payload_type != IN_TOTO:
        raise UsageError(f"{label}: the DSSE payload type is {printable(payload_type)!r}, not "
                         f"{IN_TOTO!r}.")
    try:
        doc = _loads(body, f"{label}: the signed statement")
    except ValueError as exc:
        raise UsageError(f"{label}: the signed statement is not JSON ({exc}).") from exc
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_V1:
        got = doc.get("_type") if isinstance(doc, dict) else type(doc).__name__
        raise UsageError(f"{label}: the signed payload is not an in-toto Statement v1 "
                         f"(_type {printable(str(got))!r}).")
    if doc.get("predicateType") != PREDICATE_TYPE:
        raise UsageError(f"{label}: the statement's predicateType is "
                         f"{printable(str(doc.get('predicateType')))!r}, not {PREDICATE_TYPE!r}; "
                         "it is not a pin acceptance result.")
    subjects = doc.get("subject")
    return doc.get("predicate"), subjects if isinstance(subjects, list) else []


def _reject_constant(name: str) -> None:
    """``json.loads``'s ``parse_constant``: refuse ``NaN``, ``Infinity``, ``-Infinity``."""
    raise ValueError(f"{name} is not a JSON number")


def _loads(data: bytes | str, label: str) -> Any:
    """Strict JSON: the bounded parse (:func:`~pinning.util.jsonread.load_json`; its
    :class:`UsageError` names ``label``) without JSON's ``NaN``/``Infinity`` and numbers too
    large for a float (``1e999`` would become infinity): ``ValueError``.
    """
    return load_json(data, UsageError, label=label, hint=_HINT,
                     parse_constant=_reject_constant, parse_float=_finite_float)


def _finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: the number, refusing one too large for a float."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is too large for a float")
    return value


def _validate(data: object, label: str) -> AcceptanceResult:
    """``data`` (parsed by :func:`_loads`, so its numbers are finite) as a consistent
    :class:`AcceptanceResult`: valid against the model, and
    :func:`~pinning.accept.consistency.check_consistent`; :class:`UsageError` naming ``label``.
    """
    try:
        result = AcceptanceResult.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{label}: not a valid pin acceptance result: "
                         f"{validation_summary(exc, data)}.",
                         hint="Pass the file pin accept run or pin accept judge wrote.") from exc
    check_consistent(result, label=label)
    return result


def open_signed_result(data: bytes, key: ec.EllipticCurvePublicKey | None, *,
                       label: str) -> tuple[AcceptanceResult, bool]:
    """Read an acceptance result from ``data``: a plain result JSON document or a DSSE
    envelope around its in-toto statement (what :func:`sign_result` makes). Returns
    ``(result, verified)``: ``verified`` is true when ``key`` was given and a signature of
    the envelope verifies with it.

    With ``key``, the envelope's signature must verify (:class:`SignatureError`, exit 9,
    otherwise, also for a plain document, which carries no signature); without ``key`` the
    envelope is read unverified. The payload type must be in-toto, the statement a
    Statement v1 of :data:`PREDICATE_TYPE` whose subject is the one its result names, and
    the predicate a valid :class:`AcceptanceResult` holding only finite numbers (JSON's
    ``NaN``/``Infinity`` extensions and overflowing numbers such as ``1e999`` are refused)
    whose verdicts agree with its checks
    (:func:`~pinning.accept.consistency.check_consistent`); otherwise :class:`UsageError`
    (exit 2) naming ``label`` (the file as the user gave it).
    """
    try:
        doc = _loads(data, label)
    except ValueError as exc:  # NaN, Infinity, 1e999
        raise UsageError(f"{label}: not JSON ({exc}).", hint=_HINT) from exc
    if not _is_envelope(doc):
        if key is not None:
            raise SignatureError(f"{label} is a plain acceptance result, not a signed one (no "
                                 "DSSE envelope); there is no signature to verify.",
                                 hint="Sign it with `pin accept run --sign`, or read it "
                                      "without a key.")
        return _validate(doc, label), False
    if key is not None:
        try:
            envelope = open_envelope(key, data)
        except SignatureError as exc:
            raise SignatureError(f"{label}: {exc.message}", hint=exc.hint) from exc
        payload_type, body = envelope.payload_type, envelope.body
    else:
        payload_type, body = _unverified_body(doc, label)
    predicate, subjects = _predicate(body, payload_type, label)
    result = _validate(predicate, label)
    expected = _subject(result, None)["digest"]["sha256"]
    named = [s.get("digest", {}).get("sha256") for s in subjects
             if isinstance(s, dict) and isinstance(s.get("digest"), dict)]
    if expected not in named:
        raise UsageError(f"{label}: the statement's subject is not what its result was run "
                         f"against (sha256 {expected[:12]}…).")
    return result, key is not None


def attach_result(result: AcceptanceResult, image_ref: str, key: ec.EllipticCurvePrivateKey,
                  *, registry_url: str | None) -> str:
    """Attach the signed statement of ``result`` to the image ``image_ref``
    (``HOST/REPO[:TAG][@sha256:<hex>]``) as one more DSSE layer of its cosign ``.att``
    manifest (predicate type :data:`PREDICATE_TYPE`; not added twice); return the ``.att``
    manifest digest (``sha256:<hex>``).

    ``registry_url`` overrides the registry the reference names. The result must record a
    manifest digest (``subject.image-digest-kind`` ``manifest``; else :class:`UsageError`,
    exit 2), and it must be the digest the registry serves for ``image_ref`` (else
    :class:`SignatureError`, exit 9, as for an image absent from the registry or a digest in
    ``image_ref`` that is not the one served). :class:`~pinning.errors.BuildError` (exit 8)
    when the registry fails.
    """
    from pinning.oci.reference import parse
    from pinning.oci.registry import Registry

    s = result.subject
    if _manifest_hex(result) is None:
        why = s.unknown.get("image-digest") or s.unknown.get("image_digest")
        raise UsageError(
            f"The acceptance result records no registry manifest digest for its image "
            f"(image-digest {s.image_digest}, kind {s.image_digest_kind}"
            + (f": {printable(why, newlines=False)}" if why else "") + "); an attestation "
            "can only be attached to an image by digest.",
            hint="Push the image and run the gates against HOST/REPO@sha256:...")
    image = parse(image_ref)
    registry = Registry(registry_url or image.registry_url)
    repo = image.repository
    served = registry.manifest_digest(repo, image.manifest_reference)
    if served is None:
        raise SignatureError(f"{image_ref} is not in the registry; nothing to attach the "
                             "acceptance result to.")
    if image.digest is not None and served != image.digest:
        raise SignatureError(f"The registry serves {served} for {image_ref}, not {image.digest}.")
    if served != s.image_digest:
        raise SignatureError(f"The acceptance result is for image {s.image_digest}, but the "
                             f"registry serves {served} for {image_ref}; attach a result to "
                             "the image it was run against.")
    predicate = result.model_dump(mode="json", by_alias=True)
    return attest_image(registry, repo, served, key, PREDICATE_TYPE, predicate,
                        reference=image.name)


def read_result_file(path: Path, public_key: Path | None = None
                     ) -> tuple[AcceptanceResult, bool]:
    """Read an acceptance result file (at most 256 MiB; ``-`` is standard input), plain or
    signed, through :func:`open_signed_result`, its signature verified with the PEM
    ``public_key`` when given; returns the result and whether it was verified. Raises
    ``UsageError`` (exit 2) for a file that is not a result, ``SignatureError`` (exit 9)
    for a signature that does not verify.
    """
    from pinning.sign.crypto import load_public
    from pinning.util.files import read_regular_bytes

    label = f"Result {path}"
    data = read_regular_bytes(path, UsageError, label=label,
                              hint="Pass a file pin accept run or pin accept judge wrote (-o).",
                              limit=256 * 1024 * 1024)
    key = load_public(public_key) if public_key is not None else None
    return open_signed_result(data, key, label=label)
