"""The drain / condition reason line: prefix, one safe word per value, the bound."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.fleet.reason import PREFIX, drift_word, short_reason
from pinning.guards.view import Finding


def finding(fact: str = "firmware.blocks", *, status: str = "mismatch",
            expected: str | None = "CP_MEC1=32959", actual: str | None = "CP_MEC1=32960",
            gpu: int | None = 0) -> Finding:
    return Finding(code=status, fact=fact, status=status, severity="error",
                   message="m", expected=expected, actual=actual, gpu=gpu)


def test_one_drift_names_fact_gpu_want_and_have() -> None:
    assert short_reason([finding()]) == "pin: firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"


def test_more_drift_is_counted_and_the_line_bounded() -> None:
    long = finding(expected="CP_MEC1=32959, CP_MEC2=32959, RLC=69, SDMA0=25",
                   actual="CP_MEC1=32960, CP_MEC2=32960, RLC=70, SDMA0=26")
    line = short_reason([long, finding(), finding("runtime.version", gpu=None)], limit=80)
    assert len(line) == 80 and line.startswith(PREFIX + "firmware.blocks[0] ")
    assert line.endswith("~ (+1 more)")  # two facts: firmware.blocks (twice), runtime
    assert short_reason([]) == "pin: no drift"


def test_absent_and_unreadable_values_are_named() -> None:
    assert drift_word(finding("packages.numpy", status="missing", expected="2.1.2",
                              actual=None, gpu=None)) == "packages.numpy 2.1.2!=absent"
    assert drift_word(finding("driver.version", status="not-probed", expected=">=580",
                              actual="", gpu=None)) == "driver.version >=580!=unknown"


def test_spaces_quotes_and_control_characters_never_reach_the_line() -> None:
    hostile = finding(expected='7.1 "x"\nReason=evil', actual="a b\tc'd")
    line = short_reason([hostile], limit=200)
    assert line.count(" ") == 2  # after the prefix and between fact and values only
    assert all(c not in line for c in "\"'\n\t")
    assert line == "pin: firmware.blocks[0] 7.1__x__Reason=evil!=a_b_c_d"


def test_a_limit_too_small_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        short_reason([finding()], limit=10)


@given(st.text(max_size=300), st.text(max_size=300), st.integers(min_value=21, max_value=300))
def test_any_values_give_one_printable_ascii_line_within_the_limit(
        want: str, have: str, limit: int) -> None:
    line = short_reason([finding(expected=want, actual=have), finding()], limit=limit)
    assert len(line) <= limit and line.startswith(PREFIX)
    assert line.isascii() and line.isprintable()
