"""pin's own training workloads, shipped as standalone scripts.

``tiny_lm.py`` runs in the environment under test (which need not have pin installed), so
it is started by its file path (:data:`TINY_LM`) and imports only torch and the stdlib.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TINY_LM"]

#: The file path of the tiny decoder-only LM training script.
TINY_LM: Path = Path(__file__).resolve().parent / "tiny_lm.py"
