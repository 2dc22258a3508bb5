"""The one version dialect: laws that hold for every input (hypothesis), and the examples
each shape is written for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from pinning.util.digests import canonical_digest, canonical_json, sha256_digest, sha256_hex
from pinning.util.versions import (
    allowed_contains,
    at_least,
    constraint_bounds,
    constraint_holds,
    in_specifier,
    match_entry,
    normalize_name,
    numeric_parts,
    or_later,
    pep440,
    series_less,
    sort_key,
)

parts = st.lists(st.integers(min_value=0, max_value=999), min_size=1, max_size=4)
dotted = parts.map(lambda p: ".".join(str(x) for x in p))


@given(st.text())
def test_every_function_is_total(text: str) -> None:
    # Text that is not a version gives None or False, never an exception.
    numeric_parts(text)
    at_least(text, text)
    series_less(text, "7.0")
    sort_key(text)
    pep440(text)
    in_specifier(text, ">=1")
    in_specifier("1.0", text)
    or_later(text)
    allowed_contains([text], "1.0")
    constraint_bounds(text)
    constraint_holds(text, "1.0")
    normalize_name(text)


@given(dotted, dotted)
def test_at_least_is_the_numeric_order(a: str, b: str) -> None:
    assert at_least(a, b) == (numeric_parts(a) >= numeric_parts(b))
    assert at_least(a, a) is True
    if at_least(a, b) and at_least(b, a):
        assert numeric_parts(a) == numeric_parts(b)


@given(dotted, dotted, dotted)
def test_at_least_is_transitive(a: str, b: str, c: str) -> None:
    if at_least(a, b) and at_least(b, c):
        assert at_least(a, c)


@given(parts)
def test_leading_zeros_do_not_matter(p: list[int]) -> None:
    plain = ".".join(str(x) for x in p)
    padded = ".".join(f"{x:02d}" for x in p)
    assert numeric_parts(plain) == numeric_parts(padded)
    assert at_least(plain, padded) and at_least(padded, plain)


@given(dotted, dotted)
def test_series_less_is_strict_and_asymmetric(a: str, b: str) -> None:
    assert not series_less(a, a)
    assert not (series_less(a, b) and series_less(b, a))


@given(parts, st.integers(min_value=0, max_value=99))
def test_a_series_is_not_less_than_its_own_releases(p: list[int], extra: int) -> None:
    series = ".".join(str(x) for x in p)
    release = f"{series}.{extra}"
    assert not series_less(series, release)
    assert not series_less(release, series)


@given(dotted, dotted)
def test_sort_key_orders_like_numbers(a: str, b: str) -> None:
    assert (sort_key(a) < sort_key(b)) == (
        tuple(int(x) for x in a.split(".")) < tuple(int(x) for x in b.split(".")))


@given(st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,20}[A-Za-z0-9])?", fullmatch=True))
def test_normalize_name_is_idempotent_and_canonical(name: str) -> None:
    once = normalize_name(name)
    assert normalize_name(once) == once
    assert once == once.lower() and "_" not in once and "." not in once and "--" not in once


@given(dotted, st.integers(min_value=0, max_value=99))
def test_an_x_series_holds_its_releases(series: str, extra: int) -> None:
    assert allowed_contains([series + ".x"], f"{series}.{extra}")
    assert allowed_contains([series], series)


@given(dotted, dotted)
def test_or_later_holds_everything_at_or_above(base: str, value: str) -> None:
    assert allowed_contains([f"{base} (or later)"], value) == (
        value == base or bool(at_least(value, base)))


@given(dotted, dotted)
def test_constraint_lower_bound(low: str, value: str) -> None:
    assert constraint_holds(f">={low}", value) == at_least(value, low)
    assert constraint_bounds(f">={low},<999999")[0] == low


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_local_labels_are_ignored_by_specifiers(major: int, minor: int, micro: int) -> None:
    v = f"{major}.{minor}.{micro}"
    assert in_specifier(v + "+rocm7.1", f"=={v}") is True
    assert in_specifier(v + "+cu130", f"=={v}") is True
    assert in_specifier(v, "") is True


@given(st.integers(0, 30), st.integers(0, 30), st.integers(1, 30))
def test_a_two_part_entry_is_a_series(major: int, minor: int, micro: int) -> None:
    series = f"{major}.{minor}"
    exact = f"{series}.{micro}"
    assert match_entry(series, SpecifierSet(f"=={exact}")) == exact
    assert match_entry(series, SpecifierSet(f">={series}")) == series
    # PEP 440 pads with zeros (2.9.0 == 2.9), so only a non-zero micro release differs.
    assert match_entry(exact, SpecifierSet(f"=={series}")) is None
    assert match_entry(exact, SpecifierSet("")) == exact


def test_the_shapes_vendors_write() -> None:
    assert numeric_parts("580.95.05") == (580, 95, 5)
    assert numeric_parts("6.16.6-2124") == (6, 16, 6, 2124)
    assert at_least("01.25.03.12", "01.25.02.04") is True
    assert at_least("n/a", "1") is None
    assert series_less("6.3", "6.4.1") and not series_less("6.4", "6.4.1")
    assert sort_key("7.0.10") > sort_key("7.0.9")
    assert or_later("01.25.05.00 (or later)") == ("01.25.05.00", True)
    assert allowed_contains(["6.4.x"], "6.4.3") and not allowed_contains(["6.4.x"], "6.5.0")
    assert allowed_contains(["2.7"], "2.7.1") and not allowed_contains(["2.7"], "2.8.0")
    assert constraint_bounds(">=525,<580") == ("525", "580")
    assert normalize_name("Pytorch_Triton.ROCm") == "pytorch-triton-rocm"
    assert pep440("2.9.1+rocm6.4") is not None and pep440("not a version") is None


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=10))
def test_canonical_json_is_order_free_and_hashes_consistently(doc: object) -> None:
    again = canonical_json(doc)
    assert canonical_json(doc) == again
    assert canonical_digest(doc) == sha256_digest(again)
    assert sha256_digest(again) == "sha256:" + sha256_hex(again)
    if isinstance(doc, dict):
        reordered = dict(reversed(list(doc.items())))
        assert canonical_json(reordered) == again
    assert canonical_json("é") == '"é"'.encode()
    assert canonical_json("é", ascii_only=True) == b'"\\u00e9"'
