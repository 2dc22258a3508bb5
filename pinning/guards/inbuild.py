"""The build-time guard, run inside the image build by ``python3 /tmp/pin-guard/guard.py``.

``snapshot FILE`` writes every installed distribution (name, version, sha256 of its RECORD,
how many metadata copies) as JSON; ``check STEP LOCKED BEFORE`` compares the distributions
now installed with the locked set (JSON name -> version) and with the snapshot ``BEFORE``:
a locked distribution that changed version, appears twice or disappeared fails with exit 10
and ``PIN-GUARD:`` lines naming the step, the package and old -> new; otherwise it writes a
new snapshot over ``BEFORE``. Standard library only: it runs in the image's Python.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import metadata


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def snapshot() -> dict[str, dict[str, object]]:
    """Name -> {version, record (sha256 of RECORD), copies} of everything on sys.path."""
    out: dict[str, dict[str, object]] = {}
    for dist in metadata.distributions():
        name = _norm(dist.metadata["Name"] or "")
        if not name:
            continue
        record = dist.read_text("RECORD") or ""
        entry = out.setdefault(name, {"version": dist.version, "copies": 0,
                                      "record": hashlib.sha256(record.encode()).hexdigest()})
        entry["copies"] = int(str(entry["copies"])) + 1
    return out


def check(step: str, locked: dict[str, str], before: dict[str, dict[str, object]],
          now: dict[str, dict[str, object]]) -> list[str]:
    """Problems with locked distributions after ``step`` (empty when none)."""
    problems = []
    for name, version in sorted(locked.items()):
        key = _norm(name)
        cur = now.get(key)
        old = before.get(key, {}).get("version", version)
        if cur is None:
            problems.append(f"step {step}: {name} {old} -> removed")
        elif int(str(cur["copies"])) > 1:
            problems.append(f"step {step}: {name} is installed {cur['copies']} times")
        elif cur["version"] != version:
            problems.append(f"step {step}: {name} {old} -> {cur['version']}")
        elif key in before and before[key]["record"] != cur["record"]:
            problems.append(f"step {step}: {name} {version} was reinstalled with other files")
    return problems


def main(argv: list[str]) -> int:
    """Entry point; see the module docstring."""
    if argv[:1] == ["snapshot"]:
        with open(argv[1], "w") as fh:
            json.dump(snapshot(), fh)
        return 0
    if argv[:1] == ["check"] and len(argv) == 4:
        step, locked_path, before_path = argv[1:]
        with open(locked_path) as fh:
            locked = json.load(fh)
        with open(before_path) as fh:
            before = json.load(fh)
        now = snapshot()
        problems = check(step, locked, before, now)
        for line in problems:
            print(f"PIN-GUARD: {line}", flush=True)
        if problems:
            return 10
        with open(before_path, "w") as fh:
            json.dump(now, fh)
        return 0
    print("usage: guard.py snapshot FILE | check STEP LOCKED BEFORE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
