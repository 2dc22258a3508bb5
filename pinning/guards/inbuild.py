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


def _version(text: str) -> str:
    """A comparable form of a version (``1.0-post1`` and ``1.0.post1`` agree)."""
    try:
        from pip._vendor.packaging.version import Version

        return str(Version(text))
    except Exception:  # no pip in the image, or not a PEP 440 version
        return text.strip().lower()


def _files(entry: dict[str, object]) -> list[str]:
    value = entry.get("files")
    return [str(x) for x in value] if isinstance(value, list) else []


def snapshot() -> dict[str, dict[str, object]]:
    """Name -> {version, record (sha256 of RECORD), copies, files (paths in RECORD)} of
    everything on sys.path.
    """
    out: dict[str, dict[str, object]] = {}
    for dist in metadata.distributions():
        name = _norm(dist.metadata["Name"] or "")
        if not name:
            continue
        record = dist.read_text("RECORD") or ""
        files = sorted({line.split(",")[0] for line in record.splitlines()
                        if line and ".dist-info/" not in line.split(",")[0]})
        entry = out.setdefault(name, {"version": _version(dist.version), "copies": 0,
                                      "record": hashlib.sha256(record.encode()).hexdigest(),
                                      "files": files})
        entry["copies"] = int(str(entry["copies"])) + 1
    return out


def check(step: str, locked: dict[str, str], before: dict[str, dict[str, object]],
          now: dict[str, dict[str, object]]) -> list[str]:
    """Problems with locked distributions after ``step`` (empty when none)."""
    problems = []
    owned: dict[str, str] = {}
    for name in locked:
        for path in _files(before.get(_norm(name), {})):
            owned[path] = name
    for name, version in sorted(locked.items()):
        key = _norm(name)
        cur = now.get(key)
        old = before.get(key, {}).get("version", version)
        copies_before = int(str(before.get(key, {}).get("copies", 1)))
        if cur is None:
            problems.append(f"step {step}: {name} {old} -> removed")
        elif int(str(cur["copies"])) > copies_before:
            problems.append(f"step {step}: {name} is now installed {cur['copies']} times")
        elif cur["version"] != _version(version):
            problems.append(f"step {step}: {name} {old} -> {cur['version']}")
        elif key in before and before[key]["record"] != cur["record"]:
            problems.append(f"step {step}: {name} {version} was reinstalled with other files")
    for key, cur in sorted(now.items()):
        if key in before or key in {_norm(n) for n in locked}:
            continue
        clash = sorted({owned[f] for f in _files(cur) if f in owned})
        if clash:
            problems.append(f"step {step}: new distribution {key} {cur['version']} overwrote "
                            f"files of {', '.join(clash)}")
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
