"""Verify a fleet of host snapshots against one lock (``pin fleet verify``).

A :class:`FleetVerifier` does what :func:`pinning.verify.report.verify` does for every host,
but works out what depends on the lock alone once: the matrix is loaded once by the caller,
the lock's rows, source texts and runtime contexts live in one shared
:class:`~pinning.verify.compare.LockPlan`, the shipped guard rules are read once
(:func:`~pinning.guards.engine.load_rules`), and the lock-free rules are judged once per
distinct environment view (they see a host only through
:func:`~pinning.guards.view.view_from_facts` and its GPU products, and hosts of one fleet
mostly share it). Snapshots whose bytes are identical are verified once: the result is
a pure function of the bytes, and so are snapshots equal but for the GPUs' PCI
addresses (:mod:`pinning.fleet.shape`: a fleet's hosts differ in little else). Every
shortcut gives exactly the findings ``verify`` gives
(``tests/unit/fleet/test_batch.py`` compares them on varied snapshots).

Snapshots come from a folder (``*.json``, sorted by name; each a ``pin probe -o`` snapshot
or its ``--format json`` envelope) or JSON Lines (one per line), and are streamed:
:meth:`FleetVerifier.stream` yields each host's result as it is verified and keeps only
the counts the summary needs (:class:`FleetTally`), so memory stays flat however many
hosts come. A snapshot that cannot be read is that host's ``unreadable`` result, naming
the file and line, never the end of the run.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from pinning.errors import ProbeError, UsageError
from pinning.fleet.models import TOP, FleetHost, FleetReport, FleetSummary, ReasonCount
from pinning.fleet.reason import drift_word, short_reason
from pinning.fleet.shape import shape_key, shape_safe
from pinning.guards.view import Finding
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts
from pinning.probe.snapshot import HINT, parse_snapshot
from pinning.util.files import MAX_INPUT_BYTES, read_regular_bytes
from pinning.util.progress import NULL_PROGRESS, Progress
from pinning.verify.compare import LockPlan
from pinning.verify.report import (
    NODE_FACTS,
    VerifyReport,
    is_drift,
    report_of,
    rule_findings,
    verify_findings,
)
from pinning.verify.rulekey import rule_key

#: The most distinct environment views (and snapshot digests) remembered; past it the
#: memory is cleared and filled again (results stay exact, only slower).
MEMO_LIMIT = 65536


@dataclass(frozen=True)
class SnapshotInput:
    """One host snapshot to verify: its host ``name``, the ``file`` it came from and the
    1-based ``line`` (JSON Lines), and either its ``data`` bytes or the ``error`` that
    kept them from being read (a :class:`~pinning.errors.ProbeError` message).
    """

    name: str
    file: str
    line: int | None
    data: bytes | None = None
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What a host's findings come to: ``result`` (``match`` / ``drift``), the short
    ``reason`` line (drift only; its ``(+N more)`` counts facts), the distinct words of the
    drifting findings (``reasons``, first-seen order: a fact that both differs from the
    lock and lies outside what the matrix validated gives one word, not two), the drifting
    facts' dotted paths (``facts``) and the status counts; ``target``: the multi-target
    lock's target the host was checked against (:mod:`pinning.fleet.targets`).
    """

    result: Literal["match", "drift"]
    reason: str | None
    reasons: tuple[str, ...]
    facts: tuple[str, ...]
    counts: tuple[tuple[str, int], ...]
    target: str | None = None


