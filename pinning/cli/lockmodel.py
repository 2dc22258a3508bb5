"""``pin lock model``: pin every file of a lock's ``[model]`` (path, size, sha256) read
offline from the Hugging Face cache or the model folder (:mod:`pinning.cli.modelfiles`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    amend_output_option,
    amends,
    cli_path,
    format_option,
    lock_target_option,
    path_given,
)
from pinning.util.startup import loading
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.io import LockRead
    from pinning.lockfile.models import Model
    from pinning.probe.modelfiles import ModelTree

__all__ = ["lock_model"]


def _lock_with_model(path: str, cache: str | None, folder: str | None,
                     target: str | None) -> LockRead:
    """LOCK as read (``target``'s view in a multi-target lock), once its ``[model]`` can be
    read as the flags say: exit 2 for --cache with --path or --cache for a folder model,
    or as :func:`~pinning.lockfile.io.read_lock` for the target; 5 without a ``[model]``.
    """
    from pinning.cli.locktargets import where
    from pinning.errors import LockfileError, UsageError
    from pinning.lockfile.io import read_lock_at

    if cache and folder:
        raise UsageError("--cache and --path exclude each other: the files come from the "
                         "Hugging Face cache or from a folder.")
    read = read_lock_at(Path(path), target)
    old = read.lock
    if old.model is None:
        raise LockfileError(f"{where(path, read.target)} has no [model] to pin.",
                            hint="Record one with `pin resolve ... --model ORG/NAME@REVISION` "
                                 "(or --model PATH for a local folder).")
    if cache and old.model.path is not None:
        raise UsageError(f"--cache reads a Hugging Face model; {path}'s model is the folder "
                         f"{old.model.path} (use --path DIR to read it elsewhere).")
    return read


def _refuse_model_output(output: str | None, model: Model, cache: str | None,
                         folder: str | None, lock_file: Path) -> None:
    """``UsageError`` (exit 2) when ``-o`` names an existing file inside the folder the
    model's files are read from (the weights it hashes), LOCK itself excepted.
    """
    from pinning.cli.modelfiles import model_source
    from pinning.util.samefile import refuse_overwrite, same_file

    if output is None or output == "-" or same_file(cli_path(output), lock_file):
        return
    source = model_source(model, cache=cache, path=folder, lock_file=lock_file)
    refuse_overwrite(cli_path(output), [("the model's files", source)],
                     command="pin lock model")


@click.command("model")
@amends("path")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--cache", metavar="DIR", callback=path_given,
              help="The Hugging Face hub cache to read (default: $HF_HUB_CACHE, $HF_HOME/hub "
                   "or ~/.cache/huggingface/hub).")
@click.option("--path", "folder", metavar="DIR", callback=path_given,
              help="Read the model's files from this folder instead (a local model, or a "
                   "Hugging Face model downloaded to a folder).")
@amend_output_option
@lock_target_option
@format_option
@click.pass_context
def lock_model(ctx: click.Context, path: str, cache: str | None, folder: str | None,
               output: str | None, target: str | None, fmt: str) -> None:
    """Pin every file of LOCK's [model] (relative path, size in bytes, sha256) and its
    content hash, read offline from the local Hugging Face cache (the revision's snapshot,
    each blob checked against its name) or from the model folder.

    Files whose bytes are not there (a half-downloaded cache, a blob whose bytes do not
    match its name, an unreadable file) are not pinned: the lock lists them under
    `missing`, and pin exits 6 naming them. Nothing is written, exit 6, when the model is not
    there at all, a file the lock pinned before is now missing, or a file changed while pin
    hashed it (read twice: stop the writer and run it again). Exit 5 for an invalid LOCK
    or one without [model] (or LOCK changed while pin read the files), 2 for a bad flag.
    JSON: {"lockfile", "written", "model", "missing", "problems", "content-hash"}.
    -o naming LOCK itself (links followed) is the same in-place rewrite as no -o.

    A multi-target lock: --target NAME (exit 2 naming them when it has several and none is
    named); the other targets are written back as they were, -o gets the whole file.
    """
    with loading():  # modules and the lock live to the end: not scanned by each collection
        from pinning.cli.locktargets import rendered
        from pinning.cli.modelfiles import read_lock_model
        from pinning.lockfile.io import lock_json, write_lock
        from pinning.probe.modelfiles import with_model_files

        read = _lock_with_model(path, cache, folder, target)
    old = read.lock
    assert old.model is not None
    _refuse_model_output(output, old.model, cache, folder, Path(path))
    tree = read_lock_model(old.model, cache=cache, path=folder, lock_file=Path(path))
    new = with_model_files(old, tree)
    assert new.model is not None
    refused = _refusal(old.model, new.model)
    dest = output or path
    written = refused is None and not (dest == path and new == old)
    if written:
        write_lock(new, Path(dest), if_unchanged=read.raw if Path(dest) == Path(path) else None,
                   into=read)
    problems = [{"path": p.path, "kind": p.kind, "detail": p.detail} for p in tree.problems]
    err = dest == "-"
    if fmt == "json":
        emit({"lockfile": None if err or not written else dest, "written": written,
              "model": lock_json(new)["model"], "missing": new.model.missing,
              "problems": problems, "content-hash": new.model.content_hash},
             to_stderr=err)
    else:
        _model_text(new.model, tree, err=err)
    if err and written:
        click.echo(rendered(read, new), nl=False)
    hint = _next_step(tree, new.model.missing)
    if refused:
        raise _drift(f"Nothing written to {dest}: {refused}.", hint)
    if new.model.missing:
        raise _drift(f"{'Wrote ' + dest if written else dest + ' unchanged'}, but "
                     f"{len(new.model.missing)} file(s) of {old.model.label} are not pinned "
                     f"(their bytes are not there or do not match): "
                     f"{', '.join(new.model.missing[:10])}.", hint)
    if fmt != "json":
        click.echo(printable(f"Wrote {dest}" if written else f"{dest}: unchanged, not "
                             "rewritten", newlines=False), err=err)


def _refusal(old: Model, new: Model) -> str | None:
    """Why ``pin lock model`` writes nothing (no file of the model read, or files the lock
    pinned before not readable now), or ``None``.
    """
    dropped = sorted({f.path for f in old.files} - {f.path for f in new.files})
    if not new.files:
        return f"no file of {old.label} could be read: {new.files_unknown}"
    if dropped:
        return (f"{len(dropped)} file(s) the lock pinned are not readable here "
                f"({', '.join(dropped[:5])}); pinning again would drop them")
    return None


def _drift(message: str, hint: str) -> Exception:
    """A :class:`~pinning.errors.DriftError` (exit 6) with the next step ``hint``."""
    from pinning.errors import DriftError

    return DriftError(printable(message, newlines=False), hint=hint)


def _next_step(tree: ModelTree, missing: list[str]) -> str:
    """What to do about the files of ``tree`` that could not be pinned (``missing``): rename
    the files whose names a lock cannot record; for a folder, repair or restore its files;
    for the Hugging Face cache, download the revision again (a corrupt blob deleted first).
    """
    steps = []
    odd: list[str] = []
    if missing:  # the import is paid only when a file could not be pinned
        from pinning.verify.model import unrecordable_name

        odd = [m for m in missing if unrecordable_name(m)]
    if odd:
        steps.append(f"Rename {', '.join(odd[:5])} (a file name a lock can record has no "
                     "control character or backslash and is UTF-8)")
    if len(odd) < len(missing) or not missing:
        steps.append("Restore or repair the files in the folder (a link must point inside "
                     "it, to a regular file)" if tree.source == "directory" else
                     "Download the revision again (a blob whose bytes do not match its name "
                     "must be deleted first)")
    return "; ".join(steps) + ", then run `pin lock model LOCK` again."


def _model_text(model: Model, tree: ModelTree, *, err: bool) -> None:
    """The files pinned, the problems found and the summary line, as text."""
    click.echo(printable(f"Read {tree.location} ({tree.source})", newlines=False), err=err)
    for f in model.files:
        click.echo(printable(f"  {f.path}  {f.size} bytes  sha256:{f.sha256}",
                             newlines=False), err=err)
    for p in tree.problems:
        click.echo(printable(f"  problem: {p.path}: {p.kind}: {p.detail}", newlines=False),
                   err=err)
    from pinning.cli.modelfiles import model_line

    click.echo(printable(model_line(model), newlines=False), err=err)
