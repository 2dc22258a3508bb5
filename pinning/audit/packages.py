"""pin's package knowledge: the ROCm status of the Python distributions users hit, and the
classifier that turns a declared package into a finding of the bill.

The knowledge lives in ``pinning/audit/data/packages.toml``, validated on load by
:class:`PackageFile`. A row matches a distribution by its PEP 503 name (``names``), by a name
prefix (``nvidia-``, ``cupy-cuda``) or suffix (``-cu12``), and optionally by a PEP 440
version specifier, the kind of its local version label (``+cu121`` is ``cuda``), the kind of
index the file names for it and an extra (``jax[cuda12]``). Every row names its public source
and the date that source carries, or why the date is unknown. A distribution no row matches
is ``no-data``: pin never guesses.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError, model_validator

from pinning.audit.indexes import LabelKind, index_kind, local_kind
from pinning.audit.model import Citation, Context, DeclaredPackage, Finding, Kind, Verdict
from pinning.errors import MatrixError
from pinning.util.files import read_toml
from pinning.util.models import DistName, FormatVersion, Reason, Strict, validation_summary
from pinning.util.versions import normalize_name, specifier_problem, version_problem

__all__ = [
    "DATA_FILE",
    "NO_DATA_RULE",
    "Knowledge",
    "PackageFile",
    "PackageRow",
    "load_knowledge",
]

DATA_FILE = "pinning/audit/data/packages.toml"
"""The shipped knowledge, as a path in pin's repository (named by no-data citations)."""

NO_DATA_RULE = "package.no-data"
"""Rule id of the finding for a distribution pin's data says nothing about."""

Status = Literal["ready", "swap", "port", "blocked"]
# pin's own engineering notes and workspace: never a source (the folder is matched as a path
# segment, ``shared``, so this file does not spell the path itself).
_FORBIDDEN_SOURCES = ("facts.md", "design.md", "/work/")
_FORBIDDEN_SEGMENT = "shared"
_HIGH_VERSION = "99999"
"""A version above any real release: the candidate an open-ended requirement resolves to."""


# -- the data file ---------------------------------------------------------------------------


def _source_problem(source: str) -> str | None:
    """Why ``source`` is not a citation a user can open (``https://...`` or
    ``owner/repo@commit:path``), or ``None``.
    """
    lowered = source.lower()
    for bad in _FORBIDDEN_SOURCES:
        if bad in lowered:
            return f"names {bad!r}: cite the public source, never pin's own notes"
    # ``owner/repo@commit:<folder>/x`` and backslash paths name the folder too.
    segments = lowered.replace("\\", "/").replace(":", "/").replace("@", "/").split("/")
    if _FORBIDDEN_SEGMENT in segments:
        return f"names a {_FORBIDDEN_SEGMENT!r} folder: cite the public source, never pin's " \
            "own notes"
    if any(c.isspace() for c in source):
        return "holds whitespace: one URL or owner/repo@commit:path"
    if source.startswith("https://") or source.startswith("http://"):
        return None if urlsplit(source).hostname else "a URL without a host"
    repo, at, rest = source.partition("@")
    commit, colon, path = rest.partition(":")
    owner, slash, name = repo.partition("/")
    if (at and colon and slash and owner and name and path and 7 <= len(commit) <= 40
            and all(c in "0123456789abcdef" for c in commit)):
        return None
    return "not a URL or owner/repo@commit:path"


class PackageRow(Strict):
    """One row of pin's package knowledge.

    Match (exactly one of): ``names`` (PEP 503 names, already normalised), ``prefix`` or
    ``suffix`` of the normalised name. Narrowed by ``versions`` (a PEP 440 specifier,
    prereleases allowed), ``local`` (the kind of local version label: ``cuda`` for
    ``+cu121``, ``other`` for an unrecognised label, ``none`` for no label), ``index`` (an
    index of that kind is named for the package; ``none``: no recognised index) and
    ``extra-prefix`` (an extra starting with it, ``cuda`` for ``jax[cuda12]``). Says:
    ``status``, ``why`` (one sentence), ``todo``, ``replacement``, and ``limits`` (the gfx
    targets the ROCm path is limited to) with ``outside-limits``, the verdict on any other
    GPU. Cites ``source`` with ``published`` (the
    date the source carries) or ``published-unknown`` (why it carries none).
    """

    id: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9.-]*$")
    names: list[DistName] = Field(default_factory=list)
    prefix: str | None = Field(default=None, min_length=2, max_length=64)
    suffix: str | None = Field(default=None, min_length=2, max_length=64)
    versions: str = ""
    local: LabelKind | None = None
    index: Literal["cuda", "rocm", "cpu", "none"] | None = None
    extra_prefix: str | None = Field(default=None, min_length=1, max_length=32)
    status: Status
    why: Reason
    todo: Reason
    replacement: str | None = Field(default=None, min_length=1)
    limits: list[str] = Field(default_factory=list)
    outside_limits: Literal["port", "blocked"] | None = None
    source: str = Field(min_length=1)
    published: dt.date | None = None
    published_unknown: Reason | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PackageRow:
        problem = _match_problem(self) or _facts_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def citation(self) -> Citation:
        """The row's source as a :class:`Citation`."""
        return Citation(source=self.source, published=self.published,
                        published_unknown=self.published_unknown)


