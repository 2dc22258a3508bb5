"""The linear-time check of regular expressions, and a scan that every pattern pin applies
to text (tool output, dumps, matrix sources, flags) passes it: a 64 KiB line of spaces in a
dump once took 30 s in ``pin doctor`` through ``(\\S.*?)\\s*$``."""

from __future__ import annotations

import ast
import re

import pytest

from tests.support.paths import ROOT
from tests.support.regex import adjacent_repeats

QUADRATIC = [
    r"^\s*ROCM-SMI version\s*:\s*(\S.*?)\s*$",
    r"^\s*([^:]+?)\s*:(.*)$",
    r"^(\s*)([A-Za-z0-9_ ]+?)\s*:",
    r"(.+?)\s+firmware version",
    r"\s*(\S+?)\s*(?:\[([^\]]*)\])?\s*",
    r"([a-z]+)\s*(?:\[[a-z]*\])?\s*==",
    r"a(?:\s+.*)?",
    r"^(\d+)\d*x",
    r"(?:a|b)*[ab]*c",
    r"^(?:\s+)?\s*$",  # an optional group around an unbounded repeat is unbounded
    r"^\s*(?:,|)\s*$",  # a group that can match empty does not separate the repeats
    r"^\s{0,65534}\s{0,65534}$",  # a bound over 255 counts as unbounded
    r"^(a+)+$",  # nested repeats: exponential
    r"^(?:a|a)*$",  # alternatives that start alike inside a repeat: exponential
]

LINEAR = [
    r"^\d+(\.\d+)*$",
    r"\S+(?: \S+)*",
    r"^-{3,}(\s+-{3,})*\s*$",
    r"^\s*GPU\[(\d+)\]\s*:\s*(\S.*|)$",
    r"^([^:：]+)[:：](.*)$",
    r"^(\s*)([^:\s][^:]*)::?(?:\s|$)(.*)$",
    r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s*\[[^\]]*\])?\s*===?\s*(\S+)",
    r"\s*+x\s*+",  # possessive: never gives characters back
    r"^GPU\s+(\d[\d,\s]*)(Compute Capability)?$",
]

SEARCH_QUADRATIC = [r"\s*\(UUID:[^)]*\)\s*$", r"\d+\.\d+", r"(\d+\.\d+)\s*$", r"[a-z]+x",
                    # "[#" * 10000: the repeat runs over every later "[#" start, then fails
                    r"\[#([^\]]*)\]_", r"(?<!\s)\s*\[#([^\]]*)\]_"]
SEARCH_LINEAR = [r"(?<!\d)\d+\.\d+", r"[-_.]+", r"\S+(?: \S+)*", r"^\s*x", r"CUDA\s+(\d+)",
                 r"(?<!\s)\s*\[#([^\][]*)\]_", r"HIP version\s*:\s*(\S+)",
                 r"NVIDIA UNIX (\S+) Kernel Module"]


@pytest.mark.parametrize("pattern", QUADRATIC)
def test_adjacent_overlapping_repeats_are_refused(pattern: str) -> None:
    problem = adjacent_repeats(pattern)
    assert problem is not None and "quadratic" in problem


@pytest.mark.parametrize("pattern", LINEAR)
def test_repeats_that_cannot_share_a_run_are_allowed(pattern: str) -> None:
    assert adjacent_repeats(pattern) is None
    assert adjacent_repeats(pattern, search=pattern.startswith("^")) is None


@pytest.mark.parametrize("pattern", SEARCH_QUADRATIC)
def test_a_search_that_starts_with_a_repeat_is_refused(pattern: str) -> None:
    problem = adjacent_repeats(pattern, search=True)
    assert problem is not None and "every character" in problem


@pytest.mark.parametrize("pattern", SEARCH_LINEAR)
def test_a_search_anchored_at_a_run_start_is_allowed(pattern: str) -> None:
    assert adjacent_repeats(pattern, search=True) is None


def test_not_a_pattern_raises_re_error() -> None:
    with pytest.raises(re.error):
        adjacent_repeats("(unclosed")


# -- every pattern in the package --------------------------------------------------------------

