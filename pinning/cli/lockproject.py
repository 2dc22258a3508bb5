"""``pin lock`` without a subcommand: resolve every target of the project file into one
lock-version 2 ``pin.lock``.

Each target is resolved exactly as ``pin resolve --target NAME -o pin.lock`` would resolve
it (:func:`resolve_params` parses ``pin resolve``'s own options with the project's values as
defaults; :func:`pinning.cli.resolvelock.resolve_lock` runs what it runs), the matrix read once
per set of overlays. ``--target NAME`` re-resolves only that section; a section holding
values frozen from a host keeps those the new stack still validates (as ``pin lock upgrade``
does) unless ``--force``. The file is written atomically, only if it still holds the bytes
read; the same inputs give the same bytes. When the project file names requirements and
``indexes``, ``python``, ``python-platform``, each target resolved also gets its Python
packages locked (:mod:`pinning.cli.lockproject_packages`), as ``pin lock packages`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.errors import LockfileError, PinError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.lockfile.multi import MultiLock
    from pinning.project.load import LoadedProject

__all__ = ["TargetResult", "lock_project", "project_lock_options", "resolve_params",
           "target_line"]


def project_lock_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``pin lock`` itself (the group run without a subcommand):
    ``--target NAME`` (repeatable, passed as ``targets``), ``-o FILE`` (``output``),
    ``--dry-run``, ``--force`` and ``--format`` (``fmt``, noted for the envelope only when
    ``pin lock`` itself runs).
    """
    from pinning.cli.options import FORMAT, output_path

    for option in reversed((
        click.option("--target", "targets", metavar="NAME", multiple=True,
                     help="Resolve only this target of the project file (repeatable); the "
                          "lock's other sections are kept as they are."),
        click.option("-o", "--output", callback=output_path, metavar="FILE",
                     help="Write here instead of pin.lock in the project's folder ('-': "
                          "standard output, messages then go to stderr)."),
        click.option("--dry-run", is_flag=True,
                     help="Resolve and report, write nothing."),
        click.option("--force", is_flag=True,
                     help="Re-resolve host-frozen values too and drop sections of targets "
                          "the project no longer has."),
        click.option("--format", "fmt", type=FORMAT, default="text", show_default=True,
                     help="text for people; json: one envelope {pin, command, ok, "
                          "exit-code, result, error} on standard output."),
    )):
        func = option(func)
    return func


_NO_PROJECT = (
    "pin lock resolves the targets of a project file into one pin.lock, and no project "
    "file (pin.toml, or [tool.pin] in pyproject.toml) was found from this folder nor named "
    "with --project DIR / PIN_PROJECT. `pin init` writes one; for a single lock without a "
    "project use `pin resolve --gpu GPU --framework NAME==VERSION`; `pin lock --help` "
    "lists the subcommands (show, validate, diff, check, upgrade, migrate, ...).")


