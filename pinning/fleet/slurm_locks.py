"""Which locks a Slurm node checks and whether it matches one: the node's locks folder
indexed by ``pin_<digest12>`` feature, the job's features resolved to locks, one probe verified
against each, the drift that belongs to the node, and the node's target features. The Slurm
facts are in :mod:`pinning.fleet.slurm`'s docstring; :mod:`pinning.fleet.slurm_checks` acts on
the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pinning.errors import LockfileError
from pinning.fleet.reason import PREFIX
from pinning.fleet.slurm import (
    FEATURE_PREFIX,
    REASON_LIMIT,
    drift_reason,
    lock_feature,
    pin_features,
)
from pinning.util.models import Strict

if TYPE_CHECKING:
    from pinning.fleet.config import FleetConfig
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Model
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts
    from pinning.verify.report import VerifyReport
    from pinning.verify.target import HostLock

__all__ = ["ProbeFn", "Selection", "Verdict", "index_locks", "node_drift", "read_locks",
           "select_locks", "target_features", "verify_any"]

#: Probe the node: ``(lock path or None, the lock's model or None) -> HostFacts``.
ProbeFn = Callable[["Path | None", "Model | None"], "HostFacts"]


def index_locks(folder: Path) -> dict[str, Path]:
    """Map ``pin_<digest12>`` to each ``*.lock`` in ``folder`` (sorted by name; copies of one
    lock keep the first file); a multi-target lock offers one feature per target (its
    view's content hash, :func:`lock_views`). Raises
    :class:`~pinning.errors.LockfileError` (exit 5) for an unreadable folder or lock, or two
    different locks sharing a feature.
    """
    from pinning.lockfile.io import read_locks

    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".lock" and p.is_file())
    except OSError as exc:
        raise LockfileError(f"Locks folder {folder}: cannot be read ({exc.strerror or exc}).",
                            hint="Set [fleet] locks to the folder of this node's *.lock "
                                 "files.") from exc
    found: dict[str, tuple[Path, str]] = {}
    for path in files:
        for lock in read_locks(path)[2].values():
            h = lock.content_hash
            feat = lock_feature(h)
            if feat in found and found[feat][1] != h:
                raise LockfileError(f"Locks {found[feat][0]} and {path} share the feature "
                                    f"{feat}.", hint="Keep one of them in the folder.")
            found.setdefault(feat, (path, h))
    return {feat: path for feat, (path, _) in found.items()}


class Selection(Strict):
    """Which locks a check uses and why: ``source`` ``job`` (the job's ``pin_`` features this
    node has locks for, ``features``), ``default`` (``[fleet] default-lock``) or ``none``
    (nothing to check). ``ignored``: the job's ``pin_`` features this node has no lock for;
    ``note``: a line saying so and what is checked instead (for stderr), else ``None``.
    """

    source: Literal["job", "default", "none"]
    features: tuple[str, ...] = ()
    locks: tuple[Path, ...] = ()
    ignored: tuple[str, ...] = ()
    note: str | None = None


def select_locks(constraints: str, fleet: FleetConfig,
                 index: Callable[[Path], Mapping[str, Path]] | None = None) -> Selection:
    """The locks for a job whose constraint expression is ``constraints``.

    The job's ``pin_`` features pick among this node's locks, those in ``[fleet] locks``
    (read by ``index``, default :func:`index_locks`, only when the job names one); several
    (``pin_a|pin_b``) are all checked and the node passes when it matches one. Features
    this node has no lock for are ignored (``ignored``, ``note``): any user can write any
    feature into a job's constraint, and a prolog that fails drains the node (Slurm's
    scheduler itself places ``-C pin_X`` jobs only on nodes offering ``pin_X``).
    When the job names no feature this node knows: ``[fleet] default-lock``, the lock every
    node reading this configuration must match; without that, nothing. Raises
    :class:`~pinning.errors.LockfileError` (exit 5) when the locks folder or a lock in it
    cannot be read.
    """
    asked = pin_features(constraints)
    known = (index or index_locks)(fleet.locks) if asked and fleet.locks is not None else {}
    have = tuple(f for f in asked if f in known)
    ignored = tuple(f for f in asked if f not in known)
    if have:
        sel = Selection(source="job", features=have, locks=tuple(known[f] for f in have))
    elif fleet.default_lock is not None:
        sel = Selection(source="default", locks=(fleet.default_lock,))
    else:
        sel = Selection(source="none")
    if not ignored:
        return sel
    where = (f"not in [fleet] locks, {fleet.locks}" if fleet.locks is not None
             else "[fleet] locks is not set")
    instead = {"job": ", ".join(have), "default": f"[fleet] default-lock {fleet.default_lock}",
               "none": "nothing ([fleet] default-lock is not set)"}[sel.source]
    note = (f"the job names {', '.join(ignored)}, which this node has no lock for ({where}); "
            f"checking {instead} instead")
    return sel.model_copy(update={"ignored": ignored, "note": note})


def read_locks(paths: Sequence[Path], target: str | None = None,
               features: Sequence[str] = ()) -> list[tuple[Path, HostLock]]:
    """``(path, lock)`` for each of ``paths`` as :func:`lock_views` reads it, ``features``
    the job's features in the order of ``paths`` (a multi-target lock's target whose view
    feature the job named); :class:`~pinning.errors.LockfileError` (5) for one that cannot
    be read, ``UsageError`` (2) for a ``target`` a multi-target lock lacks.
    """
    return [(p, lock_views(p, target, features[i] if i < len(features) else None))
            for i, p in enumerate(paths)]


def lock_views(path: Path, target: str | None = None,
               feature: str | None = None) -> HostLock:
    """The lock at ``path`` for checking this node (:class:`~pinning.verify.target.HostLock`):
    a single-target lock as it is (``target`` applies to multi-target locks only); a
    multi-target lock's ``target`` (``--target``), else the target whose view's
    ``pin_<digest12>`` is ``feature`` (the job's), else the only one, else the one whose
    GPU the node shows (chosen after the probe: :meth:`HostLock.choose`). Raises as
    :func:`read_locks`.
    """
    from pinning.lockfile.io import read_locks as read_file
    from pinning.verify.target import HostLock, TargetChoice, named_target

    _, multi, locks = read_file(path)
    label = str(path)
    if multi is None:
        return HostLock(label, None, locks, TargetChoice("", locks[""], None))
    if target is not None or len(locks) == 1:
        return HostLock(label, multi, locks, named_target(multi, locks, target, label=label))
    for name, lock in locks.items():
        if lock_feature(lock.content_hash) == feature:
            return HostLock(label, multi, locks, named_target(
                multi, locks, name, label=label, how="feature",
                why=f"the job's feature {feature}"))
    return HostLock(label, multi, locks, None)


class Verdict(Strict):
    """What :func:`verify_any` found: ``matched`` (the first lock the node matches, else
    ``None``), ``feature`` (that lock's ``pin_<digest12>``, else the first lock's) and
    ``reason`` (the first lock's drift reason when none matched); ``lock_hash`` (that
    lock's content hash) and ``snapshot`` (the probed facts as ``pin probe -o`` writes them)
    for a report to a pin service.
    """

    matched: Path | None = None
    feature: str
    reason: str | None = None
    lock_hash: str | None = None
    snapshot: bytes | None = None


def verify_any(paths: Sequence[Path], probe: ProbeFn, matrix: Matrix, *, host: str,
               probing: Callable[[], None] | None = None, target: str | None = None,
               features: Sequence[str] = ()) -> Verdict:
    """Read the locks in ``paths`` (:func:`read_locks` with ``target`` and the job's
    ``features``), probe once (``probing()`` is called just before) and verify against
    each lock; in a multi-target lock, the target chosen for this node
    (:mod:`pinning.verify.target`; one no target matches is that lock's drift, reason
    ``pin: pin_<digest12> target <targets' GPUs>!=<node's GPUs>``, the feature the
    file's ``content-hash``'s). Drift as :func:`node_drift` counts it, the reason as
    :func:`~pinning.fleet.slurm.drift_reason` writes it. Not bounded: the caller runs it
    under :func:`~pinning.fleet.slurm.bounded`. Raises
    :class:`~pinning.errors.LockfileError` (5) for a bad lock, ``UsageError`` (2) for a
    ``target`` a lock lacks or several targets matching the node, and
    :class:`~pinning.errors.ProbeError` (7) for a failed probe.
    """
    from pinning.probe.snapshot import snapshot_text
    from pinning.verify.report import verify
    from pinning.verify.target import NoTargetError

    locks = read_locks(paths, target, features)
    first_path, first = locks[0]
    if probing is not None:
        probing()
    facts = probe(first_path, first.probe_model())
    snapshot = snapshot_text(facts).encode()
    reasons: list[str] = []
    hashes: list[str] = []
    for path, held in locks:
        try:
            lock = held.choose(facts, matrix).lock
        except NoTargetError as err:
            from pinning.fleet.targets import no_target_outcome

            assert held.multi is not None
            hashes.append(held.multi.content_hash)
            word = no_target_outcome(err).reasons[0]
            reasons.append(_cut(f"{PREFIX}{lock_feature(hashes[-1])} {word}"))
            continue
        feature = lock_feature(lock.content_hash)
        hashes.append(lock.content_hash)
        drift = node_drift(verify(lock, facts, matrix, lock_name=str(path), host_name=host))
        if not drift:
            return Verdict(matched=path, feature=feature, lock_hash=lock.content_hash,
                           snapshot=snapshot)
        reasons.append(drift_reason(feature, drift))
    return Verdict(feature=lock_feature(hashes[0]), reason=reasons[0], lock_hash=hashes[0],
                   snapshot=snapshot)


def _cut(reason: str) -> str:
    """``reason`` cut with ``~`` at :data:`~pinning.fleet.slurm.REASON_LIMIT` characters."""
    return reason if len(reason) <= REASON_LIMIT else reason[:REASON_LIMIT - 1] + "~"


def node_drift(report: VerifyReport) -> list[Finding]:
    """The report's drift that belongs to the node: all of it but behaviour variables
    (``environment.*``). Those are the job's (``sbatch --export``, its script); the prolog
    and health check run in an environment slurmd builds, not the job's. Pure.
    """
    return [f for f in report.drift if not f.fact.startswith("environment.")]


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
