"""What ``pin resolve`` runs before it prints and writes, as a function: the lock its flags
make (:func:`resolve_lock`). ``pin resolve`` calls it, and ``pin lock`` calls it for each
target of the project file with the values ``pin resolve --target NAME`` takes, so both
make the same lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pinning.cli.options import parse_date
from pinning.errors import NoValidatedCombination, UsageError

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.matrix.load import Matrix
    from pinning.resolve.constraints import Constraints, ModelRef
    from pinning.resolve.result import Resolution

__all__ = ["Resolved", "resolve_lock"]


def _with_serving(lock: Lockfile, serving: dict[str, Any]) -> Lockfile:
    """``lock`` with the serving flags recorded; raises ``UsageError`` (exit 2) naming the
    flag for a malformed one.
    """
    from pinning.guards.serving import serving_from_flags
    from pinning.resolve.to_lock import with_serving

    table, exts = serving_from_flags(lock.target.vendor, **serving)
    return with_serving(lock, table, exts)


class Resolved(NamedTuple):
    """What :func:`resolve_lock` makes: the sealed ``lock``, the resolver's ``res`` (for
    ``--explain`` and ``considered``) and the resolve guards' ``notes`` (lines for stderr).
    """

    lock: Lockfile
    res: Resolution
    notes: list[str]


def resolve_lock(*, gpu: str, frameworks: tuple[str, ...], rocm: str | None = None,
                 cuda: str | None = None, os_: str | None = None, model: str | None = None,
                 as_of: str | None = None, overlays: tuple[str, ...] = (),
                 no_model_files: bool = False, build_steps: tuple[str, ...] = (),
                 output: str = "pin.lock", require_validated: bool = False,
                 matrix: Matrix | None = None, **serving: Any) -> Resolved:
    """What ``pin resolve`` runs before it writes: the lock its flags (the keyword
    arguments, as click passes them; ``serving``: :func:`serving_options`) make, with the
    model files read and the resolve guards applied. ``output`` is where the lock will be
    written (a relative model folder is anchored there); ``matrix``, when given, is the one
    :func:`~pinning.matrix.load.load_matrix` returns for ``overlays`` (read once by a caller
    resolving several locks).

    Raises ``UsageError`` (exit 2) for a malformed flag or ``--rocm`` with ``--cuda``,
    ``NoValidatedCombination`` (exit 4, also for ``require_validated`` and an unconfirmed
    stack), ``MatrixError`` (exit 3) for a bad overlay, ``GuardRefused`` (exit 10).
    """
    from pinning.matrix.load import load_matrix, overlay_paths
    from pinning.resolve.guards import apply_at_resolve
    from pinning.resolve.resolver import resolve as do_resolve
    from pinning.resolve.to_lock import lock_from_resolution, with_build_steps

    if rocm and cuda:
        raise UsageError("--rocm and --cuda exclude each other: a GPU has one vendor.")
    if matrix is None:
        matrix = load_matrix(overlays)
    res = do_resolve(matrix, _constraints(matrix, gpu, frameworks, rocm=rocm, cuda=cuda,
                                          os_=os_, model=model, as_of=as_of, output=output))
    if require_validated:
        _refuse_unconfirmed(res)
    lock = lock_from_resolution(res, matrix,
                                overlays=[str(p) for p in overlay_paths(overlays)])
    lock = _with_model_files(lock, skip=no_model_files, output=output)
    lock = _with_serving(with_build_steps(lock, build_steps), serving)
    lock, notes = apply_at_resolve(lock)
    return Resolved(lock, res, notes)


def _constraints(matrix: Matrix, gpu: str, frameworks: tuple[str, ...], *, rocm: str | None,
                 cuda: str | None, os_: str | None, model: str | None, as_of: str | None,
                 output: str) -> Constraints:
    """The request the flags make; raises ``UsageError`` (exit 2) naming a malformed flag."""
    from pinning.resolve.constraints import (
        Constraints,
        parse_framework,
        parse_model,
        parse_os,
        parse_runtime_spec,
    )

    return Constraints(
        gpu=gpu,
        frameworks=tuple(parse_framework(f, matrix.framework_names()) for f in frameworks),
        rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
        cuda=parse_runtime_spec("--cuda", cuda) if cuda else None,
        os=parse_os(os_) if os_ else None,
        model=_anchored(parse_model(model), output) if model else None,
        as_of=parse_date("--as-of", as_of),
    )


def _refuse_unconfirmed(res: Resolution) -> None:
    """``--require-validated``: raise :class:`~pinning.errors.NoValidatedCombination` (exit 4)
    naming each thing no source confirms about the stack ``res`` chose and the source that
    would settle it; return when its status is validated.
    """
    if not res.unconfirmed:
        return
    from pinning.lockfile.status import status_lines

    lines = "\n".join(status_lines(res.status)[1:])
    raise NoValidatedCombination(
        f"The newest stack for the request ({'ROCm' if res.runtime == 'rocm' else 'CUDA'} "
        f"{res.runtime_version}) is unconfirmed, and --require-validated asks for a validated "
        f"one; nothing was written:\n{lines}",
        hint="Narrow the request to a release the vendor's rows confirm (e.g. --rocm, "
             "--framework, --os), add a row your team validated with --matrix FILE, or drop "
             "--require-validated to write the lock with status unconfirmed.")


def _with_model_files(lock: Lockfile, *, skip: bool, output: str) -> Lockfile:
    """``lock`` with its ``--model``'s files read from this machine's Hugging Face cache or
    the folder (offline; ``files-unknown`` with the reason when they are not there);
    unchanged without a model or with ``skip`` (``--no-model-files``). A relative folder is
    read from the folder of the lock ``output``; the lock file itself is left out of it.
    """
    if lock.model is None or skip:
        return lock
    from pinning.cli.modelfiles import read_lock_model
    from pinning.probe.modelfiles import with_model_files

    return with_model_files(lock, read_lock_model(
        lock.model, lock_file=None if output == "-" else Path(output)))


def _anchored(ref: ModelRef, output: str) -> ModelRef:
    """``ref`` with a relative model folder rewritten relative to the folder of the lock
    ``output`` (``./``-prefixed when it does not start with ``../``), or absolute when the
    lock goes to standard output (``-``): a relative path in a lock is read from the lock's
    folder. Absolute and ``~`` paths, and Hugging Face models, are unchanged.
    """
    import os

    from pinning.resolve.constraints import ModelRef

    path = ref.path
    if path is None or path.startswith(("/", "~")):
        return ref
    folder = os.path.abspath(path)
    if output == "-":
        return ModelRef(path=folder)
    rel = os.path.relpath(folder, os.path.dirname(os.path.abspath(output)))
    if rel == ".":
        return ModelRef(path=".")
    return ModelRef(path=rel if rel.startswith("../") or rel == ".." else "./" + rel)


