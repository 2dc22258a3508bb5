"""Slurm integration: the prolog, the health check and the node-features helper.

Slurm facts this module relies on (``man slurm.conf`` of Slurm 22.05 and
https://slurm.schedmd.com/slurm.conf.html, https://slurm.schedmd.com/prolog_epilog.html,
read 2026-12-01; seen with Debian bookworm's slurm-wlm 22.05.8 in
tests/integration/test_slurm.py, 2026-12-01):

- a ``Prolog`` that exits non-zero sets the node DRAIN and requeues the job held
  (``JobState=PENDING Reason=launch_failed_requeued_held``); without a reason set by the
  prolog the node's reason is only "Prolog error" (seen), so pin sets its own first
  (``scontrol update NodeName=N State=DRAIN Reason="pin: ..."``), unless
  ``[slurm] drain-in-prolog = false``. The prolog guide says prolog and epilog scripts
  "should not call Slurm commands (e.g. squeue, scontrol, sacctmgr, etc)": pin's prolog calls
  none on a match, and on drift or error at most two, each bounded by
  :data:`SCONTROL_TIMEOUT_S` and by the run's :class:`Deadline` (``[slurm] deadline-s``);
- the prolog sees the job's ``--constraint`` in ``SLURM_JOB_CONSTRAINTS`` and the node's
  name in ``SLURMD_NODENAME``, with no ``PATH``;
- a ``HealthCheckProgram``'s exit code is ignored ("Any action to be taken must be
  explicitly performed by the program") and it is killed after 60 s (``man slurm.conf``);
  it gets ``SLURMD_NODENAME`` but neither ``SLURM_CONF`` nor ``PATH`` (seen with Debian's
  slurm-wlm 22.05.8, tests/integration/test_slurm.py, 2026-12-01);
- the ``node_features/helpers`` plugin runs its helper with no argument to read the node's
  active features, one per line (``man helpers.conf``, https://slurm.schedmd.com/helpers.conf.html,
  read 2026-12-01).

Policy (decided here, after LBNL NHC's ``helpers/node-mark-offline`` and
``node-mark-online``, https://github.com/mej/nhc, read 2026-12-01): pin drains with reasons
that start with :data:`~pinning.fleet.reason.PREFIX` and name the lock
(``pin: pin_<digest12> <fact> <want>!=<have>``) or the setup error (``pin: error: ...``); it
never overwrites the reason of a node that is already drained or down for another reason,
and neither drains nor resumes a node whose state scontrol could not show; the health check
(with ``[slurm] resume``) resumes only a node whose reason is pin's for the lock it has just
found matching, or pin's setup error; a drain for another lock is left to an operator.

Everything that touches the machine goes through the :class:`~pinning.util.proc.Runner`
seam (scontrol) or a passed-in probe function; the rest is pure.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from pinning.errors import LockfileError, MatrixError, PinError, ProbeError, UsageError
from pinning.fleet.reason import PREFIX
from pinning.fleet.slurm_argv import (
    check_node_name,
    drain_argv,
    node_name,
    resume_argv,
    show_argv,
    slurm_conf,
)

if TYPE_CHECKING:
    from pinning.guards.view import Finding
    from pinning.util.proc import CommandResult, Runner

__all__ = ["ERROR_PREFIX", "FEATURE_PREFIX", "REASON_LIMIT", "Deadline", "Node", "NodeState",
           "NodeStateUnknown", "ProbeTimeout", "SlurmCommandError", "bounded", "check_node_name",
           "drain_argv", "drift_reason", "error_reason", "lock_feature", "node_name",
           "parse_node", "pin_features", "reason_lock", "resume_argv", "show_argv",
           "slurm_conf"]

#: Every feature pin answers for starts with this.
FEATURE_PREFIX = "pin_"
#: A lock's feature is :data:`FEATURE_PREFIX` plus this many hex digits of its content hash.
DIGEST_CHARS = 12
#: Bound on one scontrol call, in seconds: Slurm's default MessageTimeout, "Default value is
#: 10 seconds" (https://slurm.schedmd.com/slurm.conf.html#OPT_MessageTimeout, read 2026-12-01;
#: the same in ``man slurm.conf`` of 22.05.8).
SCONTROL_TIMEOUT_S = 10.0
#: An scontrol call is not started with less time than this left before the run's deadline.
MIN_CALL_S = 0.5
#: Bound on a drain reason pin writes, in characters: one ``sinfo -R`` line stays readable.
REASON_LIMIT = 128
#: A setup error's drain reason starts with this (after the lock's drift reasons, the other
#: kind pin writes).
ERROR_PREFIX = PREFIX + "error: "

# A feature name between constraint operators: & | , [ ] ( ) * ! and blanks (the operators
# of `sbatch --constraint`, man sbatch 22.05). One character class: linear.
_FEATURE = re.compile(r"[^&|,\[\]()*!\s]+")
_PIN_FEATURE = re.compile(r"^pin_[0-9a-f]{12}$")
# "Reason=text [user@2026-12-01T21:18:32]": the tail scontrol adds to a reason.
_REASON_TAIL = re.compile(r" \[[^\[\]\s]{1,200}\]$")
_STATE = re.compile(r"(?:^| )State=(\S+)")
_REASON_LOCK = re.compile(r"^pin: (pin_[0-9a-f]{12})(?: |$)")

T = TypeVar("T")


class SlurmCommandError(UsageError):
    """scontrol is missing or failed: a broken setup (exit 2)."""

    default_hint = ("Check [slurm] scontrol and slurm-conf in pin's configuration (SLURM_CONF "
                    "must name the cluster's slurm.conf) and that slurmctld is reachable.")


class ProbeTimeout(ProbeError):
    """The probe ran past ``[fleet] timeout-s`` (exit 7)."""

    default_hint = ("Find the slow tool (run `pin probe` by hand), or raise [fleet] timeout-s "
                    "(keep it below PrologEpilogTimeout and the health check's 60 s).")


def lock_feature(content_hash: str) -> str:
    """``pin_<first 12 hex>`` for a lock's ``content-hash`` (``sha256:<64 hex>``)."""
    return FEATURE_PREFIX + content_hash.split(":", 1)[-1][:DIGEST_CHARS]


