"""``pin resolve``: constraints in, a lockfile out.

Registered on the main group by :func:`register`; the resolver, matrix and lockfile code are
imported inside the command so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from pinning.cli.options import format_option, parse_date, path_given
from pinning.cli.render import considered_json, explain_text, lock_summary
from pinning.errors import UsageError

__all__ = ["register", "resolve"]


@click.command()
@click.option("--gpu", required=True, metavar="GPU",
              help="Marketing name (MI300X, 'Instinct MI300X', h200), gfx target (gfx942) or "
                   "PCI device ID (0x74a1).")
@click.option("--framework", "frameworks", multiple=True, required=True, metavar="NAME[SPEC]",
              help="Framework with a PEP 440 specifier: pytorch==2.13.0, pytorch>=2.12, "
                   "jax~=0.10.0. Repeat for several; all must be validated with one runtime.")
@click.option("--rocm", metavar="SPEC", help="Limit ROCm releases, e.g. 7.2.0 or '<7'.")
@click.option("--cuda", metavar="SPEC", help="Limit CUDA versions, e.g. 13.0 or '>=12.8'.")
@click.option("--os", "os_", metavar="ID-VERSION",
              help="Operating system as in /etc/os-release, e.g. ubuntu-24.04, rhel-9.6.")
@click.option("--model", metavar="ORG/NAME@REVISION",
              help="Model to lock, with its 40-hex commit revision.")
@click.option("--as-of", metavar="DATE", help="Resolve against the matrix as published then.")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE",
              help="Site overlay with rows your team validated (also PIN_MATRIX).")
@click.option("-o", "--output", callback=path_given, default="pin.lock", show_default=True,
              metavar="FILE",
              help="Where to write the lockfile; '-' writes it to stdout (exit 2 when it "
                   "cannot be written).")
@click.option("--build-step", "build_steps", multiple=True, metavar="CMD",
              help="A shell command pin build runs after the locked install, under the "
                   "build-time guard (repeatable; files of the wheel house are in "
                   "/tmp/pin-wheels).")
@click.option("--explain", is_flag=True, help="Show the rows that decided and why others lost.")
@format_option
def resolve(gpu: str, frameworks: tuple[str, ...], rocm: str | None, cuda: str | None,
            os_: str | None, model: str | None, as_of: str | None, overlays: tuple[str, ...],
            build_steps: tuple[str, ...], output: str, explain: bool, fmt: str) -> None:
    """Resolve constraints to the newest validated stack and write a lockfile.

    Exit 4 when no validated combination exists (the message names the failing constraint
    and the nearest alternatives); exit 2 for a malformed flag or an -o FILE that cannot be
    written; exit 3 for a bad overlay.
    """
    from pinning.lockfile.io import lock_json, render, write_lock
    from pinning.matrix.load import load_matrix, overlay_paths
    from pinning.resolve.constraints import (
        Constraints,
        parse_framework,
        parse_model,
        parse_os,
        parse_runtime_spec,
    )
    from pinning.resolve.resolver import resolve as do_resolve
    from pinning.resolve.to_lock import lock_from_resolution, with_build_steps

    if rocm and cuda:
        raise UsageError("--rocm and --cuda exclude each other: a GPU has one vendor.")
    matrix = load_matrix(overlays)
    used_overlays = [str(p) for p in overlay_paths(overlays)]
    c = Constraints(
        gpu=gpu,
        frameworks=tuple(parse_framework(f, matrix.framework_names()) for f in frameworks),
        rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
        cuda=parse_runtime_spec("--cuda", cuda) if cuda else None,
        os=parse_os(os_) if os_ else None,
        model=parse_model(model) if model else None,
        as_of=parse_date("--as-of", as_of),
    )
    res = do_resolve(matrix, c)
    to_stdout = output == "-"
    lock = lock_from_resolution(res, matrix, overlays=used_overlays,
                                output=None if to_stdout else output)
    from pinning.resolve.guards import apply_at_resolve

    lock = with_build_steps(lock, build_steps)
    lock, guard_notes = apply_at_resolve(lock)
    for note in guard_notes:
        click.echo(note, err=True)
    if to_stdout:
        for warning in lock.warnings:
            click.echo(f"Warning: {warning}", err=True)
        if fmt == "json":
            click.echo(json.dumps({"lock": lock_json(lock), "considered": considered_json(res)},
                                  indent=2))
        else:
            click.echo(render(lock), nl=False)
        return
    write_lock(lock, Path(output))
    if fmt == "json":
        click.echo(json.dumps({"lockfile": output, "lock": lock_json(lock),
                               "considered": considered_json(res)}, indent=2))
        return
    click.echo(lock_summary(lock))
    for note in lock.notes[3:]:
        click.echo(f"Note: {note}")
    for fw in lock.frameworks:
        for note in fw.notes:
            click.echo(f"Note ({fw.name}): {note}")
    for warning in lock.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if explain:
        click.echo(explain_text(res))
    click.echo(f"Wrote {output}")


def register(group: click.Group) -> None:
    """Add ``pin resolve`` to the ``pin`` group."""
    group.add_command(resolve)
