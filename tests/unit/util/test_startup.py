"""pinning.util.startup: the collector paused while a command loads, then resumed, with
what was loaded frozen (issue 33: the fixed start of `pin fleet verify` and `pin lock
model`)."""

from __future__ import annotations

import gc

import pytest

from pinning.util.startup import loading


def test_loading_pauses_the_collector_and_resumes_it() -> None:
    assert gc.isenabled()
    with loading():
        assert not gc.isenabled()
        made = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)
    gc.unfreeze()


def test_loading_resumes_after_an_error_and_keeps_a_paused_collector_paused() -> None:
    with pytest.raises(RuntimeError), loading():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with loading():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
