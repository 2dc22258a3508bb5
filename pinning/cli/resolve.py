"""``pin resolve``: constraints in, a lockfile out.

The resolver, matrix and lockfile code are imported inside the command, and the module is
loaded only when ``pin resolve`` runs (:data:`pinning.cli.COMMANDS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.cli.lockwrite import changes_json, dry_run_report, summary_text, write_with_summary
from pinning.cli.options import format_option, output_path, path_given
from pinning.cli.render import terminal_style
from pinning.cli.render_lock import considered_json, explain_text, lock_summary
from pinning.cli.resolvelock import resolve_lock
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.resolve.result import Resolution

__all__ = ["resolve", "serving_options"]


def serving_options(f: Any) -> Any:
    """The ``[serving]`` / ``[[extensions]]`` flags of ``pin resolve`` (passed to the command
    as keyword arguments; see :func:`_with_serving`).
    """
    for option in reversed((
        click.option("--quantization", metavar="METHOD[:BACKEND]",
                     help="Record the quantization method and its kernels in [serving]: "
                          "awq:triton (AWQ by Triton dequantization, AMD), awq_marlin "
                          "(NVIDIA), gptq, fp8. Marlin on AMD is refused (exit 10)."),
        click.option("--attention", metavar="NAME[==VERSION][:BACKEND]",
                     help="Record the attention implementation: ck, triton, aiter or "
                          "flash-attn with its version and backend (ck or triton), e.g. "
                          "flash-attn==2.8.3:ck."),
        click.option("--head-dim", type=int, metavar="N",
                     help="Attention head dimension the model uses (FlashAttention CK "
                          "supports up to 256)."),
        click.option("--dtype", metavar="DTYPE",
                     help="Attention dtype: fp16, bf16, fp32 or fp8 (FlashAttention CK: "
                          "fp16/bf16)."),
        click.option("--extension", "extensions", multiple=True,
                     metavar="NAME==VERSION[:source|wheel][@TARGETS]",
                     help="Record a compiled extension in [[extensions]] with how it was built "
                          "and its gfx targets or compute capabilities (comma-separated), e.g. "
                          "flash-attn==2.8.3:source@gfx942. Repeatable."),
    )):
        f = option(f)
    return f


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
@click.option("--model", metavar="ORG/NAME@REVISION|PATH",
              help="Model to lock: a Hugging Face model with its 40-hex commit revision, or a "
                   "local model folder (./PATH, /PATH, ~/PATH). A relative folder is written "
                   "into the lock relative to the lock's own folder (with -o -: as an "
                   "absolute path), and pin reads it from there. Every file is pinned (size, "
                   "sha256) from the local Hugging Face cache or the folder, offline; when "
                   "they are not there the lock says so (`pin lock model` fills them later).")
@click.option("--no-model-files", is_flag=True,
              help="Record the --model without reading its files (pin lock model fills "
                   "them).")
@click.option("--as-of", metavar="DATE", help="Resolve against the matrix as published then.")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", callback=path_given,
              help="Site overlay with rows your team validated (also PIN_MATRIX).")
@click.option("-o", "--output", callback=output_path, default="pin.lock", show_default=True,
              metavar="FILE",
              help="Where to write the lockfile; '-' writes it to stdout (exit 2 when it "
                   "cannot be written).")
@click.option("--build-step", "build_steps", multiple=True, metavar="CMD",
              help="A shell command pin build runs after the locked install, under the "
                   "build-time guard (repeatable; files of the wheel house are in "
                   "/tmp/pin-wheels).")
@click.option("--explain", is_flag=True,
              help="Show the rows that decided and why others lost (on stderr with -o -).")
@click.option("--dry-run", is_flag=True,
              help="Print the lock and what would change in -o FILE; write nothing (exit 5 "
                   "when the write would be refused).")
@click.option("--force", is_flag=True,
              help="Replace an -o FILE that holds values frozen from a host (they are lost; "
                   "`pin lock upgrade FILE` keeps them).")
@click.option("--require-validated", is_flag=True,
              help="Refuse (exit 4, nothing written) a stack whose status would be "
                   "unconfirmed: a GPU target or OS restriction no source pin holds confirms.")
@serving_options
@format_option
def resolve(gpu: str, frameworks: tuple[str, ...], rocm: str | None, cuda: str | None,
            os_: str | None, model: str | None, as_of: str | None, overlays: tuple[str, ...],
            no_model_files: bool, build_steps: tuple[str, ...], output: str, explain: bool,
            dry_run: bool, force: bool, require_validated: bool, fmt: str,
            **serving: Any) -> None:
    """Resolve constraints to the newest validated stack and write a lockfile.

    Exit 4 when no validated combination exists (the message names the failing constraint
    and the nearest alternatives); exit 2 for a malformed flag or an -o FILE that cannot be
    written; exit 3 for a bad overlay; exit 5, nothing written, when -o FILE holds values
    frozen from a host (use `pin lock upgrade FILE`, or --force). Every write says what
    changed in FILE ("ROCm 10.0.0 -> 7.2.0") or that it is unchanged.

    The first line says the lock's status: validated, or unconfirmed with each thing no
    source confirms and the source that would settle it (--require-validated: exit 4).
    """
    lock, res, guard_notes = resolve_lock(
        gpu=gpu, frameworks=frameworks, rocm=rocm, cuda=cuda, os_=os_, model=model,
        as_of=as_of, overlays=overlays, no_model_files=no_model_files,
        build_steps=build_steps, output=output, require_validated=require_validated,
        **serving)
    for note in guard_notes:
        click.echo(note, err=True)
    if output == "-" or dry_run:
        _print_lock(lock, res, output=output, dry_run=dry_run, explain=explain, fmt=fmt)
        if dry_run and output != "-" and dry_run_report(lock, output, force=force):
            click.get_current_context().exit(5)  # what the write itself would exit with
        return
    changes = write_with_summary(lock, Path(output), force=force, command="pin resolve")
    if fmt == "json":
        from pinning.lockfile.io import lock_json

        emit({"lockfile": output, "lock": lock_json(lock), "considered": considered_json(res),
              "changes": changes})
        return
    _print_written(lock, res, output, changes, explain=explain)


def _print_written(lock: Lockfile, res: Resolution, output: str,
                   changes: list[dict[str, Any]] | None, *, explain: bool) -> None:
    """What ``pin resolve`` says after writing ``output``: the stack, model, notes and
    warnings (escaped: they come from matrix rows and overlays), ``--explain``, the changes.
    The lock's status comes first.
    """
    from pinning.lockfile.status import status_lines

    for line in status_lines(lock.status):
        click.echo(printable(line, newlines=False))
    click.echo(lock_summary(lock, style=terminal_style()))
    for line in _model_lines(lock):
        click.echo(line)
    for note in lock.notes[3:]:
        click.echo(printable(f"Note: {note}", newlines=False))
    for fw in lock.frameworks:
        for note in fw.notes:
            click.echo(printable(f"Note ({fw.name}): {note}", newlines=False))
    for warning in lock.warnings:
        click.echo(printable(f"Warning: {warning}", newlines=False), err=True)
    if explain:
        click.echo(explain_text(res))
    if changes == []:  # one line, not "FILE: unchanged" followed by "Wrote FILE"
        click.echo(f"Wrote {output}: unchanged")
        return
    click.echo(summary_text(lock, output, changes), nl=False)
    click.echo(f"Wrote {output}")


def _model_lines(lock: Lockfile) -> list[str]:
    """The line on the lock's model files (none without a model), escaped."""
    if lock.model is None:
        return []
    from pinning.cli.modelfiles import model_line

    return [printable(model_line(lock.model), newlines=False)]


def _print_lock(lock: Lockfile, res: Resolution, *, output: str, dry_run: bool, explain: bool,
                fmt: str) -> None:
    """``-o -`` and ``--dry-run``: the lock (or JSON) on stdout; warnings and ``--explain``
    on stderr (the dry run's change summary follows, from :func:`_dry_run_report`).
    """
    from pinning.lockfile.io import lock_json, render
    from pinning.lockfile.status import status_lines

    for line in status_lines(lock.status):
        click.echo(printable(line, newlines=False), err=True)
    for warning in lock.warnings:
        click.echo(printable(f"Warning: {warning}", newlines=False), err=True)
    if fmt == "json":
        extra = {"changes": changes_json(lock, output)} if dry_run else {}
        emit({"lock": lock_json(lock), "considered": considered_json(res), **extra})
    else:
        click.echo(render(lock), nl=False)
    if explain:
        click.echo(explain_text(res), err=True)