def pin_features(constraints: str) -> list[str]:
    """The ``pin_<12 hex>`` features a job's constraint expression asks for, first-seen order,
    each once; a feature right after ``!`` (negated) is left out. Pure; never raises.

    ``pin_abc123def456&gpu``, ``[pin_abc123def456*2&rack1]``, ``pin_a|pin_b`` all parse.
    """
    out: list[str] = []
    for m in _FEATURE.finditer(constraints):
        name = m.group(0)
        if m.start() > 0 and constraints[m.start() - 1] == "!":
            continue
        if _PIN_FEATURE.match(name) and name not in out:
            out.append(name)
    return out


def _one_line(text: str) -> str:
    """``text``'s first line as printable ASCII with single blanks."""
    first = (text.strip().splitlines() or [""])[0]
    return " ".join("".join(ch if " " <= ch <= "~" else " " if ch.isspace() else "_"
                            for ch in first).split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "~"


def _short_paths(text: str) -> str:
    """Absolute paths of three or more parts as ``.../<last part>`` (the full paths stay in
    the message on stderr). Pure; no regex.
    """
    out = []
    for word in text.split(" "):
        core = word.rstrip(":,.;")
        if core.startswith("/") and core.count("/") >= 3:
            word = ".../" + core.rsplit("/", 1)[1] + word[len(core):]
        out.append(word)
    return " ".join(out)


def _kind(err: PinError) -> str:
    for cls, kind in ((SlurmCommandError, "scontrol"), (ProbeError, "probe"),
                      (LockfileError, "lock"), (MatrixError, "matrix"), (UsageError, "setup")):
        if isinstance(err, cls):
            return kind
    return "failed"


def error_reason(err: PinError, limit: int = REASON_LIMIT) -> str:
    """The drain reason for a run whose setup failed with ``err``, kind first:
    ``pin: error: <class of problem>: <detail>``, at most ``limit`` characters, ASCII, one
    line (cut with ``~``). The error's ``short`` text when it has one (``lock pin_X not in
    /etc/pin/locks``, ``config [fleet] locks: ...``), ``probe timed out after 30 s`` for a
    timeout, else its kind (``probe``, ``lock``, ``scontrol``, ``matrix``, ``setup``) and its
    first line with long paths shortened. The whole message goes to stderr. Pure.
    """
    short = getattr(err, "short", None)
    if not isinstance(short, str):
        short = (err.message if isinstance(err, ProbeTimeout)
                 else f"{_kind(err)}: {_short_paths(_one_line(err.message))}")
    return _cut(ERROR_PREFIX + _one_line(short), limit)


def drift_reason(feature: str, drift: Sequence[Finding], limit: int = REASON_LIMIT) -> str:
    """The drain reason for a node drifting from the lock whose feature is ``feature``:
    ``pin: pin_<digest12> <fact> <want>!=<have> (+N more)``, at most ``limit`` characters
    (built with :func:`pinning.fleet.reason.short_reason`, which cuts the first word with
    ``~``). Pure.
    """
    from pinning.fleet.reason import short_reason

    head = PREFIX + feature + " "
    return head + short_reason(drift, limit - len(head) + len(PREFIX))[len(PREFIX):]


def reason_lock(reason: str | None) -> str | None:
    """The ``pin_<digest12>`` a drift reason pin wrote names, else ``None``. Pure."""
    m = _REASON_LOCK.match(reason or "")
    return m.group(1) if m else None


class Deadline:
    """One run's overall time budget: ``seconds`` from ``start`` (``clock()`` now when not
    given; ``clock`` is :func:`time.monotonic`). Every step of a prolog or health-check run
    (reading the locks, probing, each scontrol call) takes at most what is :meth:`left`.
    """

    def __init__(self, seconds: float, *, start: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self.end = (clock() if start is None else start) + seconds

    def left(self) -> float:
        """Seconds left, never below 0."""
        return max(0.0, self.end - self.clock())


def bounded(fn: Callable[[], T], timeout_s: float, what: str | Callable[[], str] = "probe") -> T:
    """``fn()``, or :class:`ProbeTimeout` (exit 7, ``<what> timed out after <timeout_s> s``;
    ``what`` may be a function, asked at the timeout, naming the step ``fn`` was in) when it
    has not returned after ``timeout_s`` seconds. ``fn`` runs in a daemon thread, which is
    left behind on timeout (the process then ends; the tools it runs have their own
    timeouts). ``fn``'s exception is raised here.
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=target, name="pin-probe", daemon=True)
    worker.start()
    worker.join(max(timeout_s, 0.0))
    if worker.is_alive():
        step = what() if callable(what) else what
        raise ProbeTimeout(f"{step} timed out after {timeout_s:.3g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@dataclass(frozen=True)
class NodeState:
    """A node as ``scontrol -o show node`` shows it: ``state`` (``IDLE+DRAIN``) and the
    ``reason`` without scontrol's ``[user@time]`` tail (``None``: none set).
    """

    state: str
    reason: str | None = None

    @property
    def flags(self) -> set[str]:
        """The state's words: ``{"IDLE", "DRAIN"}``."""
        return set(self.state.upper().split("+"))

    @property
    def out_of_service(self) -> bool:
        """Drained, draining, down or failing: no new job starts here."""
        return bool(self.flags & {"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING"})

    @property
    def pins(self) -> bool:
        """Out of service with a reason pin wrote."""
        return self.out_of_service and (self.reason or "").startswith(PREFIX)


def parse_node(text: str) -> NodeState | None:
    """The :class:`NodeState` in ``scontrol -o show node NAME`` output (one line per node;
    ``Reason=`` is the last field in Slurm 22.05). ``None`` when no ``State=`` is there.
    """
    for line in text.splitlines():
        m = _STATE.search(line)
        if not line.startswith("NodeName=") or m is None:
            continue
        at = line.find(" Reason=")
        reason = _REASON_TAIL.sub("", line[at + 8:].rstrip()) if at >= 0 else None
        return NodeState(m.group(1), reason or None)
    return None


Action = Literal["none", "drained", "already-drained", "left", "resumed", "kept",
                 "drain-failed", "resume-failed", "state-unknown"]


class NodeStateUnknown(SlurmCommandError):
    """``scontrol show node`` failed or showed no state: pin neither drains nor resumes
    (exit 2). ``detail``: scontrol's error, for the outcome line.
    """

    def __init__(self, message: str, *, detail: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.detail = detail


@dataclass
class Node:
    """One Slurm node reached through ``runner`` with ``scontrol``; each call bounded by
    :data:`SCONTROL_TIMEOUT_S` and by what ``deadline`` has left. After a drain that failed
    (or timed out) this node object refuses to try again: one drain attempt per run. Made
    only with a ``name`` Slurm can take (:func:`check_node_name`: else ``UsageError``,
    exit 2, and no scontrol call).
    """

    runner: Runner
    scontrol: str
    name: str
    deadline: Deadline | None = None
    drain_failed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        check_node_name(self.name)  # UsageError (exit 2) before any scontrol call

    def _run(self, argv: Sequence[str]) -> CommandResult:
        timeout, verb = SCONTROL_TIMEOUT_S, "show" if argv[1] == "-o" else argv[1]
        if self.deadline is not None:
            timeout = min(timeout, self.deadline.left())
            if timeout < MIN_CALL_S:
                raise SlurmCommandError(
                    f"no time left for `scontrol {verb}`: the run's deadline ([slurm] "
                    f"deadline-s, {self.deadline.seconds:g} s) is spent.",
                    hint="Find what was slow (the probe: `pin probe`), or lower [fleet] "
                         "timeout-s below [slurm] deadline-s.")
        done = self.runner.run(argv, timeout=timeout)
        if done is None:
            raise SlurmCommandError(f"scontrol not found: {self.scontrol}.")
        if done.returncode == 124 and done.stderr.startswith("timed out"):
            raise SlurmCommandError(f"`scontrol {verb}` timed out after {timeout:.3g} s.")
        if not done.ok:
            raise SlurmCommandError(f"Slurm refused: {done.describe()}.")
        return done

    def state(self, then: str = "nothing done") -> NodeState:
        """The node's state. Raises :class:`NodeStateUnknown` (``then`` ends its message)
        when scontrol fails, times out or shows no ``State=``.
        """
        try:
            done = self._run(show_argv(self.scontrol, self.name))
            now = parse_node(done.stdout)
            detail = ("" if now is not None
                      else f"`scontrol -o show node {self.name}` showed no State=")
        except SlurmCommandError as exc:
            now, detail = None, exc.message.rstrip(".")
        if now is None:
            raise NodeStateUnknown(f"Could not read the state of node {self.name}: {detail}; "
                                   f"{then}.", detail=detail)
        return now

    def drain(self, reason: str) -> Action:
        """Drain with ``reason`` unless the node is already out of service for another
        reason (``left``) or with this very reason (``already-drained``). Raises
        :class:`NodeStateUnknown` when its state cannot be read (nothing is done then: the
        node may be drained by someone else) and :class:`SlurmCommandError` when scontrol
        fails, or when a drain failed before on this object (no second attempt).
        """
        if self.drain_failed:
            raise SlurmCommandError("not drained: an earlier drain in this run failed.")
        try:
            now = self.state("not drained")
            if now.out_of_service and not now.pins:
                return "left"
            if now.pins and now.reason == reason:
                return "already-drained"
            self._run(drain_argv(self.scontrol, self.name, reason))
        except SlurmCommandError:
            self.drain_failed = True
            raise
        return "drained"

    def resume(self, feature: str) -> Action:
        """Resume the node, just found matching the lock whose feature is ``feature``, when
        pin drained it for that lock (reason ``pin: <feature> ...``) or for a setup error
        (``pin: error: ...``): ``resumed``. A drain of pin's for another lock is ``kept`` (an
        operator resumes it); a node not drained by pin, or down, is left (``none``).
        Raises :class:`NodeStateUnknown` when its state cannot be read (not resumed) and
        :class:`SlurmCommandError` when scontrol fails.
        """
        now = self.state("not resumed")
        if not now.pins or "DOWN" in now.flags:
            return "none"
        reason = now.reason or ""
        if reason_lock(reason) != feature and not reason.startswith(ERROR_PREFIX):
            return "kept"
        self._run(resume_argv(self.scontrol, self.name))
        return "resumed"