class FleetVerifier:
    """Verifies host snapshots against one ``lock`` (named ``lock_name``) with ``matrix``
    (load it once: :func:`~pinning.matrix.load.load_matrix`); ``strict`` as ``pin verify
    --strict``. ``memo`` false turns off the memory of identical snapshot bytes, ``views``
    false that of environment views; results are the same either way. Not thread-safe.
    """

    def __init__(self, lock: Lockfile, matrix: Matrix, *, lock_name: str,
                 strict: bool = False, memo: bool = True, views: bool = True) -> None:
        self.lock, self.matrix, self.lock_name, self.strict = lock, matrix, lock_name, strict
        self.memo, self.views = memo, views
        #: The report's ``lock-hash`` and (a multi-target lock) ``targets``.
        self.lock_hash: str = lock.content_hash
        self.targets: list[str] | None = None
        self.plan = LockPlan(lock)
        self._rules: dict[tuple[Any, ...], tuple[list[Finding], int]] = {}
        self._seen: dict[bytes, Outcome] = {}

    def _judge(self, lock: Lockfile, facts: HostFacts, matrix: Matrix, verbose: bool,
               device_strings: list[str] | None) -> tuple[list[Finding], int]:
        """:func:`~pinning.verify.report.rule_findings`, remembered per
        :func:`~pinning.verify.rulekey.rule_key` (what the rules and checks read)
        (for this verifier's lock and matrix, not verbose, no audit).
        """
        if not self.views or verbose or device_strings is not None:
            return rule_findings(lock, facts, matrix, verbose, device_strings)
        key = rule_key(facts)
        hit = self._rules.get(key)
        if hit is None:
            if len(self._rules) >= MEMO_LIMIT:
                self._rules.clear()
            hit = self._rules[key] = rule_findings(lock, facts, matrix, verbose,
                                                   device_strings)
        return list(hit[0]), hit[1]

    def findings(self, facts: HostFacts) -> tuple[list[Finding], int]:
        """The findings ``verify(lock, facts, matrix)`` reports, in its order, and the
        number of guard rules it hides.
        """
        return verify_findings(self.lock, facts, self.matrix, plan=self.plan,
                               judge=self._judge)

    def report(self, facts: HostFacts, host_name: str) -> VerifyReport:
        """The :class:`~pinning.verify.report.VerifyReport` ``verify`` gives for ``facts``
        (equal to it, field for field).
        """
        found, hidden = self.findings(facts)
        return report_of(self.lock, facts, found, hidden, lock_name=self.lock_name,
                         host_name=host_name, strict=self.strict, audited=False)

    def outcome(self, facts: HostFacts, *, node_only: bool = False) -> Outcome:
        """The :class:`Outcome` of ``facts``: its result, drift reasons and counts.
        ``node_only``: judged on what the node provides beneath its containers, as ``pin
        verify --node-only`` (:func:`~pinning.verify.report.node_scope`).
        """
        found, _ = self.findings(facts)
        if node_only:
            found = [f for f in found if f.fact.split(".", 1)[0] in NODE_FACTS]
        drift = [f for f in found if is_drift(f, self.strict)]
        counts: dict[str, int] = {}
        for f in found:
            counts[f.status] = counts.get(f.status, 0) + 1
        return Outcome(result="drift" if drift else "match",
                       reason=short_reason(drift) if drift else None,
                       reasons=tuple(dict.fromkeys(drift_word(f) for f in drift)),
                       facts=tuple(dict.fromkeys(f.fact for f in drift)),
                       counts=tuple(sorted(counts.items())))

    def host_outcome(self, facts: HostFacts) -> Outcome:
        """The :class:`Outcome` :meth:`check` remembers for a parsed snapshot: here
        :meth:`outcome`; a multi-target lock's verifier first chooses the target (from the
        snapshot's GPUs, which its shape keeps: the choice is remembered with the outcome).
        """
        return self.outcome(facts)

    def check(self, data: bytes, where: str) -> Outcome:
        """The :class:`Outcome` of the snapshot bytes ``data`` (named ``where`` in errors);
        snapshots of one shape (:func:`~pinning.fleet.shape.shape_key`: equal but for the
        GPUs' PCI addresses), identical bytes among them, are verified once. Raises
        :class:`~pinning.errors.ProbeError` (exit 7) when ``data`` is not a valid snapshot.
        """
        if not self.memo:
            return self.host_outcome(parse_snapshot(data, where))
        shape = shape_key(data)
        hit = self._seen.get(shape) if shape is not None else None
        if hit is None:
            exact = b"=" + hashlib.sha256(data).digest()
            hit = self._seen.get(exact)
            if hit is None:
                facts = parse_snapshot(data, where)
                hit = self.host_outcome(facts)
                if len(self._seen) >= MEMO_LIMIT:
                    self._seen.clear()
                self._seen[shape if shape is not None and shape_safe(facts) else exact] = hit
        return hit

    def stream(self, inputs: Iterable[SnapshotInput], tally: FleetTally,
               progress: Progress = NULL_PROGRESS, *, label: str = "verify snapshots",
               total: int | None = None) -> Generator[FleetHost, None, None]:
        """Verify every snapshot of ``inputs`` in order, yielding each host's
        :class:`~pinning.fleet.models.FleetHost` as it is verified and counting it in
        ``tally`` (nothing else is kept). ``progress`` gets one task named ``label``
        advanced by the bytes read (``total``: all of them, when known). Raises what
        ``inputs`` raises (:func:`jsonl_inputs`: :class:`~pinning.errors.UsageError`).
        """
        task = progress.task(label, total)
        pending = 0
        try:
            for item in inputs:
                yield self._host(item, tally)
                pending += len(item.data or b"")
                if pending >= 1 << 20:
                    task.advance(pending)
                    pending = 0
            task.advance(pending)
        finally:
            task.done()

    def run(self, inputs: Iterable[SnapshotInput], progress: Progress = NULL_PROGRESS, *,
            label: str = "verify snapshots", total: int | None = None) -> FleetReport:
        """Verify every snapshot of ``inputs`` (as :meth:`stream`) and return the whole
        :class:`~pinning.fleet.models.FleetReport`, every host held in memory (``pin fleet
        verify`` streams instead).
        """
        tally = FleetTally()
        hosts = list(self.stream(inputs, tally, progress, label=label, total=total))
        return FleetReport(lock=self.lock_name, lock_hash=self.lock_hash,
                           strict=self.strict, targets=self.targets, hosts=hosts,
                           summary=tally.summary())

    def _host(self, item: SnapshotInput, tally: FleetTally) -> FleetHost:
        """The :class:`FleetHost` of one input, counted in ``tally`` (built without
        validation: its fields come from an :class:`Outcome` or the input, valid by
        construction; ``tests/unit/cli/test_fleet_cli.py`` checks streamed reports against
        the schema).
        """
        error = item.error
        if item.data is not None:
            where = item.file if item.line is None else f"{item.file} line {item.line}"
            try:
                out = self.check(item.data, where)
            except ProbeError as exc:
                error = exc.message
            else:
                tally.count(out)
                return FleetHost.model_construct(
                    name=item.name, file=item.file, line=item.line, target=out.target,
                    result=out.result, reason=out.reason, reasons=list(out.reasons),
                    counts=dict(out.counts))
        tally.results["unreadable"] += 1
        return FleetHost.model_construct(
            name=item.name, file=item.file, line=item.line, result="unreadable",
            reason=error or "no snapshot", reasons=[], counts={})


