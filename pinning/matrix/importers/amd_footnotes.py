"""Read the footnotes of AMD's compatibility-matrix page as rules.

Source: the footnotes (``.. [#name] text``) of ``ROCm/ROCm:docs/compatibility/
compatibility-matrix.rst`` (https://rocm.docs.amd.com/en/latest/compatibility/
compatibility-matrix.html), attached to cells and row labels of the historical CSV. The
shapes AMD writes, each turned into a rule here:

- ``For ROCm 6.1.2 - MI300A (gfx942) is supported on Ubuntu 22.04.4, RHEL 9.4, ... and SLES 15
  SP5. MI300X (gfx942) is only supported on Ubuntu 22.04.4 and Oracle Linux.``: per GPU, the
  only OSes (``only-these-os``), and, as the footnote names the gfx target only through these
  products, the target only as them (``only-these-gpus``: another gfx942 product, MI325X or
  MI308X, gets no OS on that release); ``... is supported on listed operating systems
  *except* Ubuntu 22.04.5 [6.8 HWE] ...``: OSes excluded (``not-these-os``).
- ``Oracle Linux and Azure Linux are supported only on AMD Instinct MI300X.`` (on an OS cell):
  that cell's OSes only on those GPUs (``os-only-on-gpus``).
- ``DGL is supported only on ROCm 7.0.0, ROCm 6.4.3 and ROCm 6.4.0.`` (on a framework row
  label): the releases the framework is validated on.
- ``TensorFlow 2.17.1 is not supported on AMD Instinct MI350 Series GPUs.`` (on a version in a
  framework cell): that version not on the series' gfx targets.

A footnote of another shape is not a rule: the importer keeps its text as a note on every
release it touches, so a lock that uses such a release prints it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pinning.matrix.names import GPU_SERIES, SERIES_TARGETS, series_key

_FOR_ROCM = re.compile(r"^For ROCm (?P<v>[0-9][0-9.]*) - (?P<rest>.+)$")
_GPU_SENTENCE = re.compile(
    r"^(?P<gpu>MI[0-9]{3}[A-Z]?) \((?P<target>gfx[0-9a-f]+)\) is (?P<only>only )?"
    r"supported on (?P<list>.+)$"
)
_EXCEPT = re.compile(r"^listed operating systems except (?P<list>.+)$")
_OS_ONLY_ON = re.compile(
    r"^(?P<oses>[A-Z][A-Za-z0-9 .]*?) (?:are|is) supported only on AMD Instinct "
    r"(?P<gpus>MI[0-9]{3}[A-Z]?(?:(?:, | and )MI[0-9]{3}[A-Z]?)*)(?P<qual> for [^.]+)?\.?$"
)
_ONLY_ON_ROCM = re.compile(r"^(?P<what>.+?) (?:is|are) supported only on (?P<list>ROCm .+?)\.?$")
_NOT_ON_SERIES = re.compile(
    r"^(?P<fw>[A-Za-z][A-Za-z0-9 .-]*?) (?P<ver>[0-9][0-9.]*) is not supported on AMD Instinct "
    r"(?P<series>MI[0-9]{3} Series) GPUs\."
)
_BRACKET = re.compile(r"(?<!\s)\s*\[([^\][]*)\]")  # linear: each run of blanks tried once
_SPLIT_LIST = re.compile(r",\s*(?:and\s+)?|\s+and\s+")


@dataclass
class OsRule:
    """One OS restriction read from a footnote (the fields of ``OsRestriction``)."""

    mode: Literal["only-these-os", "not-these-os", "os-only-on-gpus", "only-these-gpus"]
    gpus: list[str]
    os: list[str]
    runtime: str
    footnote: str
    note: str | None = None
    targets: list[str] = field(default_factory=list)


@dataclass
class SeriesExclusion:
    """``TensorFlow 2.17.1 is not supported on MI350 Series``: version, gpu ids, targets."""

    version: str
    series: str
    gpus: tuple[str, ...]
    targets: tuple[str, ...]
    text: str
    extra: list[str] = field(default_factory=list)


def plain(text: str) -> str:
    """The footnote text without RST emphasis (``**``, ``*``)."""
    return text.replace("**", "").replace("*", "").strip()


def _os_items(items: str, column_os: list[str], parse: OsParser
              ) -> tuple[list[str], list[str]]:
    """OS ids of ``'Ubuntu 22.04.4, RHEL 9.4, and SLES 15 SP5'`` and bracketed qualifiers.

    A family written without a version (``Oracle Linux``) stands for the column's entries of
    that family. Raises ``ValueError`` for an item that is no OS.
    """
    out: list[str] = []
    quals: list[str] = []
    for raw in _SPLIT_LIST.split(items.strip().rstrip(".")):
        item = raw.strip()
        if not item:
            continue
        quals += [f"{_BRACKET.sub('', item).strip()} [{q}]" for q in _BRACKET.findall(item)]
        item = _BRACKET.sub("", item).strip()
        family = parse.family(item)
        if family is not None:
            hits = [o for o in column_os if o.split("-", 1)[0] == family]
            if not hits:
                raise ValueError(f"{item!r}: the column lists no {item}")
            out += hits
        else:
            out += parse.ids(item)
    return out, quals


class OsParser:
    """Turns AMD's OS names into os-release ids (wraps ``amd_csv.parse_os_cell``)."""

    def __init__(self, families: dict[str, str], parse_cell: Callable[[str], list[str]]) -> None:
        self._families = families
        self._parse = parse_cell

    def family(self, item: str) -> str | None:
        """The os-release ``ID`` when ``item`` is a bare family name (``Oracle Linux``)."""
        return self._families.get(item.lower())

    def ids(self, item: str) -> list[str]:
        """``'SLES 15 SP5'`` -> ``['sles-15.5']``; ``ValueError`` when it is no OS."""
        try:
            return self._parse(item)
        except Exception as exc:  # MatrixError: not an OS item
            raise ValueError(str(exc)) from exc


