"""The Slurm checks: probe the node (bounded), verify it against the lock(s) the job or the
site names (:mod:`pinning.fleet.slurm_locks`), and drain or resume it through scontrol
(:class:`~pinning.fleet.slurm.Node`); the node-features helper's answer. The Slurm facts and
the drain policy are in :mod:`pinning.fleet.slurm`'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pinning.errors import PinError
from pinning.fleet.slurm import (
    Action,
    Deadline,
    Node,
    NodeStateUnknown,
    SlurmCommandError,
    bounded,
    error_reason,
    node_name,
)
from pinning.fleet.slurm_locks import (
    ProbeFn,
    Verdict,
    index_locks,
    lock_views,
    node_drift,
    select_locks,
    target_features,
    verify_any,
)
from pinning.util.models import Strict

if TYPE_CHECKING:
    from pinning.fleet.config import FleetConfig, ReportConfig, SlurmConfig
    from pinning.lockfile.models import Lockfile, Model
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts
    from pinning.util.proc import Runner

__all__ = ["Check", "Outcome", "node_features", "probe_node", "run_check", "setup_failed"]

Check = Literal["prolog", "healthcheck"]


class Outcome(Strict):
    """What one ``pin slurm prolog`` / ``healthcheck`` run found and did.

    ``result``: ``match``, ``drift``, ``nothing-to-check`` (no lock selected) or ``error``
    (the setup is broken: ``error`` says how). ``selection`` / ``features`` / ``locks``:
    which locks were checked and why (see :func:`select_locks`); ``ignored`` / ``note``:
    the job's ``pin_`` features this node has no lock for, and the line saying so.
    ``matched``: the lock the node matches. ``reason``: the drain reason (drift or error).
    ``action``: what was done to the node (``drained``, ``already-drained``, ``left`` when it
    is out of service for another reason, ``resumed``, ``kept`` when pin drained it for
    another lock, ``drain-failed`` / ``resume-failed`` when scontrol failed,
    ``state-unknown`` when scontrol could not show the node's state so nothing was done,
    ``none``). ``slurm_error``: scontrol's error when it failed. ``service``: what the
    report to ``[report] url`` gave (``reported to URL: drift (...)``, or why it failed or
    was not sent); ``None`` when no report was asked for.
    """

    check: Check
    node: str
    result: Literal["match", "drift", "nothing-to-check", "error"]
    selection: Literal["job", "default", "none"] = "none"
    features: tuple[str, ...] = ()
    locks: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    note: str | None = None
    matched: str | None = None
    reason: str | None = None
    action: Action = "none"
    error: str | None = None
    slurm_error: str | None = None
    service: str | None = None


def probe_node(fleet: FleetConfig, matrix: Matrix) -> ProbeFn:
    """The probe of ``[fleet] root`` (live at ``/``; a recorded tree answered by ``[fleet]
    replay``), reading ``[fleet] site-packages`` and, given a lock's model, its files (digests
    cached in pin's cache file). Raises :class:`~pinning.fleet.config.ConfigError` (2) for a
    ``[fleet] site-packages`` folder the host lacks, else what
    :func:`~pinning.probe.host.probe_host` raises.
    """
    def probe(lock_path: Path | None, model: Model | None) -> HostFacts:
        from pinning.fleet.config import ConfigError
        from pinning.probe.host import probe_host
        from pinning.util.proc import NoRunner, ReplayRunner, SystemRunner

        for d in fleet.site_packages:
            if not (fleet.root / d.lstrip("/")).is_dir():
                raise ConfigError(
                    f"[fleet] site-packages {d}: no such directory on the host ({fleet.root}).",
                    short=f"config [fleet] site-packages {d} missing",
                    hint="Give the workload's site-packages as the host sees it in pin's "
                         "configuration, or remove [fleet] site-packages.")

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
            from pinning.probe.hasher import Hasher, default_cache_file

            hasher = Hasher(default_cache_file())

        def identify(device: str) -> str | None:
            hit = matrix.gpu_by_pci(device)
            return hit.id if hit else None

        return probe_host(fleet.root, runner, environ=environ,
                          site_packages=list(fleet.site_packages), model=model, hasher=hasher,
                          lock_path=str(lock_path) if lock_path else None,
                          replay=str(fleet.replay) if fleet.replay else None, identify=identify)
    return probe


def run_check(check: Check, slurm: SlurmConfig, fleet: FleetConfig,
              environ: Mapping[str, str], *, runner: Runner, probe: ProbeFn, matrix: Matrix,
              hostname: str, deadline: Deadline | None = None,
              report: ReportConfig | None = None,
              notify: Callable[[str], None] | None = None,
              target: str | None = None) -> tuple[Outcome, PinError | None]:
    """One prolog or health-check run, acting on the node through ``runner`` (scontrol).

    It selects the locks (the prolog: :func:`select_locks` on the job's constraint; the
    health check: the default lock), reads them, probes and verifies, all within ``[fleet]
    timeout-s`` and what ``deadline`` (the whole run's, ``[slurm] deadline-s`` from now
    when not given) has left; each scontrol call gets at most what is left then. A
    multi-target lock is checked against ``target`` (``--target``), else the target whose
    feature the job named, else the one whose GPU the node shows
    (:func:`~pinning.fleet.slurm_locks.verify_any`). Then:

    - match: nothing; no scontrol call at all, but in the health check with ``[slurm]
      resume``, which resumes a node pin drained for this lock or a setup error
      (:meth:`~pinning.fleet.slurm.Node.resume`);
    - drift: drain with pin's reason (``pin: pin_<digest12> <fact> <want>!=<have>``); the
      prolog's error is a :class:`~pinning.errors.DriftError` (exit 6, Slurm then requeues
      the job held);
    - a broken setup (config, lock, probe, timeout): drain with ``pin: error: ...`` and
      return that error.

    The prolog with ``[slurm] drain-in-prolog = false`` never calls scontrol: it only
    returns the error (Slurm drains with "Prolog error"). When scontrol cannot show the
    node's state, nothing is drained or resumed (``state-unknown``); when it fails to drain
    or resume, the action says so (``drain-failed``, ``resume-failed``); ``slurm_error``
    has scontrol's error, and the health check returns that
    :class:`~pinning.fleet.slurm.SlurmCommandError` (exit 2). The prolog's exit stays that
    of the drift or setup error. At most one drain is tried per run.

    With ``report`` (``[report]``) naming a ``url``, the probed facts are then posted to
    that pin service as this node's report (:func:`pinning.fleet.slurm_report.report_node`),
    best effort, within what the deadline has left: the outcome's ``service`` says what
    came of it, a failure is also one line to ``notify`` (default: stderr), and it never
    changes the outcome's result, action or error.

    Returns the :class:`Outcome` and the error to exit with (``None``: exit 0). Never raises
    a :class:`~pinning.errors.PinError` except :class:`~pinning.errors.UsageError` for a
    node name pin cannot use.
    """
    deadline = deadline or Deadline(slurm.deadline_s)
    box: list[Verdict] = []
    out, err = _run_check(check, slurm, fleet, environ, runner=runner, probe=probe,
                          matrix=matrix, hostname=hostname, deadline=deadline, verdict=box,
                          target=target)
    if report is not None and report.url and box:
        from pinning.fleet.slurm_report import report_node

        out = out.model_copy(update={"service": report_node(
            report, out.node, box[0].snapshot, box[0].lock_hash, environ=environ,
            deadline=deadline, notify=notify)})
    return out, err


def _run_check(check: Check, slurm: SlurmConfig, fleet: FleetConfig,
               environ: Mapping[str, str], *, runner: Runner, probe: ProbeFn, matrix: Matrix,
               hostname: str, deadline: Deadline, verdict: list[Verdict],
               target: str | None = None) -> tuple[Outcome, PinError | None]:
    """:func:`run_check` without the report; the verdict (when the node was probed) is
    appended to ``verdict``.
    """
    from pinning.errors import DriftError

    name = node_name(slurm, environ, hostname)
    node = Node(runner, slurm.scontrol, name, deadline)
    drains = check == "healthcheck" or slurm.drain_in_prolog
    base = Outcome(check=check, node=name, result="nothing-to-check")
    step = ["reading the locks"]

    def work() -> Verdict | None:
        nonlocal base
        sel = (select_locks(environ.get("SLURM_JOB_CONSTRAINTS", ""), fleet)
               if check == "prolog" else select_locks("", fleet))
        base = base.model_copy(update={
            "selection": sel.source, "features": sel.features, "ignored": sel.ignored,
            "note": sel.note, "locks": tuple(str(p) for p in sel.locks)})
        if not sel.locks:
            return None
        return verify_any(sel.locks, probe, matrix, host=name, target=target,
                          features=sel.features,
                          probing=lambda: step.__setitem__(0, "probe"))

    try:
        found = bounded(work, min(fleet.timeout_s, deadline.left()), lambda: step[0])
    except PinError as err:
        return fail(base, node, err, drain=drains), err
    if found is None:
        return base, None
    verdict.append(found)
    if found.matched is not None:
        out = base.model_copy(update={"result": "match", "matched": str(found.matched)})
        if check != "healthcheck" or not slurm.resume:
            return out, None
        try:
            return out.model_copy(update={"action": node.resume(found.feature)}), None
        except SlurmCommandError as err:
            return _failed(out, err, "resume-failed"), err
    reason = found.reason
    out = base.model_copy(update={"result": "drift", "reason": reason})
    failed: SlurmCommandError | None = None
    if drains:
        assert reason is not None
        try:
            out = out.model_copy(update={"action": node.drain(reason)})
        except SlurmCommandError as err:
            failed, out = err, _failed(out, err, "drain-failed")
    if check == "healthcheck":
        return out, failed
    return out, DriftError(f"Node {name} has drifted from {', '.join(out.locks)}: {reason}.",
                           hint="Bring the node back to the lock, then `scontrol update "
                                f"NodeName={name} State=RESUME`.")


def _failed(out: Outcome, err: PinError, action: Action) -> Outcome:
    """``out`` with scontrol's failure ``err``: ``state-unknown`` when the node's state could
    not be read (nothing done), else ``action``; ``slurm_error`` its text.
    """
    if isinstance(err, NodeStateUnknown):
        return out.model_copy(update={"action": "state-unknown", "slurm_error": err.detail})
    return out.model_copy(update={"action": action, "slurm_error": err.message})


def fail(base: Outcome, node: Node, err: PinError, *, drain: bool = True) -> Outcome:
    """``base`` after a run failed with ``err``: reason ``pin: error: ...``
    (:func:`~pinning.fleet.slurm.error_reason`), the node drained with it when ``drain``
    (see :func:`_failed` for a failing scontrol).
    """
    reason = error_reason(err)
    out = base.model_copy(update={"result": "error", "reason": reason, "error": err.message})
    if drain:
        try:
            out = out.model_copy(update={"action": node.drain(reason)})
        except PinError as exc:
            out = _failed(out, exc, "drain-failed")
    return out


def setup_failed(check: Check, slurm: SlurmConfig, environ: Mapping[str, str], err: PinError,
                 *, runner: Runner, hostname: str,
                 deadline: Deadline | None = None) -> Outcome:
    """The :class:`Outcome` of a run whose setup (configuration, matrix) failed with ``err``:
    the node drained with ``pin: error: ...`` when scontrol can (the prolog only with
    ``[slurm] drain-in-prolog``), within ``deadline``. Raises
    :class:`~pinning.errors.UsageError` when the node name is unusable.
    """
    name = node_name(slurm, environ, hostname)
    return fail(Outcome(check=check, node=name, result="error"),
                Node(runner, slurm.scontrol, name, deadline or Deadline(slurm.deadline_s)), err,
                drain=check == "healthcheck" or slurm.drain_in_prolog)


def _view(path: Path, feature: str) -> Lockfile:
    """The lock (a multi-target lock's target) whose ``pin_<digest12>`` is ``feature``."""
    held = lock_views(path, None, feature)
    return held.chosen.lock if held.chosen is not None else next(iter(held.locks.values()))


def node_features(fleet: FleetConfig, *, probe: ProbeFn, matrix: Matrix,
                  index: Callable[[Path], Mapping[str, Path]] = index_locks
                  ) -> dict[str, Path | None]:
    """The features this node offers, each with its lock: ``pin_<digest12>`` of every lock
    in ``[fleet] locks`` it matches (sorted), then :func:`target_features` (no lock, ``None``).
    Reading the locks and one probe (no model files hashed: a lock's model is not judged
    here), together bounded by ``timeout_s``. Raises :class:`~pinning.errors.LockfileError`
    (5) and :class:`~pinning.errors.ProbeError` (7).
    """
    from pinning.verify.report import verify

    step = ["reading the locks"]

    def work() -> tuple[list[tuple[str, Path, Lockfile]], HostFacts]:
        known = index(fleet.locks) if fleet.locks is not None else {}
        locks = [(f, p, _view(p, f)) for f, p in known.items()]
        step[0] = "probe"
        return sorted(locks, key=lambda t: t[0]), probe(None, None)

    locks, facts = bounded(work, fleet.timeout_s, lambda: step[0])
    offered: dict[str, Path | None] = {}
    for feat, path, lock in locks:
        if not node_drift(verify(lock, facts, matrix, lock_name=str(path), host_name="node")):
            offered[feat] = path
    return offered | dict.fromkeys(target_features(facts))
