"""Benchmarks for issue 5 (printed, not asserted): CPU time of signing and verifying a trial
image's signature and its two attestations, registry round trips excluded (medians).

- sign: simple-signing payload + ECDSA P-256, lock and provenance statements in DSSE
  (target <= 50 ms CPU)
- verify: the signature and both envelopes (target <= 50 ms CPU)
"""

from __future__ import annotations

import statistics
import time

from common import report
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.sign.cosign import (
    LOCK_PREDICATE,
    SLSA_PREDICATE,
    lock_predicate,
    payload_bytes,
    provenance_predicate,
    statement,
)
from pinning.sign.crypto import IN_TOTO, dsse_envelope, open_envelope, sign, verify

DIGEST = "sha256:" + "ab" * 32
REPO = "127.0.0.1:5000/pin/trial"
LOCK = ("# pin lockfile\n" + "x = 1\n" * 400).encode()


def cpu_median(fn, n: int = 50) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def main() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key()

    def do_sign() -> tuple[bytes, str, bytes, bytes]:
        payload = payload_bytes(REPO, DIGEST)
        sig = sign(key, payload)
        att1 = dsse_envelope(key, IN_TOTO, statement(DIGEST, REPO, LOCK_PREDICATE,
                                                     lock_predicate(LOCK, "trial.lock")))
        att2 = dsse_envelope(key, IN_TOTO, statement(
            DIGEST, REPO, SLSA_PREDICATE,
            provenance_predicate(LOCK, "trial.lock", REPO + "@" + DIGEST, [])))
        return payload, sig, att1, att2

    payload, sig, att1, att2 = do_sign()

    def do_verify() -> None:
        verify(pub, payload, sig, "image")
        open_envelope(pub, att1).json()
        open_envelope(pub, att2).json()

    report({
        "sign: signature + 2 attestations (CPU) ms": (cpu_median(do_sign) * 1000, 50.0),
        "verify: signature + 2 attestations (CPU) ms": (cpu_median(do_verify) * 1000, 50.0),
    })


if __name__ == "__main__":
    main()
