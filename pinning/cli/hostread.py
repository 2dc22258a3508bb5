"""Reading the host a command names: a snapshot (``--host``), a recorded root (``--root``
with ``--replay``), the host's / mounted at ``--root`` (``--chroot``), or this machine live.
Shared by ``pin probe``, ``pin freeze`` and ``pin verify``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pinning.cli.options import cli_path
from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.lockfile.models import Model
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts

__all__ = ["host_facts", "probe_from_options"]


def probe_from_options(root: str | None, replay: str | None, site_packages: tuple[str, ...],
           matrix: Matrix, model: Model | None, lock_path: str | None = None) -> HostFacts:
    """Probe this machine live, or a recorded ``--root`` tree (tools answered by ``--replay``,
    or run inside the tree with ``--chroot``, :class:`~pinning.util.proc.ChrootRunner`);
    with the lock's ``model``, its files are read and hashed (digests remembered in pin's
    cache, :func:`~pinning.probe.hasher.default_cache_file`); ``lock_path`` is the
    lock file (``-`` or ``None``: none), which anchors a relative model folder.
    """
    from pinning.cli.options import chroot_requested
    from pinning.probe.host import probe_host
    from pinning.util.proc import ChrootRunner, NoRunner, ReplayRunner, Runner, SystemRunner

    runner: Runner
    environ = None
    chroot = chroot_requested()
    if chroot and (replay or not root):
        raise UsageError("--chroot runs the host's tools inside --root DIR (the host's / "
                         "mounted there); give --root DIR, and no --replay.")
    if replay and not root:
        raise UsageError("--replay answers tool commands for a recorded host; give its tree "
                         "with --root DIR too (without --root pin probes this machine live).")
    if replay:
        rec = ReplayRunner(Path(replay))
        runner, environ = rec, rec.environment
    elif root and chroot:
        runner = ChrootRunner(Path(root))
    elif root:
        runner = NoRunner()
    else:
        runner = SystemRunner()

    def identify(device: str) -> str | None:
        hit = matrix.gpu_by_pci(device)
        return hit.id if hit else None

    hasher = None
    if model is not None:
        from pinning.probe.hasher import Hasher, default_cache_file

        hasher = Hasher(default_cache_file())
    return probe_host(
        Path(root) if root else Path("/"), runner, environ=environ,
        site_packages=list(site_packages), model=model, hasher=hasher,
        lock_path=lock_path if lock_path and lock_path != "-" else None, replay=replay,
        identify=identify,
    )


def host_facts(host_file: str | None, root: str | None, replay: str | None,
                site_packages: tuple[str, ...], matrix: Matrix,
                model: Model | None, lock_path: str | None = None) -> tuple[HostFacts, str]:
    """The facts and a label: from ``--host FILE`` or by probing (live or ``--root``);
    ``lock_path`` is the lock the model comes from.
    """
    if host_file:
        from pinning.cli.options import chroot_requested

        if root or replay or site_packages or chroot_requested():
            raise UsageError("--host reads a snapshot; it excludes --root, --replay, --chroot "
                             "and --site-packages (those probe a host).")
        from pinning.probe.snapshot import read_snapshot

        return read_snapshot(cli_path(host_file)), ("standard input" if host_file == "-"
                                                    else host_file)
    label = f"root {root}" if root else "this host (live)"
    return probe_from_options(root, replay, site_packages, matrix, model, lock_path), label
