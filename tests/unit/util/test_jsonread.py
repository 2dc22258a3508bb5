"""The one bounded JSON parse (pinning.util.jsonread.load_json): what it refuses, with which
message, in the caller's own error class; that it never raises anything else; and that its
depth scan measures what the parser would nest.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.errors import PinError, ProbeError, ServiceError, UsageError
from pinning.util.jsonread import MAX_JSON_DEPTH, _depth, load_json
from tests.support.paths import ROOT

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "7" * 5_000


@pytest.mark.parametrize("data,needle", [
    (DEEP, "JSON nested too deeply (more than 512 levels"),
    (DEEP.encode(), "JSON nested too deeply (more than 512 levels"),
    ('{"a": ' + "[" * 100_000, "JSON nested too deeply"),  # unbalanced: still refused
    ('{"n": ' + HUGE + "}", "a number too long to read (5000 digits; at most 4300)"),
    ("[-" + HUGE + "]", "a number too long to read (5000 digits"),
    (b"\xff{}", "not JSON (not UTF-8 text: byte 0)"),
    (b'{"a": "\xc3"}', "not JSON (not UTF-8 text: byte 7)"),
    ('{"a": 1,}', "not JSON (line 1, column 9: Expecting property name"),
    ("[1,\n2,,]", "not JSON (line 2, column 3: Expecting value)"),
    ("", "not JSON (line 1, column 1: Expecting value)"),
    ("NaN-ish", "not JSON (line 1, column 4: Extra data)"),
])
def test_each_way_json_fails_is_the_callers_error(data: str | bytes, needle: str) -> None:
    with pytest.raises(ServiceError) as info:
        load_json(data, ServiceError, label="the answer of http://x", hint="Ask the operator.")
    err = info.value
    assert type(err) is ServiceError and err.exit_code == 13
    assert err.message.startswith("the answer of http://x: ") and needle in err.message
    assert err.hint == "Ask the operator."
    assert len(err.message) < 200  # the input is never quoted


@pytest.mark.parametrize("error", [ProbeError, UsageError, PinError])
def test_the_error_class_is_the_one_given(error: type[PinError]) -> None:
    with pytest.raises(error) as info:
        load_json(DEEP, error, label="x")
    assert type(info.value) is error


def test_the_depth_bound_is_exact_and_strings_do_not_count() -> None:
    at = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert load_json(at, UsageError, label="x") is not None
    with pytest.raises(UsageError, match="more than 512 levels"):
        load_json("[" + at + "]", UsageError, label="x")
    in_string = '{"s": "' + "[{" * 5_000 + '\\"' + "[" * 600 + '"}'
    assert load_json(in_string, UsageError, label="x")["s"].startswith("[{[{")
    assert load_json('["\\\\", ' + at + "]", UsageError, label="x", max_depth=513)[0] == "\\"


def test_long_digit_runs_that_are_not_integers_still_read() -> None:
    assert load_json('{"s": "' + HUGE + '"}', UsageError, label="x") == {"s": HUGE}
    assert load_json("[0." + HUGE + "]", UsageError, label="x") == [0.7777777777777778]
    limit = sys.get_int_max_str_digits()
    assert load_json("9" * limit, UsageError, label="x") == int("9" * limit)


def test_a_bom_is_skipped_in_bytes_as_json_loads_does() -> None:
    assert load_json(b"\xef\xbb\xbf[1]", UsageError, label="x") == [1]
    with pytest.raises(UsageError, match="Unexpected UTF-8 BOM"):
        load_json("\ufeff[1]", UsageError, label="x")


def test_hooks_are_passed_and_what_they_raise_passes_through() -> None:
    class Twice(Exception):
        pass

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise Twice
        return dict(pairs)

    with pytest.raises(Twice):
        load_json('{"a": 1, "a": 2}', UsageError, label="x", object_pairs_hook=unique)

    def no_constant(name: str) -> None:
        raise ValueError(name)

    with pytest.raises(ValueError, match="NaN"):
        load_json("[NaN]", UsageError, label="x", parse_constant=no_constant)
    assert load_json("[1.5]", UsageError, label="x", parse_float=str) == ["1.5"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ax\n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(alphabet='[]{}"\\k'), inner, max_size=3),
    max_leaves=30)


def _nesting(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    return 0


@given(json_values)
def test_the_depth_scan_measures_what_the_parser_nests(value: Any) -> None:
    text = json.dumps(value)
    assert _depth(text.encode(), 10**9) == _nesting(value)
    assert load_json(text, UsageError, label="x", max_depth=_nesting(value)) == value


@settings(max_examples=300)
@given(st.one_of(st.text(), st.binary(),
                 st.text(alphabet='[]{}"\\,:0123456789-.eE tfnrue\n', max_size=2_000)))
def test_arbitrary_input_is_a_value_or_the_given_error(data: str | bytes) -> None:
    try:
        load_json(data, ProbeError, label="arbitrary")
    except ProbeError as err:
        assert err.message.startswith("arbitrary: ")


# Files that may still call json.loads / json.load themselves, and why.
_OWN_PARSE = {
    "pinning/util/jsonread.py": "the bounded parse itself",
    "pinning/accept/harness/import_probe.py": "runs in the environment under test: stdlib only",
    "pinning/guards/inbuild.py": "runs inside the image build: stdlib only",
    "pinning/probe/digestcache.py": "pin's own hash cache; any failure is an empty cache",
    "pinning/probe/formats/split.py": "raw_decode: a JSON prefix in a pasted dump; any failure "
                                      "(ValueError, RecursionError) is no JSON there",
    "pinning/probe/formats/packages.py": "raw_decode, as split.py; FormatError on any failure",
    "pinning/project/load.py": "model_validate_json of pin's own json.dumps of a parsed TOML "
                               "table (pydantic's strict JSON mode), never of a file's bytes",
}


def test_every_other_json_reader_goes_through_the_bounded_parse() -> None:
    call = re.compile(r"\bjson\.loads?\(|\.raw_decode\(|model_validate_json\(")
    found = {str(p.relative_to(ROOT)) for p in (ROOT / "pinning").rglob("*.py")
             if call.search(p.read_text(encoding="utf-8"))}
    assert found <= set(_OWN_PARSE), sorted(found - set(_OWN_PARSE))


def test_a_control_character_is_named_without_a_dangling_at() -> None:
    """The stdlib's message "Invalid control character at" is cut before its position: the
    paragraph says what and where once.
    """
    with pytest.raises(PinError) as info:
        load_json(b'{"a": "x\x01y"}', PinError, label="n1.json")
    assert info.value.message == ("n1.json: not JSON (line 1, column 9: Invalid control "
                                  "character).")
