"""CPU time of the processes of ``bench/bench_serve.py`` (Linux ``/proc``), and the cores
they are pinned to, so a round can be split into CPU microseconds per report of each:
each ``pin serve`` process, the bare endpoint, PostgreSQL (the postmaster, its live
backends, and the backends that exited: the postmaster's reaped children) and the load
generator (this process's reaped children, ``RUSAGE_CHILDREN``).

Read from ``/proc/PID/stat`` (utime + stime, fields 14 and 15, and cutime + cstime,
fields 16 and 17: proc(5)), not psutil: four numbers per process are all the bench needs.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (field 3 first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int, *, children: bool = False) -> float:
    """CPU seconds (user + system) of ``pid``, and of its reaped children with
    ``children``.
    """
    f = _stat(pid)
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return ticks / TICK


def postmaster(data: Path) -> int:
    """The postmaster's pid, from ``DATA/postmaster.pid``'s first line."""
    return int((data / "postmaster.pid").read_text().split("\n", 1)[0])


def _children(parent: int) -> list[int]:
    """The live processes whose parent is ``parent``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(_stat(int(entry))[1]) == parent:
                    found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    return found


def postgres_cpu_s(data: Path) -> float:
    """CPU seconds of the PostgreSQL server of the data folder ``data`` so far: the
    postmaster with its reaped children, and its live children.
    """
    pm = postmaster(data)
    total = cpu_s(pm, children=True)
    for pid in _children(pm):
        try:
            total += cpu_s(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def pin_postgres(data: Path, cores: set[int]) -> None:
    """Pin the PostgreSQL server of ``data`` (the postmaster, so the backends it forks
    from now on, and every live backend) to ``cores``.
    """
    pm = postmaster(data)
    for pid in (pm, *_children(pm)):
        try:
            os.sched_setaffinity(pid, cores)
        except (ProcessLookupError, PermissionError):
            continue


def children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (the load generator's runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """CPU per report of one round: started before it, :meth:`per_report` after it."""

    def __init__(self, pids: dict[str, int], data: Path | None) -> None:
        self.pids, self.data = pids, data
        self.start = self._now()

    def _now(self) -> dict[str, float]:
        now = {name: cpu_s(pid) for name, pid in self.pids.items()}
        now["load generator"] = children_cpu_s()
        if self.data is not None:
            now["PostgreSQL"] = postgres_cpu_s(self.data)
        return now

    def per_report(self, reports: int) -> dict[str, float]:
        """CPU microseconds per report of each process since the meter started."""
        end = self._now()
        return {name: round((end[name] - self.start[name]) / reports * 1e6, 1)
                for name in end}


def cores() -> list[int]:
    """The cores this process may run on, sorted."""
    return sorted(os.sched_getaffinity(0))
