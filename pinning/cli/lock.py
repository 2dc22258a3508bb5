"""``pin lock``: show, validate, diff, check and upgrade lockfiles. The group's other commands
(``model``, ``packages``, ``export``, ``push``, ``pull``) live in their own modules and are
loaded from :data:`pinning.cli.COMMANDS` when used.
"""

from __future__ import annotations

from pathlib import Path

import click

from pinning.cli.envelope import emit
from pinning.cli.lazy import LazyGroup
from pinning.cli.lockproject import project_lock_options
from pinning.cli.options import (
    amend_output_option,
    amends,
    format_option,
    lock_target_option,
    path_given,
)
from pinning.cli.render import terminal_style
from pinning.util.text import printable

__all__ = ["lock", "lock_check", "lock_diff", "lock_show", "lock_upgrade", "lock_validate"]


@click.group(cls=LazyGroup, invoke_without_command=True)
@project_lock_options
@click.pass_context
def lock(ctx: click.Context, /, **options: object) -> None:
    """Resolve every target of the project file (pin.toml) into one pin.lock, with its
    Python packages when [project] sets requirements, indexes, python and python-platform;
    with a subcommand: show, validate, diff, check and upgrade lockfiles, pin their model and
    packages, export their Python environment (pylock.toml, requirements), migrate
    single-target locks, push them to and pull them from a pin service.
    """
    if ctx.invoked_subcommand is None:
        from pinning.cli.lockproject import lock_project

        lock_project(ctx, **options)


@lock.command("show")
@click.argument("path", metavar="FILE", type=click.Path())
@click.option("--full", is_flag=True,
              help="List every package, wheel, variable and note (default: the first 8 of each).")
@lock_target_option
@format_option
def lock_show(path: str, full: bool, target: str | None, fmt: str) -> None:
    """Print every section of a lockfile (request, stack, image, environment, packages,
    wheels, build steps, serving, extensions, sources), with where each value came from.
    The first line is its status: validated, unconfirmed (each reason and the source that
    would settle it) or not recorded (a lock written before pin recorded it).
    Tables on a terminal, plain text when piped; NO_COLOR turns colour off.

    A multi-target lock (lock-version 2) shows the values [shared] holds once, then each
    target under a heading (`== target NAME ==`); JSON: {"lock-version", "content-hash",
    "project", "targets": {NAME: lock}}. --target NAME shows that target alone, as a
    single-target lock is shown.
    """
    from pinning.cli.locktargets import show_json, show_multi, show_one, targets_of
    from pinning.lockfile.io import lock_json

    multi, locks = targets_of(path, target)
    if fmt == "json":
        emit(show_json(multi, locks) if multi else lock_json(next(iter(locks.values()))))
    elif multi:
        show_multi(path, multi, locks, full=full)
    else:
        show_one(path, *next(iter(locks.items())), full=full)


@lock.command("validate")
@click.argument("paths", metavar="FILE...", nargs=-1, required=True,
                type=click.Path())
@format_option
def lock_validate(paths: tuple[str, ...], fmt: str) -> None:
    """Check lockfiles against the schema, their lock-version and content hash (exit 5,
    also for a path that is missing, a directory or unreadable); a multi-target lock
    (lock-version 2) is checked whole and target by target, a line per target.

    With `--format json` every file is checked and reported (`{"valid": bool, "locks":
    [{"path", "valid", "lock-version", "content-hash"} (and "targets": [{"name", "valid",
    "content-hash"}] for a multi-target lock) or {"path", "valid", "error", "hint",
    "exit-code"}]}`), then exit 5 when any is invalid.
    """
    from pinning.cli.locktargets import targets_of, validate_json, validate_lines
    from pinning.errors import LockfileError

    if fmt != "json":
        for p in paths:
            for line in validate_lines(p, *targets_of(p, None)):
                click.echo(printable(line, newlines=False))
        return
    results: list[dict[str, object]] = []
    for p in paths:
        try:
            results.append(validate_json(p, *targets_of(p, None)))
        except LockfileError as err:
            results.append({"path": p, "valid": False, "error": err.message, "hint": err.hint,
                            "exit-code": err.exit_code})
    bad = [r for r in results if not r["valid"]]
    emit({"valid": not bad, "locks": results})
    if bad:
        raise LockfileError(f"{len(bad)} of {len(results)} lockfile(s) invalid: "
                            + ", ".join(str(r["path"]) for r in bad) + ".",
                            hint="The JSON on standard output names each problem.")


