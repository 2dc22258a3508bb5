"""printable(): what a terminal would act on is shown as an escape, everything else as it is."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinning.util.text import control_chars, escape_char, is_word, json_safe, printable

HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}


@pytest.mark.parametrize("raw,shown", [
    ("\x1b[2K\x1b[1A", "\\x1b[2K\\x1b[1A"),            # CSI: erase line, cursor up
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),        # OSC: set the window title
    ("a\rb", "a\\x0db"),                              # carriage return: overwrite the line
    ("nul\x00", "nul\\x00"),
    ("del\x7f", "del\\x7f"),
    ("c1\x9b31m", "c1\\x9b31m"),                      # C1 CSI
    ("rtl\u202eevil", "rtl\\u202eevil"),              # bidi override
    ("iso\u2066x\u2069", "iso\\u2066x\\u2069"),       # bidi isolates
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("tag\U000e0041", "tag\\U000e0041"),             # invisible tag character
])
def test_controls_are_escaped(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(raw, newlines=False) == shown


def test_newline_and_tab_kept_in_a_paragraph_escaped_on_one_line() -> None:
    assert printable("a\n\tb") == "a\n\tb"
    assert printable("a\n\tb", newlines=False) == "a\\x0a\\x09b"


@pytest.mark.parametrize("text", [
    "plain ASCII: pin verify pin.lock", "gfx942 · ROCm 7.2 ✓ ✗ !", "ünïcödé MI300X",
    "日本語のテキスト", "emoji 🚀", "no-break\u00a0space", "",
])
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert printable(text) == text and printable(text, newlines=False) == text


@given(st.text())
def test_nothing_hidden_survives(text: str) -> None:
    for newlines in (True, False):
        out = printable(text, newlines=newlines)
        keep = "\n\t" if newlines else ""
        assert all(ch in keep or unicodedata.category(ch) not in HIDDEN for ch in out)
        if not newlines:
            assert "\n" not in out


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_identity_on_text_without_hidden_characters(text: str) -> None:
    assert printable(text, newlines=False) == text


def test_escape_char_widths() -> None:
    assert [escape_char(c) for c in "\x00\x9b\u202e\U000e0001"] == [
        "\\x00", "\\x9b", "\\u202e", "\\U000e0001"]


def test_control_chars_and_words() -> None:
    assert control_chars("a\nb\x1bc\n") == ["\\x0a", "\\x1b"]
    assert control_chars("a\nb\tc", allow="\n\t") == []
    assert control_chars("\u202e") == []  # a format character, not a control
    assert is_word("2.9.1+rocm7.2") and is_word("ünï")
    assert not any(is_word(w) for w in ["", "a b", "a\tb", "a\nb", "a\u2028b", "a\x00b",
                                        "a\u00a0b"])


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.characters(codec=None), max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
# Recursive text values are slow to draw on a loaded 2-CPU runner; the property, not the
# speed of drawing, is what this test checks.
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_json_safe_is_the_same_value_with_nothing_hidden(value: object) -> None:
    for indent in (None, 2):
        out = json_safe(json.dumps(value, indent=indent, ensure_ascii=False))
        assert json.loads(out) == value
        assert all(ch in "\n\t" or unicodedata.category(ch) not in HIDDEN for ch in out)


def test_json_safe_escapes_as_json_does() -> None:
    assert json_safe('"del\x7f c1\x9b rlo\u202e ls\u2028"') == \
        '"del\\u007f c1\\u009b rlo\\u202e ls\\u2028"'
    assert json_safe('"tag\U000e0041"') == '"tag\\udb40\\udc41"'
    assert json_safe('{"name": "caf\u00e9 \u4e2d"}') == '{"name": "caf\u00e9 \u4e2d"}'
