"""The check ``pin verify-image --require-acceptance`` makes: among an image's verified
acceptance attestations, a valid, self-consistent, passing result for exactly this lock
and this image (:func:`require_acceptance`).
"""

from __future__ import annotations

from pydantic import ValidationError

from pinning.accept.consistency import check_consistent
from pinning.accept.result import PREDICATE_TYPE, AcceptanceResult, binding_problems
from pinning.errors import SignatureError, UsageError
from pinning.sign.cosign import ImageVerification
from pinning.util.models import validation_summary
from pinning.util.text import printable

__all__ = ["SIGN_HINT", "require_acceptance"]

SIGN_HINT = ("Run the gates against the image and lock with `pin accept run --sign` "
             "(it attaches the signed result to the image).")


def _when(result: AcceptanceResult) -> str:
    """``finished <time>`` (or started), or ``time not recorded``."""
    if result.finished_at:
        return f"finished {result.finished_at}"
    if result.started_at:
        return f"started {result.started_at}"
    return "time not recorded"


def require_acceptance(verification: ImageVerification, *, lock_content_hash: str,
                       digest: str) -> str:
    """Require, among the verified attestations of :data:`PREDICATE_TYPE` in
    ``verification`` (from :func:`pinning.sign.cosign.verify_image` with attestations), a
    valid :class:`AcceptanceResult` with ``passed`` true, ``subject.lock-content-hash`` equal
    to ``lock_content_hash`` (``sha256:<hex>``), ``subject.image-digest`` equal to
    ``digest`` (the image's manifest digest) and no binding problem
    (:func:`~pinning.accept.result.binding_problems`: it ran on the stack the lock pins).
    Returns the check line for people (``passing acceptance result for lock sha256:abcd…:
    gates import, train passed (mode host, finished <time>)``; the latest finished when
    several pass).

    Raises :class:`SignatureError` (exit 9) saying what is missing: no acceptance
    attestation, none that is a valid result, results only for other locks (their content
    hash prefixes), only for other images, only failing ones (their failed checks), or only
    unbound ones (their binding problems).
    """
    found = verification.attestations.get(PREDICATE_TYPE, [])
    if not found:
        raise SignatureError(f"No acceptance attestation ({PREDICATE_TYPE}) for {digest}.",
                             hint=SIGN_HINT)
    results: list[AcceptanceResult] = []
    invalid: list[str] = []
    for predicate in found:
        try:
            candidate = AcceptanceResult.model_validate(predicate)
        except ValidationError as exc:
            invalid.append(validation_summary(exc, predicate, limit=2))
            continue
        try:
            check_consistent(candidate, label="an attested result")
        except UsageError as exc:  # its verdicts disagree with its own checks: not evidence
            invalid.append(exc.message)
            continue
        results.append(candidate)
    if not results:
        raise SignatureError(f"No acceptance attestation for {digest} is a valid pin acceptance "
                             f"result ({'; '.join(invalid)[:300]}).", hint=SIGN_HINT)
    for_lock = [r for r in results if r.subject.lock_content_hash == lock_content_hash]
    if not for_lock:
        others = sorted({_prefix(r.subject.lock_content_hash) for r in results})
        raise SignatureError(f"The acceptance results attested for {digest} are for other locks "
                             f"({', '.join(others)}), not {_prefix(lock_content_hash)}.",
                             hint=SIGN_HINT)
    for_image = [r for r in for_lock if r.subject.image_digest == digest]
    if not for_image:
        others = sorted({_prefix(r.subject.image_digest) for r in for_lock})
        raise SignatureError(f"The acceptance results for lock {_prefix(lock_content_hash)} "
                             f"attested on {digest} are for other images ({', '.join(others)}).",
                             hint=SIGN_HINT)
    bound = _passing_and_bound(for_image, lock_content_hash, digest)
    best = max(bound, key=lambda r: r.finished_at or r.started_at or "")
    gates = ", ".join(g for g, ok in best.gates.items() if ok)
    return (f"passing acceptance result for lock {_prefix(lock_content_hash)}: gates {gates} "
            f"passed (mode {best.mode}, {_when(best)})")


def _passing_and_bound(results: list[AcceptanceResult], lock_content_hash: str, digest: str
                       ) -> list[AcceptanceResult]:
    """The results that passed and are bound to their lock's stack. Raises
    :class:`SignatureError` (exit 9) naming the failed checks when none passed, or the
    binding problems when none that passed is bound.
    """
    passing = [r for r in results if r.passed]
    if not passing:
        failed = sorted({f for r in results for f in r.failed})
        detail = "; ".join(printable(f, newlines=False) for f in failed[:5]) or "no failed check"
        raise SignatureError(f"Only failing acceptance results ({len(results)}) for lock "
                             f"{_prefix(lock_content_hash)} and {digest}: {detail}.",
                             hint="Fix what failed and run the gates again.")
    bound = [r for r in passing if not binding_problems(r)]
    if not bound:
        problems = sorted({p for r in passing for p in binding_problems(r)})
        detail = "; ".join(printable(p, newlines=False) for p in problems[:5])
        raise SignatureError(f"The passing acceptance results ({len(passing)}) for lock "
                             f"{_prefix(lock_content_hash)} and {digest} are not bound to the "
                             f"lock's stack: {detail}.",
                             hint="Run the gates on a host the lock describes (pin accept run "
                                  "--lock); a result kept with --unbound-ok is not evidence "
                                  "for the lock.")
    return bound


def _prefix(value: str | None) -> str:
    """``sha256:<first 12 hex>…`` for messages (``unknown`` for ``None``)."""
    if value is None:
        return "unknown"
    head, _, tail = value.partition(":")
    return printable(f"{head}:{tail[:12]}…" if tail else value[:19], newlines=False)