@lock.command("diff")
@click.argument("old_path", metavar="OLD")
@click.argument("new_path", metavar="NEW")
@lock_target_option
@format_option
@click.pass_context
def lock_diff(ctx: click.Context, old_path: str, new_path: str, target: str | None,
              fmt: str) -> None:
    """Show every value that differs from lock OLD to lock NEW, grouped by layer (target,
    firmware, driver, os, runtime, frameworks, packages, model, serving, extensions, image,
    environment, then request, matrix, frozen, generator, notes), as old -> new with the
    source of the new value. Either may be '-' (standard input), not both.

    Two multi-target locks (lock-version 2) are compared target by target: the targets
    added and removed, then each target's changes under `== target NAME ==` (JSON:
    {"equal", "added-targets", "removed-targets", "targets": {NAME: {"equal",
    "changes"}}}). --target NAME compares that target of each side that is a multi-target
    lock, and a single-target side as it is (so OLD may be a version-1 lock and NEW a
    target of a pin.lock); a multi-target side with several targets needs it.

    Exit 0 when they hold the same content, 6 (drift) when they differ, 5 when either is
    not a valid lock, 2 when both are '-' or for --target with two single-target locks.
    JSON: {"equal": bool, "changes": [{"layer", "path", "old", "new", "source"}]}.
    """
    from pinning.cli.locktargets import diff_of, painted_diff
    from pinning.cli.options import one_stdin
    from pinning.lockfile.diff import diff_text, targets_diff_text

    one_stdin(OLD=old_path, NEW=new_path)
    multi, changes = diff_of(old_path, new_path, target)
    if fmt == "json":
        emit(multi.as_json() if multi else
             {"equal": not changes, "changes": [c.model_dump(mode="json") for c in changes]})
    else:
        text = targets_diff_text(multi) if multi else diff_text(changes)
        click.echo(painted_diff(printable(text), terminal_style()), nl=False)
    if (multi and not multi.equal) or changes:
        ctx.exit(6)


@lock.command("check")
@click.argument("path", metavar="LOCK")
@lock_target_option
@format_option
@click.pass_context
def lock_check(ctx: click.Context, path: str, target: str | None, fmt: str) -> None:
    """Check that today's matrix (with the lock's recorded overlays) still resolves LOCK's
    [request] to the same stack, frozen host values included; for CI, like
    `uv lock --check`.

    Exit 0 when it does; 6 (drift) when a value of the stack would change, printing those
    changes (run `pin lock upgrade LOCK` to take them); 5 for an invalid lock; 4 when the
    request no longer resolves; 10 when a guard refuses the lock's own choices on today's
    stack (a [serving] backend or an [[extensions]] target it rules out). JSON:
    {"current": bool, "changes": [...], "dropped": [...], "other-changes": int}.

    A multi-target lock (lock-version 2) is checked target by target, each under
    `== target NAME ==` (an error names its target); exit 6 when any drifts. JSON:
    {"current": bool, "targets": {NAME: {"current", "changes", "dropped",
    "other-changes"}}}. --target NAME checks that target alone, as a single-target lock.
    """
    from functools import partial

    from pinning.cli.locktargets import check_json, check_text, named, targets_of, upgrade_lock
    from pinning.lockfile.diff import target_heading

    multi, locks = targets_of(path, target)
    ups = {name: named(path, name or None, partial(upgrade_lock, lk, path))
           for name, lk in locks.items()}
    if fmt == "json":
        emit({"current": not any(up.stack_changes for up in ups.values()),
              "targets": {n: check_json(up) for n, up in ups.items()}}
             if multi else check_json(next(iter(ups.values()))))
    else:
        for name, up in ups.items():
            if multi:
                click.echo(printable(target_heading(name), newlines=False))
            check_text(path, name or None, up)
    if any(up.stack_changes for up in ups.values()):
        ctx.exit(6)


