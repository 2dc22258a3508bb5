"""pin's own training workloads, shipped as standalone scripts.

``tiny_lm.py`` and ``import_probe.py`` run in the environment under test (which need not
have pin installed), so each is started by its file path (:data:`TINY_LM`,
:data:`IMPORT_PROBE`) and imports only torch and the stdlib.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["HARNESS_DIR", "IMPORT_PROBE", "TINY_LM"]

#: The folder holding the scripts (mounted read-only at the same path for ``--image`` runs).
HARNESS_DIR: Path = Path(__file__).resolve().parent
#: The file path of the tiny decoder-only LM training script.
TINY_LM: Path = HARNESS_DIR / "tiny_lm.py"
#: The file path of the import gate's probe (:mod:`pinning.accept.imports`).
IMPORT_PROBE: Path = HARNESS_DIR / "import_probe.py"
