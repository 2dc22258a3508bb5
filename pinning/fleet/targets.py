"""``pin fleet verify`` with a multi-target lock (``lock-version = 2``): each host is
checked against ``--target NAME``, else the target whose locked vendor and GPU match a GPU
its snapshot shows (:func:`~pinning.verify.target.choose_target`). A host no target
matches is a drifting host whose reason names the fact ``target``
(``pin: target h200,mi250x!=mi300x``): never a pass.

The fleet's speed path stays exact: the choice reads only the snapshot's GPUs (their
product and PCI device ID), which a snapshot's shape (:mod:`pinning.fleet.shape`) keeps,
and it is made inside :meth:`TargetFleetVerifier.host_outcome`, whose result (the target
with the outcome) is what :meth:`~pinning.fleet.batch.FleetVerifier.check` remembers per
shape; each target has its own verifier (its own lock plan and rule memory).
"""

from __future__ import annotations

import dataclasses
import re

from pinning.fleet.batch import FleetVerifier, Outcome
from pinning.fleet.reason import DEFAULT_LIMIT, PREFIX
from pinning.lockfile.models import Lockfile
from pinning.lockfile.multi import MultiLock
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts
from pinning.verify.target import NoTargetError, choose_target

__all__ = ["TargetFleetVerifier", "no_target_outcome"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._:+,/@~^=<>\[\]-]")


class TargetFleetVerifier(FleetVerifier):
    """A :class:`~pinning.fleet.batch.FleetVerifier` over every target of ``multi`` (each
    view in ``locks``), or over ``target`` alone for every host. The report's ``lock-hash``
    is the whole file's ``content-hash`` and ``targets`` the targets checked. Raises, per
    host, ``UsageError`` (exit 2) when several targets match its GPUs (``--target``
    chooses): the lock, not the host, is ambiguous. Not thread-safe.
    """

    def __init__(self, multi: MultiLock, locks: dict[str, Lockfile], matrix: Matrix, *,
                 lock_name: str, target: str | None = None, strict: bool = False,
                 memo: bool = True, views: bool = True) -> None:
        first = target if target is not None else multi.names[0]
        super().__init__(locks[first], matrix, lock_name=lock_name, strict=strict,
                         memo=memo, views=views)
        self.multi, self.locks, self.fixed = multi, locks, target
        self.lock_hash = multi.content_hash
        self.targets = [target] if target is not None else multi.names
        self._by: dict[str, FleetVerifier] = {first: self}

    def verifier(self, name: str) -> FleetVerifier:
        """The verifier of target ``name`` (made once, without a snapshot memory: this
        verifier's memory keeps the outcome with its target).
        """
        found = self._by.get(name)
        if found is None:
            found = self._by[name] = FleetVerifier(
                self.locks[name], self.matrix, lock_name=self.lock_name, strict=self.strict,
                memo=False, views=self.views)
        return found

    def host_outcome(self, facts: HostFacts) -> Outcome:
        """The outcome of ``facts`` against its target, the target named in it; a host
        no target matches: :func:`no_target_outcome`.
        """
        name = self.fixed
        if name is None:
            try:
                name = choose_target(self.multi, self.locks, facts, self.matrix,
                                     label=self.lock_name).name
            except NoTargetError as err:
                return no_target_outcome(err)
        return dataclasses.replace(self.verifier(name).outcome(facts), target=name)


def no_target_outcome(err: NoTargetError) -> Outcome:
    """A drifting :class:`~pinning.fleet.batch.Outcome` for a host no target matches: the
    word ``target <targets' GPUs>!=<host's GPUs>`` (each part one safe word, as
    :mod:`pinning.fleet.reason` writes values), its fact ``target``; the reason line cut
    with ``~`` at :data:`~pinning.fleet.reason.DEFAULT_LIMIT` characters. Pure.
    """
    want = _UNSAFE.sub("_", ",".join(dict.fromkeys(err.targets.values())))
    have = _UNSAFE.sub("_", err.host)
    word = f"target {want}!={have}"
    reason = PREFIX + word
    if len(reason) > DEFAULT_LIMIT:
        reason = reason[:DEFAULT_LIMIT - 1] + "~"
    return Outcome(result="drift", reason=reason, reasons=(word,), facts=("target",),
                   counts=(("mismatch", 1),))
