"""The measured evaluation of ``pin audit`` (issue 31 §5): hand labels against what pin reports.

Labels live in ``tests/data/audit-eval/<package>.toml``, one file per pinned sdist of
:mod:`tests.support.sdists`, written by reading the sdist's source (never from pin's output):

- ``[[file]]`` entries (``path``, ``exhaustive``): a file marked exhaustive has every line a
  porter must change for an AMD MI300 build labelled, so precision can be computed on it;
- ``[[item]]`` entries: ``file`` (path inside the sdist's top folder), ``line``, ``category``
  (a pin ``Kind`` value), ``expect`` (``required`` or ``must-not-claim``) and ``reason``.

pin runs as a user runs it, ``pin audit . --format json`` inside the unpacked tree (not the
archive: paths then equal the labels' paths, and byte-identical copies are merged the way a
user auditing a checkout sees them).

**Matching rule.** A finding *claims* work when its verdict is not ``ready``. A claiming
finding matches a label when its path is the label's file (or the file is among its
``copies``), the label's line is its ``line`` or one of its ``lines``, and its kind is
compatible with the label's category (:data:`COMPATIBLE`: PTX and tensor-core items may be
reported as either; a library include or call as ``library`` or ``cuda-api``; a build flag as
``build-hook`` or ``arch-list``). A required label is found when some claiming finding matches
it; a must-not-claim label is a false claim when one does. In an exhaustive file, each
claiming finding of a :data:`PRECISION_KINDS` kind is a true positive when it matches some required label there, else a false
positive. Kept here rather than in ``pinning/`` because it is the measure, not the tool.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

LABELS_DIR = ROOT / "tests" / "data" / "audit-eval"
"""One ``<package>.toml`` per evaluated sdist."""

KINDS = frozenset({"warp-size", "inline-ptx", "tensor-core", "cuda-api", "library",
                   "build-hook", "arch-macro", "arch-list"})
"""The categories a label may name (values of ``pinning.audit.model.Kind``)."""

COMPATIBLE: dict[str, frozenset[str]] = {
    "warp-size": frozenset({"warp-size"}),
    "inline-ptx": frozenset({"inline-ptx", "tensor-core"}),
    "tensor-core": frozenset({"tensor-core", "inline-ptx"}),
    "cuda-api": frozenset({"cuda-api", "library"}),
    "library": frozenset({"library", "cuda-api"}),
    "build-hook": frozenset({"build-hook", "arch-list"}),
    "arch-list": frozenset({"arch-list", "build-hook"}),
    "arch-macro": frozenset({"arch-macro"}),
}
"""Label category -> the finding kinds that count as reporting it."""

PRECISION_KINDS = frozenset({"warp-size", "inline-ptx", "tensor-core"})
"""The finding kinds precision is computed on: the hand work HIPIFY does not do, which exhaustive
files have every line of labelled (a hipified API rename is labelled for recall only)."""


@dataclass(frozen=True)
class Label:
    """One hand label: ``file`` inside the sdist's top folder, 1-based ``line``, ``category``
    (a key of :data:`COMPATIBLE`), ``expect`` (``required`` / ``must-not-claim``), ``reason``."""

    file: str
    line: int
    category: str
    expect: str
    reason: str


@dataclass(frozen=True)
class Labels:
    """The labels of one package: ``package`` and ``version`` (a pinned sdist), ``exhaustive``
    (the files labelled exhaustively) and ``items``."""

    package: str
    version: str
    exhaustive: frozenset[str]
    items: tuple[Label, ...]


@dataclass
class Score:
    """The figures of one package (or all): ``required`` labels and how many were ``found``,
    ``tp``/``fp`` claiming findings in exhaustive files, ``must_not`` labels and the
    ``false_claims`` among them; ``missed`` and ``wrong`` name the labels / findings behind the
    figures (``file:line category``)."""

    package: str
    required: int = 0
    found: int = 0
    tp: int = 0
    fp: int = 0
    must_not: int = 0
    false_claims: int = 0
    missed: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        """found / required (1.0 when nothing is required)."""
        return self.found / self.required if self.required else 1.0

    @property
    def precision(self) -> float:
        """tp / (tp + fp) over exhaustive files (1.0 when pin claimed nothing there)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    def add(self, other: Score) -> None:
        """Add ``other``'s counts (not its lists) to this one."""
        self.required += other.required
        self.found += other.found
        self.tp += other.tp
        self.fp += other.fp
        self.must_not += other.must_not
        self.false_claims += other.false_claims


