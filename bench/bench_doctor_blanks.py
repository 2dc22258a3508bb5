"""Benchmark (printed, not asserted): pin doctor is linear in a dump's length, blanks included.

Median wall time of ``doctor()`` over the recorded dumps in tests/data/dumps with 2,000
spaces and a tab after every line, and over one rocm-smi dump whose version line holds a
64 KiB run of spaces. Targets: 1 s and 1 s (the patterns once backtracked quadratically on
such runs: 7.8 s for the padded dumps, 30 s for the 64 KiB line).
"""

from __future__ import annotations

from pathlib import Path

from common import median_s, report

from pinning.doctor.report import doctor
from pinning.errors import FormatError
from pinning.matrix.load import load_matrix
from pinning.probe.formats.split import split_dump

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / "tests" / "data" / "dumps"
BANNER = "========================= ROCm System Management Interface ========================="


def _dumps() -> list[tuple[str, str]]:
    out = []
    for path in sorted(DUMPS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        try:
            split_dump(text, source=path.name)
        except FormatError:
            continue
        padded = "\n".join(line + " " * 2000 + "\t" for line in text.split("\n"))
        out.append((path.name, padded))
    return out


def main() -> None:
    matrix = load_matrix()
    padded = _dumps()
    run = f"{BANNER}\nROCM-SMI version: 3.0.0{' ' * 65536}x\n"
    results = {
        f"doctor: {len(padded)} dumps, 2,000 blanks a line (s)": (
            median_s(lambda: [doctor([d], matrix) for d in padded], 5), 1.0),
        "doctor: one 64 KiB run of spaces (s)": (
            median_s(lambda: doctor([("run.txt", run)], matrix), 5), 1.0),
    }
    report(results)


if __name__ == "__main__":
    main()