def os_rules(name: str, text: str, *, versions: list[str], column_os: list[str],
             cell_os: list[str], parse: OsParser) -> list[OsRule] | None:
    """The OS restrictions footnote ``name`` (text ``text``) states for a column of ROCm
    ``versions`` whose OS cells are ``column_os``; ``cell_os`` are the OSes of the cell the
    footnote is attached to (empty on a GPU-target cell). ``None`` when the footnote is not
    an OS restriction pin can read.
    """
    body = plain(text)
    m = _FOR_ROCM.match(body)
    if m:
        return _per_gpu_rules(name, m.group("v"), m.group("rest"), column_os, parse)
    m2 = _OS_ONLY_ON.match(body)
    if m2 and cell_os:
        gpus = [g.lower() for g in re.findall(r"MI[0-9]{3}[A-Z]?", m2.group("gpus"))]
        qual = m2.group("qual")
        note = f"AMD: {body}" if qual else None
        return [OsRule("os-only-on-gpus", gpus, list(cell_os), v, name, note) for v in versions]
    return None


def _per_gpu_rules(name: str, version: str, rest: str, column_os: list[str],
                   parse: OsParser) -> list[OsRule] | None:
    rules: list[OsRule] = []
    targets: list[str] = []
    for sentence in re.split(r"\.\s+(?=[A-Z])", rest.strip()):
        sm = _GPU_SENTENCE.match(sentence.strip().rstrip("."))
        if not sm:
            return None
        gpu = sm.group("gpu").lower()
        targets += [sm.group("target")] if sm.group("target") not in targets else []
        listed = sm.group("list")
        try:
            em = _EXCEPT.match(listed)
            if em:
                oses, quals = _os_items(em.group("list"), column_os, parse)
                note = (f"AMD excludes only {', '.join(quals)} kernels; pin cannot tell the "
                        "kernel flavour at resolve time and excludes the OS version"
                        if quals else None)
                rules.append(OsRule("not-these-os", [gpu], oses, version, name, note))
            else:
                oses, _ = _os_items(listed, column_os, parse)
                rules.append(OsRule("only-these-os", [gpu], oses, version, name))
        except ValueError:
            return None
    if rules and all(r.mode == "only-these-os" for r in rules):
        oses = list(dict.fromkeys(o for r in rules for o in r.os))
        rules.append(OsRule("only-these-gpus", [g for r in rules for g in r.gpus], oses,
                            version, name, targets=targets))
    return rules or None


def only_on_rocm(text: str) -> list[str] | None:
    """``'DGL is supported only on ROCm 7.0.0, ROCm 6.4.3 and ROCm 6.4.0.'`` ->
    ``['7.0.0', '6.4.3', '6.4.0']`` (``6.4.x`` kept as written); ``None`` for another shape.
    """
    m = _ONLY_ON_ROCM.match(plain(text))
    if not m:
        return None
    out: list[str] = []
    for item in _SPLIT_LIST.split(m.group("list")):
        v = item.strip().removeprefix("ROCm").strip()
        if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)*(?:\.x)?", v):
            return None
        out.append(v)
    return out or None


def version_listed(patterns: list[str], version: str) -> bool:
    """True when ROCm ``version`` is one of ``patterns`` (``6.4.x`` is the 6.4 series)."""
    for p in patterns:
        if p.endswith(".x"):
            if version.startswith(p[:-1]):
                return True
        elif p == version:
            return True
    return False


def series_exclusion(text: str) -> SeriesExclusion | None:
    """``'TensorFlow 2.17.1 is not supported on AMD Instinct MI350 Series GPUs. ...'`` as a
    rule (the series' GPU ids and gfx targets), or ``None`` for another shape or a series
    pin's name tables do not hold.
    """
    body = plain(text)
    m = _NOT_ON_SERIES.match(body)
    if not m:
        return None
    key = series_key(m.group("series"))
    if key is None or key not in SERIES_TARGETS:
        return None
    return SeriesExclusion(version=m.group("ver"), series=m.group("series"),
                           gpus=GPU_SERIES[key], targets=SERIES_TARGETS[key], text=body)
