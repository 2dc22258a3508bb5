"""Which per-GPU OS restrictions are in effect for a release, and the verdict they give on
one GPU and OS: restriction changes as the sources state them (a whole list, or an
addition to / removal from the list in effect) and, where statements disagree, the
later-published source wins for the releases it covers.

A release inherits a list only through an ``add`` / ``remove`` row that covers it: a list
whose source stops before a release is not carried forward silently (the resolver warns
that whether it still applies is unknown).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pinning.matrix.load import LoadedFile, Matrix
from pinning.matrix.models import OsRestriction
from pinning.matrix.names import os_matches

Row = tuple[OsRestriction, LoadedFile]
_PER_GPU = ("only-these-os", "not-these-os")


@dataclass(frozen=True)
class Statement:
    """One restriction in effect for a release: ``mode``, ``gpus``, ``os`` (and ``targets``
    of an ``only-these-gpus`` row) after every change that covers the release, with the rows
    it rests on, oldest first (the row that set the list, then the rows that changed it).
    """

    mode: str
    gpus: frozenset[str]
    os: tuple[str, ...]
    targets: frozenset[str]
    rows: tuple[Row, ...]

    @property
    def published(self) -> dt.date | None:
        """The newest publication date among its rows (``None`` when none is dated)."""
        dates = [r.published for r, _ in self.rows if r.published is not None]
        return max(dates) if dates else None

    def cite(self) -> str:
        """Each row as ``publisher and document <url> (published DATE; footnote F or the
        change)``, joined by `` + ``: the row that set the list first.
        """
        out = []
        for r, f in self.rows:
            what = (f"{r.change} {', '.join(r.os if r.mode in _PER_GPU else r.gpus)}"
                    if r.change != "replace" else
                    (f"footnote {r.footnote}" if r.footnote else f.name))
            when = f"published {r.published}" if r.published else "publication date unknown"
            out.append(f"{r.source.split(': ')[0]}" + (f" <{r.url}>" if r.url else "")
                       + f" ({when}; {what})")
        return " + ".join(out)


@dataclass(frozen=True)
class Verdict:
    """What the statements in effect say of one GPU on one OS: ``allowed``; ``decided_by``
    the statement that decided (``None`` when none speaks of the pair); ``weighed`` every
    statement that speaks of it; ``overruled`` those that said the opposite and lost to a
    later-published source.
    """

    allowed: bool
    decided_by: Statement | None
    weighed: tuple[Statement, ...]
    overruled: tuple[Statement, ...] = ()


def covers(row: OsRestriction, v: Version) -> bool:
    """True when restriction ``row``'s ``runtimes`` cover version ``v``."""
    return SpecifierSet(row.runtimes).contains(v, prereleases=True)


def in_effect(matrix: Matrix, version: str, vendor: str = "amd") -> list[Statement]:
    """The restriction statements in effect for runtime ``version`` of ``vendor``.

    Raises nothing; a change row with no list to change (none stated for the release or
    the previous one) states nothing.
    """
    rows = [(r, f) for r, f in matrix.os_restrictions() if r.vendor == vendor]
    earlier = sorted({Version(rel.version) for f in matrix.files for rel in f.data.releases
                      if rel.vendor == vendor} | {Version(version)})
    return _effective(rows, Version(version), earlier)


def _effective(rows: list[Row], v: Version, versions: list[Version]) -> list[Statement]:
    """Statements for ``v``: whole-list rows covering it, then each change row covering it
    applied (oldest publication first) to the matching list of ``v``, or of the newest
    earlier release that has one.
    """
    out = [Statement(r.mode, frozenset(r.gpus), tuple(r.os), frozenset(r.targets), ((r, f),))
           for r, f in rows if r.change == "replace" and covers(r, v)]
    changes = sorted(((r, f) for r, f in rows if r.change != "replace" and covers(r, v)),
                     key=lambda t: t[0].published or dt.date.min)
    for r, f in changes:
        base = [s for s in out if _matches(s, r)]
        if not base:
            prev = [x for x in versions if x < v]
            if prev:
                base = [s for s in _effective(rows, prev[-1], prev) if _matches(s, r)]
        out = [s for s in out if s not in base] + [_apply(s, r, f) for s in base]
    return out


def _matches(s: Statement, r: OsRestriction) -> bool:
    """True when change row ``r`` changes statement ``s`` (same mode, and a GPU in common
    for a per-GPU list, an OS in common for an ``os-only-on-gpus`` list).
    """
    if s.mode != r.mode:
        return False
    if r.mode in _PER_GPU:
        return bool(s.gpus & set(r.gpus))
    return bool(set(s.os) & set(r.os))


def _apply(s: Statement, r: OsRestriction, f: LoadedFile) -> Statement:
    """Statement ``s`` after change row ``r``: ``add`` gives ``r.gpus`` the OS ``r.os``,
    ``remove`` takes it away (kept to the GPUs of ``r`` for a per-GPU list).
    """
    gain = r.change == "add"
    if s.mode in _PER_GPU:
        grow = gain == (s.mode == "only-these-os")
        os = (tuple(dict.fromkeys([*s.os, *r.os])) if grow
              else tuple(o for o in s.os if o not in r.os))
        return Statement(s.mode, s.gpus & set(r.gpus), os, s.targets, (*s.rows, (r, f)))
    gpus = s.gpus | set(r.gpus) if gain else s.gpus - set(r.gpus)
    return Statement(s.mode, gpus, s.os, s.targets, (*s.rows, (r, f)))


def judge(statements: list[Statement], gpu_id: str | None, target: str,
          want: tuple[str, str]) -> Verdict:
    """The verdict on OS ``want`` (``(id, version)``) for the GPU ``gpu_id`` (``None`` when
    only the gfx ``target`` is known). Statements that disagree are settled by the
    later-published one; at equal (or unknown) dates the restriction holds.
    """
    ids = {target} | ({gpu_id} if gpu_id else set())
    said: list[tuple[Statement, bool]] = []
    for s in statements:
        v = _speaks(s, ids, gpu_id, target, want)
        if v is not None:
            said.append((s, v))
    if not said:
        return Verdict(True, None, ())
    weighed = tuple(s for s, _ in said)
    if len({v for _, v in said}) == 1:
        return Verdict(said[0][1], said[0][0], weighed)
    key = max(said, key=lambda t: (t[0].published or dt.date.min, not t[1]))
    return Verdict(key[1], key[0], weighed, tuple(s for s, v in said if v != key[1]))


def _speaks(s: Statement, ids: set[str], gpu_id: str | None, target: str,
            want: tuple[str, str]) -> bool | None:
    """What statement ``s`` says of the GPU on OS ``want`` (allowed or not), or ``None``
    when it does not speak of the pair.
    """
    if s.mode == "only-these-gpus":
        if gpu_id is not None and target in s.targets:
            return gpu_id in s.gpus
        return None
    os_in = any(os_matches(want, x) for x in s.os)
    gpu_in = bool(ids & s.gpus)
    if s.mode == "only-these-os":
        return os_in if gpu_in else None
    if s.mode == "not-these-os":
        return not os_in if gpu_in else None
    return gpu_in if os_in else None
