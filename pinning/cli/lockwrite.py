"""Writing a lock a command made over the one at ``-o FILE``: the change summary ("ROCm
10.0.0 -> 7.2.0", ``unchanged``, ``new lock``), the guard for frozen host values, and the
dry run's report. Shared by ``pin resolve`` and ``pin lock upgrade``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pinning.lockfile.io import LockRead
    from pinning.lockfile.models import Lockfile

__all__ = ["changes_json", "dry_run_report", "existing_lock", "guard_every_target",
           "summary_text", "write_with_summary"]


def existing_lock(path: Path, target: str | None = None) -> Lockfile | None:
    """The lock now at ``path`` (in a multi-target file, target ``target``'s view, or its
    only target's), or ``None`` when there is none, it is not a valid lock, or it has no
    such lock (a multi-target file with several targets and ``target`` not one of them).
    """
    from pinning.errors import LockfileError, UsageError
    from pinning.lockfile.io import read_lock, read_locks

    if not path.is_file():
        return None
    try:
        if target is None:
            return read_lock(path)
        _, multi, locks = read_locks(path)
        return locks.get(target) if multi is not None else None
    except (LockfileError, UsageError):
        return None


def changes_json(lock: Lockfile, output: str,
                 target: str | None = None) -> list[dict[str, Any]] | None:
    """The changes from the lock at ``output`` (its target ``target``, as
    :func:`existing_lock`) to ``lock`` as JSON, ``None`` when there is no lock there.
    """
    from pinning.lockfile.diff import diff_locks

    old = existing_lock(Path(output), target) if output != "-" else None
    if old is None:
        return None
    return [c.model_dump(mode="json") for c in diff_locks(old, lock)]


def summary_text(lock: Lockfile, output: str, changes: list[dict[str, Any]] | None) -> str:
    """``Changes in FILE:`` and one line a changed stack value, ``FILE: unchanged``, or
    ``FILE: new lock``; ends with a newline.
    """
    from pinning.lockfile.diff import Change, summary_lines

    if changes is None:
        return f"{output}: new lock\n"
    lines = summary_lines([Change.model_validate(c) for c in changes], lock)
    if not changes:
        return f"{output}: unchanged\n"
    if not lines:
        return (f"{output}: the stack is unchanged ({len(changes)} recorded value(s) differ: "
                "matrix provenance, request or notes)\n")
    gone = sorted({c["layer"] for c in changes
                   if c["layer"] in ("serving", "extensions") and c["new"] is None})
    tail = "".join(
        f"  {'[serving]' if layer == 'serving' else '[[extensions]]'} removed from {output}: "
        f"this resolve records only the {_FLAGS_OF[layer]} flags given to it; repeat them "
        "to keep it.\n" for layer in gone)
    return f"Changes in {output}:\n" + "".join(f"  {line}\n" for line in lines) + tail


_FLAGS_OF = {"serving": "--quantization/--attention/--head-dim/--dtype",
             "extensions": "--extension"}


def dry_run_report(lock: Lockfile, output: str, *, force: bool) -> bool:
    """On stderr: what writing ``lock`` to ``output`` would change, and whether it would be
    refused (a lock with frozen host values there, without ``force``). Returns ``True``
    when it would be refused (the caller exits 5, as the write would).
    """
    from pinning.errors import LockfileError
    from pinning.lockfile.frozen import guard_frozen

    click.echo(summary_text(lock, output, changes_json(lock, output)), err=True, nl=False)
    refused = False
    try:
        guard_frozen(Path(output), force=force)
    except LockfileError as exc:
        click.echo(f"Writing would be refused: {exc.message}", err=True)
        refused = True
    click.echo(f"Dry run: nothing written to {output}.", err=True)
    return refused


def write_with_summary(lock: Lockfile, path: Path, *, force: bool, command: str,
                       replacing: bytes | None = None,
                       into: LockRead | None = None) -> list[dict[str, Any]] | None:
    """Write ``lock`` to ``path`` atomically and return the changes from the lock that was
    there (JSON form; ``None`` when there was none).

    ``replacing`` is the exact bytes of ``path`` the caller read (``pin lock upgrade``
    rewriting its own input): the write then happens only if the file still holds them, and
    its frozen values are not guarded (the caller carried them). Otherwise a lock at
    ``path`` that holds frozen host values is refused (``LockfileError``, exit 5) unless
    ``force``; raises what :func:`~pinning.lockfile.io.write_lock` raises.

    ``into`` is the :class:`~pinning.lockfile.io.LockRead` of a multi-target lock's target
    that ``lock`` replaces: the whole file is written with that section replaced, and the
    changes are from that target of the file at ``path``. A multi-target file at ``path``
    is guarded for the frozen values of every target.
    """
    from pinning.lockfile.io import write_lock

    if replacing is None:
        replacing = guard_every_target(path, force=force, command=command)
    target = into.target if into is not None and into.multi is not None else None
    changes = changes_json(lock, str(path), target)
    write_lock(lock, path, if_unchanged=replacing, into=into)
    return changes


def guard_every_target(path: Path, *, force: bool, command: str) -> bytes | None:
    """:func:`~pinning.lockfile.frozen.guard_frozen` for a file that may be a multi-target
    lock: such a file is refused (``LockfileError``, exit 5, naming each target's frozen
    values) when any target holds values frozen from a host, unless ``force``; any other
    file as ``guard_frozen`` judges it. Returns the bytes now at ``path`` (or ``None``).
    """
    from pinning.errors import LockfileError
    from pinning.lockfile.frozen import frozen_fields, guard_frozen
    from pinning.lockfile.io import read_locks

    multi = None
    if path.is_file():
        try:
            raw, multi, locks = read_locks(path)
        except LockfileError:
            multi = None
    if multi is None:
        return guard_frozen(path, force=force, command=command)
    frozen = [f"{name}: {', '.join(fields[:6])}" for name, lk in locks.items()
              if (fields := frozen_fields(lk))]
    if frozen and not force:
        raise LockfileError(
            f"{path} holds values frozen from a host in {len(frozen)} target(s) "
            f"({'; '.join(frozen)}); {command} would replace the whole file and lose them. "
            "Nothing was written.",
            hint=f"Upgrade it in place (`pin lock upgrade {path} --target NAME` keeps the "
                 "frozen values), write elsewhere with -o FILE, or pass --force to replace it.")
    return raw
