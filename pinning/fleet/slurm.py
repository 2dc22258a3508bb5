"""Slurm integration: the prolog, the health check and the node-features helper.

Slurm facts this module relies on (``man slurm.conf``, Slurm 22.05,
https://slurm.schedmd.com/slurm.conf.html and https://slurm.schedmd.com/prolog_epilog.html,
read 2026-12; seen on Debian bookworm's slurm-wlm 22.05.8):

- a ``Prolog`` that exits non-zero sets the node DRAIN and requeues the job held
  (``JobState=PENDING Reason=launch_failed_requeued_held``); without a reason set by the
  prolog the node's reason is only "Prolog error" (seen), so pin sets its own first
  (``scontrol update NodeName=N State=DRAIN Reason="pin: ..."``);
- the prolog sees the job's ``--constraint`` in ``SLURM_JOB_CONSTRAINTS`` and the node's
  name in ``SLURMD_NODENAME``, with no ``PATH``;
- a ``HealthCheckProgram``'s exit code is ignored ("Any action to be taken must be
  explicitly performed by the program"), it is killed after 60 s and it does not get
  ``SLURM_CONF``;
- the ``node_features/helpers`` plugin runs its helper with no argument to read the node's
  active features, one per line (``man helpers.conf``, https://slurm.schedmd.com/helpers.conf.html).

Policy (decided here, after LBNL NHC's ``helpers/node-mark-offline`` and
``node-mark-online``, https://github.com/mej/nhc, read 2026-12): pin drains with reasons
that start with :data:`~pinning.fleet.reason.PREFIX`; it never overwrites the reason of a node
that is already drained or down for another reason, and it resumes (health check only, with
``[slurm] resume``) only nodes whose reason is its own.

Everything that touches the machine goes through the :class:`~pinning.util.proc.Runner`
seam (scontrol) or a passed-in probe function; the rest is pure.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pinning.errors import LockfileError, PinError, ProbeError, UsageError
from pinning.fleet.reason import DEFAULT_LIMIT, PREFIX
from pinning.util.models import Strict

if TYPE_CHECKING:
    from pinning.fleet.config import FleetConfig, SlurmConfig
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Lockfile, Model
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts
    from pinning.util.proc import CommandResult, Runner
    from pinning.verify.report import VerifyReport

__all__ = ["FEATURE_PREFIX", "Node", "NodeState", "Outcome", "ProbeTimeout", "Selection",
           "SlurmCommandError", "bounded", "drain_argv", "error_reason", "index_locks",
           "lock_feature", "node_drift", "node_features", "node_name", "parse_node",
           "pin_features", "probe_node", "resume_argv", "run_check", "select_locks",
           "setup_failed", "slurm_conf", "target_features", "verify_any"]

#: Every feature pin answers for starts with this.
FEATURE_PREFIX = "pin_"
#: A lock's feature is :data:`FEATURE_PREFIX` plus this many hex digits of its content hash.
DIGEST_CHARS = 12
#: Bound on one scontrol call, in seconds: Slurm's default MessageTimeout (``man slurm.conf``).
SCONTROL_TIMEOUT_S = 10.0
#: Where Slurm reads its configuration when ``SLURM_CONF`` is unset (Debian's build).
DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"

# A feature name between constraint operators: & | , [ ] ( ) * ! and blanks (the operators
# of `sbatch --constraint`, man sbatch 22.05). One character class: linear.
_FEATURE = re.compile(r"[^&|,\[\]()*!\s]+")
_PIN_FEATURE = re.compile(r"^pin_[0-9a-f]{12}$")
_NODE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
# "Reason=text [user@2026-12-01T21:18:32]": the tail scontrol adds to a reason.
_REASON_TAIL = re.compile(r" \[[^\[\]\s]{1,200}\]$")
_STATE = re.compile(r"(?:^| )State=(\S+)")

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


def index_locks(folder: Path) -> dict[str, Path]:
    """Map ``pin_<digest12>`` to each ``*.lock`` in ``folder`` (sorted by name; copies of one
    lock keep the first file). Raises :class:`~pinning.errors.LockfileError` (exit 5) for an
    unreadable folder or lock, or two different locks sharing a feature.
    """
    from pinning.lockfile.io import read_lock

    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".lock" and p.is_file())
    except OSError as exc:
        raise LockfileError(f"Locks folder {folder}: cannot be read ({exc.strerror or exc}).",
                            hint="Set [fleet] locks to the folder of this node's *.lock "
                                 "files.") from exc
    found: dict[str, tuple[Path, str]] = {}
    for path in files:
        h = read_lock(path).content_hash
        feat = lock_feature(h)
        if feat in found and found[feat][1] != h:
            raise LockfileError(f"Locks {found[feat][0]} and {path} share the feature {feat}.",
                                hint="Keep one of them in the folder.")
        found.setdefault(feat, (path, h))
    return {feat: path for feat, (path, _) in found.items()}


class Selection(Strict):
    """Which locks a check uses and why: ``source`` ``job`` (the job's ``pin_`` features,
    ``features``), ``default`` (``[fleet] default-lock``) or ``none`` (nothing to check).
    """

    source: Literal["job", "default", "none"]
    features: tuple[str, ...] = ()
    locks: tuple[Path, ...] = ()


def select_locks(constraints: str, fleet: FleetConfig,
                 index: Callable[[Path], Mapping[str, Path]] = index_locks) -> Selection:
    """The locks for a job whose constraint expression is ``constraints``.

    The job's ``pin_`` features name locks in ``[fleet] locks`` (read by ``index`` only
    then); several features (``pin_a|pin_b``) are all checked and the node passes when it
    matches one. Features that name no lock here are ignored while one does. Without any,
    ``[fleet] default-lock``; without that, nothing. Raises
    :class:`~pinning.errors.LockfileError` (exit 5) when the job asks only for locks this
    node does not have (naming the folder), or for one with no ``[fleet] locks`` set.
    """
    asked = pin_features(constraints)
    if asked:
        if fleet.locks is None:
            raise LockfileError(
                f"The job asks for {', '.join(asked)} but [fleet] locks is not set.",
                hint="Set [fleet] locks to the folder holding the cluster's *.lock files.")
        known = index(fleet.locks)
        locks = tuple(known[f] for f in asked if f in known)
        if not locks:
            have = ", ".join(sorted(known)) or "none"
            raise LockfileError(
                f"The job asks for {', '.join(asked)}; no lock in {fleet.locks} has that "
                f"digest (features there: {have}).",
                hint="Copy the lock into the locks folder on every node (`pin slurm features "
                     "--config FILE` lists what a node offers).")
        return Selection(source="job", features=tuple(asked), locks=locks)
    if fleet.default_lock is not None:
        return Selection(source="default", locks=(fleet.default_lock,))
    return Selection(source="none")


def node_name(slurm: SlurmConfig, environ: Mapping[str, str], hostname: str) -> str:
    """The node's Slurm name: ``[slurm] node-name``, else ``$SLURMD_NODENAME``, else the
    short ``hostname``. Raises :class:`~pinning.errors.UsageError` (exit 2) for a name that
    is not letters, digits, ``.``, ``_`` and ``-``.
    """
    name = slurm.node_name or environ.get("SLURMD_NODENAME") or hostname.split(".")[0]
    if not _NODE_NAME.match(name):
        raise UsageError(f"Node name {name!r} is not a Slurm node name.",
                         hint="Set [slurm] node-name in pin's configuration.")
    return name


def slurm_conf(slurm: SlurmConfig, environ: Mapping[str, str]) -> str:
    """The ``SLURM_CONF`` scontrol gets: ``[slurm] slurm-conf``, else ``$SLURM_CONF`` (slurmd
    gives the prolog its own), else ``/etc/slurm/slurm.conf``. Pure.
    """
    if slurm.slurm_conf is not None:
        return str(slurm.slurm_conf)
    return environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF


def error_reason(err: PinError, limit: int = DEFAULT_LIMIT) -> str:
    """The drain reason for a run that failed with ``err``: ``pin: <first line>``, ASCII,
    one line, at most ``limit`` characters (cut with ``~``). Pure.
    """
    first = (err.message.strip().splitlines() or ["error"])[0]
    text = PREFIX + "".join(ch if " " <= ch <= "~" else " " if ch.isspace() else "_"
                            for ch in first)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "~"


def bounded(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()``, or :class:`ProbeTimeout` (exit 7) when it has not returned after
    ``timeout_s`` seconds. ``fn`` runs in a daemon thread, which is left behind on timeout
    (the process then ends; the tools it runs have their own timeouts). ``fn``'s exception
    is raised here.
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=target, name="pin-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise ProbeTimeout(f"probe timed out after {timeout_s:g} s")
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


def drain_argv(scontrol: str, node: str, reason: str) -> list[str]:
    """``scontrol update NodeName=<node> State=DRAIN Reason=<reason>`` as argv (no shell)."""
    return [scontrol, "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(scontrol: str, node: str) -> list[str]:
    """``scontrol update NodeName=<node> State=RESUME`` as argv."""
    return [scontrol, "update", f"NodeName={node}", "State=RESUME"]


Action = Literal["none", "drained", "already-drained", "left", "resumed"]


@dataclass(frozen=True)
class Node:
    """One Slurm node reached through ``runner`` with ``scontrol``."""

    runner: Runner
    scontrol: str
    name: str

    def _run(self, argv: Sequence[str]) -> CommandResult:
        done = self.runner.run(argv, timeout=SCONTROL_TIMEOUT_S)
        if done is None:
            raise SlurmCommandError(f"scontrol not found: {self.scontrol}.")
        if not done.ok:
            raise SlurmCommandError(f"Slurm refused: {done.describe()}.")
        return done

    def state(self) -> NodeState | None:
        """The node's state, ``None`` when scontrol cannot show it."""
        done = self.runner.run([self.scontrol, "-o", "show", "node", self.name],
                               timeout=SCONTROL_TIMEOUT_S)
        return parse_node(done.stdout) if done is not None and done.ok else None

    def drain(self, reason: str) -> Action:
        """Drain with ``reason`` unless the node is already out of service for another
        reason (``left``) or with this very reason (``already-drained``). Raises
        :class:`SlurmCommandError` when scontrol fails.
        """
        now = self.state()
        if now is not None and now.out_of_service and not now.pins:
            return "left"
        if now is not None and now.pins and now.reason == reason:
            return "already-drained"
        self._run(drain_argv(self.scontrol, self.name, reason))
        return "drained"

    def resume(self) -> Action:
        """Resume the node when pin drained it (its reason starts with ``pin: ``)."""
        now = self.state()
        if now is None or not now.pins or "DOWN" in now.flags:
            return "none"
        self._run(resume_argv(self.scontrol, self.name))
        return "resumed"


