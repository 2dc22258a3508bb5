"""The project file's values as command defaults: flag > file > default.

:data:`WIRED` is the one table: for each command, the parameters the project file can set
and where in the file each value lives. :func:`attach_project` (called for every command as
it loads, :func:`pinning.cli._prepare`) gives a command in the table an eager option that
runs before its other options are read and sets click's ``ctx.default_map`` from the
project, so a flag given on the command line still wins and an option's own default
applies where the file is silent. A target-scoped command gets ``--target NAME``; the others
a hidden eager option. A later command plugs in with one entry in :data:`WIRED`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.errors import PinError, UsageError

if TYPE_CHECKING:
    from pinning.project.load import LoadedProject

__all__ = ["PROJECT_VALUES", "TARGETED", "WIRED", "Default", "attach_project", "blame_project",
           "command_defaults", "loaded", "pick_target"]


@dataclass(frozen=True)
class Default:
    """Where a parameter's default lives: ``section`` (``project``, ``target`` or ``cost``)
    and ``key`` (the model's field name); ``kind`` ``path`` / ``paths`` / ``model`` makes a
    path relative to the file's folder usable from the working folder; ``fallback`` is a
    second ``(section, key)`` read when the first is unset.
    """

    section: str
    key: str
    kind: str = "value"
    fallback: tuple[str, str] | None = None


_T = "target"
#: Command name -> its parameter name -> where the project file sets it.
WIRED: dict[str, dict[str, Default]] = {
    "resolve": {
        "gpu": Default(_T, "gpu"), "os_": Default(_T, "os"), "rocm": Default(_T, "rocm"),
        "cuda": Default(_T, "cuda"),
        "frameworks": Default(_T, "frameworks", fallback=("project", "frameworks")),
        "model": Default("project", "model", "model"), "as_of": Default(_T, "as_of"),
        "overlays": Default(_T, "matrix", "paths"), "build_steps": Default(_T, "build_steps"),
        "require_validated": Default(_T, "require_validated"),
        "quantization": Default(_T, "quantization"), "attention": Default(_T, "attention"),
        "head_dim": Default(_T, "head_dim"), "dtype": Default(_T, "dtype"),
        "extensions": Default(_T, "extensions"),
    },
    "cost": {
        "prices_file": Default("cost", "prices", "path"),
        "audit_file": Default("cost", "migration", "path"),
        "effort_file": Default("cost", "effort", "path"),
        "waivers_file": Default("cost", "waivers", "path"),
        **{name: Default("cost", name) for name in (
            "utilisation", "life_months", "tokens_per_month", "labour_usd_per_hour",
            "migration_usd", "other_usd_per_hour", "validation_gpu_hours",
            "maintenance_usd_per_month", "gpus")},
    },
}

#: The commands whose defaults come from one target (``--target NAME``).
TARGETED = frozenset(name for name, params in WIRED.items()
                     if any(d.section == _T for d in params.values()))

_META = "pin.project"
#: ``ctx.meta`` key: ``{parameter: (value, "pin.toml:LINE", "--flag")}`` the project set for
#: the running command (what an error names when a value from the file is at fault).
PROJECT_VALUES = "pin.project-values"


def loaded(ctx: click.Context) -> LoadedProject | None:
    """The project of this run (read once, kept in the root context's ``meta``):
    ``--project DIR`` / ``PIN_PROJECT``, else discovered from the working folder. Raises
    ``UsageError`` (exit 2) for an invalid file.
    """
    if _META not in ctx.meta:
        from pinning.project.load import load_project

        given = ctx.find_root().params.get("project")
        ctx.meta[_META] = load_project(given, Path.cwd())
    found: LoadedProject | None = ctx.meta[_META]
    return found


def pick_target(project: LoadedProject, name: str | None) -> str | None:
    """The target ``--target NAME`` names, else the only one; ``None`` when the file has
    none. Raises ``UsageError`` (exit 2) for an unknown name (with the nearest) or, with
    several targets and no ``--target``, naming them.
    """
    from pinning.lockfile.multi import no_such_target

    targets = sorted(project.model.targets)
    if name is not None:
        if name not in targets:
            raise no_such_target(name, targets, project.path.name)
        return name
    if len(targets) > 1:
        raise UsageError(f"{project.path} has {len(targets)} targets ({', '.join(targets)}); "
                         "name one with --target NAME.",
                         hint=f"For example: pin resolve --target {targets[0]} (pin config "
                              f"show resolve -- --target {targets[0]} shows its values).")
    return targets[0] if targets else None


def _usable(project: LoadedProject, value: str, kind: str) -> str:
    """A path from the file, relative to the file's folder, as the working folder reaches
    it (a relative path: a report that records it is the same on every machine); an
    absolute path (or ``~/...``) as the file gives it; a Hugging Face model id unchanged.
    """
    if kind == "model" and not value.startswith(("/", "~", ".")):
        return value  # ORG/NAME@REVISION (a folder path starts with ./, ../, / or ~)
    if os.path.isabs(os.path.expanduser(value)):
        return os.path.expanduser(value)  # as the file says it: the same from every folder
    return os.path.relpath(os.path.abspath(project.resolve_path(value)))


def command_defaults(project: LoadedProject, command: str,
                     target: str | None) -> dict[str, tuple[Any, str]]:
    """``{parameter name: (value, "pin.toml:LINE")}`` the project sets for ``command``
    (its ``target``'s values for a target-scoped one); unset keys are left out.
    """
    out: dict[str, tuple[Any, str]] = {}
    for param, spec in WIRED.get(command, {}).items():
        for section, key in ((spec.section, spec.key), spec.fallback or ("", "")):
            if section == _T:
                table: Any = project.model.targets.get(target) if target else None
                keys: tuple[str, ...] = ("targets", target or "", key.replace("_", "-"))
            else:
                table = getattr(project.model, section, None)
                keys = (section, key.replace("_", "-"))
            value = getattr(table, key, None) if table is not None else None
            if value in (None, ()) or (value is False and param == "require_validated"):
                continue
            if spec.kind in ("path", "model"):
                value = _usable(project, value, spec.kind)
            elif spec.kind == "paths":
                value = tuple(_usable(project, v, "path") for v in value)
            elif hasattr(value, "isoformat"):
                value = value.isoformat()
            out[param] = (value, project.where(*keys))
            break
    return out


def blame_project(err: PinError, meta: dict[str, Any]) -> None:
    """When ``err``'s message names a value the project file set for the running command
    (``meta[PROJECT_VALUES]``), make its hint say where that value came from and how to
    change it, instead of naming the flag nobody gave. Never raises.
    """
    for value, where, flag in meta.get(PROJECT_VALUES, {}).values():
        for one in value if isinstance(value, list | tuple) else (value,):
            if isinstance(one, str) and len(one) > 2 and one in err.message:
                err.hint = (f"{one} comes from the project file ({where}): correct it there, "
                            f"or give {flag} on the command line.")
                return


def _set_defaults(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Eager callback: set ``ctx.default_map`` (and the sources ``pin config show`` reads)
    from the project for this command, before its other options are read. Under resilient
    parsing (``pin config show``) an error is also kept in ``ctx.meta`` for the caller.
    """
    try:
        _apply(ctx, value)
    except UsageError as err:
        ctx.meta["pin.project-error"] = err
        raise


def _apply(ctx: click.Context, value: str | None) -> None:
    """:func:`_set_defaults`' work; raises ``UsageError`` (exit 2) as :func:`pick_target`."""
    command = ctx.command.name or ""
    project = loaded(ctx)
    if project is None:
        if value is not None:
            raise UsageError(f"--target {value!r}: no project file (pin.toml) was found "
                             "from this folder; see `pin init` or --project DIR.")
        return
    target, ambiguous = None, None
    if command in TARGETED:
        try:
            target = pick_target(project, value)
        except UsageError as err:
            if value is not None:
                raise
            ambiguous = err  # several targets, none named: an error only if --gpu is missing
    found = command_defaults(project, command, target)
    ctx.default_map = {**(ctx.default_map or {}), **{k: v for k, (v, _) in found.items()}}
    if ambiguous is not None:
        ctx.default_map["gpu"] = _raiser(ambiguous)
    ctx.meta[f"pin.sources.{command}"] = {k: w for k, (_, w) in found.items()}
    flags = {p.name: p.opts[0] for p in ctx.command.params if p.opts}
    ctx.meta[PROJECT_VALUES] = {k: (v, w, flags.get(k, k)) for k, (v, w) in found.items()}


def _raiser(err: UsageError) -> Any:
    """A default click calls only when the option was not given: it raises ``err``."""
    def default() -> None:
        raise err
    return default


def attach_project(cmd: click.Command) -> None:
    """Give ``cmd`` (when :data:`WIRED` names it) its eager project option: ``--target``
    for a target-scoped command, a hidden one otherwise.
    """
    if cmd.name not in WIRED or any(p.name == "project_target" for p in cmd.params):
        return
    if cmd.name in TARGETED:
        option = click.Option(
            ["--target", "project_target"], metavar="NAME", is_eager=True,
            expose_value=False, callback=_set_defaults,
            help="The project file's target whose values are the defaults (needed when it "
                 "has several); a flag still wins.")
    else:
        option = click.Option(["--project-defaults", "project_target"], hidden=True,
                              is_eager=True, expose_value=False, callback=_set_defaults)
    cmd.params.insert(0, option)
