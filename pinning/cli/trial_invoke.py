"""How ``pin trial`` runs pin's own commands and reads this host.

:func:`invoke` runs a command line of ``pin`` in-process (the root command's
``main(args, standalone_mode=False)``) in the project folder, with ``--project`` set to it,
capturing standard output (the JSON envelope of ``--format json``) and keeping the tail of
standard error (the error paragraph) while still passing standard error through (progress).
:func:`host_gpus` and :func:`engine_problem` are the seams that read this machine: a test
replaces :func:`host_gpus` (a GPU host cannot exist here).
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

__all__ = ["Invoked", "engine_problem", "host_gpus", "invoke"]


@dataclass
class Invoked:
    """One command run: ``argv`` (without ``pin``), its ``exit_code``, the parsed JSON
    ``envelope`` when it printed one, and ``error``, the message it failed with.
    """

    argv: list[str]
    exit_code: int
    envelope: dict[str, Any] | None = None
    error: str | None = None
    stdout: str = field(default="", repr=False)

    def as_json(self) -> dict[str, Any]:
        """``{"argv", "exit-code"}`` as the record keeps it."""
        return {"argv": self.argv, "exit-code": self.exit_code}


class _Tee(io.StringIO):
    """A text stream that passes what it is given on to ``through`` (progress) and keeps
    it too; the command's error paragraph is only kept (the trial prints it in its
    stage's lines).
    """

    def __init__(self, through: Any) -> None:
        super().__init__()
        self.through = through

    def write(self, s: str) -> int:
        """Write ``s`` through and keep it."""
        if s.startswith("pin: error: "):
            return super().write(s)
        with contextlib.suppress(OSError, ValueError):
            self.through.write(s)
            self.through.flush()
        return super().write(s)


def _envelope(text: str) -> dict[str, Any] | None:
    """The envelope printed last in ``text`` (``None`` when there is none)."""
    start = text.rfind('\n{\n  "pin"')
    start = 0 if start < 0 and text.startswith('{\n  "pin"') else start
    if start < 0:
        return None
    from pinning.errors import PinError
    from pinning.util.jsonread import load_json

    try:
        doc = load_json(text[start:], PinError, label="envelope")
    except PinError:
        return None
    return doc if isinstance(doc, dict) else None


def _error_of(envelope: dict[str, Any] | None, stderr: str) -> str | None:
    """The error message of a failed command: the envelope's, else the ``pin: error:``
    paragraph of standard error, else its last line.
    """
    if envelope is not None and isinstance(envelope.get("error"), dict):
        return str(envelope["error"].get("message") or "") or None
    marker = stderr.rfind("pin: error: ")
    if marker >= 0:
        return stderr[marker + len("pin: error: "):].strip() or None
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def invoke(argv: list[str], folder: Path) -> Invoked:
    """Run ``pin --project FOLDER ARGV...`` in-process with ``folder`` as the working
    folder; never raises for the command's own failure (its exit code and error are in
    the answer).
    """
    from pinning.cli import main

    out = io.StringIO()
    err = _Tee(sys.stderr)
    code = 0
    with contextlib.chdir(folder), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            answer = main.main(["--project", ".", *argv], prog_name="pin",
                               standalone_mode=False)
            code = answer if isinstance(answer, int) else 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except click.exceptions.Exit as done:
            code = done.exit_code
        except click.ClickException as exc:
            code = exc.exit_code
            click.echo(f"pin: error: {exc.format_message()}", err=True)
        except click.exceptions.Abort:
            code = 1
            click.echo("pin: error: aborted", err=True)
    envelope = _envelope(out.getvalue())
    error = _error_of(envelope, err.getvalue()) if code else None
    return Invoked(argv=argv, exit_code=code, envelope=envelope, error=error,
                   stdout=out.getvalue())


def host_gpus() -> tuple[set[str], str]:
    """The GPUs of this host as lower-case matrix ids (from the PCI devices in ``/sys`` and the
    matrix's PCI IDs) and how to say them: ``"h100 x8"``, or ``"none found"``. A GPU the
    matrix does not know by its PCI ID is named by vendor and device (``0x10de:0x2330``)
    and matches no target. Raises nothing.
    """
    from pinning.matrix.load import load_matrix
    from pinning.probe.gpus import pci_display_devices
    from pinning.probe.root import HostRoot

    try:
        devices = pci_display_devices(HostRoot(Path("/")))
    except OSError:
        devices = []
    if not devices:
        return set(), "none found"
    matrix = load_matrix()
    names: list[str] = []
    for _bus, vendor, device in devices:
        known = matrix.gpu_by_pci(device)
        names.append(known.id.lower() if known is not None else f"{vendor}:{device}")
    shown = ", ".join(f"{n} x{names.count(n)}" for n in sorted(set(names)))
    return {n for n in names if ":" not in n}, shown


def engine_problem() -> str | None:
    """Why no container engine can be used here (``None`` when one answers a ping): the
    engine ``DOCKER_HOST`` names, else the local socket (a Unix socket that does not
    exist is not asked). Raises nothing.
    """
    import os

    from pinning.errors import PinError

    url = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if url.startswith("unix://") and not Path(url.removeprefix("unix://")).exists():
        return "no container engine reachable (DOCKER_HOST)"  # no socket: nothing to ask
    try:
        from pinning.image.engine import engine_client

        engine_client(None).close()
    except ModuleNotFoundError as exc:
        return f"pin's image extra is not installed ({exc.name})"
    except PinError:
        return "no container engine reachable (DOCKER_HOST)"
    return None