# --- the checks ------------------------------------------------------------------------------

#: Probe the node: ``(lock path or None, the lock's model or None) -> HostFacts``.
ProbeFn = Callable[["Path | None", "Model | None"], "HostFacts"]
Check = Literal["prolog", "healthcheck"]


class Outcome(Strict):
    """What one ``pin slurm prolog`` / ``healthcheck`` run found and did.

    ``result``: ``match``, ``drift``, ``nothing-to-check`` (no lock selected) or ``error``
    (the setup is broken: ``error`` says how). ``selection`` / ``features`` / ``locks``:
    which locks were checked and why (see :func:`select_locks`); ``matched``: the lock the
    node matches. ``reason``: the drain reason (drift or error). ``action``: what was done to
    the node (``drained``, ``already-drained``, ``left`` when it is out of service for
    another reason, ``resumed``, ``none``).
    """

    check: Check
    node: str
    result: Literal["match", "drift", "nothing-to-check", "error"]
    selection: Literal["job", "default", "none"] = "none"
    features: tuple[str, ...] = ()
    locks: tuple[str, ...] = ()
    matched: str | None = None
    reason: str | None = None
    action: Action = "none"
    error: str | None = None


def probe_node(fleet: FleetConfig, matrix: Matrix) -> ProbeFn:
    """The probe of ``[fleet] root`` (live at ``/``; a recorded tree answered by ``[fleet]
    replay``), reading ``[fleet] site-packages`` and, given a lock's model, its files (digests
    cached in pin's cache file). Raises what :func:`~pinning.probe.host.probe_host` raises.
    """
    def probe(lock_path: Path | None, model: Model | None) -> HostFacts:
        from pinning.probe.host import probe_host
        from pinning.util.proc import NoRunner, ReplayRunner, SystemRunner

        runner: Runner
        environ: Mapping[str, str] | None = None
        if fleet.replay is not None:
            rec = ReplayRunner(fleet.replay)
            runner, environ = rec, rec.environment
        elif fleet.root.resolve() == Path("/"):
            runner = SystemRunner()
        else:
            runner = NoRunner()
        hasher = None
        if model is not None:
            from pinning.probe.modelfiles import Hasher, default_cache_file

            hasher = Hasher(default_cache_file())

        def identify(device: str) -> str | None:
            hit = matrix.gpu_by_pci(device)
            return hit.id if hit else None

        return probe_host(fleet.root, runner, environ=environ,
                          site_packages=list(fleet.site_packages), model=model, hasher=hasher,
                          lock_path=str(lock_path) if lock_path else None,
                          replay=str(fleet.replay) if fleet.replay else None, identify=identify)
    return probe


