"""engine_client: an engine that is not there is exit 8 naming it, without a leaked socket."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pinning.errors import BuildError
from pinning.image.engine import engine_client


def test_a_missing_engine_socket_is_named_and_nothing_is_left_open(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "docker.sock"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(BuildError) as info:
            engine_client(f"unix://{missing}")
    assert info.value.exit_code == 8
    assert f"does not answer: {missing} does not exist" in info.value.message