def load_labels(path: Path) -> Labels:
    """Read one labels file. Raises ``ValueError`` naming the file and item when an item lacks a
    field, names an unknown category or expectation, or a line below 1."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    items = []
    for n, raw in enumerate(data.get("item", []), 1):
        try:
            label = Label(str(raw["file"]), int(raw["line"]), str(raw["category"]),
                          str(raw["expect"]), str(raw["reason"]))
        except KeyError as exc:
            raise ValueError(f"{path.name}: item {n} lacks {exc}") from exc
        if (label.category not in KINDS or label.expect not in {"required", "must-not-claim"}
                or label.line < 1 or not label.reason.strip()):
            raise ValueError(f"{path.name}: item {n} is not a valid label: {label}")
        items.append(label)
    exhaustive = frozenset(str(f["path"]) for f in data.get("file", []) if f.get("exhaustive"))
    return Labels(str(data["package"]), str(data["version"]), exhaustive, tuple(items))


def all_labels() -> list[Labels]:
    """Every labels file under :data:`LABELS_DIR`, sorted by package name."""
    return sorted((load_labels(p) for p in LABELS_DIR.glob("*.toml")), key=lambda x: x.package)


def check_labels(labels: Labels, tree: Path) -> list[str]:
    """What is wrong with ``labels`` against the unpacked ``tree``: a file that is not there or
    a line past its end (empty when every label points at a real line)."""
    problems = []
    lengths: dict[str, int] = {}
    for item in labels.items:
        if item.file not in lengths:
            p = tree / item.file
            lengths[item.file] = (len(p.read_bytes().splitlines()) if p.is_file() else 0)
        if item.line > lengths[item.file]:
            problems.append(f"{labels.package}: {item.file}:{item.line} is not a line there")
    return problems


def run_pin(tree: Path) -> dict[str, Any]:
    """``pin audit . --format json`` inside ``tree`` (a subprocess of this interpreter): the
    report, the ``result`` of pin's JSON envelope. Raises ``RuntimeError`` with pin's error or
    stderr when it printed no report (a crash, a usage error)."""
    done = subprocess.run([sys.executable, "-m", "pinning", "audit", ".", "--format", "json"],
                          cwd=tree, capture_output=True, text=True, check=False)
    try:
        envelope = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"pin audit in {tree} exited {done.returncode}: "
                           f"{done.stderr[-2000:]}") from exc
    report = envelope.get("result") if isinstance(envelope, dict) else None
    if not isinstance(report, dict) or "findings" not in report:
        error = envelope.get("error") if isinstance(envelope, dict) else None
        raise RuntimeError(f"pin audit in {tree} exited {done.returncode} without a report: "
                           f"{error or done.stderr[-2000:]}")
    return report


def _claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report.get("findings", [])
            if f.get("verdict") != "ready" and f.get("path")]


def _matches(finding: dict[str, Any], label: Label) -> bool:
    paths = {str(finding["path"]).removeprefix("./"), *finding.get("copies", [])}
    lines = {finding.get("line"), *finding.get("lines", [])}
    return (label.file in paths and label.line in lines
            and finding.get("kind") in COMPATIBLE[label.category])


def score(labels: Labels, report: dict[str, Any]) -> Score:
    """Score one package's ``report`` (pin's JSON) against its ``labels`` by the module's
    matching rule."""
    claims = _claims(report)
    s = Score(labels.package)
    for item in labels.items:
        hit = any(_matches(f, item) for f in claims)
        where = f"{item.file}:{item.line} {item.category}"
        if item.expect == "required":
            s.required += 1
            s.found += hit
            if not hit:
                s.missed.append(f"{where} ({item.reason})")
        else:
            s.must_not += 1
            s.false_claims += hit
            if hit:
                s.claimed.append(f"{where} ({item.reason})")
    required = [i for i in labels.items if i.expect == "required"]
    for f in claims:
        path = str(f["path"]).removeprefix("./")
        if path not in labels.exhaustive or f.get("kind") not in PRECISION_KINDS:
            continue
        if any(_matches(f, item) for item in required):
            s.tp += 1
        else:
            s.fp += 1
            s.wrong.append(f"{path}:{f.get('line')} {f.get('kind')} {f.get('subject')}")
    return s


def total(scores: list[Score]) -> Score:
    """The sum of ``scores`` as one :class:`Score` named ``all``."""
    out = Score("all")
    for s in scores:
        out.add(s)
    return out


def table(scores: list[Score]) -> list[str]:
    """The figures as printed lines: one per package, then the overall line."""
    head = (f"{'package':<20} {'required':>8} {'found':>6} {'recall':>7} "
            f"{'precision':>9} {'must-not':>8} {'false':>6}")
    rows = [head]
    for s in [*scores, total(scores)]:
        rows.append(f"{s.package:<20} {s.required:>8} {s.found:>6} {s.recall:>7.2f} "
                    f"{s.precision:>9.2f} {s.must_not:>8} {s.false_claims:>6}")
    return rows
