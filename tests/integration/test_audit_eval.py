"""The measured evaluation of ``pin audit`` (issue 31 §5) on the pinned real sdists.

Each package of :mod:`tests.support.sdists` with a labels file in ``tests/data/audit-eval/`` is
downloaded (sha256-checked, never committed), unpacked, and audited as a user does (``pin audit
. --format json`` inside the tree); :mod:`tests.support.audit_eval` matches the findings to the
hand labels. Asserted: every label points at a real line of its sdist, every label is scored,
no must-not-claim item is claimed, and over all packages recall >= 0.90 and precision at or
above :data:`PRECISION_FLOOR`. Without network the sdist tests skip, unless ``CI=true`` or
``PIN_REQUIRE_NETWORK=1``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from tests.support import audit_eval
from tests.support.audit_eval import Label, Labels, Score
from tests.support.sdists import SDISTS, SdistUnavailable

LABELS = audit_eval.all_labels()

RECALL_FLOOR = 0.90
"""Issue 31's target: at least 9 of 10 required items found, over all packages."""

PRECISION_FLOOR = 0.85
"""What pin held when the floor was set (0.90 on 2026-12-05), less a margin for labels added
later; a claim in an exhaustively labelled file that no label asks for counts against it."""


@functools.cache
def _score(name: str) -> Score:
    labels = next(x for x in LABELS if x.package == name)
    tree = _tree(name)
    assert audit_eval.check_labels(labels, tree) == []
    return audit_eval.score(labels, audit_eval.run_pin(tree))


def _tree(name: str) -> Path:
    s = SDISTS[name]
    try:
        return s.fetch()
    except SdistUnavailable as exc:
        if (os.environ.get("CI", "").lower() in {"true", "1"}
                or os.environ.get("PIN_REQUIRE_NETWORK") == "1"):
            pytest.fail(f"CI=true or PIN_REQUIRE_NETWORK=1, but the pinned sdist "
                        f"{s.name}=={s.version} cannot be downloaded: {exc}")
        pytest.skip(f"{s.name}=={s.version} not downloadable ({exc})")


def test_the_labels_cover_twelve_pinned_packages() -> None:
    """At least 12 packages, each a pinned sdist at its labelled version; >= 150 required and
    >= 30 must-not-claim labels in all, each with a reason."""
    assert len(LABELS) >= 12
    for labels in LABELS:
        assert SDISTS[labels.package].version == labels.version, labels.package
    items = [i for labels in LABELS for i in labels.items]
    assert sum(i.expect == "required" for i in items) >= 150
    assert sum(i.expect == "must-not-claim" for i in items) >= 30


@pytest.mark.parametrize("labels", LABELS, ids=[x.package for x in LABELS])
def test_pin_against_the_hand_labels(labels: Labels) -> None:
    score = _score(labels.package)
    print("\n".join(audit_eval.table([score])))
    assert score.required + score.must_not == len(labels.items)
    assert score.false_claims == 0, score.claimed
    assert 0.0 <= score.recall <= 1.0 and 0.0 <= score.precision <= 1.0


def test_recall_and_precision_over_all_packages() -> None:
    """Issue 31 §5: recall of required items >= 0.90 over the twelve packages, precision on
    the exhaustively labelled files at or above :data:`PRECISION_FLOOR`, no false claim."""
    overall = audit_eval.total([_score(x.package) for x in LABELS])
    assert overall.false_claims == 0
    assert overall.recall >= RECALL_FLOOR, [m for x in LABELS for m in _score(x.package).missed]
    assert overall.precision >= PRECISION_FLOOR, [w for x in LABELS
                                                  for w in _score(x.package).wrong]


# --- the scoring rule itself (no network) ---------------------------------------------------

def _f(kind: str, path: str, line: int, verdict: str = "port",
       lines: list[int] | None = None) -> dict[str, object]:
    return {"kind": kind, "path": path, "line": line, "lines": lines or [], "verdict": verdict,
            "subject": "x", "copies": []}


def test_the_matching_rule() -> None:
    labels = Labels("p", "1", frozenset({"k.cu"}), (
        Label("k.cu", 5, "inline-ptx", "required", "asm"),
        Label("k.cu", 9, "warp-size", "required", "mask"),
        Label("k.cu", 12, "library", "required", "cub"),
        Label("k.cu", 20, "warp-size", "must-not-claim", "ROCm branch"),
        Label("k.cu", 30, "warp-size", "must-not-claim", "comment"),
    ))
    report = {"findings": [
        _f("tensor-core", "./k.cu", 5),                 # PTX reported as tensor-core: found
        _f("warp-size", "k.cu", 7, lines=[7, 9]),       # line 9 among its lines: found
        _f("library", "k.cu", 12, verdict="ready"),     # ready is no claim: 12 missed
        _f("warp-size", "k.cu", 20, verdict="ready"),   # ready: no false claim
        _f("warp-size", "k.cu", 30),                    # a false claim, and a false positive
        _f("cuda-api", "k.cu", 40),                     # outside the precision kinds
        _f("arch-macro", "k.cu", 9),                    # wrong category for line 9
    ]}
    s: Score = audit_eval.score(labels, report)
    assert (s.required, s.found, s.must_not, s.false_claims) == (3, 2, 2, 1)
    assert (s.tp, s.fp) == (2, 1)
    assert s.missed == ["k.cu:12 library (cub)"]
    assert s.claimed == ["k.cu:30 warp-size (comment)"]


def test_a_label_past_the_end_of_its_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("a\nb\n")
    labels = Labels("p", "1", frozenset(), (
        Label("k.cu", 2, "warp-size", "required", "ok"),
        Label("k.cu", 3, "warp-size", "required", "past the end"),
        Label("gone.cu", 1, "warp-size", "required", "no file"),
    ))
    assert audit_eval.check_labels(labels, tmp_path) == [
        "p: k.cu:3 is not a line there", "p: gone.cu:1 is not a line there"]


def test_a_bad_label_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('package = "p"\nversion = "1"\n[[item]]\nfile = "k.cu"\nline = 1\n'
                   'category = "warp-size"\nexpect = "maybe"\nreason = "x"\n')
    with pytest.raises(ValueError, match="not a valid label"):
        audit_eval.load_labels(bad)
