"""Click options and value parsing shared by the ``pin`` commands.

Only click and the standard library are imported here, so ``pin --help`` stays fast.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pinning.errors import UsageError

__all__ = ["FORMAT", "amend_output_option", "amends", "ca_cert_option", "cli_path",
           "file_params", "format_option", "guard_outputs", "host_options",
           "lock_target_option", "one_stdin", "own_folder_rule", "parse_date", "path_given",
           "refuse_stdout_twice"]

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


def amend_output_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``-o/--output FILE`` to a command that rewrites a lock in place: write the
    amended lock there instead (``-`` standard output, messages then on standard error);
    passed as ``output``.
    """
    return click.option("-o", "--output", callback=output_path, metavar="FILE",
                        help="Write here instead of replacing LOCK ('-': standard output, "
                             "messages then go to stderr).")(func)


def lock_target_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--target NAME``, passed as ``target``: the section of a multi-target lock
    (``pin lock``'s ``pin.lock``) the command acts on, needed when the lock has several;
    a single-target lock refuses it (:func:`pinning.lockfile.io.read_lock`, exit 2).
    """
    return click.option("--target", "target", metavar="NAME",
                        help="The target of a multi-target lock (pin lock writes one); needed "
                             "when it has several.")(func)


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


def refuse_stdout_twice(output: str | None, fmt: str, *, what: str = "result") -> None:
    """Raise ``UsageError`` (exit 2) when ``-o output`` is ``-`` (standard output) together
    with ``--format json``, which prints its envelope there (``what`` names what ``-o``
    writes). That ``-o`` never names an input is :func:`guard_outputs`' rule.
    """
    if output == "-" and fmt == "json":
        raise UsageError(f"-o - writes the {what} to standard output and so would "
                         "--format json.", hint="Drop one of them: with --format json the "
                                                "envelope's result is the document.")


#: Attribute on a command's callback naming the input it rewrites in place (:func:`amends`).
AMENDS_ATTR = "pin_amends"

_F = TypeVar("_F", bound=Callable[..., Any])


def amends(param: str) -> Callable[[_F], _F]:
    """Mark a command that rewrites its input ``param`` (its LOCK) in place unless ``-o``
    says otherwise: ``-o`` naming that input's own path (links followed) is the same
    in-place rewrite, so :func:`guard_outputs` allows it for that one input. Put it
    directly below the ``@click.command`` line; returns the function unchanged.
    """

    def mark(func: _F) -> _F:
        setattr(func, AMENDS_ATTR, param)
        return func

    return mark


#: Attribute on a command's callback that checks ``-o`` inside its input folders itself.
OWN_FOLDER_RULE_ATTR = "pin_own_folder_rule"


def own_folder_rule(func: _F) -> _F:
    """Mark a command whose ``-o`` may name an existing file inside one of its input
    folders, because the command applies a finer rule of its own (``pin audit`` refuses
    only a file of a kind it audits); :func:`guard_outputs` then compares files only.
    """
    setattr(func, OWN_FOLDER_RULE_ATTR, True)
    return func


def _values(value: Any) -> tuple[Any, ...]:
    """A parameter's value as a tuple (a repeatable one already is)."""
    return value if isinstance(value, tuple) else (value,)


def _is_path(param: click.Parameter) -> bool:
    """Whether ``param`` names a path: typed ``click.Path`` or checked by :func:`path_given`."""
    return isinstance(param.type, click.Path) or param.callback is path_given


#: The flags of an option naming a file the command writes (besides :func:`output_path`).
OUTPUT_FLAGS = frozenset({"-o", "--output", "--out"})


def file_params(cmd: click.Command) -> tuple[list[click.Parameter], list[click.Parameter]]:
    """``(outputs, inputs)`` of ``cmd``: its output options (any option whose callback is
    :func:`output_path`, or whose flags include one of :data:`OUTPUT_FLAGS`) and every
    other path parameter (typed ``click.Path`` or checked by :func:`path_given`): the files
    and folders it reads.
    """
    outputs = [p for p in cmd.params if p.callback is output_path or (
        isinstance(p, click.Option) and OUTPUT_FLAGS & {*p.opts, *p.secondary_opts})]
    inputs = [p for p in cmd.params if p not in outputs and _is_path(p)]
    return outputs, inputs


def param_label(param: click.Parameter) -> str:
    """How a message names ``param``: an option's long flag (``--host``), an argument's
    metavar without brackets or dots (``LOCK``, ``FILE``).
    """
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    name = param.metavar or (param.name or "").upper()
    return name.strip("[].") or name


def _command_words(ctx: click.Context) -> str:
    """``pin accept run``: the command being run, its root called ``pin``."""
    words: list[str] = []
    while ctx.parent is not None:
        words.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["pin", *words])


