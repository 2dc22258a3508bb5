"""The one version dialect of pin, and PEP 503 names.

Vendors write versions in three shapes, and pin compares each the way its source means it:

- **PEP 440** (framework releases, specifiers such as ``>=2.9.1``): :func:`pep440`,
  :func:`in_specifier` (local labels such as ``+rocm7.1`` ignored) and :func:`match_entry`,
  where a two-part matrix entry (``2.9``) stands for the whole 2.9.x series.
- **Dotted numbers** (driver versions ``580.95.05``, PLDM bundles ``01.25.03.12``, ROCm
  releases): :func:`numeric_parts`, :func:`at_least`, :func:`series_less` and
  :func:`sort_key`.
- **Allowed sets** written in a lock (``6.4.x``, ``2.7``, ``01.25.05.00 (or later)``,
  ``>=525,<580``): :func:`allowed_contains`, :func:`constraint_bounds`,
  :func:`constraint_holds`.

Every function is pure and total: text that is not a version gives ``None`` (unknown), never
an exception, and so does text past the bounds below (Python refuses ``int()`` of more than
4,300 digits, and no vendor writes such a version). Property tests in
``tests/unit/util/test_versions.py`` and ``test_versions_bounds.py`` state the laws.

**Bounds.** A version is at most :data:`MAX_VERSION_CHARS` (64) characters and none of its
numbers has more than :data:`MAX_NUMBER_DIGITS` (18) digits; a specifier is at most
:data:`MAX_SPECIFIER_CHARS` (256) characters. :func:`version_problem` and
:func:`specifier_problem` say why a text is past them; pin checks them where versions enter
(command-line flags: exit 2, matrix and overlay files: exit 3, locks: exit 5, host
snapshots: exit 7), each naming the flag, file or field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Set
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the bounds checks and dotted numbers need neither
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

MAX_VERSION_CHARS = 64
"""The most characters a version may have (``01.25.03.12``, ``2.7.0+rocm6.3`` are ~15)."""
MAX_NUMBER_DIGITS = 18
"""The most digits one number of a version may have (a date-stamp ``20260121`` has 8)."""
MAX_SPECIFIER_CHARS = 256
"""The most characters a version specifier (``>=7.0,<8,!=7.0.1``) may have."""

_LONG_NUMBER = re.compile(f"[0-9]{{{MAX_NUMBER_DIGITS + 1},}}")
_NUMBER = re.compile(f"[0-9]{{1,{MAX_NUMBER_DIGITS}}}")


def version_problem(text: str) -> str | None:
    """Why ``text`` is past the version bounds (``"5000 characters, more than the 64 a
    version may have"``), or ``None`` when it is within them (it may still not be a version).
    """
    if len(text) > MAX_VERSION_CHARS:
        return f"{len(text)} characters, more than the {MAX_VERSION_CHARS} a version may have"
    m = _LONG_NUMBER.search(text)
    if m:
        return (f"a number of {len(m.group(0))} digits, more than the {MAX_NUMBER_DIGITS} a "
                "version may have")
    return None


def specifier_problem(text: str) -> str | None:
    """Why the specifier ``text`` (``>=7.0,<8``) is past the bounds: longer than
    :data:`MAX_SPECIFIER_CHARS`, or a clause whose version is past :func:`version_problem`'s;
    ``None`` when it is within them (it may still not be a specifier).
    """
    if len(text) > MAX_SPECIFIER_CHARS:
        return (f"{len(text)} characters, more than the {MAX_SPECIFIER_CHARS} a version "
                "specifier may have")
    for clause in text.split(","):
        problem = version_problem(clause.strip().lstrip("=!<>~ "))
        if problem:
            return problem
    return None


#: The keys of a probed value (``pinning.probe.models.Reading``).
_READING_KEYS = frozenset({"value", "source", "reason", "absent"})


def _value_problems(node: Any, path: str) -> Iterator[str]:
    """``path: problem`` for the version strings of ``node``, the value of a version field:
    a string, a list of strings, a locked or probed value (``{value, allowed, constraint}``,
    ``{value, source}``) or a map of versions (``packages``: name -> version).
    """
    if isinstance(node, str):
        problem = version_problem(node)
        if problem:
            yield f"{path}: {problem}"
    elif isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, str):
                yield from _value_problems(item, f"{path}[{i}]")
    elif isinstance(node, dict) and ("value" in node or "origin" in node or (
            node.keys() <= _READING_KEYS and ("reason" in node or "source" in node))):
        # A probed value without a value ({source, reason}): its reason is prose, not a
        # version, so only ``value`` is judged.
        yield from _value_problems(node.get("value"), f"{path}.value")
        yield from _value_problems(node.get("allowed"), f"{path}.allowed")
        constraint = node.get("constraint")
        problem = specifier_problem(constraint) if isinstance(constraint, str) else None
        if problem:
            yield f"{path}.constraint: {problem}"
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str):
                yield from _value_problems(value, f"{path}.{key}")


def version_fields_problem(data: Any, versions: Set[str], specifiers: Set[str] = frozenset(),
                           *, skip: Set[str] = frozenset({"unknown"})) -> str | None:
    """The first ``field.path: problem`` for a version past the bounds in the parsed file
    ``data`` (TOML or JSON: dicts, lists, scalars), or ``None``.

    A field whose key is in ``versions`` (at any depth) holds versions: a string, a list of
    strings, a ``{value, allowed, constraint}`` record or a map of versions; one whose key
    is in ``specifiers`` holds a specifier (or a list of ``NAME SPEC`` strings). Fields under
    a key in ``skip`` are not looked at (``unknown`` maps field names to reasons, in words).
    Paths read ``frameworks[0].version.value``. Iterative, so a deeply nested file cannot
    exhaust the stack; callers raise their own ``PinError`` naming the file.
    """
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, node = stack.pop()
        items: list[tuple[str, Any]] = []
        if isinstance(node, dict):
            node = {k: v for k, v in node.items() if k not in skip}
            items = [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
            for (child, value), key in zip(items, node, strict=True):
                if key in versions:
                    problem = next(_value_problems(value, child), None)
                    if problem:
                        return problem
                if key in specifiers:
                    for i, spec in enumerate([value] if isinstance(value, str) else
                                             value if isinstance(value, list) else []):
                        problem = specifier_problem(spec) if isinstance(spec, str) else None
                        if problem:
                            where = child if isinstance(value, str) else f"{child}[{i}]"
                            return f"{where}: {problem}"
        elif isinstance(node, list):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
        stack.extend(reversed([(p, v) for p, v in items if isinstance(v, dict | list)]))
    return None


def _number(part: str) -> int | None:
    """``part`` as an int when it is 1 to 18 ASCII digits (``'²'.isdigit()`` is true, but
    ``int('²')`` fails), else ``None``.
    """
    return int(part) if _NUMBER.fullmatch(part) else None


# --- PEP 503 names -----------------------------------------------------------------------


def normalize_name(name: str) -> str:
    """PEP 503 normalisation of a distribution name (``Pytorch_Triton.ROCm`` ->
    ``pytorch-triton-rocm``).
    """
    return re.sub(r"[-_.]+", "-", name).lower()


# --- PEP 440 -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def pep440(text: str) -> Version | None:
    """``text`` as a PEP 440 :class:`Version`, or ``None`` when it is not one or is past the
    bounds (:func:`version_problem`). Cached: the resolver asks for the same matrix
    versions once per candidate release.
    """
    if version_problem(text) is not None:
        return None
    from packaging.version import Version

    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a number int() refuses
        return None


def in_specifier(version: str, spec: str) -> bool | None:
    """Whether ``version`` (its local label, e.g. ``+rocm6.4``, ignored) satisfies the PEP
    440 specifier ``spec``; an empty ``spec`` holds for every version. ``None`` when
    ``version`` is not PEP 440 or ``spec`` is not a specifier.
    """
    if not spec:
        return True
    if version_problem(version) is not None or specifier_problem(spec) is not None:
        return None
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    try:
        return Version(version.split("+")[0]) in SpecifierSet(spec)
    except ValueError:  # InvalidVersion, InvalidSpecifier, or a number int() refuses
        return None


@functools.lru_cache(maxsize=8192)
def match_entry(entry: str, spec: SpecifierSet) -> str | None:
    """The version to lock if the matrix ``entry`` satisfies ``spec``, else ``None``.

    ``2.9.1`` is one release; a two-part entry such as ``2.9`` is the whole 2.9 series: it
    matches when some 2.9.x satisfies ``spec``, and an exact ``==2.9.1`` request locks 2.9.1.
    An entry that is not PEP 440 matches only an empty specifier; ``None`` when ``spec``
    holds a version past the bounds (:func:`specifier_problem`).
    """
    if specifier_problem(str(spec)) is not None:
        return None
    try:
        return _match_entry(entry, spec)
    except ValueError:  # a clause whose version int() refuses
        return None


def _match_entry(entry: str, spec: SpecifierSet) -> str | None:
    """:func:`match_entry` for a ``spec`` within the bounds."""
    v = pep440(entry)
    if v is None:
        return entry if not str(spec) else None
    if len(v.release) >= 3:
        return entry if spec.contains(v, prereleases=True) else None
    probes = [v]
    exact: Version | None = None
    for s in spec:
        sv = pep440(s.version.removesuffix(".*"))
        if sv is not None and sv.release[: len(v.release)] == v.release:
            probes.append(sv)
            if s.operator in ("==", "===") and not s.version.endswith(".*"):
                exact = sv
    if exact is not None:
        return str(exact) if spec.contains(exact, prereleases=True) else None
    return entry if any(spec.contains(p, prereleases=True) for p in probes) else None


# --- dotted numbers ----------------------------------------------------------------------


def numeric_parts(version: str) -> tuple[int, ...]:
    """``580.95.05`` -> ``(580, 95, 5)``; stops at the first part (split on ``.``, ``-``,
    ``+``) that is not all digits, so ``6.16.6-2124`` -> ``(6, 16, 6, 2124)`` and
    ``7.1.1rc`` -> ``(7, 1)``. A part of more than 18 digits also ends it, and a
    ``version`` past the bounds (:func:`version_problem`) gives ``()``.
    """
    if len(version) > MAX_VERSION_CHARS:
        return ()
    out = []
    for part in re.split(r"[.\-+]", version.strip()):
        number = _number(part)
        if number is None:
            break
        out.append(number)
    return tuple(out)


def at_least(value: str, minimum: str) -> bool | None:
    """Dotted numeric ``value >= minimum`` (drivers, PLDM bundles); ``None`` if either has
    no leading number.
    """
    a, b = numeric_parts(value), numeric_parts(minimum)
    if not a or not b:
        return None
    return a >= b


def series_less(a: str, b: str) -> bool:
    """``a`` < ``b`` for ROCm versions where ``6.3`` means the whole 6.3.x series: true only
    when every release of ``a`` precedes every release of ``b``.
    """
    pa, pb = numeric_parts(a), numeric_parts(b)
    n = min(len(pa), len(pb))
    return pa[:n] < pb[:n]


@functools.lru_cache(maxsize=8192)
def sort_key(version: str) -> tuple[int, ...]:
    """Numeric sort key of a dotted release (``'7.0.10'`` > ``'7.0.9'``); a part that is not
    1 to 18 ASCII digits counts as 0. Used to order matrix releases, never to judge a host.
    """
    return tuple(_number(p) or 0 for p in version.split("."))


# --- allowed sets in a lock --------------------------------------------------------------


def or_later(entry: str) -> tuple[str, bool]:
    """``'01.25.05.00 (or later)'`` -> ``('01.25.05.00', True)``; other entries -> ``(entry,
    False)`` (stripped).
    """
    text = entry.strip()
    if text.endswith("(or later)"):
        return text[: -len("(or later)")].strip(), True
    return text, False


def allowed_contains(allowed: Iterable[str], value: str) -> bool:
    """True when ``value`` is one of ``allowed``: equal, inside an ``x``-series
    (``6.4.x``), inside a two-part series (``2.7`` holds every 2.7.x) or at/above an
    ``(or later)`` entry.
    """
    for entry in allowed:
        base, later = or_later(entry)
        if value == base:
            return True
        if base.endswith(".x") and value.startswith(base[:-1]):
            return True
        if re.fullmatch(r"\d+\.\d+", base) and value.startswith(base + "."):
            return True
        if later and at_least(value, base):
            return True
    return False


def constraint_bounds(constraint: str) -> tuple[str | None, str | None]:
    """``(">=" bound, "<" bound)`` of a constraint such as ``>=525,<580`` (either may be
    ``None``); clauses of other shapes are ignored.
    """
    low = high = None
    for clause in constraint.split(","):
        m = re.fullmatch(r"\s*(>=|<)\s*([0-9][0-9.]*)\s*", clause)
        if m and m.group(1) == ">=":
            low = m.group(2)
        elif m:
            high = m.group(2)
    return low, high


def constraint_holds(constraint: str, value: str) -> bool | None:
    """Whether dotted ``value`` meets the lower bound of ``constraint`` (``>=580``);
    ``None`` if there is none or ``value`` is not numeric. The upper bound is separate.
    """
    low, _high = constraint_bounds(constraint)
    return at_least(value, low) if low else None