def _read(paths: Sequence[Path]) -> list[tuple[Path, Lockfile]]:
    from pinning.lockfile.io import read_lock

    return [(p, read_lock(p)) for p in paths]


def verify_any(paths: Sequence[Path], probe: ProbeFn, matrix: Matrix, *, timeout_s: float,
               host: str) -> tuple[Path | None, str | None]:
    """Probe once (bounded by ``timeout_s``) and verify against each lock in ``paths``:
    ``(the first lock matched, None)`` or ``(None, the short reason of the first lock's
    drift)``, drift as :func:`node_drift` counts it. Raises
    :class:`~pinning.errors.LockfileError` (5) for a bad lock and
    :class:`~pinning.errors.ProbeError` (7) for a failed or timed-out probe.
    """
    from pinning.fleet.reason import short_reason
    from pinning.verify.report import verify

    locks = _read(paths)
    first_path, first = locks[0]
    facts = bounded(lambda: probe(first_path, first.model), timeout_s)
    reasons: list[str] = []
    for path, lock in locks:
        drift = node_drift(verify(lock, facts, matrix, lock_name=str(path), host_name=host))
        if not drift:
            return path, None
        reasons.append(short_reason(drift))
    return None, reasons[0]


def node_drift(report: VerifyReport) -> list[Finding]:
    """The report's drift that belongs to the node: all of it but behaviour variables
    (``environment.*``). Those are the job's (``sbatch --export``, its script); the prolog
    and health check run in an environment slurmd builds, not the job's. Pure.
    """
    return [f for f in report.drift if not f.fact.startswith("environment.")]