@dataclass
class TargetResult:
    """One target of a ``pin lock`` run: its ``lock`` (the view written), whether it was
    ``resolved`` this run (else kept as it was), the old view's content-hash (``None`` for
    a new section), the frozen host values ``carried`` / ``dropped`` (with why) and the
    resolve guards' ``notes``.
    """

    name: str
    lock: Lockfile
    resolved: bool
    old_hash: str | None = None
    carried: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the section differs from the one the file held (a new one included)."""
        return self.old_hash != self.lock.content_hash


def lock_project(ctx: click.Context, **options: Any) -> None:
    """Run ``pin lock`` (the group without a subcommand) for the project of ``ctx``, with
    the options of :func:`project_lock_options`.

    Raises ``UsageError`` (exit 2) without a project file, for an unknown ``--target``, a
    section of a target the project no longer has (without ``--force``), a single-target
    lock at the output (without ``--force``) or ``-o -`` with ``--format json``;
    ``LockfileError`` (exit 5) for an unreadable lock there or one that changed meanwhile;
    what ``pin resolve`` raises for a target (exit 3, 4, 10); what ``pin lock packages``
    raises when the project's Python packages are locked (exit 2, 8), naming the target.
    """
    from pinning.cli.envelope import note_format
    from pinning.cli.lockproject_packages import lock_target_packages
    from pinning.cli.options import refuse_stdout_twice
    from pinning.cli.project import loaded
    from pinning.lockfile.multi import render_multi, split

    fmt: str = options["fmt"]
    note_format(ctx, click.Option(["--format"]), fmt)
    project = loaded(ctx)
    if project is None:
        raise UsageError(_NO_PROJECT)
    output: str | None = options["output"]
    refuse_stdout_twice(output, fmt, what="lock")
    if output not in (None, "-"):
        from pinning.cli.options import cli_path
        from pinning.util.samefile import refuse_overwrite

        refuse_overwrite(cli_path(output), [("the project file", project.path)],
                         command="pin lock", folders=False)
    dest = output or os.path.relpath(project.folder / "pin.lock")
    names = _names(project, options["targets"])
    raw, multi, old = _existing(dest, force=options["force"], every=not options["targets"])
    stale = [n for n in old if n not in project.model.targets]
    if stale and not options["force"]:
        raise UsageError(
            f"{dest} has a section for {', '.join(map(repr, stale))}, which "
            f"{project.path.name} no longer names as a target; nothing was written.",
            hint="Pass --force to drop it, or add the target back to the project file.")
    results = _resolve_all(ctx, project, names, dest, old, multi, force=options["force"])
    lock_target_packages(project, results, fmt)
    multi_new = split({r.name: _view(r, multi) for r in results},
                      project=project.model.project.name)
    text = render_multi(multi_new, dest=None if dest == "-" else Path(dest))
    state = _write(text.encode(), dest, raw, dry_run=options["dry_run"])
    _report(project, results, dest, state, fmt=fmt)


def _names(project: LoadedProject, targets: tuple[str, ...]) -> list[str]:
    """The targets to resolve: those named (each checked as ``pin resolve --target`` checks
    it), else every target, in the project file's order. Raises ``UsageError`` (exit 2).
    """
    from pinning.cli.project import pick_target

    if not project.model.targets:
        raise UsageError(f"{project.path}: the project has no [targets.NAME]; pin lock "
                         "resolves each target.",
                         hint="Add one, e.g. [targets.current] gpu = \"h100\" (pin init "
                              "writes a commented file).")
    named = {pick_target(project, name) for name in targets}
    return [n for n in project.model.targets if not targets or n in named]


def _existing(dest: str, *, force: bool, every: bool
              ) -> tuple[bytes | None, MultiLock | None, dict[str, Lockfile]]:
    """The lock at ``dest`` now: its bytes (``None`` when there is no file), the
    multi-target lock and its views by target. A single-target lock there is refused
    (``UsageError``, exit 2) unless ``force`` (then replaced: no views). Raises
    ``LockfileError`` (exit 5) for a file that is not a valid lock, unless ``force`` and
    ``every`` target is re-resolved (then it is replaced).
    """
    from pinning.lockfile.io import read_locks

    if dest == "-" or not Path(dest).exists():
        return None, None, {}
    try:
        raw, multi, views = read_locks(Path(dest))
    except LockfileError:
        if not (force and every and Path(dest).is_file()):
            raise
        return Path(dest).read_bytes(), None, {}  # damaged: every target re-resolved
    if multi is None:
        if not force:
            raise UsageError(
                f"{dest} is a single-target lock (lock-version 1, from pin resolve); pin lock "
                "writes a multi-target lock (lock-version 2) there; nothing was written.",
                hint=f"Convert it first, keeping its values: pin lock migrate {dest}; or pass "
                     "--force to replace it, or write elsewhere with -o FILE.")
        return raw, None, {}
    return raw, multi, views


def _resolve_all(ctx: click.Context, project: LoadedProject, names: list[str], dest: str,
                 old: dict[str, Lockfile], multi: MultiLock | None, *,
                 force: bool) -> list[TargetResult]:
    """Each target of the project (file order): the ones in ``names`` resolved as ``pin
    resolve --target NAME -o dest`` would (frozen host values of the old section carried
    forward unless ``force``), the others kept from ``old`` (those the file has). The
    matrix is read once per set of overlays.
    """
    from pinning.cli.resolvelock import resolve_lock
    from pinning.lockfile.frozen import frozen_fields
    from pinning.matrix.load import Matrix, load_matrix
    from pinning.resolve.upgrade import carry_forward

    matrices: dict[tuple[str, ...], Matrix] = {}
    out: list[TargetResult] = []
    for name in project.model.targets:
        before = old.get(name)
        if name not in names:
            if before is not None:
                out.append(TargetResult(name, before, False, before.content_hash))
            continue
        params = resolve_params(ctx, name, dest)
        overlays = tuple(params["overlays"])
        if overlays not in matrices:
            matrices[overlays] = load_matrix(overlays)
        try:
            made = resolve_lock(matrix=matrices[overlays], **params)
        except PinError as exc:  # which target, when there are several
            exc.message = f"[targets.{name}] of {project.path.name}: {exc.message}"
            raise
        result = TargetResult(name, made.lock, True,
                              before.content_hash if before is not None else None,
                              notes=list(made.notes))
        if before is not None and frozen_fields(before) and not force:
            up = carry_forward(before, made.lock)
            result.lock, result.carried, result.dropped = up.lock, up.carried, up.dropped
        out.append(result)
    return out


#: ``pin resolve``'s parameters that ``pin lock`` does not pass on (it prints and writes
#: itself).
_NOT_PASSED = ("explain", "dry_run", "force", "fmt")


def resolve_params(ctx: click.Context, name: str, dest: str) -> dict[str, Any]:
    """The keyword arguments of :func:`pinning.cli.resolvelock.resolve_lock` that ``pin resolve
    --target NAME -o DEST`` takes: its options parsed by click with the project file's
    values as defaults (the same path as the command line). Raises ``UsageError`` (exit 2)
    naming the target when a value ``pin resolve`` needs is unset (``--framework``).
    """
    from pinning.cli.envelope import FORMAT_KEY

    root = ctx.find_root()
    cmd = root.command.get_command(root, "resolve") if isinstance(
        root.command, click.Group) else None
    if cmd is None:
        from pinning.cli.lazy import load_command
        from pinning.cli.project import attach_project

        cmd = load_command("pinning.cli.resolve:resolve")
        attach_project(cmd)
    kept = {k: ctx.meta.get(k) for k in (FORMAT_KEY, "pin.command")}
    try:
        sub = cmd.make_context("resolve", ["--target", name, "-o", dest], parent=ctx)
    except click.MissingParameter as exc:
        flag = exc.param.opts[-1] if isinstance(exc.param, click.Option) else "a value"
        raise UsageError(
            f"target {name!r}: pin resolve needs {flag}, and neither [targets.{name}] nor "
            "[project] sets it.",
            hint="Set it in the project file (e.g. frameworks = [\"pytorch==2.13.0\"]).",
        ) from exc
    finally:
        ctx.meta.update(kept)
    return {k: v for k, v in sub.params.items() if k not in _NOT_PASSED}


def _view(result: TargetResult, multi: MultiLock | None) -> dict[str, Any]:
    """The view data of ``result``'s section: the new lock's JSON, or for a section kept
    as it was the data as read (so its content-hash covers exactly the same data).
    """
    from pinning.lockfile.io import lock_json
    from pinning.lockfile.multi import view_data

    if result.resolved or multi is None:
        return lock_json(result.lock)
    return view_data(multi, result.name, label="lock")


def _write(data: bytes, dest: str, raw: bytes | None, *, dry_run: bool) -> str:
    """Write ``data`` to ``dest`` (``-``: standard output) unless it already holds it or
    ``dry_run``; return what happened: ``stdout``, ``unchanged``, ``dry-run``, ``written``.
    Raises ``LockfileError`` (exit 5) when ``dest`` changed since it was read (``raw``).
    """
    from pinning.lockfile.io import write_bytes

    if dest == "-":
        click.echo(data.decode(), nl=False)
        return "stdout"
    if raw == data:
        return "unchanged"
    if dry_run:
        return "dry-run"
    write_bytes(data, Path(dest), if_unchanged=raw)
    return "written"


def target_line(result: TargetResult) -> str:
    """One line for a target: name, GPU, runtime, framework builds, then the status
    (validated, or unconfirmed and its first reason), then what changed. Escaped.
    """
    from pinning.lockfile.status import status_value

    lk = result.lock
    fws = ", ".join(f"{fw.name} {fw.version.value or '?'}"
                    + (f" ({fw.build.value})" if fw.build and fw.build.value else "")
                    for fw in lk.frameworks)
    status: str = status_value(lk.status)
    if lk.status is not None and lk.status.reasons:
        more = len(lk.status.reasons) - 1
        status += f": {lk.status.reasons[0].reason}" + (f" (and {more} more)" if more else "")
    how = ("kept" if not result.resolved else "new" if result.old_hash is None
           else "updated" if result.changed else "unchanged")
    runtime = f"{'ROCm' if lk.runtime.name == 'rocm' else 'CUDA'} {lk.runtime.version.value}"
    return printable(f"{result.name}: {lk.target.gpu.value or lk.request.gpu} · {runtime} · "
                     f"{fws} · {status} [{how}]", newlines=False)


def _report(project: LoadedProject, results: list[TargetResult], dest: str, state: str, *,
            fmt: str) -> None:
    """Print what ``pin lock`` did: JSON (the envelope) or a line per target with its
    notes, then where the file went.
    """
    from pinning.cli.lockproject_packages import packages_state
    from pinning.lockfile.status import status_value

    if fmt == "json":
        emit({"file": None if dest == "-" else dest, "project": project.model.project.name,
              "lock-version": 2, "state": state,
              "changed": state in ("written", "dry-run"), "written": state == "written",
              "targets": [{"name": r.name, "content-hash": r.lock.content_hash,
                           "status": status_value(r.lock.status), "resolved": r.resolved,
                           "changed": r.changed, "carried": r.carried,
                           "dropped": [{"path": p, "why": w} for p, w in r.dropped],
                           "packages": packages_state(project, r, dest)}
                          for r in results]})
        return
    err = dest == "-"
    for r in results:
        click.echo(target_line(r), err=err)
        extra = [*r.notes, *(f"kept {len(r.carried)} frozen host value(s): "
                             f"{', '.join(r.carried)}" for _ in r.carried[:1]),
                 *(f"dropped frozen {p}: {w}" for p, w in r.dropped)]
        pk = packages_state(project, r, dest)
        if pk["run"]:
            extra.append(f"packages: not locked: {pk['reason']}")
        for line in extra:
            click.echo(printable(f"  {line}", newlines=False), err=err)
    click.echo({"stdout": "Wrote the lock to standard output",
                "unchanged": f"{dest}: unchanged",
                "dry-run": f"Dry run: {dest} would change; nothing written",
                "written": f"Wrote {dest}"}[state], err=err)
