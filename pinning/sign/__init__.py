"""Signing: keys, cosign-compatible signatures, DSSE / in-toto attestations, verification."""
