"""The first stages of ``pin trial``: the trial's context, ``audit``, ``lock`` and ``build``.

Each stage is two functions over a :class:`Trial`: ``inputs`` (what its inputs hash covers,
:class:`~pinning.cli.trial_record.Inputs`) and ``run`` (an :class:`Outcome`). A stage runs
pin's own commands through :func:`~pinning.cli.trial_invoke.invoke`; nothing here
re-implements a command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinning.cli import trial_invoke
from pinning.cli.trial_invoke import Invoked
from pinning.cli.trial_record import TRIAL_DIR, Inputs

if TYPE_CHECKING:
    from pinning.project.load import LoadedProject

__all__ = ["LOCK", "Outcome", "Trial", "audit_inputs", "build_inputs", "lock_inputs",
           "run_audit", "run_build", "run_lock"]

#: The project's lock, relative to the project folder.
LOCK = "pin.lock"
AUDIT_OUT = (TRIAL_DIR / "audit.json").as_posix()


@dataclass
class Outcome:
    """What a stage did: ``status`` (``ran``, ``skipped`` or ``failed``), ``reason``,
    the ``commands`` run, the ``outputs`` written (paths relative to the project folder),
    ``notes`` (one line each), and for a failed stage its ``exit_code`` and ``error``.
    """

    status: str
    reason: str | None = None
    commands: list[Invoked] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    exit_code: int = 0
    error: str | None = None


def failed(done: Invoked, commands: list[Invoked], notes: list[str]) -> Outcome:
    """The outcome of a stage stopped by the command ``done`` (its exit code and error)."""
    words = " ".join(done.argv[:2] if done.argv[0] == "accept" else done.argv[:1])
    return Outcome("failed", f"pin {words} exited {done.exit_code}", commands,
                   notes=notes, exit_code=done.exit_code,
                   error=done.error or f"pin {' '.join(done.argv)} exited {done.exit_code}")


@dataclass
class Trial:
    """One run of ``pin trial``: the ``project``, its ``folder`` and the signing key
    ``--sign`` gave. Commands run and this host is read through
    :mod:`pinning.cli.trial_invoke` (looked up when used: the seams a test replaces).
    """

    project: LoadedProject
    sign_key: str | None = None
    _gpus: tuple[set[str], str] | None = None
    _vendors: dict[str, str | None] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The project folder: every path of the trial is relative to it."""
        return self.project.folder

    def pin(self, argv: list[str]) -> Invoked:
        """Run ``pin ARGV...`` in the project folder."""
        return trial_invoke.invoke(argv, self.folder)

    def host(self) -> tuple[set[str], str]:
        """The GPUs of this host (matrix ids) and how to say them, read once."""
        if self._gpus is None:
            self._gpus = trial_invoke.host_gpus()
        return self._gpus

    def targets(self) -> list[str]:
        """The project's targets in file order (the first is the platform in use)."""
        return list(self.project.model.targets)

    def gpu_id(self, name: str) -> str:
        """Target ``name``'s GPU as a lower-case matrix id (as written when the matrix
        does not know it, or knows several by that name).
        """
        gpu = self.project.model.targets[name].gpu
        found = _matrix_gpu(gpu)
        return found[0] if found is not None else gpu.lower()

    def vendor(self, name: str) -> str | None:
        """Target ``name``'s GPU vendor (``amd``, ``nvidia``) from the matrix, or ``None``."""
        if name not in self._vendors:
            found = _matrix_gpu(self.project.model.targets[name].gpu)
            self._vendors[name] = found[1] if found is not None else None
        return self._vendors[name]

    def rel(self, value: str) -> str:
        """A path from the project file, relative to the project folder (POSIX form)."""
        return Path(os.path.relpath(self.project.resolve_path(value), self.folder)).as_posix()

    def dump(self, value: Any) -> Any:
        """A project model (or a dict / list of them) as plain JSON data."""
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json", by_alias=True)
        if isinstance(value, dict):
            return {k: self.dump(v) for k, v in value.items()}
        return value


def _matrix_gpu(query: str) -> tuple[str, str] | None:
    """``(matrix id, vendor)`` of the GPU ``query`` names; ``None`` when the matrix knows
    none or several.
    """
    from pinning.errors import PinError
    from pinning.matrix.load import load_matrix

    try:
        found = load_matrix().find_gpu(query)
    except PinError:
        return None
    if isinstance(found, list):
        return None
    return found.id.lower(), str(found.vendor)


def _candidate_gpus(trial: Trial) -> list[str]:
    """The GPUs the audit is for: the AMD targets' (a port from CUDA goes to ROCm)."""
    return sorted({trial.project.model.targets[n].gpu for n in trial.targets()
                   if trial.vendor(n) == "amd"})


def _audited_files(folder: Path) -> list[str]:
    """The files ``pin audit`` reads in ``folder`` (by its own name rules), ``.pin``
    left out, relative and sorted.
    """
    from pinning.audit.files import walk
    from pinning.audit.scan import scanners_for

    found = walk(folder, [], wanted=lambda name: bool(scanners_for(name)))
    return sorted(rel for _path, rel in found if not rel.startswith(".pin/"))


