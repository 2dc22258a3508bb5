"""The ``pin`` command line: parse flags, call the core, render, map ``PinError`` to exit codes.

This module holds the ``main`` group (error handling, ``--debug``, ``--version``) and
registers the command groups, one module each: :mod:`~pinning.cli.resolve`,
:mod:`~pinning.cli.matrix`, :mod:`~pinning.cli.lock`, :mod:`~pinning.cli.host` (probe, freeze,
verify), :mod:`~pinning.cli.doctor`, :mod:`~pinning.cli.image`, :mod:`~pinning.cli.sign`,
:mod:`~pinning.cli.guard` and :mod:`~pinning.cli.audit`; shared options live in
:mod:`~pinning.cli.options`, text renderers in :mod:`~pinning.cli.render`. Only the CLI
package prints or exits. Heavy imports happen inside commands so that ``pin --help`` stays
fast.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import Any, NoReturn

import click

from pinning import __version__
from pinning.errors import InternalError, PinError
from pinning.util.text import printable

__all__ = ["PinGroup", "main"]


def _fail(err: PinError, debug: bool) -> NoReturn:
    """Print ``err``'s paragraph (terminal controls from file content escaped) and exit with
    its code; the traceback first with ``--debug``.
    """
    if debug:
        click.echo(printable(traceback.format_exc()), err=True, nl=False)
    click.echo(f"pin: error: {printable(err.render())}", err=True)
    sys.exit(err.exit_code)


class PinGroup(click.Group):
    """Click group that turns ``PinError`` into one paragraph and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a ``PinError`` becomes its paragraph and exit code."""
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except PinError as err:
            _fail(err, debug)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
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
        except Exception as exc:  # a bug: exit 1 with a report hint
            _fail(InternalError(f"unexpected {type(exc).__name__}: {exc}"), debug)


@click.group(cls=PinGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pin")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def main(debug: bool) -> None:
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

    Exit codes: 0 ok, 1 bug, 2 usage, 3 matrix data invalid, 4 no validated combination,
    5 lockfile invalid, 6 drift, 7 probe failed, 8 build/registry, 9 signature, 10 guard.
    """


def _register_commands() -> None:
    """Add every command group's commands to ``main`` (each module exposes ``register``)."""
    from pinning.cli import audit, doctor, guard, host, image, lock, matrix, resolve, sign

    for module in (resolve, matrix, lock, host, doctor, image, sign, guard, audit):
        module.register(main)


_register_commands()
