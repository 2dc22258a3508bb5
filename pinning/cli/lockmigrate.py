"""``pin lock migrate``: single-target locks (``lock-version = 1``) into one multi-target
lock (``lock-version = 2``).

Each source lock becomes a target whose view is the source's data exactly as read (the
keys it has, no defaults added), so its ``content-hash`` is unchanged and every result,
signature and image bound to the source lock stays bound to that target.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, output_path, path_given
from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.project.load import LoadedProject

__all__ = ["default_name", "lock_migrate", "migrate_views"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@click.command("migrate")
@click.argument("paths", metavar="FILE...", nargs=-1, required=True, callback=path_given)
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="The target name of each FILE, in order (default: the project file's "
                   "target with the lock's GPU, else the lock's requested GPU).")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the lock-version 2 file here ('-': standard output); needed with "
                   "several FILEs (one FILE without -o is replaced in place).")
@format_option
@click.pass_context
def lock_migrate(ctx: click.Context, paths: tuple[str, ...], names: tuple[str, ...],
                 output: str | None, fmt: str) -> None:
    """Convert single-target locks (lock-version 1, from pin resolve) into one
    multi-target lock (lock-version 2, as pin lock writes), a target per FILE. Each
    target keeps its source lock's content-hash, so results, signatures and images bound
    to it stay bound.

    Exit 0 with "already lock-version 2" (nothing written) for a lock-version 2 FILE;
    exit 2 for several FILEs without -o, a --name count that does not match, or two locks
    with one target name; exit 5 for an invalid FILE or one that changed while pin
    worked (nothing written).
    """
    from pinning.cli.options import refuse_stdout_twice
    from pinning.cli.project import loaded
    from pinning.lockfile.io import read_locks, write_bytes
    from pinning.lockfile.multi import render_multi, split

    refuse_stdout_twice(output, fmt, what="lock")
    if names and len(names) != len(paths):
        raise UsageError(f"--name was given {len(names)} time(s) for {len(paths)} FILE(s); "
                         "give one --name per FILE, in order, or none.")
    if len(paths) > 1 and output is None:
        raise UsageError(f"{len(paths)} FILEs make one lock: name it with -o FILE (one FILE "
                         "without -o is replaced in place).")
    reads = {p: read_locks(cli_path(p)) for p in paths}
    done = [p for p, (_, multi, _) in reads.items() if multi is not None]
    if done:
        _already(done, paths, fmt)
        return
    project = loaded(ctx)
    views = migrate_views(paths, names, {p: r[2][""] for p, r in reads.items()}, project,
                          {p: r[0] for p, r in reads.items()})
    multi = split(views, project=project.model.project.name if project else None)
    dest = output or paths[0]
    text = render_multi(multi, dest=None if dest == "-" else cli_path(dest))
    if dest == "-":
        click.echo(text, nl=False)
    else:
        write_bytes(text.encode(), cli_path(dest),
                    if_unchanged=reads[dest][0] if output is None else None)
    targets = [{"name": n, "source": p, "content-hash": v["content-hash"]}
               for (n, v), p in zip(views.items(), paths, strict=True)]
    if fmt == "json":
        emit({"file": None if dest == "-" else dest, "written": dest != "-",
              "lock-version": 2, "targets": targets})
        return
    for t in targets:
        click.echo(printable(f"{t['name']}: {t['source']} ({t['content-hash']})",
                             newlines=False), err=dest == "-")
    if dest != "-":
        click.echo(printable(f"Wrote {dest} (lock-version 2, {len(targets)} target(s))",
                             newlines=False))


def _already(done: list[str], paths: tuple[str, ...], fmt: str) -> None:
    """A lock-version 2 FILE: with it alone, say so (exit 0, nothing written); among
    single-target FILEs, raise ``UsageError`` (exit 2).
    """
    if len(paths) > 1:
        raise UsageError(f"{', '.join(done)}: already lock-version 2; pin lock migrate "
                         "takes single-target locks (lock-version 1) only. Nothing was "
                         "written.", hint="Leave it out of the FILEs.")
    if fmt == "json":
        emit({"file": done[0], "written": False, "lock-version": 2, "targets": []})
        return
    click.echo(printable(f"{done[0]}: already lock-version 2; nothing written.",
                         newlines=False))


def default_name(lock: Lockfile, project: LoadedProject | None) -> str:
    """A target name for ``lock``: the project's only target whose ``gpu`` is the lock's
    requested GPU (or its locked GPU product, case ignored), else the requested GPU made a
    target name (characters other than letters, digits, ``.``, ``_``, ``-`` become ``-``).
    """
    wanted = {lock.request.gpu.lower(), (lock.target.gpu.value or "").lower()} - {""}
    if project is not None:
        hits = [name for name, t in project.model.targets.items()
                if t.gpu.lower() in wanted]
        if len(hits) == 1:
            return hits[0]
    return _NOT_NAME.sub("-", lock.request.gpu).strip("-._")[:63] or "target"


def migrate_views(paths: tuple[str, ...], names: tuple[str, ...],
                  locks: dict[str, Lockfile], project: LoadedProject | None,
                  raws: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """``{target name: view data}`` for the single-target locks at ``paths`` (``locks``:
    each read, ``raws``: its bytes): each view the TOML data exactly as read. Raises
    ``UsageError`` (exit 2) naming the files when two get one name.
    """
    from pinning.errors import LockfileError
    from pinning.util.files import parse_toml

    chosen = list(names) or [default_name(locks[p], project) for p in paths]
    seen: dict[str, str] = {}
    for name, path in zip(chosen, paths, strict=True):
        if name in seen:
            raise UsageError(
                f"{seen[name]} and {path} would both be target {name!r}; a target name is "
                "used once.", hint="Name each FILE's target with --name NAME (one per FILE, "
                                   "in order).")
        seen[name] = path
    return {name: parse_toml(raws[path], LockfileError, label=path)
            for name, path in zip(chosen, paths, strict=True)}