_ANCHORED = {"match", "fullmatch"}
_SEARCHING = {"search", "sub", "subn", "findall", "finditer", "split"}
# Calls whose pattern is not a literal, each reviewed: where it comes from and why it is linear.
_REVIEWED_NON_LITERAL = {
    ("fleet/shape.py", "b'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\\\.[0-7]'"):
        "fixed-width classes, no repeat; match() at one offset",
    ("guards/patterns.py", "pattern"): "a rule's package_pattern, checked by pattern_problem()",
    ("guards/conditions.py", "c.package_pattern"): "checked on load; names over 200 chars skipped",
    ("lockfile/models.py", "DIGEST_PATTERN"): "sha256:[0-9a-f]{64}, fullmatch",
    ("lockfile/multi.py", "TARGET_NAME_PATTERN"): "two classes, one bounded repeat, fullmatch",
    ("project/model.py", "pattern"): "_matching's argument: 3\\.[0-9]{1,2} or the lock's "
                                     "PYTHON_PLATFORM_PATTERN (alternatives of fixed words), "
                                     "fullmatch",
    ("probe/pyenv.py", "DIST_NAME_PATTERN"): "checked below as a module constant",
    ("util/versions.py", "f'[0-9]{{{MAX_NUMBER_DIGITS + 1},}}'"): "one class, one repeat",
    ("util/versions.py", "f'[0-9]{{1,{MAX_NUMBER_DIGITS}}}'"): "one class, bounded",
    ("guards/serving.py", "TARGET_PATTERN"): "checked below as a module constant",
    ("guards/serving.py",
     "f'^(?P<name>{_WORD})(?:==(?P<version>[^:\\\\s]+))?(?::(?P<backend>{_WORD}))?$'"):
        "the compiled _ATTENTION, checked below",
    ("guards/serving.py", "f'^(?P<method>{_WORD})(?::(?P<backend>{_WORD}))?$'"):
        "the compiled _QUANT, checked below",
    ("cli/render.py", "f'(?<![\\\\w-])({alts})(?![\\\\w-])'"):
        "an alternation of re.escape()d literal words between lookarounds: no repeat",
    ("cost/blocked.py", "'^\\\\s*' + re.escape(key) + '\\\\s*='"):
        "a re.escape()d TOML key between two single-class repeats, anchored",
    ("cost/blocked.py", "'^\\\\s*\\\\[\\\\[\\\\s*' + re.escape(table) + '\\\\s*\\\\]\\\\]'"):
        "a re.escape()d TOML table name between single-class repeats, anchored",
}


def _pattern_calls() -> list[tuple[str, int, str, ast.expr]]:
    """``(file, line, re function, pattern expression)`` for every ``re.<f>(pattern, ...)``."""
    calls = []
    for path in sorted((ROOT / "pinning").rglob("*.py")):
        name = path.relative_to(ROOT / "pinning").as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in _ANCHORED | _SEARCHING | {"compile"} and node.args):
                calls.append((name, node.lineno, node.func.attr, node.args[0]))
    return calls


def test_the_scan_finds_the_parsers() -> None:
    files = {name for name, _, _, _ in _pattern_calls()}
    assert {"probe/formats/rocm_smi.py", "probe/formats/collect_env.py",
            "probe/formats/rocminfo.py", "resolve/constraints.py"} <= files


# Compiled patterns used only with fullmatch (the scan checks every compiled pattern as a
# search, which these are not; each was reviewed for fullmatch).
_COMPILED_FOR_FULLMATCH = {
    ("image/plan.py", r"[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl"):
        "compiled, but only used with fullmatch: linear there",
    ("oci/reference.py",
     r"(?P<registry>(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?)/(?P<repository>"
     r"[a-z0-9._/-]+?)(?::(?P<tag>[\w.-]+))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?"):
        "compiled _GRAMMAR, only used with fullmatch: linear there",
}


def test_every_literal_pattern_in_pin_is_linear() -> None:
    problems = []
    for name, line, func, arg in _pattern_calls():
        if (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                and (name, arg.value) not in _COMPILED_FOR_FULLMATCH):
            # A compiled pattern may be used with .search later: checked as a search.
            problem = adjacent_repeats(arg.value, search=func not in _ANCHORED)
            if problem is not None:
                problems.append(f"pinning/{name}:{line}: {arg.value!r}: {problem}")
    assert problems == []


def test_every_non_literal_pattern_was_reviewed() -> None:
    found = {(name, ast.unparse(arg)) for name, _, _, arg in _pattern_calls()
             if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str))}
    assert found == set(_REVIEWED_NON_LITERAL)


def test_shared_name_patterns_are_linear() -> None:
    from pinning.guards import serving
    from pinning.lockfile.serving import TARGET_PATTERN
    from pinning.util.models import DIST_NAME_PATTERN, ENV_NAME_PATTERN

    for pattern in (DIST_NAME_PATTERN, ENV_NAME_PATTERN, TARGET_PATTERN,
                    serving._QUANT.pattern, serving._ATTENTION.pattern,
                    serving._EXTENSION.pattern):
        assert adjacent_repeats(pattern) is None, pattern