def refuse_writing_over_inputs(cmd: click.Command, values: dict[str, Any]) -> None:
    """Apply :func:`pinning.util.samefile.refuse_overwrite` to ``cmd`` run with ``values``
    (parameter name -> value, as click passes them): no output option (``file_params``)
    may name one of its input files, except the input marked with :func:`amends`. Raises
    ``UsageError`` (exit 2); an input given as ``-`` is compared as the file standard input
    reads (``-o /dev/stdin`` with ``< file`` would replace that file); ``-o -`` is never
    compared.
    """
    from pinning.util.samefile import refuse_overwrite

    outputs, inputs = file_params(cmd)
    amended = getattr(cmd.callback, AMENDS_ATTR, None)
    given = [(param_label(p), cli_path(v), p.name == amended) for p in inputs
             for v in _values(values.get(p.name or "")) if isinstance(v, str) and v.strip()
             and v != "-"]
    given += [(f"{param_label(p)} (standard input)", Path("/dev/stdin"), False)
              for p in inputs if "-" in _values(values.get(p.name or ""))][:1]
    ctx = click.get_current_context(silent=True)
    for out in outputs:
        for target in _values(values.get(out.name or "")):
            if not isinstance(target, str) or target in ("", "-"):
                continue
            flag = "-o" if "-o" in getattr(out, "opts", ()) else param_label(out)
            refuse_overwrite(cli_path(target), [(label, path) for label, path, _ in given],
                             option=flag, command=_command_words(ctx) if ctx else "pin",
                             in_place=next((lb for lb, _, own in given if own), None),
                             folders=not getattr(cmd.callback, OWN_FOLDER_RULE_ATTR, False))


def guard_outputs(cmd: click.Command) -> None:
    """Make ``cmd`` (and every command a group holds, nested groups too) check
    :func:`refuse_writing_over_inputs` before its callback runs, i.e. before any work, when
    it has an output option: so no command, a new one included, writes over what it read.
    Wraps each callback once; the ``pin`` group calls it on every command it loads
    (:mod:`pinning.cli.lazy`).
    """
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            guard_outputs(sub)
        return
    callback = cmd.callback
    if callback is None or getattr(callback, "pin_guarded", False) or not file_params(cmd)[0]:
        return
    cmd.callback = _guarded(cmd, callback)


def _guarded(cmd: click.Command, callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` preceded by :func:`refuse_writing_over_inputs` (attributes kept)."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        refuse_writing_over_inputs(cmd, kwargs)
        return callback(*args, **kwargs)

    setattr(run, "pin_guarded", True)  # noqa: B010 - an attribute mypy does not know
    return run


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


def ask_passphrase(confirm: bool) -> str:
    """Prompt for a signing key's passphrase on the terminal (twice when ``confirm``); the
    ``ask`` of :func:`pinning.sign.policy.password`. Aborted input is click's ``Abort``.
    """
    return str(click.prompt("Key passphrase", hide_input=True, confirmation_prompt=confirm))