class FleetTally:
    """What the summary of a streamed fleet needs, and nothing per host: the hosts by
    result and by drift reason (memory grows with the distinct reasons, not the hosts).
    """

    def __init__(self) -> None:
        self.results: Counter[str] = Counter()
        self.by_fact: Counter[str] = Counter()
        self.by_word: Counter[str] = Counter()

    def count(self, out: Outcome) -> None:
        """Count one verified host: its result, its drifting facts and words (each once)."""
        self.results[out.result] += 1
        if out.facts:
            self.by_fact.update(out.facts)
            self.by_word.update(set(out.reasons))

    def summary(self) -> FleetSummary:
        """The :class:`~pinning.fleet.models.FleetSummary` of the hosts counted so far."""
        r = self.results
        return FleetSummary(total=sum(r.values()), match=r["match"], drift=r["drift"],
                            unreadable=r["unreadable"], top_facts=_top(self.by_fact),
                            top_reasons=_top(self.by_word))


def _top(counter: Counter[str]) -> list[ReasonCount]:
    """The :data:`~pinning.fleet.models.TOP` most frequent reasons, most hosts first."""
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
    return [ReasonCount(reason=r, hosts=n) for r, n in ranked]


def folder_files(folder: Path) -> list[Path]:
    """The snapshot files of ``folder``: its ``*.json`` entries (not hidden ones, which
    atomic writers use for temporary files), sorted by name. Raises
    :class:`~pinning.errors.UsageError` (exit 2) naming ``folder`` when it is not a folder
    that can be listed, or holds no ``*.json`` file.
    """
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith(".json") and not e.name.startswith("."))
    except NotADirectoryError as exc:
        raise UsageError(f"SNAPSHOT_DIR {folder}: not a folder.",
                         hint="Name a folder of `pin probe -o` snapshots (*.json); for a file "
                              "of JSON lines use --from FILE.jsonl.") from exc
    except FileNotFoundError as exc:
        raise UsageError(f"SNAPSHOT_DIR {folder}: no such folder.",
                         hint="Name a folder of `pin probe -o` snapshots (*.json), or give "
                              "--from FILE.jsonl.") from exc
    except OSError as exc:
        raise UsageError(f"SNAPSHOT_DIR {folder}: cannot be listed "
                         f"({exc.strerror or exc}).") from exc
    if not names:
        raise UsageError(f"SNAPSHOT_DIR {folder}: no *.json snapshot in it.",
                         hint="Write one per host with `pin probe -o DIR/HOST.json`.")
    return [folder / n for n in names]


