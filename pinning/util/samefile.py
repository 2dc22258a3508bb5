"""The one rule that keeps a command from writing over what it read.

A command that writes a file (``-o FILE``) and reads others (a LOCK, ``--host``, ``--from``,
...) must never be pointed at one of its own inputs: the output would replace the input
before, or while, it is read, and the input's bytes would be gone. :func:`refuse_overwrite`
is that rule; ``pinning.cli.options.guard_outputs`` applies it to every command.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from pinning.errors import UsageError

__all__ = ["refuse_overwrite", "same_file"]


def _realpath(path: Path) -> str | None:
    """``path`` absolute with every symbolic link followed (``None`` when it cannot be)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same ``st_dev`` and ``st_ino`` after
    following symbolic links (so a hard link or a symbolic link to a file is that file).
    When either cannot be ``stat``-ed (not there yet, a dangling link), their resolved
    paths (:func:`os.path.realpath`) are compared instead. Raises nothing.
    """
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        ra, rb = _realpath(a), _realpath(b)
        return ra is not None and ra == rb
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _is_stream(path: Path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a folder (a FIFO, a
    character device such as ``/dev/null`` or a terminal, a socket): writing there sends a
    stream and replaces nothing.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def refuse_overwrite(output: Path, inputs: Sequence[tuple[str, Path]], *,
                     option: str = "-o", command: str = "pin",
                     in_place: str | None = None, folders: bool = True) -> None:
    """Raise ``UsageError`` (exit 2) when ``output`` is one of ``inputs``.

    ``inputs`` is ``[(label, path)]``: ``label`` names where the path was given
    (``"--host"``, ``"LOCK"``), as the message shows it. ``output`` is one of them when
    :func:`same_file` says so (the same file by device and inode, links followed; a path
    not there yet by its resolved path). An output that exists as a stream (a FIFO, a
    character device such as ``/dev/null``) replaces nothing and is never refused; the
    caller leaves standard input and output (``-``) out. ``in_place`` is the label of the
    one input the command rewrites in place by design (a LOCK it amends): ``output``
    naming that input's own path (resolved, links followed) is that same in-place write
    and is allowed; another name of it (a hard link) is refused like any other input.
    ``option`` and ``command`` name the flag and the command in the message. With
    ``folders``, an ``output`` that is an existing file inside an input that is a folder
    (``--root``, a model folder) is refused too: the command may have read it.
    """
    if _is_stream(output):
        return
    if folders:
        _refuse_inside_folders(output, inputs, option, command)
    for label, path in inputs:
        if not same_file(output, path):
            continue
        if label == in_place and _realpath(output) == _realpath(path):
            continue
        spelled = os.path.abspath(output) != os.path.abspath(path)
        how = " (the same file, under another name or through a link)" if spelled else ""
        hint = f"Give {option} a new file name"
        if in_place is not None:
            hint += f", or leave {option} out to rewrite {in_place} in place"
        raise UsageError(
            f"{option} {output} is one of the inputs of {command}: {label} {path}{how}. "
            "Writing the output there would replace what it reads; nothing was read or "
            "written.", hint=hint + ".")


def _refuse_inside_folders(output: Path, inputs: Sequence[tuple[str, Path]], option: str,
                           command: str) -> None:
    """``UsageError`` (exit 2) when ``output`` is an existing regular file inside one of the
    ``inputs`` that is a folder (both resolved, links followed).
    """
    target = _realpath(output)
    if target is None or not os.path.isfile(target):
        return
    for label, path in inputs:
        root = _realpath(path)
        if root is None or not os.path.isdir(root):
            continue
        if os.path.commonpath([root, target]) == root and root != target:
            raise UsageError(
                f"{option} {output} is a file inside {label} {path}, a folder {command} "
                "reads; writing the output there could replace a file it read. Nothing was "
                "read or written.", hint=f"Give {option} a file outside {path}.")
