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
an exception. Property tests in ``tests/unit/util/test_versions.py`` state the laws.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# --- PEP 503 names -----------------------------------------------------------------------


def normalize_name(name: str) -> str:
    """PEP 503 normalisation of a distribution name (``Pytorch_Triton.ROCm`` ->
    ``pytorch-triton-rocm``).
    """
    return re.sub(r"[-_.]+", "-", name).lower()


# --- PEP 440 -----------------------------------------------------------------------------


def pep440(text: str) -> Version | None:
    """``text`` as a PEP 440 :class:`Version`, or ``None`` when it is not one."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def in_specifier(version: str, spec: str) -> bool | None:
    """Whether ``version`` (its local label, e.g. ``+rocm6.4``, ignored) satisfies the PEP
    440 specifier ``spec``; an empty ``spec`` holds for every version. ``None`` when
    ``version`` is not PEP 440 or ``spec`` is not a specifier.
    """
    if not spec:
        return True
    try:
        return Version(version.split("+")[0]) in SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        return None


def match_entry(entry: str, spec: SpecifierSet) -> str | None:
    """The version to lock if the matrix ``entry`` satisfies ``spec``, else ``None``.

    ``2.9.1`` is one release; a two-part entry such as ``2.9`` is the whole 2.9 series: it
    matches when some 2.9.x satisfies ``spec``, and an exact ``==2.9.1`` request locks 2.9.1.
    An entry that is not PEP 440 matches only an empty specifier.
    """
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
    ``7.1.1rc`` -> ``(7, 1)``.
    """
    out = []
    for part in re.split(r"[.\-+]", version.strip()):
        if not part.isdigit():
            break
        out.append(int(part))
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


def sort_key(version: str) -> tuple[int, ...]:
    """Numeric sort key of a dotted release (``'7.0.10'`` > ``'7.0.9'``); a part that is not
    all digits counts as 0. Used to order matrix releases, never to judge a host.
    """
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


# --- allowed sets in a lock --------------------------------------------------------------


def or_later(entry: str) -> tuple[str, bool]:
    """``'01.25.05.00 (or later)'`` -> ``('01.25.05.00', True)``; other entries -> ``(entry,
    False)`` (stripped).
    """
    m = re.match(r"\s*(.*?)\s*\(or later\)\s*$", entry)
    return (m.group(1), True) if m else (entry.strip(), False)


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
