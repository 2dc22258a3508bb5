"""The ``pin`` command line: parse flags, call the core, render, map ``PinError`` to exit codes.

This module holds the ``main`` group (error handling, ``--debug``, ``--version``, ``--color``)
and :data:`COMMANDS`, the one table from a command's words to the ``"module:attribute"``
that defines it: a command module is imported only when its command runs (or for
``pin --help``), so ``pin resolve`` loads ``cli/resolve.py`` and what it needs
(:mod:`~pinning.cli.lazy`). Command modules never import each other; what they share lives
in :mod:`~pinning.cli.options`, :mod:`~pinning.cli.render`, :mod:`~pinning.cli.envelope`,
:mod:`~pinning.cli.progress` and the other non-command modules. Only the CLI package prints
or exits.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, NoReturn

import click

from pinning import __version__
from pinning.cli.envelope import has_result, remember_args, wants_json, write_envelope
from pinning.cli.lazy import LazyGroup
from pinning.errors import InternalError, PinError, UsageError, exit_codes, missing_extra
from pinning.util.text import printable

__all__ = ["COMMANDS", "WORKFLOW", "PinGroup", "main"]


def _command_path(ctx: click.Context) -> str:
    """``pin fleet verify``: the command words of this run's argument list (options before
    them skipped), for a usage hint; ``pin COMMAND`` when none is found.
    """
    cmd: click.Command = ctx.command
    words = ["pin"]
    for arg in sys.argv[1:]:
        if arg.startswith("-"):
            continue
        sub = cmd.get_command(ctx, arg) if isinstance(cmd, click.Group) else None
        if sub is None:
            break
        words.append(arg)
        cmd = sub
    return " ".join(words) if len(words) > 1 else "pin COMMAND"


def _fail(err: PinError, debug: bool, ctx: click.Context | None = None) -> NoReturn:
    """Print ``err``'s paragraph (terminal controls from file content escaped) and exit with
    its code; the traceback first with ``--debug``. Under ``--format json`` the envelope
    (``ok`` false, the error, any result the command gave) goes to standard output too.
    """
    if err.hint == UsageError.default_hint and ctx is not None:
        err.hint = err.hint.replace("pin COMMAND", _command_path(ctx))
    if ctx is not None:
        from pinning.cli.project import blame_project

        blame_project(err, ctx.meta)
    if ctx is not None and wants_json(ctx):
        write_envelope(ctx, err.exit_code, kind=type(err).__name__, message=err.message,
                       hint=err.hint)
    if debug:
        import traceback

        click.echo(printable(traceback.format_exc()), err=True, nl=False)
    click.echo(f"pin: error: {printable(err.render())}", err=True)
    sys.exit(err.exit_code)


#: ``pin --help`` lists commands under these headings, in workflow order; a command named in
#: none is listed under "Other commands".
WORKFLOW: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Describe the trial", ("init", "config", "trial")),
    ("Audit what runs today", ("probe", "doctor", "audit")),
    ("Resolve a validated stack", ("matrix", "resolve")),
    ("Freeze, build and sign", ("freeze", "login", "base", "build", "rebuild", "keygen",
                                "sign")),
    ("Accept a host or an image", ("verify", "verify-image", "accept")),
    ("Decide: port or stay", ("cost", "report")),
    ("Decide what may change", ("guard",)),
    ("Keep it true", ("lock", "fleet", "slurm", "serve")),
    ("Shell", ("completion",)),
)


#: Every command: its words (``"lock push"`` is ``push`` under ``lock``) -> the
#: ``"module:attribute"`` defining it, imported on first use. A group listed here is a
#: :class:`~pinning.cli.lazy.LazyGroup`; its entries one word deeper are its commands.
COMMANDS: dict[str, str] = {
    "resolve": "pinning.cli.resolve:resolve",
    "matrix": "pinning.cli.matrix:matrix",
    "lock": "pinning.cli.lock:lock",
    "lock export": "pinning.cli.lockexport:lock_export",
    "lock migrate": "pinning.cli.lockmigrate:lock_migrate",
    "lock model": "pinning.cli.lockmodel:lock_model",
    "lock packages": "pinning.cli.lockpackages:lock_packages",
    "lock push": "pinning.cli.lockremote:lock_push",
    "lock pull": "pinning.cli.lockremote:lock_pull",
    "probe": "pinning.cli.probe:probe",
    "verify": "pinning.cli.verify:verify",
    "freeze": "pinning.cli.freeze:freeze",
    "doctor": "pinning.cli.doctor:doctor",
    "login": "pinning.cli.registry:login",
    "build": "pinning.cli.image:build",
    "rebuild": "pinning.cli.image:rebuild",
    "base": "pinning.cli.base:base",
    "keygen": "pinning.cli.sign:keygen",
    "sign": "pinning.cli.sign:sign",
    "verify-image": "pinning.cli.sign:verify_image",
    "guard": "pinning.cli.guard:guard",
    "audit": "pinning.cli.audit:audit",
    "accept": "pinning.cli.accept:accept",
    "fleet": "pinning.cli.fleet:fleet",
    "slurm": "pinning.cli.slurm:slurm",
    "serve": "pinning.cli.serve:serve",
    "cost": "pinning.cli.cost:cost",
    "report": "pinning.cli.report:report",
    "completion": "pinning.cli.completion:completion",
    "init": "pinning.cli.init:init",
    "config": "pinning.cli.config:config",
    "config show": "pinning.cli.config:config_show",
    "trial": "pinning.cli.trial:trial",
}


def _prepare(cmd: click.Command) -> None:
    """What every command gets once loaded: the value completers of ``--gpu`` /
    ``--framework`` / ``--os`` and the guard that refuses ``-o`` naming an input (exit 2,
    before any work: :func:`~pinning.cli.options.guard_outputs`), and for the commands the
    project file sets, its values as defaults (:func:`~pinning.cli.project.attach_project`).
    """
    from pinning.cli.completers import attach_value_completion
    from pinning.cli.options import guard_outputs
    from pinning.cli.project import attach_project

    attach_value_completion(cmd)
    guard_outputs(cmd)
    attach_project(cmd)


class PinGroup(LazyGroup):
    """Click group that turns ``PinError`` into one paragraph and its exit code, and lists
    its commands grouped by workflow (:data:`WORKFLOW`) in ``--help``.
    """

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Write the commands in one section per :data:`WORKFLOW` heading, then any other."""
        shown: dict[str, click.Command] = {}
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                shown[name] = cmd
        placed = {n for _, names in WORKFLOW for n in names}
        sections = [(title, [n for n in names if n in shown]) for title, names in WORKFLOW]
        sections.append(("Other commands", [n for n in shown if n not in placed]))
        width = formatter.width - 6 - max((len(n) for n in shown), default=0)
        for title, names in sections:
            if names:
                with formatter.section(title):
                    formatter.write_dl([(n, shown[n].get_short_help_str(width))
                                        for n in names])

    #: Commands under this group leave their ``--format json`` result for :meth:`invoke`
    #: to print in the envelope (:mod:`pinning.cli.envelope`).
    prints_envelope = True

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse as click does, keeping the raw arguments for the JSON envelope."""
        remember_args(ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a ``PinError`` becomes its paragraph and exit code. Under
        ``--format json`` the command's result is printed in the envelope, with the exit
        code and error it ended with.
        """
        debug = bool(ctx.params.get("debug"))
        try:
            out = super().invoke(ctx)
            if wants_json(ctx):
                write_envelope(ctx, 0)
            return out
        except PinError as err:
            _fail(err, debug, ctx)
        except click.exceptions.Exit as done:
            # ctx.exit(CODE): a result that reports drift (lock diff, exit 6); not --help.
            if wants_json(ctx) and (has_result(ctx) or done.exit_code):
                write_envelope(ctx, done.exit_code)
            raise
        except click.ClickException as exc:
            if wants_json(ctx):
                write_envelope(ctx, exc.exit_code,
                               kind="UsageError" if exc.exit_code == 2 else type(exc).__name__,
                               message=exc.format_message(), hint="")
            raise
        except click.exceptions.Abort:
            raise
        except BrokenPipeError:
            # The reader (e.g. `| head`) went away: stop quietly, like other Unix tools.
            import os

            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            sys.exit(141)
        except KeyboardInterrupt:
            click.echo("pin: interrupted", err=True)
            sys.exit(130)
        except ModuleNotFoundError as exc:  # an optional part not installed: exit 15
            _fail(missing_extra(exc, _command_path(ctx))
                  or InternalError(f"unexpected {type(exc).__name__}: {exc}"), debug, ctx)
        except Exception as exc:  # a bug: exit 1 with a report hint
            _fail(InternalError(f"unexpected {type(exc).__name__}: {exc}"), debug, ctx)


