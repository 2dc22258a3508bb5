"""``pin lock``'s Python packages: each target it resolves gets its whole Python environment
locked, exactly as ``pin lock packages LOCK --target NAME`` would lock it, when the project
file opts in.

The project opts in with the requirements (``[project] requirements``, a pip-style file,
and/or ``pyproject``, whose ``[project] dependencies`` are read) and ``[project] indexes``
(simple-API URLs, the first the default index: nothing is fetched from an index the file
does not name), ``python`` and ``python-platform``. Each run resolves the packages afresh
from those requirements for the new stack (:func:`~pinning.resolve.pypackages.plan_packages`
with ``fresh``); the same index gives the same bytes. A target not re-resolved this run keeps
the packages its section holds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pinning.errors import PinError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.project.load import LoadedProject

__all__ = ["PackagesConfig", "TargetResult", "lock_target_packages", "packages_config",
           "packages_state"]


class TargetResult(Protocol):
    """What is read of a :class:`pinning.cli.lockproject.TargetResult`: the target's
    ``name``, its ``lock`` (replaced when its packages are locked), whether it was
    ``resolved`` this run, and its ``notes`` (appended to).
    """

    name: str
    lock: Lockfile
    resolved: bool
    notes: list[str]


@dataclass(frozen=True)
class PackagesConfig:
    """What ``pin lock`` locks each target's packages from: the simple-API ``indexes`` (the
    first the default), the target ``python`` (``3.12``) and ``platform`` (uv's name).
    """

    indexes: tuple[str, ...]
    python: str
    platform: str


def packages_config(project: LoadedProject) -> PackagesConfig | str | None:
    """``None`` when the project names no requirements (nor pyproject); else the
    :class:`PackagesConfig`, or a sentence saying which ``[project]`` key is missing for
    ``pin lock`` to lock them (``indexes``, ``python``, ``python-platform``).
    """
    p = project.model.project
    if p.requirements is None and p.pyproject is None:
        return None
    file = project.path.name
    if not p.indexes:
        return (f"set [project] indexes (with python and python-platform) in {file} for "
                "pin lock to lock them")
    missing = [k for k, v in (("python", p.python), ("python-platform", p.python_platform))
               if v is None]
    if missing or p.python is None or p.python_platform is None:
        return (f"[project] in {file} sets indexes but not {' nor '.join(missing)} (the "
                "target's Python, e.g. python = \"3.12\", python-platform = "
                f"\"x86_64-manylinux_2_28\"); set {'them' if len(missing) > 1 else 'it'}")
    return PackagesConfig(p.indexes, p.python, p.python_platform)


def _specs(project: LoadedProject) -> list[str]:
    """The requirements the project names: the lines of ``[project] requirements`` and the
    ``[project] dependencies`` of ``[project] pyproject``. Raises ``UsageError`` (exit 2)
    naming the file when one cannot be read or holds no list of strings there.
    """
    import tomllib

    from pinning.resolve.pypackages import read_requirements_file

    p = project.model.project
    specs = ([] if p.requirements is None
             else read_requirements_file(project.resolve_path(p.requirements)))
    if p.pyproject is not None:
        path = project.resolve_path(p.pyproject)
        try:
            deps = tomllib.loads(path.read_text(encoding="utf-8")).get(
                "project", {}).get("dependencies", [])
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError) as exc:
            raise UsageError(f"{path}: cannot read its [project] dependencies ({exc}).",
                             hint=f"Fix the file, or point [project] pyproject in "
                                  f"{project.path.name} at another.") from None
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise UsageError(f"{path}: [project] dependencies is not a list of "
                             "requirement strings.")
        specs += deps
    return specs


def lock_target_packages(project: LoadedProject, results: Sequence[TargetResult],
                         fmt: str) -> None:
    """Lock the Python packages of each target of ``results`` resolved this run, in place
    (``result.lock`` gets ``[packages]``, ``[[wheels]]`` and ``[python]``; a note
    ``packages: N wheels for Python X on PLATFORM``), when :func:`packages_config` gives a
    config; progress on standard error (none for ``fmt`` json). Raises what ``pin lock
    packages`` raises (``UsageError`` exit 2, ``BuildError`` exit 8), naming the target.
    """
    from pinning.cli.progress import progress_for
    from pinning.resolve.pypackages import lock_packages, plan_packages

    config = packages_config(project)
    todo = [r for r in results if r.resolved]
    if not isinstance(config, PackagesConfig) or not todo:
        return
    specs = _specs(project)
    with progress_for(fmt) as progress:
        for r in todo:
            try:
                plan = plan_packages(r.lock, indexes=config.indexes, requirements=specs,
                                     python_version=config.python,
                                     python_platform=config.platform, fresh=True)
                task = progress.task(
                    f"{r.name}: resolve {len(plan.requirements)} requirement(s) with uv for "
                    f"Python {plan.python_version} on {plan.python_platform}")
                try:
                    r.lock, wheels = lock_packages(r.lock, plan)
                finally:
                    task.done()
            except PinError as exc:  # which target, when there are several
                exc.message = f"[targets.{r.name}] of {project.path.name}: {exc.message}"
                raise
            r.notes.append(f"packages: {len(wheels)} wheels for Python "
                           f"{plan.python_version} on {plan.python_platform}")


def packages_state(project: LoadedProject, result: TargetResult, dest: str
                   ) -> dict[str, Any]:
    """Whether ``result``'s target has its Python packages locked: ``{"locked": bool,
    "reason": str | None, "run": str | None}``; when the project names requirements and
    they are not locked, ``reason`` says what to set (or run) and ``run`` is the ``pin lock
    packages`` command that locks them.
    """
    if result.lock.python is not None:
        return {"locked": True, "reason": None, "run": None}
    config = packages_config(project)
    if config is None:
        return {"locked": False, "run": None,
                "reason": "the project names no requirements or pyproject"}
    p = project.model.project
    req = p.requirements or p.pyproject
    assert req is not None
    path = os.path.relpath(project.resolve_path(req))
    given = (f"-r {path}" if p.requirements
             else f"--requirement SPEC... (each dependency of {path})")
    run = f"pin lock packages {dest} --target {result.name} {given}"
    why = config if isinstance(config, str) else (
        f"not locked since it was resolved; run pin lock --target {result.name}")
    return {"locked": False, "reason": printable(f"{why}, or run {run}", newlines=False),
            "run": run}

