"""Benchmarks for issue 3 (printed, not asserted): medians of repeated runs.

- `pin verify LOCK --host SNAPSHOT` as a whole process (target <= 0.3 s)
- a live `pin probe` on this machine as a whole process (target <= 1 s)
- parsing a 5,000-line dump: collect_env and rocminfo (target <= 50 ms each)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from common import median_s, report

from pinning.probe.formats.collect_env import parse_collect_env
from pinning.probe.formats.rocminfo import parse_rocminfo

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "tests/data/hosts/mi300x-rocm7.1"
DUMPS = ROOT / "tests/data/dumps"
PIN = [str(Path(sys.executable).with_name("pin"))]



def big_dumps() -> tuple[str, str]:
    """A collect_env with 5,000 package lines and a rocminfo with 70 GPU agents (> 5,000 lines)."""
    env = (DUMPS / "collect-env-vllm-rocm.txt").read_text()
    base = env.split("==============================\nVersions")[0]
    pkgs = "\n".join(f"[pip3] pkg{i}=={i}.0" for i in range(5000))
    big_env = (base + "==============================\nVersions of relevant libraries\n"
               "==============================\n" + pkgs + "\n")
    info = (DUMPS / "rocminfo-full.txt").read_text()
    head, agents = info.split("HSA Agents\n==========\n")
    agent = agents.replace("*** Done ***\n", "")
    big_info = head + "HSA Agents\n==========\n" + agent * 70 + "*** Done ***\n"
    return big_env, big_info


def run(*args: str) -> None:
    subprocess.run([*PIN, *args], check=True, capture_output=True)


def main() -> None:
    host = ["--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml")]
    with tempfile.TemporaryDirectory() as d:
        lock, snap = str(Path(d) / "pin.lock"), str(Path(d) / "host.json")
        run("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
            "-o", lock)
        run("probe", *host, "-o", snap)
        run("freeze", lock, "--host", snap)
        verify = median_s(lambda: run("verify", lock, "--host", snap), 15)
        probe_live = median_s(lambda: run("probe", "-o", str(Path(d) / "live.json")), 9)
    big_env, big_info = big_dumps()
    lines_env, lines_info = len(big_env.splitlines()), len(big_info.splitlines())
    results = {
        "pin verify --host SNAPSHOT (process) s": (verify, 0.3),
        "pin probe live (process) s": (probe_live, 1.0),
        f"parse collect_env ({lines_env} lines) ms":
            (median_s(lambda: parse_collect_env(big_env), 15) * 1000, 50.0),
        f"parse rocminfo ({lines_info} lines) ms":
            (median_s(lambda: parse_rocminfo(big_info), 15) * 1000, 50.0),
    }
    report(results)


if __name__ == "__main__":
    main()
