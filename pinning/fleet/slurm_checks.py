"""The Slurm checks: probe the node (bounded), verify it against the lock(s) the job or the
site names, and drain or resume it through scontrol (:class:`~pinning.fleet.slurm.Node`);
the node-features helper's answer. The Slurm facts and the drain policy are in
:mod:`pinning.fleet.slurm`'s docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pinning.errors import PinError
from pinning.fleet.slurm import (
    FEATURE_PREFIX,
    Action,
    Node,
    Selection,
    SlurmCommandError,
    bounded,
    drift_reason,
    error_reason,
    index_locks,
    lock_feature,
    node_name,
    select_locks,
)
from pinning.util.models import Strict

if TYPE_CHECKING:
    from pinning.fleet.config import FleetConfig, SlurmConfig
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Lockfile, Model
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts
    from pinning.util.proc import Runner
    from pinning.verify.report import VerifyReport

__all__ = ["Check", "Outcome", "ProbeFn", "Verdict", "node_drift", "node_features",
           "probe_node", "run_check", "setup_failed", "target_features", "verify_any"]

#: Probe the node: ``(lock path or None, the lock's model or None) -> HostFacts``.
ProbeFn = Callable[["Path | None", "Model | None"], "HostFacts"]
Check = Literal["prolog", "healthcheck"]


class Outcome(Strict):
    """What one ``pin slurm prolog`` / ``healthcheck`` run found and did.

    ``result``: ``match``, ``drift``, ``nothing-to-check`` (no lock selected) or ``error``
    (the setup is broken: ``error`` says how). ``selection`` / ``features`` / ``locks``:
    which locks were checked and why (see :func:`~pinning.fleet.slurm.select_locks`);
    ``matched``: the lock the node matches. ``reason``: the drain reason (drift or error).
    ``action``: what was done to the node (``drained``, ``already-drained``, ``left`` when it
    is out of service for another reason, ``resumed``, ``kept`` when pin drained it for
    another lock, ``drain-failed`` / ``resume-failed`` when scontrol failed, ``none``).
    ``slurm_error``: scontrol's error when it failed.
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
    slurm_error: str | None = None


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


class Verdict(Strict):
    """What :func:`verify_any` found: ``matched`` (the first lock the node matches, else
    ``None``), ``feature`` (that lock's ``pin_<digest12>``, else the first lock's) and
    ``reason`` (the first lock's drift reason when none matched).
    """

    matched: Path | None = None
    feature: str
    reason: str | None = None


def verify_any(paths: Sequence[Path], probe: ProbeFn, matrix: Matrix, *, timeout_s: float,
               host: str) -> Verdict:
    """Probe once (bounded by ``timeout_s``) and verify against each lock in ``paths``; drift
    as :func:`node_drift` counts it, the reason as
    :func:`~pinning.fleet.slurm.drift_reason` writes it. Raises
    :class:`~pinning.errors.LockfileError` (5) for a bad lock and
    :class:`~pinning.errors.ProbeError` (7) for a failed or timed-out probe.
    """
    from pinning.verify.report import verify

    locks = _read(paths)
    first_path, first = locks[0]
    facts = bounded(lambda: probe(first_path, first.model), timeout_s)
    reasons: list[str] = []
    for path, lock in locks:
        feature = lock_feature(lock.content_hash)
        drift = node_drift(verify(lock, facts, matrix, lock_name=str(path), host_name=host))
        if not drift:
            return Verdict(matched=path, feature=feature)
        reasons.append(drift_reason(feature, drift))
    return Verdict(feature=lock_feature(first.content_hash), reason=reasons[0])


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

    - match: nothing; no scontrol call at all, but in the health check with ``[slurm]
      resume``, which resumes a node pin drained for this lock or a setup error
      (:meth:`~pinning.fleet.slurm.Node.resume`);
    - drift: drain with pin's reason (``pin: pin_<digest12> <fact> <want>!=<have>``); the
      prolog's error is a :class:`~pinning.errors.DriftError` (exit 6, Slurm then requeues
      the job held);
    - a broken setup (config, lock, probe, timeout): drain with ``pin: error: ...`` and
      return that error.

    The prolog with ``[slurm] drain-in-prolog = false`` never calls scontrol: it only
    returns the error (Slurm drains with "Prolog error"). When scontrol fails to drain or
    resume, the action says so (``drain-failed``, ``resume-failed``, ``slurm_error``) and the
    health check returns that :class:`~pinning.fleet.slurm.SlurmCommandError` (exit 2).

    Returns the :class:`Outcome` and the error to exit with (``None``: exit 0). Never raises
    a :class:`~pinning.errors.PinError` except :class:`~pinning.errors.UsageError` for a
    node name pin cannot use.
    """
    from pinning.errors import DriftError

    name = node_name(slurm, environ, hostname)
    node = Node(runner, slurm.scontrol, name)
    drains = check == "healthcheck" or slurm.drain_in_prolog
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
        verdict = verify_any(sel.locks, probe, matrix, timeout_s=fleet.timeout_s, host=name)
    except PinError as err:
        return fail(base, node, err, drain=drains), err
    if verdict.matched is not None:
        out = base.model_copy(update={"result": "match", "matched": str(verdict.matched)})
        if check != "healthcheck" or not slurm.resume:
            return out, None
        try:
            return out.model_copy(update={"action": node.resume(verdict.feature)}), None
        except SlurmCommandError as err:
            return out.model_copy(update={"action": "resume-failed",
                                          "slurm_error": err.message}), err
    reason = verdict.reason
    out = base.model_copy(update={"result": "drift", "reason": reason})
    failed: SlurmCommandError | None = None
    if drains:
        assert reason is not None
        try:
            out = out.model_copy(update={"action": node.drain(reason)})
        except SlurmCommandError as err:
            failed = err
            out = out.model_copy(update={"action": "drain-failed", "slurm_error": err.message})
    if check == "healthcheck":
        return out, failed
    return out, DriftError(f"Node {name} has drifted from {', '.join(out.locks)}: {reason}.",
                           hint="Bring the node back to the lock, then `scontrol update "
                                f"NodeName={name} State=RESUME`.")


def fail(base: Outcome, node: Node, err: PinError, *, drain: bool = True) -> Outcome:
    """``base`` after a run failed with ``err``: reason ``pin: error: ...``
    (:func:`~pinning.fleet.slurm.error_reason`), the node drained with it when ``drain``
    (a failing scontrol gives the action ``drain-failed`` and its error in ``slurm_error``).
    """
    reason = error_reason(err)
    update: dict[str, object] = {"result": "error", "reason": reason, "error": err.message}
    if drain:
        try:
            update["action"] = node.drain(reason)
        except PinError as exc:
            update |= {"action": "drain-failed", "slurm_error": exc.message}
    return base.model_copy(update=update)


def setup_failed(check: Check, slurm: SlurmConfig, environ: Mapping[str, str], err: PinError,
                 *, runner: Runner, hostname: str) -> Outcome:
    """The :class:`Outcome` of a run whose setup (configuration, matrix) failed with ``err``:
    the node drained with ``pin: error: ...`` when scontrol can (the prolog only with
    ``[slurm] drain-in-prolog``). Raises :class:`~pinning.errors.UsageError` when the node
    name is unusable.
    """
    name = node_name(slurm, environ, hostname)
    return fail(Outcome(check=check, node=name, result="error"),
                Node(runner, slurm.scontrol, name), err,
                drain=check == "healthcheck" or slurm.drain_in_prolog)


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
