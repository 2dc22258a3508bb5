"""``pin lock packages``: resolve a lock's whole Python environment with uv
(:mod:`pinning.resolve.pypackages`) and record every wheel.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    amend_output_option,
    amends,
    format_option,
    lock_target_option,
    path_given,
)
from pinning.cli.progress import quiet_option
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.wheels import Wheel
    from pinning.resolve.uvcompile import PackagesPlan

__all__ = ["lock_packages"]


@click.command("packages")
@amends("path")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--index", "indexes", multiple=True, metavar="URL",
              help="A simple-API index (repeat: the first is the default index, the others "
                   "are searched first). Default: PyPI plus PyTorch's index of the lock's "
                   "build, e.g. https://download.pytorch.org/whl/rocm7.2.")
@click.option("--requirement", "requirements", multiple=True, metavar="SPEC",
              help="A PEP 508 requirement to add, e.g. 'transformers==4.57.1' (repeatable; "
                   "kept in the lock for the next run).")
@click.option("-r", "--requirements-file", "req_files", multiple=True, metavar="FILE",
              callback=path_given, help="Requirements from a file, one a line.")
@click.option("--python-version", metavar="X.Y",
              help="The image's Python (default: the lock's [python]), e.g. 3.12.")
@click.option("--python-platform", metavar="PLATFORM",
              help="The image's platform as uv names it (default: the lock's [python]), "
                   "e.g. x86_64-manylinux_2_28.")
@click.option("--fresh", is_flag=True,
              help="Ignore the lock's [packages] and recorded requirements (after a "
                   "framework upgrade).")
@amend_output_option
@lock_target_option
@quiet_option
@format_option
def lock_packages(path: str, indexes: tuple[str, ...], requirements: tuple[str, ...],
                  req_files: tuple[str, ...], python_version: str | None,
                  python_platform: str | None, fresh: bool, output: str | None,
                  target: str | None, quiet: bool, fmt: str) -> None:
    """Resolve LOCK's whole Python environment with uv and record every wheel: its
    frameworks (PyTorch as its locked build, torch==2.13.0+rocm7.2 from PyTorch's rocm7.2
    index), the requirements given, and the lock's [packages] pins, for the target Python
    version and platform; from wheels only (a package with only an sdist is an error).

    Writes [packages] (name -> version), [[wheels]] (file name, sha256, URL, size) and
    [python] (target, indexes, requirements), atomically; `pin build` then fetches exactly
    those files, hash-checked. Exit 2 for a bad flag, no target Python, or a resolution uv
    cannot complete (its reason quoted); 8 when an index cannot be reached or read, or uv
    times out; 5 for an invalid LOCK, or one changed meanwhile.
    JSON: {"lockfile", "written", "python", "requirements", "notes", "wheels"}. -o naming
    a -r file is exit 2, naming LOCK itself (links followed) the in-place rewrite.

    A multi-target lock: --target NAME (exit 2 naming them when it has several and none is
    named); the other targets are written back as they were, -o gets the whole file.
    """
    from pinning.cli.locktargets import rendered
    from pinning.cli.progress import progress_for
    from pinning.lockfile.io import lock_json, read_lock_at, write_lock
    from pinning.resolve.pypackages import lock_packages as resolve_packages
    from pinning.resolve.pypackages import plan_packages, read_requirements_file

    read = read_lock_at(Path(path), target)
    old = read.lock
    specs = [*requirements, *(s for f in req_files for s in read_requirements_file(Path(f)))]
    plan = plan_packages(old, indexes=indexes, requirements=specs,
                         python_version=python_version, python_platform=python_platform,
                         fresh=fresh)
    with progress_for(fmt, quiet=quiet) as progress:
        task = progress.task(f"resolve {len(plan.requirements)} requirement(s) with uv for "
                             f"Python {plan.python_version} on {plan.python_platform}")
        try:
            new, wheels = resolve_packages(old, plan)
        finally:
            task.done()
    dest = output or path
    err = dest == "-"
    written = not (dest == path and new == old)
    if written and not err:
        write_lock(new, Path(dest), if_unchanged=read.raw if Path(dest) == Path(path) else None,
                   into=read)
    if fmt == "json":
        data = lock_json(new)
        emit({"lockfile": None if err or not written else dest, "written": written,
              "python": data["python"], "requirements": list(plan.requirements),
              "notes": list(plan.notes), "wheels": data["wheels"]}, to_stderr=err)
    else:
        _wheels_text(plan, wheels, err=err)
    if err:
        click.echo(rendered(read, new), nl=False)
    elif fmt != "json":
        click.echo(printable(f"Wrote {dest}" if written else f"{dest}: unchanged, not "
                             "rewritten", newlines=False))


def _wheels_text(plan: PackagesPlan, wheels: Sequence[Wheel], *, err: bool) -> None:
    """``pin lock packages``'s text: the plan's notes, then a table of the wheels recorded
    (on standard error when the lock goes to standard output).
    """
    from pinning.cli.progress import human_bytes
    from pinning.cli.render import table_text, terminal_style

    for note in plan.notes:
        click.echo(printable(f"  {note}", newlines=False), err=err)
    rows = [(w.name, w.version, w.filename, human_bytes(w.size) if w.size is not None
             else "-") for w in wheels]
    click.echo(table_text(["name", "version", "file", "size"], rows,
                          title=f"{len(wheels)} wheel(s) for Python "
                                f"{plan.python_version} on {plan.python_platform}",
                          style=terminal_style(sys.stderr if err else None)), err=err)