def audit_inputs(trial: Trial) -> Inputs:
    """The audit reads the project's sources and is for the candidates' GPUs."""
    return Inputs({"gpus": _candidate_gpus(trial)}, _audited_files(trial.folder))


def run_audit(trial: Trial) -> Outcome:
    """``pin audit . --exclude .pin`` for the candidate GPU, the bill written to
    ``.pin/trial/audit.json``. Exit 11 (something at or above blocked) is a finding the
    cost stage weighs, not a failure.
    """
    gpus = _candidate_gpus(trial)
    argv = ["audit", ".", "--exclude", ".pin", "--format", "json", "-o", AUDIT_OUT]
    notes = []
    if len(gpus) == 1:
        argv += ["--gpu", gpus[0]]
    elif gpus:
        notes.append(f"the candidates' GPUs differ ({', '.join(gpus)}): audited for none "
                     "in particular")
    done = trial.pin(argv)
    if done.exit_code not in (0, 11):
        return failed(done, [done], notes)
    result = (done.envelope or {}).get("result") or {}
    totals = result.get("totals") or {}
    shown = ", ".join(f"{n} {v}" for v, n in totals.items()) or "no totals"
    notes.insert(0, f"porting bill: {shown}" + (" (blocked items: the cost stage weighs "
                                                  "them)" if done.exit_code == 11 else ""))
    return Outcome("ran", None, [done], [AUDIT_OUT], notes)


def lock_inputs(trial: Trial) -> Inputs:
    """``pin lock`` reads ``[project]`` and ``[targets]``, and the matrix overlays and
    Python environment files they name.
    """
    model = trial.project.model
    files = [trial.rel(p) for t in model.targets.values() for p in t.matrix]
    files += [trial.rel(p) for p in (model.project.requirements, model.project.pyproject)
              if p is not None]
    return Inputs({"project": trial.dump(model.project), "targets": trial.dump(model.targets)},
                  files)


def run_lock(trial: Trial) -> Outcome:
    """``pin lock``: every target into ``pin.lock`` in the project folder."""
    if not trial.targets():
        return Outcome("skipped", "the project file names no targets ([targets.NAME])")
    done = trial.pin(["lock", "--format", "json"])
    if done.exit_code:
        return failed(done, [done], [])
    return Outcome("ran", None, [done], [LOCK], _lock_notes(done))


def _lock_notes(done: Invoked) -> list[str]:
    """One line per target from ``pin lock``'s JSON result, where it gives them."""
    result = (done.envelope or {}).get("result")
    targets = result.get("targets") if isinstance(result, dict) else None
    if not isinstance(targets, dict | list):
        return []
    items = targets.items() if isinstance(targets, dict) else (
        (t.get("name", "?"), t) for t in targets if isinstance(t, dict))
    notes = []
    for name, info in items:
        if isinstance(info, dict):
            what = ", ".join(str(info[k]) for k in ("status", "content-hash") if info.get(k))
            packages = info.get("packages")
            if isinstance(packages, dict) and packages.get("locked") is False \
                    and packages.get("run"):
                what += f"; Python packages not locked: {packages.get('reason')}"
            notes.append(f"{name}: {what or 'locked'}")
    return notes


def build_inputs(trial: Trial) -> Inputs:
    """A build reads the lock and each target's ``[targets.NAME.image]``."""
    images = {n: trial.dump(t.image) for n, t in trial.project.model.targets.items()}
    return Inputs({"images": images, "sign": trial.sign_key}, [LOCK])


def run_build(trial: Trial) -> Outcome:
    """``pin build`` (and, with ``--sign KEY``, its signing and attestation) per target
    that has a registry and repository, where a container engine answers; skipped with
    the reason for every other target.
    """
    commands: list[Invoked] = []
    notes: list[str] = []
    engine: str | bool | None = False  # False: not asked yet
    for name in trial.targets():
        image = trial.project.model.targets[name].image
        if image is None or image.registry is None or image.repo is None:
            notes.append(f"{name}: skipped: no registry configured for target {name} "
                         f"([targets.{name}.image] registry and repo)")
            continue
        if engine is False:
            engine = trial_invoke.engine_problem()
        if engine is not None:
            notes.append(f"{name}: skipped: {engine}")
            continue
        argv = ["build", LOCK, "--target", name, "--registry", image.registry,
                "--repo", image.repo, "--format", "json"]
        argv += ["--base", image.base] if image.base else []
        argv += ["--sign", trial.sign_key] if trial.sign_key else []
        done = trial.pin(argv)
        commands.append(done)
        if done.exit_code:
            return failed(done, commands, notes)
        signed = "built and signed" if trial.sign_key else "built (not signed: no --sign KEY)"
        notes.append(f"{name}: {signed}")
    if not commands:
        return Outcome("skipped", "no target could be built here" if notes
                       else "no targets", notes=notes)
    return Outcome("ran", None, commands, [LOCK], notes)
