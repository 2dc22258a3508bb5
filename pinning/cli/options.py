"""Click options and value parsing shared by the ``pin`` commands.

Only click and the standard library are imported here, so ``pin --help`` stays fast.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pinning.errors import UsageError

__all__ = ["FORMAT", "ca_cert_option", "cli_path", "format_option", "host_options",
           "one_stdin", "parse_date", "path_given"]

FORMAT = click.Choice(["text", "json"])
"""The ``--format`` choice of every command that can print JSON: ``text`` or ``json``."""


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--format [text|json]`` (default ``text``), passed to the command as ``fmt``;
    ``json`` prints the command's result in the one envelope (:mod:`pinning.cli.envelope`).
    """
    from pinning.cli.envelope import note_format

    return click.option("--format", "fmt", type=FORMAT, default="text", show_default=True,
                        callback=note_format,
                        help="text for people; json: one envelope {pin, command, ok, "
                             "exit-code, result, error} on standard output.")(func)


def parse_date(flag: str, text: str | None) -> dt.date | None:
    """Read a ``YYYY-MM-DD`` flag value; ``None`` when the flag was not given.

    Raises ``UsageError`` (exit 2) naming ``flag`` when ``text`` is not an ISO date.
    """
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"{flag} {text!r}: expected a date as YYYY-MM-DD.") from exc


def path_given(ctx: click.Context, param: click.Parameter,
               value: str | tuple[str, ...] | None) -> Any:
    """Click callback of a path option (or a repeatable one): ``value`` unchanged unless a
    path is empty or blank.

    An empty path (``-o ''``, ``--host ''``, often an unset shell variable) would otherwise
    mean the current directory, the default file or "probe this machine"; it raises
    ``click.BadParameter`` (exit 2).
    """
    for item in (value if isinstance(value, tuple) else (value,)):
        if item is not None and not item.strip():
            raise click.BadParameter("an empty path was given (is a shell variable unset?); "
                                     "name a file, or '-' where standard input or output "
                                     "is allowed.", ctx=ctx, param=param)
    return value


def output_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of ``-o FILE``: :func:`path_given`, and a name that is a folder
    (``.``, ``..``, ``dir/``) is refused (exit 2) instead of reaching the writer.
    """
    path_given(ctx, param, value)
    if value is not None and value != "-" and (
            value.endswith(("/", "/.", "/..")) or value in (".", "..")):
        raise click.BadParameter(f"{value!r} names a folder; name a file in it.",
                                 ctx=ctx, param=param)
    return value


def cli_path(value: str) -> Path:
    """A path argument as a ``Path``: ``-`` stays ``-`` (standard input or output to
    :mod:`pinning.util.files`); a file named ``-`` written another way (``./-``), which
    ``Path`` would shorten to ``-``, becomes absolute so it stays a file.
    """
    path = Path(value)
    if value != "-" and str(path) == "-":
        return path.absolute()
    return path


def one_stdin(**values: str | None) -> None:
    """Raise ``UsageError`` (exit 2) when more than one of ``values`` (flag -> value) is
    ``-``: standard input can be read once.
    """
    dashes = [flag for flag, value in values.items() if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f"{' and '.join(dashes)} both read standard input ('-'); give '-' "
                         "once and a file for the other.")


#: ``ctx.meta`` key under which ``--chroot`` is kept (read by :func:`chroot_requested`).
CHROOT_META = "pin.host.chroot"


def _note_chroot(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Keep ``--chroot`` in the context's meta (it is not a command parameter)."""
    ctx.meta[CHROOT_META] = bool(value)