def _match_problem(row: PackageRow) -> str | None:
    """Why the matching fields of ``row`` are inconsistent, or ``None``."""
    if sum([bool(row.names), row.prefix is not None, row.suffix is not None]) != 1:
        return "a row matches by exactly one of `names`, `prefix`, `suffix`"
    for name in row.names:
        if normalize_name(name) != name:
            return f"name {name!r} is not PEP 503 normalised ({normalize_name(name)!r})"
    for part in (row.prefix, row.suffix):
        if part is not None and part != part.lower():
            return f"{part!r} must be lower case (names are normalised)"
    if row.versions:
        problem = specifier_problem(row.versions)
        if problem is not None:
            return f"versions {row.versions!r}: {problem}"
        try:
            SpecifierSet(row.versions)
        except InvalidSpecifier:
            return f"versions {row.versions!r} is not a PEP 440 specifier"
    return None


def _facts_problem(row: PackageRow) -> str | None:
    """Why the limits, dates or source of ``row`` are invalid, or ``None``."""
    for target in row.limits:
        if not (target.startswith("gfx") and len(target) > 3 and target[3:].isalnum()):
            return f"limit {target!r} is not a gfx target (gfx942)"
    if bool(row.limits) != (row.outside_limits is not None):
        return "`limits` and `outside-limits` go together"
    if (row.published is None) == (row.published_unknown is None):
        return "a row needs exactly one of `published` and `published-unknown`"
    problem = _source_problem(row.source)
    return None if problem is None else f"source {row.source!r}: {problem}"


class PackageFile(Strict):
    """``packages.toml``: ``schema-version = 1`` and the ``[[packages]]`` rows."""

    schema_version: FormatVersion
    packages: list[PackageRow]


# -- matching ----------------------------------------------------------------------------------


def _version(text: str) -> Version | None:
    """``text`` (local label dropped) as a PEP 440 version, or ``None``."""
    base = text.partition("+")[0].strip()
    if not base or version_problem(base) is not None:
        return None
    try:
        return Version(base)
    except InvalidVersion:
        return None


def _spec(text: str) -> SpecifierSet | None:
    """``text`` as a specifier set that admits prereleases, or ``None`` when it is not one."""
    if specifier_problem(text) is not None:
        return None
    try:
        return SpecifierSet(text, prereleases=True)
    except InvalidSpecifier:
        return None


@dataclass(frozen=True)
class _Facts:
    """What a row is matched against: name, candidate version, label, index and extras."""

    name: str
    version: Version | None
    local: LabelKind
    indexes: frozenset[str]
    extras: tuple[str, ...]


def _candidate(pkg: DeclaredPackage, bounds: list[Version]) -> Version | None:
    """The version a requirement stands for: its exact version when pinned; else the highest
    of the versions the data's rows and the requirement itself name (plus ``0`` and one above
    every release) that the requirement admits, the release a resolver would pick among them;
    ``None`` when the requirement is not a specifier or admits none of them.
    """
    if pkg.version:
        return _version(pkg.version)
    spec = _spec(pkg.specifier)
    if spec is None:
        return None
    candidates = set(bounds)
    for item in spec:
        version = _version(item.version.removesuffix(".*"))
        if version is not None:
            candidates.add(version)
    candidates.update((Version("0"), Version(_HIGH_VERSION)))
    admitted = [v for v in candidates if spec.contains(v, prereleases=True)]
    return max(admitted) if admitted else None


def _row_matches(row: PackageRow, facts: _Facts) -> bool:
    """Whether ``row``'s narrowing conditions (versions, local, index, extra) hold."""
    if row.versions:
        spec = _spec(row.versions)
        if spec is None or facts.version is None or not spec.contains(facts.version,
                                                                      prereleases=True):
            return False
    if row.local is not None and row.local != facts.local:
        return False
    if row.index is not None:
        if row.index == "none":
            if facts.indexes:
                return False
        elif row.index not in facts.indexes:
            return False
    return row.extra_prefix is None or any(
        e.lower().startswith(row.extra_prefix) for e in facts.extras)