def run_check(check: Check, slurm: SlurmConfig, fleet: FleetConfig,
              environ: Mapping[str, str], *, runner: Runner, probe: ProbeFn, matrix: Matrix,
              hostname: str) -> tuple[Outcome, PinError | None]:
    """One prolog or health-check run, acting on the node through ``runner`` (scontrol).

    It selects the locks (the prolog: the job's ``pin_`` features, else the default lock;
    the health check: the default lock), probes, verifies, then:

    - match: nothing (the health check, with ``[slurm] resume``, resumes a node pin drained);
    - drift: drain with pin's reason; the prolog's error is a
      :class:`~pinning.errors.DriftError` (exit 6, Slurm then requeues the job held);
    - a broken setup (lock, probe, timeout, scontrol): drain with ``pin: <error>`` and
      return that error.

    Returns the :class:`Outcome` and the error to exit with (``None``: exit 0). Never raises
    a :class:`~pinning.errors.PinError` except :class:`~pinning.errors.UsageError` for a
    node name pin cannot use.
    """
    from pinning.errors import DriftError

    name = node_name(slurm, environ, hostname)
    node = Node(runner, slurm.scontrol, name)
    base = Outcome(check=check, node=name, result="nothing-to-check")
    try:
        if check == "prolog":
            sel = select_locks(environ.get("SLURM_JOB_CONSTRAINTS", ""), fleet)
        else:
            sel = (Selection(source="default", locks=(fleet.default_lock,))
                   if fleet.default_lock is not None else Selection(source="none"))
        base = base.model_copy(update={"selection": sel.source, "features": sel.features,
                                       "locks": tuple(str(p) for p in sel.locks)})
        if not sel.locks:
            return base, None
        matched, reason = verify_any(sel.locks, probe, matrix, timeout_s=fleet.timeout_s,
                                     host=name)
        if matched is not None:
            action: Action = node.resume() if check == "healthcheck" and slurm.resume else "none"
            return base.model_copy(update={"result": "match", "matched": str(matched),
                                           "action": action}), None
        assert reason is not None
        base = base.model_copy(update={"result": "drift", "reason": reason})
        action = node.drain(reason)
    except PinError as err:
        return fail(base, node, err), err
    out = base.model_copy(update={"action": action})
    if check == "healthcheck":
        return out, None
    return out, DriftError(f"Node {name} has drifted from {', '.join(out.locks)}: {reason}.",
                           hint="Bring the node back to the lock, then `scontrol update "
                                f"NodeName={name} State=RESUME`.")