def chroot_requested() -> bool:
    """Whether the running command was given ``--chroot`` (see :func:`host_options`)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(CHROOT_META))


def host_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options that say which host to read: a snapshot, a recorded root, or live.

    Adds ``--host`` (``host_file``), ``--root``, ``--replay``, ``--chroot`` (kept in the
    context: :func:`chroot_requested`), ``--site-packages``
    (``site_packages``, repeatable) and ``--matrix`` (``overlays``, repeatable). Paths are
    not checked here: the readers report a missing, unreadable or wrong kind of file with
    the documented code (a snapshot, tree or recording 7, an overlay 3), not click's 2.
    """
    for option in reversed([
        click.option("--host", "host_file", metavar="FILE", type=click.Path(),
                     callback=path_given,
                     help="Read a snapshot written by `pin probe -o FILE` instead of probing "
                          "('-': standard input)."),
        click.option("--root", metavar="DIR", type=click.Path(), callback=path_given,
                     help="Probe a recorded host tree read exactly as / (default: this machine)."),
        click.option("--replay", metavar="FILE", type=click.Path(), callback=path_given,
                     help="Answer tool commands (amd-smi, rocminfo, nvidia-smi, ldd) from this "
                          "recording (commands.toml) instead of running them; also gives the "
                          "host's environment. Without it a --root probe runs no tools."),
        click.option("--chroot", is_flag=True, expose_value=False, callback=_note_chroot,
                     help="With --root (the host's / mounted at DIR, e.g. in a DaemonSet): run "
                          "the host's own tools (amd-smi, rocminfo, nvidia-smi, ldd) inside DIR "
                          "with chroot(8), so firmware and runtime facts are read too (needs "
                          "CAP_SYS_CHROOT)."),
        click.option("--site-packages", "site_packages", multiple=True, metavar="DIR",
                     callback=path_given,
                     help="Python site-packages to read (default: VIRTUAL_ENV/CONDA_PREFIX, "
                          "else this interpreter's, or the usual places under --root)."),
        click.option("--matrix", "overlays", multiple=True, metavar="FILE", callback=path_given,
                     help="Add a site overlay to the matrix (also PIN_MATRIX)."),
    ]):
        func = option(func)
    return func


def refuse_inputs(output: str | None, fmt: str, inputs: dict[str, str | None], *,
                  what: str = "result") -> None:
    """Raise ``UsageError`` (exit 2) when ``-o output`` names one of ``inputs`` (``{"the
    gates file": path}``: the ``what`` written would replace it), compared as given,
    resolved and with ``samefile``; or is ``-`` (standard output) together with ``--format
    json``, which prints its envelope there.
    """
    if output is None:
        return
    if output == "-":
        if fmt == "json":
            raise UsageError(f"-o - writes the {what} to standard output and so would "
                             "--format json.", hint="Drop one of them: with --format json the "
                                                    "envelope's result is the document.")
        return
    import contextlib
    import os

    target = cli_path(output)
    for label, name in inputs.items():
        if not name or name == "-":
            continue
        same = os.path.abspath(target) == os.path.abspath(cli_path(name))
        with contextlib.suppress(OSError):
            same = same or target.resolve() == cli_path(name).resolve() or (
                target.exists() and target.samefile(cli_path(name)))
        if same:
            raise UsageError(f"-o {output} is {label} ({name}); the {what} would replace it.",
                             hint=f"Write the {what} to another file.")


def ca_cert_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--ca-cert FILE`` (passed as ``ca_cert``; also ``PIN_REGISTRY_CA``): the PEM CA
    bundle that signed a registry's TLS certificate, for a team's own registry. Without it
    pin uses Docker's ``/etc/docker/certs.d/HOST/ca.crt`` when present, else the system's
    trusted CAs. A missing file is a click error (exit 2).
    """
    return click.option("--ca-cert", "ca_cert", metavar="FILE", envvar="PIN_REGISTRY_CA",
                        type=click.Path(exists=True, dir_okay=False), callback=path_given,
                        help="CA certificate (PEM) of the registry's TLS certificate "
                             "(also PIN_REGISTRY_CA; default: /etc/docker/certs.d/HOST/"
                             "ca.crt, else the system's CAs).")(func)