@click.group(cls=PinGroup, table=COMMANDS, prepare=_prepare,
             context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes: " + ", ".join(f"{code} {what}" for code, what in exit_codes())
             + ".")
@click.version_option(__version__, prog_name="pin")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default=None,
              envvar="PIN_COLOR", show_envvar=True,
              help="Colour and tables: auto (on a terminal, unless NO_COLOR is set), always, "
                   "never.")
@click.option("--project", metavar="DIR", envvar="PIN_PROJECT", show_envvar=True,
              help="The folder of the project file (pin.toml, or pyproject.toml with "
                   "[tool.pin]); default: the nearest one from the working folder up.")
def main(debug: bool, color: str | None, project: str | None) -> None:
    """pin: lock a validated GPU stack (firmware, driver, ROCm/CUDA, frameworks) and keep
    hosts and images on it.

    \b
    Start here:
      pin resolve --gpu mi300x --framework pytorch==2.13.0   # write pin.lock
      pin lock show pin.lock
      pin matrix list                                       # what the matrix validates
      pin probe -o host.json                                # read this host
      pin freeze pin.lock --host host.json                  # pin the trial host's values
      pin verify pin.lock                                   # does this host still match?
      pin doctor collect_env.txt                            # diagnose a pasted dump
      pin lock check pin.lock                               # CI: same stack today?
      pin lock upgrade pin.lock --framework pytorch==2.12.0 # re-resolve, keep host values
    """
    if color is not None:  # read by every table and colour (render.terminal_style)
        import os

        os.environ["PIN_COLOR"] = color
        # click.echo strips ANSI escapes off a terminal unless the context says otherwise
        click.get_current_context().color = {"always": True, "never": False}.get(color)
