"""Helpers that know nothing of GPUs: files, strict models, the command-runner seam, versions
and digests. Every other package may import from here; this package imports only
:mod:`pinning.errors`.
"""