@lock.command("upgrade")
@amends("path")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--rocm", metavar="SPEC", help="New ROCm constraint, e.g. 7.2.0 or '>=7.1'.")
@click.option("--cuda", metavar="SPEC", help="New CUDA constraint, e.g. 13.0.")
@click.option("--framework", "frameworks", multiple=True, metavar="NAME[SPEC]",
              help="Replace (or add) a framework of the request, e.g. pytorch==2.12.0.")
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@amend_output_option
@click.option("--force", is_flag=True,
              help="Replace an -o FILE (other than LOCK) that holds frozen host values.")
@lock_target_option
@format_option
def lock_upgrade(path: str, rocm: str | None, cuda: str | None, frameworks: tuple[str, ...],
                 dry_run: bool, output: str | None, force: bool, target: str | None,
                 fmt: str) -> None:
    """Re-resolve LOCK from its own [request] with new constraints, keeping each value
    frozen from a host that the new stack still validates (and listing those it drops, with
    why); print the change summary and write atomically.

    Exit 2 for --rocm with --cuda or a malformed SPEC, 4 when nothing validated fits, 5 for
    an invalid LOCK, or when LOCK changed while pin worked (nothing written), 10 when a
    guard refuses the lock's [serving] or [[extensions]] on the new stack. -o naming LOCK
    itself (links followed) is the same in-place rewrite as no -o.

    A multi-target lock (lock-version 2) is upgraded one target at a time: --target NAME
    (exit 2 naming the targets when it has several and none is named). Only that target's
    section changes; the others are written back as they were, and -o FILE (or '-') gets
    the whole file with the target upgraded. JSON then adds "target".
    """
    from functools import partial

    from pinning.cli.locktargets import carry_lines, named, rendered, upgrade_lock, where
    from pinning.cli.lockwrite import write_with_summary
    from pinning.errors import UsageError
    from pinning.lockfile.diff import summary_lines
    from pinning.lockfile.io import lock_json, read_lock_at

    if rocm and cuda:
        raise UsageError("--rocm and --cuda exclude each other: a GPU has one vendor.")
    read = read_lock_at(Path(path), target)
    up = named(path, read.target, partial(upgrade_lock, read.lock, path, rocm=rocm, cuda=cuda,
                                          frameworks=frameworks))
    dest = output or path
    info = dest == "-"
    lines = summary_lines(up.changes, up.lock) or (
        ["unchanged"] if not up.changes else
        [f"the stack is unchanged ({len(up.changes)} recorded value(s) differ)"])
    if fmt == "json":
        emit({"lockfile": None if dry_run or info else dest, "lock": lock_json(up.lock),
              "changes": [c.model_dump(mode="json") for c in up.changes],
              "carried": up.carried, "dropped": [{"path": p, "why": w} for p, w in up.dropped],
              **({"target": read.target} if read.target else {})}, to_stderr=info)
    else:
        click.echo(printable(f"Changes from {where(path, read.target)}:"), err=info)
        for line in [*lines, *carry_lines(up), *up.notes]:
            click.echo(printable(f"  {line}"), err=info)
    if info:
        click.echo(rendered(read, up.lock), nl=False)
        return
    if dry_run:
        click.echo(f"Dry run: nothing written to {dest}.", err=fmt == "json")
        return
    if dest == path and not up.changes:
        click.echo(printable(f"{where(dest, read.target)}: unchanged, not rewritten."),
                   err=fmt == "json")
        return
    write_with_summary(up.lock, Path(dest), force=force,
                       command="pin lock upgrade",
                       replacing=read.raw if Path(dest) == Path(path) else None, into=read)
    click.echo(printable(f"Wrote {dest}" + (f" (target {read.target})" if read.target else "")),
               err=fmt == "json")
