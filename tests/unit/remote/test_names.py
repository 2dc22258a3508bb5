"""The client's host and group name rule is the service's, exactly (the client may not
import pinning.serve, so the rule is written twice; this test holds the two equal).
"""

from __future__ import annotations

import pytest

from pinning.remote.client import NAME, is_name
from pinning.serve.api.context import NAME as SERVER_NAME
from pinning.serve.api.context import check_name
from pinning.serve.errors import ApiError

EDGES = ["a" * 253, "a" * 254, ".", "..", "n-1.example", "a_b", "", "a/b", "gpu01", ".a",
         "a.", "x y", "é", "a\n", "-", "_"]


def _server_accepts(value: str) -> bool:
    try:
        check_name("host", value)
    except ApiError:
        return False
    return True


@pytest.mark.parametrize("value", EDGES)
def test_the_client_accepts_a_name_exactly_when_the_server_does(value: str) -> None:
    assert is_name(value) == _server_accepts(value)


def test_the_rules_and_their_expected_answers() -> None:
    assert NAME.pattern == SERVER_NAME.pattern
    assert [v for v in EDGES if is_name(v)] == ["a" * 253, "n-1.example", "a_b", "gpu01",
                                                 ".a", "a.", "-", "_"]
