"""Benchmark (printed, not asserted): how good ``pin audit``'s bill is (issue 31 §5).

For each package with hand labels in ``tests/data/audit-eval/`` (real CUDA-extension sdists
pinned by sha256 in ``tests/support/sdists.py``, downloaded into ``.wheelhouse/sdists/`` on the
first run), ``pin audit . --format json`` runs inside the unpacked tree and
``tests/support/audit_eval.py`` scores it: recall of the required items, precision on the files
labelled exhaustively (warp-size, inline-ptx and tensor-core findings), and false claims on the
must-not-claim items. Prints one row per package, the overall row, then the misses, false
positives and false claims (the work list), and the figures as one JSON line.
Targets (issue 31 §5): recall >= 0.90, 0 false claims.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import audit_eval  # noqa: E402
from tests.support.sdists import SDISTS  # noqa: E402


def main() -> None:
    scores = []
    for labels in audit_eval.all_labels():
        tree = SDISTS[labels.package].fetch()
        problems = audit_eval.check_labels(labels, tree)
        if problems:
            raise SystemExit("\n".join(problems))
        scores.append(audit_eval.score(labels, audit_eval.run_pin(tree)))
    print("\n".join(audit_eval.table(scores)))
    for s in scores:
        for title, rows in (("missed", s.missed), ("false positive", s.wrong),
                            ("FALSE CLAIM", s.claimed)):
            for row in rows:
                print(f"{s.package}: {title}: {row}")
    overall = audit_eval.total(scores)
    print(json.dumps({"recall": round(overall.recall, 4),
                      "precision": round(overall.precision, 4),
                      "false_claims": overall.false_claims,
                      "required": overall.required, "must_not_claim": overall.must_not,
                      "packages": len(scores)}))


if __name__ == "__main__":
    main()
