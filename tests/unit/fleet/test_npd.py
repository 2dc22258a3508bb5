"""The Node Problem Detector plugin answer: exit 0 / 1 / 2 and one bounded line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.fleet.npd import (
    DEFAULT_MAX_OUTPUT,
    MIN_OUTPUT,
    OK,
    PROBLEM,
    UNKNOWN,
    not_probed,
    npd_result,
    npd_unknown,
)
from pinning.guards.view import Finding
from pinning.verify.report import VerifyReport

HASH = "sha256:" + "0123456789ab" + "c" * 52


def report(*drift: Finding, others: tuple[Finding, ...] = ()) -> VerifyReport:
    return VerifyReport(lock="pin.lock", lock_hash=HASH, host="h", host_hash=HASH,
                        result="drift" if drift else "match", counts={},
                        findings=[*drift, *others])


def unread(fact: str = "firmware.blocks", gpu: int | None = 0,
           code: str = "not-probed") -> Finding:
    return Finding(code=code, fact=fact, status="not-probed", severity="warning",
                   message="m", expected="x", gpu=gpu)


def finding(expected: str = "CP_MEC1=32959", actual: str = "CP_MEC1=32960") -> Finding:
    return Finding(code="mismatch", fact="firmware.blocks", status="mismatch",
                   severity="error", message="m", expected=expected, actual=actual, gpu=0)


def test_match_is_ok_with_the_lock_digest() -> None:
    assert npd_result(report()) == (OK, "pin: matches lock sha256:0123456789ab")


def test_match_says_how_many_facts_were_not_probed() -> None:
    facts = (unread(gpu=0), unread(gpu=1), unread("firmware.version", 0),
             unread("firmware.blocks", 0),  # the same fact and GPU counts once
             unread("guard.x", None, code="guard:x"))  # a rule that does not apply: not a fact
    r = report(others=facts)
    assert not_probed(r) == 3
    code, line = npd_result(r)
    assert (code, line) == (OK, "pin: matches lock sha256:0123456789ab (3 facts not probed)")
    assert npd_result(report(others=(unread(),)))[1].endswith("(1 fact not probed)")
    assert not_probed(report()) == 0 and not_probed(report(others=facts[-1:])) == 0


def test_not_probed_note_is_kept_within_short_limits() -> None:
    r = report(others=(unread(gpu=0), unread(gpu=1)))
    seen = set()
    for limit in range(MIN_OUTPUT, 70):
        code, line = npd_result(r, limit)
        assert code == OK and len(line) <= limit and line.isprintable()
        seen.add(line)
        if limit >= len("pin: matches (2 not probed)"):
            assert "2 " in line and "not probed" in line
    assert "pin: matches lock sha256:0123456789ab (2 not probed)" in seen
    assert "pin: matches (2 not probed)" in seen


def test_drift_is_a_problem_with_the_short_reason() -> None:
    code, line = npd_result(report(finding(), finding()))
    assert code == PROBLEM == 1
    assert line == "pin: firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"  # one fact
    other = finding().model_copy(update={"fact": "firmware.version"})
    assert npd_result(report(finding(), finding(), other))[1] == \
        "pin: firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960 (+1 more)"


def test_long_drift_fits_the_configured_length() -> None:
    long = finding("x" * 200, "y" * 200)
    for limit in (MIN_OUTPUT, 40, DEFAULT_MAX_OUTPUT, 200):
        code, line = npd_result(report(long, finding()), limit)
        assert code == PROBLEM and len(line) <= limit and "\n" not in line
    code, line = npd_result(report(), MIN_OUTPUT)
    assert code == OK and len(line) == MIN_OUTPUT and line.endswith("~")


def test_unknown_is_exit_2_on_one_safe_line() -> None:
    code, line = npd_unknown("lock.toml: cannot be read\n(No such file)\tat é")
    assert code == UNKNOWN == 2
    assert line == "pin: unknown: lock.toml: cannot be read (No such file) at ?"


def test_constants_agree_with_the_reason_module() -> None:
    from pinning.fleet.reason import DEFAULT_LIMIT, PREFIX, short_reason

    assert DEFAULT_MAX_OUTPUT == DEFAULT_LIMIT and len(PREFIX) + 16 == MIN_OUTPUT
    short_reason([finding()], MIN_OUTPUT)  # accepted by the reason module too


def test_too_small_a_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        npd_result(report(), MIN_OUTPUT - 1)
    with pytest.raises(ValueError):
        npd_unknown("x", 5)


@given(st.text(max_size=300), st.integers(min_value=MIN_OUTPUT, max_value=120))
def test_unknown_line_is_always_one_bounded_ascii_line(message: str, limit: int) -> None:
    _code, line = npd_unknown(message, limit)
    assert len(line) <= limit and line.isascii() and line.isprintable()
    assert line.startswith("pin: unknown:")
