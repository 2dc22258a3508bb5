"""``pin init``: write a commented project file (``pin.toml``) from flags.

It asks nothing (on a terminal or not): every value comes from a flag, and what is not
given is left out (the file says where to add it). The text is rendered by
:mod:`pinning.project.write`; the write is atomic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pinning.cli.options import output_path
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["init"]


def _target(gpu: str, os_: str | None, rocm: str | None, cuda: str | None) -> dict[str, Any]:
    """A ``[targets.NAME]`` table of the flags given."""
    table: dict[str, Any] = {"gpu": gpu}
    for key, value in (("os", os_), ("rocm", rocm), ("cuda", cuda)):
        if value is not None:
            table[key] = value
    return table


def _data(name: str, model: str | None, frameworks: tuple[str, ...], gpu: str | None,
          current_gpu: str | None, targeting: dict[str, str | None],
          prices: str | None) -> dict[str, Any]:
    """The file's tables from the flags (kebab-case keys, as the model reads them)."""
    project: dict[str, Any] = {"name": name}
    if model is not None:
        project["model"] = model
    if frameworks:
        project["frameworks"] = list(frameworks)
    data: dict[str, Any] = {"project": project}
    targets: dict[str, Any] = {}
    if current_gpu is not None:
        targets["current"] = {"gpu": current_gpu}
    if gpu is not None:
        targets["candidate"] = _target(gpu, targeting["os"], targeting["rocm"],
                                       targeting["cuda"])
    if targets:
        data["targets"] = targets
    if prices is not None:
        data["cost"] = {"prices": prices}
    return data


def _check_gpus(gpu: str | None, current_gpu: str | None, *, rocm: str | None,
                cuda: str | None) -> None:
    """Raise ``UsageError`` (exit 2) for a GPU the matrix does not know (with "did you
    mean"), and for --rocm with an NVIDIA candidate or --cuda with an AMD one.
    """
    from pinning.matrix.load import load_matrix

    matrix = load_matrix()
    for flag, value in (("--gpu", gpu), ("--current-gpu", current_gpu)):
        if value is None:
            continue
        try:
            found = matrix.find_gpu(value)
        except UsageError as err:
            err.message = err.message.replace("--gpu", flag, 1)
            raise
        vendors = {g.vendor for g in (found if isinstance(found, list) else [found])}
        for runtime, spec, vendor in (("--rocm", rocm, "nvidia"), ("--cuda", cuda, "amd")):
            if flag == "--gpu" and spec is not None and vendors == {vendor}:
                raise UsageError(f"--gpu {value} is {vendor.upper()}: {runtime} does not "
                                 "apply to it.", hint="Use --rocm with an AMD GPU, --cuda "
                                 "with an NVIDIA one.")


@click.command(short_help="Write a commented pin.toml (the project file) from flags.")
@click.option("--name", metavar="NAME",
              help="The project's name (default: the name of the folder the file is in).")
@click.option("--model", metavar="ORG/NAME@REVISION|PATH",
              help="The model, as pin resolve --model takes it.")
@click.option("--framework", "frameworks", multiple=True, metavar="NAME[SPEC]",
              help="A framework request, as pin resolve --framework takes it (repeatable).")
@click.option("--gpu", metavar="GPU", help="The candidate target's GPU ([targets.candidate]).")
@click.option("--os", "os_", metavar="ID-VERSION", help="The candidate target's OS.")
@click.option("--rocm", metavar="SPEC", help="The candidate target's ROCm releases.")
@click.option("--cuda", metavar="SPEC", help="The candidate target's CUDA versions.")
@click.option("--current-gpu", metavar="GPU",
              help="The GPU in use today ([targets.current]).")
@click.option("--prices", metavar="PRICES.toml",
              help="The pin cost prices file ([cost] prices), relative to the file's folder.")
@click.option("-o", "--output", callback=output_path, default="pin.toml", show_default=True,
              metavar="FILE", help="Where to write the project file.")
@click.option("--force", is_flag=True, help="Replace an existing FILE.")
def init(name: str | None, model: str | None, frameworks: tuple[str, ...], gpu: str | None,
         os_: str | None, rocm: str | None, cuda: str | None, current_gpu: str | None,
         prices: str | None, output: str, force: bool) -> None:
    """Write a commented project file from flags; it asks no questions.

    The file describes the trial once (project, targets, cost); every pin command run in
    its folder or below takes its values as defaults, and a flag still wins. Exit 2 when
    FILE exists (unless --force), a flag's value is malformed or names a GPU the matrix
    does not know (or a runtime of the other vendor), or FILE cannot be written.
    """
    from pydantic import ValidationError

    from pinning.project.load import read_project
    from pinning.project.write import render_project
    from pinning.util.files import atomic_write_bytes

    dest = Path(output)
    given = [f for f, v in (("--os", os_), ("--rocm", rocm), ("--cuda", cuda)) if v]
    if given and gpu is None:
        raise UsageError(f"pin init {' '.join(given)}: these set the candidate target, which "
                         "needs --gpu.", hint="Add --gpu GPU (e.g. --gpu mi300x), or leave "
                         "them out and edit [targets.NAME] in the file.")
    if output == "-":
        raise UsageError("pin init writes a file; name one with -o FILE.")
    _check_gpus(gpu, current_gpu, rocm=rocm, cuda=cuda)
    if prices is not None and not (dest.parent / prices).is_file():
        click.echo(printable(f"note: --prices {prices}: no such file yet from "
                             f"{dest.parent}/ (the path is written relative to the project "
                             "file's folder); pin cost will need it.", newlines=False),
                   err=True)
    if dest.exists() and not force:
        raise UsageError(f"{printable(output, newlines=False)} exists; pin init does not "
                         "replace it.", hint="Pass --force to replace it.")
    data = _data(name or dest.resolve().parent.name or "project", model, frameworks, gpu,
                 current_gpu, {"os": os_, "rocm": rocm, "cuda": cuda}, prices)
    try:
        text = render_project(data, dest=dest)
    except ValidationError as exc:
        from pinning.util.models import validation_summary

        raise UsageError(f"pin init: {validation_summary(exc, data)}") from exc
    try:
        atomic_write_bytes(dest, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write {printable(output, newlines=False)}: "
                         f"{exc.strerror or exc}.",
                         hint="Check that -o names a file in a folder that exists and is "
                              "writable.") from exc
    project = read_project(dest.resolve())  # what was written reads back
    targets = ", ".join(sorted(project.model.targets)) or "none yet"
    click.echo(f"Wrote {printable(output, newlines=False)} (project "
               f"{printable(project.model.project.name, newlines=False)}; targets: {targets})")
