"""The value completers of ``--gpu``, ``--framework`` and ``--os`` (click ``shell_complete``
callbacks), attached to every command that has those options.

The completers read the matrix (shipped data plus ``PIN_MATRIX`` overlays) only when the
shell asks for a value, so neither ``pin --help`` nor ordinary commands pay for them; a
matrix that cannot be loaded completes nothing (completion must never print an error into
the user's prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from pinning.matrix.load import Matrix

__all__ = [
    "attach_value_completion",
    "complete_framework",
    "complete_gpu",
    "complete_os",
    "gpu_values",
    "os_values",
]


def _matrix() -> Matrix | None:
    """The matrix with ``PIN_MATRIX`` overlays, or ``None`` when it cannot be loaded."""
    from pinning.errors import PinError
    from pinning.matrix.load import load_matrix

    try:
        return load_matrix()
    except PinError:
        return None


def _items(values: Iterable[str], incomplete: str) -> list[CompletionItem]:
    """The ``values`` starting with ``incomplete`` (any case), each once whatever its case,
    in order.
    """
    from click.shell_completion import CompletionItem

    low = incomplete.lower()
    first = {v.lower(): v for v in reversed(list(values))}  # the first spelling of each
    return [CompletionItem(v) for v in dict.fromkeys(first[v.lower()] for v in values)
            if v.lower().startswith(low)]


def gpu_values(m: Matrix) -> list[str]:
    """What ``--gpu`` takes, for completion: every GPU id, then its aliases, then the gfx
    targets and compute capabilities; words with spaces left out (a shell splits them).
    """
    ids = [g.id for g in m.gpus]
    aliases = [a for g in m.gpus for a in g.aliases if " " not in a]
    targets = sorted({g.target for g in m.gpus if g.target})
    return [*ids, *aliases, *targets]


def os_values(m: Matrix) -> list[str]:
    """Every OS entry (``ubuntu-24.04.3``) a release row of the matrix names, sorted."""
    return sorted({o for f in m.files for r in f.data.releases for o in r.os or []})


def _framework_values(m: Matrix, incomplete: str) -> list[str]:
    """Framework names; once ``NAME==`` is typed, ``NAME==VERSION`` for every version a
    release row or wheel series names for it.
    """
    from pinning.resolve.constraints import FRAMEWORK_ALIASES

    name, sep, _ = incomplete.partition("==")
    if not sep:
        return m.framework_names()
    name = FRAMEWORK_ALIASES.get(name.lower(), name.lower())
    versions = {v for f in m.files for r in f.data.releases for fw in r.frameworks
                if fw.name == name for v in fw.versions or []}
    versions |= {w.series for w, _ in m.wheels(name)}
    from pinning.util.versions import sort_key

    typed = incomplete.partition("==")[0]
    return [f"{typed}=={v}" for v in sorted(versions, key=sort_key, reverse=True)]


def complete_gpu(ctx: click.Context, param: click.Parameter, incomplete: str
                 ) -> list[CompletionItem]:
    """Click ``shell_complete`` callback of ``--gpu``: :func:`gpu_values`."""
    m = _matrix()
    return _items(gpu_values(m), incomplete) if m else []


def complete_framework(ctx: click.Context, param: click.Parameter, incomplete: str
                       ) -> list[CompletionItem]:
    """Click ``shell_complete`` callback of ``--framework``: names, then versions."""
    m = _matrix()
    return _items(_framework_values(m, incomplete), incomplete) if m else []


def complete_os(ctx: click.Context, param: click.Parameter, incomplete: str
                ) -> list[CompletionItem]:
    """Click ``shell_complete`` callback of ``--os``: :func:`os_values`."""
    m = _matrix()
    return _items(os_values(m), incomplete) if m else []


_COMPLETERS: dict[str, Callable[[click.Context, click.Parameter, str], list[Any]]] = {
    "--gpu": complete_gpu,
    "--framework": complete_framework,
    "--os": complete_os,
}


def attach_value_completion(cmd: click.Command) -> None:
    """Give every ``--gpu``, ``--framework`` and ``--os`` option of ``cmd`` (and of the
    commands a group holds, recursively) its value completer, unless the option already has
    one. A lazily loaded command gets it when it is loaded (:mod:`pinning.cli.lazy`).
    """
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            attach_value_completion(sub)
    for param in cmd.params:
        hit = next((_COMPLETERS[o] for o in param.opts if o in _COMPLETERS), None)
        if hit is not None and isinstance(param, click.Option) \
                and param._custom_shell_complete is None:
            param._custom_shell_complete = hit
