"""A site overlay for the matrix: one ROCm release a lab validated."""

from __future__ import annotations

OVERLAY = """
schema-version = 1
name = "site-lab"
description = "Rows our lab validated."

[[releases]]
vendor = "amd"
runtime = "rocm"
version = "7.2.1"
source = "Example Lab validation run 2026-11-20, ticket LAB-42"
checked = 2026-11-20
targets = ["gfx942"]
os = ["ubuntu-24.04.3"]
kmd = ["30.30.0"]

[[releases.frameworks]]
name = "pytorch"
versions = ["2.10.0"]
"""