def fail(base: Outcome, node: Node, err: PinError) -> Outcome:
    """``base`` after a run failed with ``err``: the node drained with ``pin: <error>`` when
    scontrol can (a failing scontrol leaves the action ``none``).
    """
    reason = error_reason(err)
    try:
        action = node.drain(reason)
    except PinError:
        action = "none"
    return base.model_copy(update={"result": "error", "reason": reason, "action": action,
                                   "error": err.message})


def setup_failed(check: Check, slurm: SlurmConfig, environ: Mapping[str, str], err: PinError,
                 *, runner: Runner, hostname: str) -> Outcome:
    """The :class:`Outcome` of a run whose setup (configuration, matrix) failed with ``err``:
    the node drained with ``pin: <error>`` when scontrol can. Raises
    :class:`~pinning.errors.UsageError` when the node name is unusable.
    """
    name = node_name(slurm, environ, hostname)
    return fail(Outcome(check=check, node=name, result="error"),
                Node(runner, slurm.scontrol, name), err)


def target_features(facts: HostFacts) -> list[str]:
    """``pin_gfx942`` / ``pin_sm90`` for the GPUs' gfx targets and compute capabilities as
    probed (values of another shape are left out), sorted. Pure.
    """
    out: set[str] = set()
    for gpu in facts.gpus:
        gfx = gpu.gfx_target.value if gpu.gfx_target else None
        if gfx and re.fullmatch(r"gfx[0-9a-f]{3,5}", gfx):
            out.add(FEATURE_PREFIX + gfx)
        cc = gpu.compute_capability.value if gpu.compute_capability else None
        if cc and re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,2}", cc):
            out.add(FEATURE_PREFIX + "sm" + cc.replace(".", ""))
    return sorted(out)


def node_features(fleet: FleetConfig, *, probe: ProbeFn, matrix: Matrix,
                  index: Callable[[Path], Mapping[str, Path]] = index_locks
                  ) -> dict[str, Path | None]:
    """The features this node offers, each with its lock: ``pin_<digest12>`` of every lock
    in ``[fleet] locks`` it matches (sorted), then :func:`target_features` (no lock, ``None``).
    One probe (no model files hashed: a lock's model is not judged here), bounded by
    ``timeout_s``. Raises :class:`~pinning.errors.LockfileError` (5) and
    :class:`~pinning.errors.ProbeError` (7).
    """
    from pinning.verify.report import verify

    known = index(fleet.locks) if fleet.locks is not None else {}
    facts = bounded(lambda: probe(None, None), fleet.timeout_s)
    offered: dict[str, Path | None] = {}
    for feat, (path, lock) in sorted(zip(known, _read(list(known.values())), strict=True)):
        if not node_drift(verify(lock, facts, matrix, lock_name=str(path), host_name="node")):
            offered[feat] = path
    return offered | dict.fromkeys(target_features(facts))
