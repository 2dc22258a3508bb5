"""Which target of a multi-target lock (``lock-version = 2``) a host is checked against.

``pin verify``, ``pin fleet verify``, the Slurm checks and ``pin probe --lock`` read one
target's view of such a lock. ``--target NAME`` names it; without it the host decides: the
target whose locked vendor and GPU (the matrix id of its request, or the locked product
name) are those of a GPU the host shows (:func:`pinning.lockfile.multi.pick_by_gpu`). A
host GPU is known by the matrix id its PCI device ID maps to (the probe's ``product``, and
:meth:`~pinning.matrix.load.Matrix.gpu_by_pci` for a snapshot an older matrix wrote) and by
that identity's marketing name. A lock with one target needs no choice: verifying it
reports a GPU that differs in detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pinning.errors import DriftError, UsageError
from pinning.util.models import Strict

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile, Model
    from pinning.lockfile.multi import MultiLock
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts

__all__ = ["ChosenBy", "HostLock", "LockTarget", "NoTargetError", "TargetChoice", "choose_target",
           "describe", "host_gpu_label", "host_gpus", "named_target", "read_host_lock",
           "target_gpu_label"]

ChosenBy = Literal["--target", "gpu", "only", "feature"]
_VENDOR = {"amd": "AMD", "nvidia": "NVIDIA"}


class LockTarget(Strict):
    """The target of a multi-target lock a report is for: its ``name``, how it was chosen
    (``chosen-by``: ``--target`` named it, ``gpu``: its locked vendor and GPU match the
    host's, ``only``: the lock has one target, ``feature``: a Slurm job asked for its
    ``pin_<digest12>``) and ``why``, the sentence pin printed.
    """

    name: str
    gpu: str | None = Field(default=None, description="The target's requested GPU (matrix "
                                                      "id), e.g. `mi300x`.")
    chosen_by: ChosenBy
    why: str


class NoTargetError(DriftError):
    """No target of a multi-target lock matches the host's GPUs (exit 6, as drift: the host
    is not what the lock describes). ``targets`` maps each target to its GPU label and
    ``host`` is the host's.
    """

    def __init__(self, message: str, *, host: str, targets: dict[str, str],
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.host = host
        self.targets = targets


@dataclass(frozen=True)
class TargetChoice:
    """A chosen target: ``name``, its ``lock`` (the view) and the :class:`LockTarget`
    (``info``) a report carries; for a single-target lock, ``name`` is ``""`` and ``info``
    ``None``.
    """

    name: str
    lock: Lockfile
    info: LockTarget | None


@dataclass(frozen=True)
class HostLock:
    """A lock read for checking a host: its ``multi`` lock (``None``: lock-version 1) and
    views (``locks``), and the ``chosen`` target when known before the host is read
    (lock-version 1, ``--target``, one target); else the host decides (:meth:`choose`).
    """

    label: str
    multi: MultiLock | None
    locks: dict[str, Lockfile]
    chosen: TargetChoice | None

    def probe_model(self) -> Model | None:
        """The model whose files a probe reads: the chosen lock's, else the one every
        target shares (``[shared] model``), else ``None`` (the targets' models differ: the
        host is probed again once the target is known, :meth:`needs_model`).
        """
        if self.chosen is not None:
            return self.chosen.lock.model
        models = [lock.model for lock in self.locks.values()]
        return models[0] if all(m == models[0] for m in models) else None

    @property
    def models_differ(self) -> bool:
        """True when no target is chosen yet and the targets lock different models."""
        models = [lock.model for lock in self.locks.values()]
        return self.chosen is None and any(m != models[0] for m in models)

    def needs_model(self, choice: TargetChoice) -> bool:
        """True when ``choice``'s model was not read by a probe made with
        :meth:`probe_model`.
        """
        return choice.lock.model is not None and choice.lock.model != self.probe_model()

    def choose(self, facts: HostFacts, matrix: Matrix) -> TargetChoice:
        """The chosen target, else :func:`choose_target` for ``facts``; raises as it does."""
        if self.chosen is not None:
            return self.chosen
        assert self.multi is not None
        return choose_target(self.multi, self.locks, facts, matrix, label=self.label)


def read_host_lock(path: Path, target: str | None, *, label: str) -> HostLock:
    """Read the lock at ``path`` (named ``label``) for checking a host, with ``--target``
    ``target``. Raises ``LockfileError`` (exit 5) as :func:`~pinning.lockfile.io.read_lock`,
    and ``UsageError`` (exit 2) for ``target`` with a single-target lock or a target the
    lock does not have.
    """
    from pinning.lockfile.io import parse_lock_bytes, read_locks

    raw, multi, locks = read_locks(path)
    if multi is None:
        if target is not None:
            parse_lock_bytes(raw, label=label, target=target)  # raises: one message
        return HostLock(label, None, locks, TargetChoice("", locks[""], None))
    chosen = (named_target(multi, locks, target, label=label)
              if target is not None or len(locks) == 1 else None)
    return HostLock(label, multi, locks, chosen)


def host_gpus(facts: HostFacts, matrix: Matrix) -> dict[str, set[str]]:
    """``{vendor: names}`` of the host's GPUs: each GPU's matrix id (the probe's
    ``product``, or its PCI device ID's identity) and that identity's name, lower-case.
    """
    out: dict[str, set[str]] = {}
    for g in facts.gpus:
        names = out.setdefault(g.vendor, set())
        if g.product:
            names.add(g.product.lower())
        ident = matrix.gpu_by_pci(g.pci_device_id) if g.pci_device_id else None
        if ident is not None:
            names.update({ident.id.lower(), ident.name.lower()})
    return out


def host_gpu_label(facts: HostFacts, matrix: Matrix) -> str:
    """The host's GPUs for a message: ``AMD Instinct MI300X`` (distinct products, in probe
    order, joined by ``, ``), ``no GPU`` when it has none.
    """
    seen: dict[str, None] = {}
    for g in facts.gpus:
        ident = matrix.gpu_by_pci(g.pci_device_id) if g.pci_device_id else None
        name = (ident.name if ident else None) or g.name.value or g.product \
            or f"PCI device {g.pci_device_id or 'unknown'}"
        seen[f"{_VENDOR.get(g.vendor, g.vendor)} {name}"] = None
    return ", ".join(seen) or "no GPU"


def target_gpu_label(lock: Lockfile) -> str:
    """A target's GPU for a message: ``AMD Instinct MI300X``."""
    return f"{_VENDOR.get(lock.target.vendor, lock.target.vendor)} {lock.target.gpu.value}"


