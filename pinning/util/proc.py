"""The one subprocess seam: run a tool, or replay a recording of it.

Probes never call :mod:`subprocess` directly; they take a :class:`Runner`. The live
:class:`SystemRunner` runs the command with a timeout and keeps stderr; :class:`ReplayRunner`
answers from a recorded host (``commands.toml`` beside its root tree), so tests and
``pin probe --root DIR --replay FILE`` read real tool outputs without the hardware.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pinning.errors import ProbeError

MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # a recorded output is read this far at most


@dataclass(frozen=True)
class CommandResult:
    """What a command printed: ``argv``, exit status, stdout and stderr as text."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.returncode == 0

    def describe(self) -> str:
        """One line naming the command and why it failed (for a not-probed reason)."""
        tail = (self.stderr.strip().splitlines() or [""])[-1][:200]
        text = f"`{' '.join(self.argv)}` exited {self.returncode}"
        return f"{text}: {tail}" if tail else text


class Runner(Protocol):
    """Runs a command on the host being probed.

    ``run`` returns ``None`` when the tool is not installed (or not recorded), otherwise a
    :class:`CommandResult`, whatever its exit status. It never raises for a failing tool.
    """

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        """Run ``argv``; ``timeout`` in seconds."""
        ...


class SystemRunner:
    """Runs commands on this machine (``PATH`` lookup, timeout, text output)."""

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        """Run ``argv``; a missing tool gives ``None``, a timeout exit status 124."""
        exe = shutil.which(argv[0])
        if exe is None:
            return None
        try:
            done = subprocess.run(
                [exe, *argv[1:]],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return CommandResult(tuple(argv), 124, "", f"timed out after {timeout:g} s")
        except OSError as exc:
            return CommandResult(tuple(argv), 126, "", str(exc))
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


class NoRunner:
    """Runs nothing: every tool is reported as not recorded (a bare recorded root)."""

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        """Always ``None``."""
        return None


class ReplayRunner:
    """Answers commands from a recording.

    The recording is a TOML file with ``[[command]]`` tables: ``argv`` (list of strings),
    ``stdout`` (a file path relative to the TOML file), optional ``stderr`` text and
    ``returncode`` (default 0). A command that is not recorded is reported as not installed.
    An ``[environment]`` table records the host's environment variables (``environment``).

    Raises :class:`~pinning.errors.ProbeError` (exit 7) when the recording is unreadable.
    """

    def __init__(self, path: Path) -> None:
        from pinning.util.files import read_toml

        self.path = path
        hint = ("Fix the recording: each [[command]] has `argv` (list of strings), `stdout` (a "
                "file beside it) and optional `returncode`; [environment] maps names to "
                "strings. See tests/data/hosts/*/commands.toml.")
        _, data = read_toml(path, ProbeError, label=f"Command recording {path}",
                            syntax_hint=hint, unreadable_hint=hint)
        self._table: dict[tuple[str, ...], CommandResult] = {}
        env = data.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ProbeError(f"{path}: [environment] must map names to strings.", hint=hint)
        self.environment: dict[str, str] = dict(env)
        commands = data.get("command", [])
        if not isinstance(commands, list) or not all(isinstance(c, dict) for c in commands):
            raise ProbeError(f"{path}: `command` must be an array of tables ([[command]]).",
                             hint=hint)
        for i, entry in enumerate(commands):
            where = f"{path}: command[{i}]"
            argv = entry.get("argv")
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise ProbeError(f"{where}: `argv` must be a non-empty list of strings.",
                                 hint=hint)
            out_name = entry.get("stdout")
            stdout = ""
            if out_name is not None:
                out_path = path.parent / str(out_name)
                try:
                    # Checked on the open descriptor: a FIFO cannot block the replay.
                    fd = os.open(out_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                    with os.fdopen(fd, "rb") as fh:
                        if not stat.S_ISREG(os.fstat(fd).st_mode):
                            raise OSError(f"{out_path} is not a regular file")
                        stdout = fh.read(MAX_OUTPUT_BYTES).decode("utf-8", "replace")
                except OSError as exc:
                    raise ProbeError(f"{where}: cannot read stdout file {out_path}: {exc}",
                                     hint=hint) from exc
            code = entry.get("returncode", 0)
            if not isinstance(code, int):
                raise ProbeError(f"{where}: `returncode` must be an integer.", hint=hint)
            self._table[tuple(argv)] = CommandResult(
                tuple(argv), code, stdout, str(entry.get("stderr", ""))
            )

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        """The recorded result for exactly ``argv``, or ``None``."""
        return self._table.get(tuple(argv))


KEPT_UV_VARS = frozenset({
    "UV_CACHE_DIR", "UV_NO_CACHE", "UV_NATIVE_TLS", "UV_SYSTEM_CERTS", "UV_OFFLINE",
    "UV_HTTP_TIMEOUT", "UV_HTTP_RETRIES", "UV_REQUEST_TIMEOUT", "UV_INSECURE_HOST",
    "UV_CONCURRENT_DOWNLOADS", "UV_KEYRING_PROVIDER",
})
"""The ``UV_*`` variables a resolution pin runs keeps: transport only (cache, certificates,
timeouts, retries, offline, keyring). Every other ``UV_*`` variable (an index, a constraint
file, a Python choice) would change what is resolved, so it is dropped (names as in uv's
``docs/reference/environment.md``, uv 0.13.9)."""


def uv_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment ``uv pip compile`` runs in for ``pin audit --requirement`` and ``pin
    lock packages``: ``environ`` without the ``UV_*`` variables that change what is resolved
    (:data:`KEPT_UV_VARS` are kept), plus ``UV_NO_CONFIG=1`` (no ``uv.toml`` or
    ``pyproject.toml`` settings), ``UV_NO_PROGRESS=1`` and ``NO_COLOR=1``.
    """
    env = {k: v for k, v in environ.items() if not k.startswith("UV_") or k in KEPT_UV_VARS}
    env.update(UV_NO_CONFIG="1", UV_NO_PROGRESS="1", NO_COLOR="1")
    return env