def folder_inputs(files: Iterable[Path]) -> Iterator[SnapshotInput]:
    """One :class:`SnapshotInput` per file of ``files`` (:func:`folder_files`), read one at a
    time; the host name is the file's name without ``.json``.
    """
    for path in files:
        name = host_name(path)
        try:
            data = read_regular_bytes(path, ProbeError, label=f"Host snapshot {path}",
                                      hint=HINT)
        except ProbeError as exc:
            yield SnapshotInput(name=name, file=_readable(str(path)), line=None,
                                error=_readable(exc.message))
        else:
            yield SnapshotInput(name=name, file=_readable(str(path)), line=None, data=data)


def host_name(path: Path) -> str:
    """The host named by the snapshot file ``path``: its name without ``.json``. A name
    that is not UTF-8 (bytes kept as lone surrogates) is shown with backslash escapes:
    reports are strict JSON and UTF-8.
    """
    return _readable(path.name.removesuffix(".json"))


def _readable(text: str) -> str:
    """``text`` (a file name from the OS) with undecodable bytes as ``\\xNN`` escapes."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def jsonl_inputs(stream: IO[bytes], label: str, *,
                 limit: int = MAX_INPUT_BYTES) -> Iterator[SnapshotInput]:
    """One :class:`SnapshotInput` per non-blank line of the JSON Lines ``stream`` (named
    ``label``: the file as given, ``stdin`` for standard input), streamed; the host name is
    ``LABEL:LINE``. A line longer than ``limit`` bytes is that host's error (the rest of
    the line is skipped). Raises :class:`~pinning.errors.UsageError` (exit 2) when the
    stream cannot be read.
    """
    number = 0
    try:
        while True:
            line = stream.readline(limit + 1)
            if not line:
                return
            number += 1
            name = f"{label}:{number}"
            if len(line) > limit and not line.endswith(b"\n"):
                while (rest := stream.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                yield SnapshotInput(name=name, file=label, line=number,
                                    error=f"Host snapshot {label} line {number}: longer "
                                          f"than {limit} bytes.")
                continue
            if not line.strip():
                continue
            yield SnapshotInput(name=name, file=label, line=number, data=line)
    except OSError as exc:
        raise UsageError(f"--from {label}: cannot be read after line {number} "
                         f"({exc.strerror or exc}).") from exc