def describe(info: LockTarget) -> str:
    """The line that says which target: ``target candidate (mi300x): matches this host's
    AMD Instinct MI300X``.
    """
    gpu = f" ({info.gpu})" if info.gpu else ""
    return f"target {info.name}{gpu}: {info.why}"


def named_target(multi: MultiLock, locks: dict[str, Lockfile], name: str | None, *,
                 label: str, how: ChosenBy | None = None,
                 why: str | None = None) -> TargetChoice:
    """The target ``--target NAME`` names (``chosen-by`` ``--target``, or ``how`` with
    ``why``), else the only one (``only``). Raises ``UsageError`` (exit 2) as
    :func:`pinning.lockfile.multi.pick`.
    """
    from pinning.lockfile.multi import pick

    chosen = pick(multi, name, label=label)
    lock = locks[chosen]
    how = how or ("--target" if name is not None else "only")
    why = why or ("named by --target" if name is not None else "the lock's only target")
    return TargetChoice(chosen, lock, LockTarget(name=chosen, gpu=lock.request.gpu,
                                                 chosen_by=how, why=why))


def choose_target(multi: MultiLock, locks: dict[str, Lockfile], facts: HostFacts,
                  matrix: Matrix, *, label: str) -> TargetChoice:
    """The target of ``multi`` (each view in ``locks``) whose vendor and GPU match the
    host ``facts`` shows (``chosen-by`` ``gpu``); with one target, that one (``only``).

    Raises :class:`NoTargetError` (exit 6) naming each target's GPU and the host's when none
    matches; ``UsageError`` (exit 2) naming them when several do (``--target`` chooses).
    """
    if len(locks) == 1:
        return named_target(multi, locks, None, label=label)
    from pinning.lockfile.multi import pick_by_gpu

    hits: dict[str, None] = {}
    for vendor, names in host_gpus(facts, matrix).items():
        hits.update(dict.fromkeys(pick_by_gpu(multi, vendor, names)))
    found = [n for n in multi.names if n in hits]
    host = host_gpu_label(facts, matrix)
    listed = {n: target_gpu_label(locks[n]) for n in multi.names}
    if not found:
        shown = "; ".join(f"{n}: {g}" for n, g in listed.items())
        raise NoTargetError(
            f"{label}: no target matches this host's GPUs ({host}); the targets are "
            f"{shown}.", host=host, targets=listed,
            hint="Check the host against the lock meant for it, or name a target with "
                 "--target NAME to see every difference.")
    if len(found) > 1:
        raise UsageError(f"{label}: targets {', '.join(found)} all match this host's GPUs "
                         f"({host}); name one with --target NAME.",
                         hint=f"For example: --target {found[0]}.")
    name = found[0]
    return TargetChoice(name, locks[name], LockTarget(
        name=name, gpu=locks[name].request.gpu, chosen_by="gpu",
        why=f"matches this host's {host}"))
