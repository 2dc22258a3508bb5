"""Verify the Sigstore bundles attached to an image with one key (:func:`verify_bundles`): each
one that is the key's must be readable, attached to the image and signed over the statement it
claims; failures are summed up in one bounded message.

Errors are :class:`~pinning.errors.SignatureError` (exit 9).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import SignatureError
from pinning.sign.bundle import HINT, BundleContent, bundle_hint, key_hint, open_bundle
from pinning.sign.referrers import (
    BundleRegistry,
    bundle_entries,
    clip_reason,
    list_referrers,
    read_bundle,
)

T = TypeVar("T")
MAX_REASONS = 5
"""The most failure reasons one :func:`verify_bundles` message lists; the rest are counted."""


def failure_summary(reasons: list[str]) -> str:
    """``reasons`` joined with ``; ``: at most :data:`MAX_REASONS` of them, each clipped to
    :data:`~pinning.sign.referrers.REASON_CHARS` characters, then ``and N more`` for the rest.
    """
    shown = "; ".join(clip_reason(r) for r in reasons[:MAX_REASONS])
    rest = len(reasons) - MAX_REASONS
    return shown if rest <= 0 else f"{shown}; and {rest} more"


@dataclass
class BundleCheck:
    """What :func:`verify_bundles` established: where bundles are listed (``source``), the
    predicate type and predicate of each bundle that verified, and how many bundles were
    left aside as another key's (their hint names another key).
    """

    source: str
    verified: list[tuple[str, Any]] = field(default_factory=list)
    other_keys: int = 0


def verify_bundles(registry: BundleRegistry, repo: str, digest: str,
                   key: ec.EllipticCurvePublicKey) -> BundleCheck:
    """Verify every Sigstore bundle listed for ``repo@digest`` that is ``key``'s.

    Bundles are found through the referrers API or the tag index (entries whose
    ``artifactType`` is not the bundle media type are not bundles and are skipped without
    a request; more than :data:`MAX_BUNDLES` bundles listed is refused before any is
    fetched, see :func:`bundle_entries`). A
    bundle whose key hint names another key is counted in ``other_keys`` and not checked
    further (the hint is unauthenticated: hiding a bundle this way is no more than deleting
    it). Every other listed bundle must be readable, attached to ``digest``, verify with
    ``key`` over the DSSE PAE, name ``digest`` as statement subject and have the predicate
    type its manifest annotation says. Raises :class:`SignatureError` (exit 9) when one does
    not, with the first :data:`MAX_REASONS` reasons and how many more
    (:func:`failure_summary`).
    """
    listing = list_referrers(registry, repo, digest)
    result = BundleCheck(source=listing.source(digest))
    mine = key_hint(key)
    reasons: list[str] = []
    for entry in bundle_entries(listing, digest):
        try:
            content = _check_entry(registry, repo, entry, digest, key, mine)
        except SignatureError as exc:
            reasons.append(exc.message)
            continue
        if content is None:
            result.other_keys += 1
        else:
            result.verified.append((content.predicate_type, content.predicate))
    if reasons:
        raise SignatureError(f"Sigstore bundle check failed for {digest} "
                             f"({result.source}): {failure_summary(reasons)}.", hint=HINT)
    return result


def _check_entry(registry: BundleRegistry, repo: str, entry: dict[str, Any], digest: str,
                 key: ec.EllipticCurvePublicKey, mine: str) -> BundleContent | None:
    """One listed bundle verified (``None`` when its hint names another key)."""
    ref, data, annotated = read_bundle(registry, repo, entry, digest)
    hint = _reason(lambda: bundle_hint(data), ref)
    if hint and hint != mine:
        return None
    content = _reason(lambda: open_bundle(key, data, digest), ref)
    if annotated is not None and annotated != content.predicate_type:
        raise SignatureError(f"bundle {ref}: the manifest says predicate type {annotated!r}, "
                             f"the signed statement {content.predicate_type!r}")
    return content


def _reason(check: Callable[[], T], ref: str) -> T:
    """Run ``check``; a :class:`SignatureError` it raises names the bundle manifest ``ref``."""
    try:
        return check()
    except SignatureError as exc:
        raise SignatureError(f"bundle {ref}: {exc.message}") from exc
