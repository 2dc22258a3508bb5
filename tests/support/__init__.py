"""Helpers shared by the test modules (paths, recorded hosts, the ``pin`` subprocess, locks)."""