class Knowledge:
    """The validated rows, indexed for matching: exact names first, then the longest
    matching prefix, then suffixes; within one of these, rows in file order, the first whose
    conditions hold wins.
    """

    def __init__(self, rows: list[PackageRow], path: str = DATA_FILE) -> None:
        self.rows = list(rows)
        self.path = path
        self._by_name: dict[str, list[PackageRow]] = {}
        for row in self.rows:
            for name in row.names:
                self._by_name.setdefault(name, []).append(row)
        self._prefixed = sorted((r for r in self.rows if r.prefix is not None),
                                key=lambda r: -len(r.prefix or ""))
        self._suffixed = [r for r in self.rows if r.suffix is not None]

    def _candidates(self, name: str) -> list[PackageRow]:
        """Rows that may apply to ``name``, most specific first."""
        rows = list(self._by_name.get(name, []))
        rows += [r for r in self._prefixed if name.startswith(r.prefix or "")]
        rows += [r for r in self._suffixed if name.endswith(r.suffix or "")]
        return rows

    def match(self, pkg: DeclaredPackage) -> PackageRow | None:
        """The row that speaks for ``pkg``, or ``None`` when pin has no data on it."""
        name = normalize_name(pkg.name)
        rows = self._candidates(name)
        if not rows:
            return None
        bounds = [v for r in rows if r.versions for item in (_spec(r.versions) or [])
                  if (v := _version(item.version.removesuffix(".*"))) is not None]
        local = pkg.local
        if local is None and pkg.version and "+" in pkg.version:
            local = pkg.version.partition("+")[2]
        facts = _Facts(
            name=name, version=_candidate(pkg, bounds), local=local_kind(local),
            indexes=frozenset(k for u in pkg.index_urls if (k := index_kind(u)) is not None),
            extras=pkg.extras)
        return next((r for r in rows if _row_matches(r, facts)), None)

    def classify(self, pkg: DeclaredPackage, ctx: Context) -> Finding:
        """The ``package`` finding for ``pkg``: rule ``package.<row id>`` with the row's
        verdict, why, todo, replacement and citation; where the row is limited to some gfx
        targets and ``ctx`` names targets none of which it covers, the row's
        ``outside-limits`` verdict and a why that says so. A package no row matches is
        ``no-data`` (rule :data:`NO_DATA_RULE`), cited to pin's own data file. ``path`` /
        ``line`` come from ``pkg``; ``subject`` is the requirement as written. Never raises
        for any declared package.
        """
        row = self.match(pkg)
        line = pkg.line if pkg.line is not None and pkg.line >= 1 else None
        if row is None:
            return Finding(
                kind=Kind.PACKAGE, rule=NO_DATA_RULE, verdict=Verdict.NO_DATA, subject=pkg.raw,
                path=pkg.path, line=line, package=pkg.name,
                why=f"pin's package data has no entry for {pkg.name}.",
                todo="Check its documentation for ROCm support.",
                citation=Citation(source=self.path,
                                  published_unknown="pin's data; no source about this package"))
        verdict = Verdict(row.status)
        why, todo = row.why, row.todo
        if row.limits:
            todo = f"{todo} Limited to {', '.join(row.limits)}."
            targets = tuple(t.split(":")[0].lower() for t in ctx.gfx_targets)
            if targets and not set(targets) & set(row.limits):
                assert row.outside_limits is not None  # the model holds them together
                verdict = Verdict(row.outside_limits)
                gpu = f"{ctx.gpu_name} ({', '.join(targets)})" if ctx.gpu_name else \
                    ", ".join(targets)
                why = (f"{why} Its ROCm path covers only {', '.join(row.limits)}; "
                       f"{gpu} is not among them.")
        return Finding(
            kind=Kind.PACKAGE, rule=f"package.{row.id}", verdict=verdict, subject=pkg.raw,
            path=pkg.path, line=line, package=pkg.name, why=why, todo=todo,
            replacement=row.replacement, citation=row.citation)


def _default_path() -> Path:
    return Path(str(resources.files("pinning.audit") / "data" / "packages.toml"))


@functools.lru_cache(maxsize=1)
def _load_default() -> Knowledge:
    return _load(_default_path(), DATA_FILE)


def _load(path: Path, label: str) -> Knowledge:
    _, data = read_toml(path, MatrixError, label=f"Package data {path}")
    try:
        rows = PackageFile.model_validate(data, strict=True).packages
    except ValidationError as exc:
        raise MatrixError(
            f"Package data {path}: {validation_summary(exc, data, limit=4)}.",
            hint="Fix the row named; every row needs a status, a public source and its "
                 "date.") from exc
    seen: set[str] = set()
    for row in rows:
        if row.id in seen:
            raise MatrixError(f"Package data {path}: row id {row.id!r} appears twice.")
        seen.add(row.id)
    return Knowledge(rows, label)


def load_knowledge(path: Path | None = None) -> Knowledge:
    """The package knowledge: pin's shipped ``packages.toml`` (cached) or the file ``path``.

    Raises :class:`~pinning.errors.MatrixError` (exit 3) naming the file and the row and
    field when the file is unreadable, not TOML, or a row is invalid (unknown field, bad
    status, bad specifier, no source or date, a duplicate id).
    """
    if path is None:
        return _load_default()
    return _load(path, str(path))
