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

    def run(self, argv: Sequence[str], *, timeout: float = 20.0,
            env: Mapping[str, str] | None = None) -> CommandResult | None:
        """Run ``argv`` (in ``env`` when given, else pin's environment); a missing tool
        gives ``None``, a timeout exit status 124.
        """
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
                env=dict(env) if env is not None else None,
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


#: Where :class:`ChrootRunner` looks a tool up inside the host's root, in order: the
#: system's folders, then ROCm's (``/opt/rocm/bin`` holds amd-smi and rocminfo).
CHROOT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
               "/opt/rocm/bin")


class ChrootRunner:
    """Runs the host's own tools (amd-smi, rocminfo, nvidia-smi, ldd) inside the host's root
    ``root`` with ``chroot(8)``: for a node agent (the Kubernetes DaemonSet) that mounts the
    host's ``/`` at ``root`` and reads it with ``--root``; the tool then sees the host's own
    libraries and, through the host's ``/dev`` and ``/sys``, its GPUs. NVIDIA's GPU Operator
    checks a host-installed driver the same way, ``chroot /host nvidia-smi``
    (NVIDIA/gpu-operator:cmd/nvidia-validator/main.go, VGPUManager.runValidation; read
    2026-12-01). Needs ``CAP_SYS_CHROOT`` (a privileged container, or root).

    A tool found in none of :data:`CHROOT_PATH` under ``root`` is not installed (``None``).
    Raises :class:`~pinning.errors.ProbeError` (exit 7) when ``chroot`` itself fails (no
    permission): a node agent without the capability must not read as a healthy node.
    """

    def __init__(self, root: Path, chroot: str = "chroot") -> None:
        self.root, self.chroot = root, chroot

    def find(self, tool: str) -> str | None:
        """The path of ``tool`` inside the root (``/opt/rocm/bin/amd-smi``), or ``None``."""
        # lexists, not access(): a host link such as /usr/bin/amd-smi -> /opt/rocm/bin/amd-smi
        # is absolute, so it resolves inside the chroot, not from pin's own root.
        if "/" in tool:
            return tool if os.path.lexists(self.root / tool.lstrip("/")) else None
        for folder in CHROOT_PATH:
            inside = f"{folder}/{tool}"
            if os.path.lexists(self.root / inside.lstrip("/")):
                return inside
        return None

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        """Run ``argv`` inside the root (``PATH`` set to :data:`CHROOT_PATH`); a tool the
        root lacks gives ``None``, a timeout exit status 124.
        """
        inside = self.find(argv[0])
        if inside is None:
            return None
        full = [self.chroot, str(self.root), inside, *argv[1:]]
        done = SystemRunner().run(full, timeout=timeout, env={"PATH": ":".join(CHROOT_PATH),
                                                             "LC_ALL": "C"})
        if done is None:
            return CommandResult(tuple(argv), 127, "", f"{self.chroot} is not installed")
        if done.returncode == 125 and done.stderr.startswith("chroot:"):
            # chroot itself failed (GNU coreutils: exit status 125 "if chroot itself fails",
            # https://www.gnu.org/software/coreutils/manual/html_node/chroot-invocation.html,
            # read 2026-12-01): no tool can run, so the host cannot be read as asked.
            raise ProbeError(f"--chroot: cannot change root to {self.root}: "
                             f"{done.stderr.strip()[:300]}",
                             hint="--chroot needs CAP_SYS_CHROOT (a privileged container, or "
                                  "root); grant it, or drop --chroot to read files only.")
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


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


def find_uv(command: str) -> str:
    """The ``uv`` executable ``command`` (``pin lock packages``) runs: the one the ``uv``
    package ships (pin's ``image`` extra), else ``uv`` on ``PATH``. Raises
    :class:`~pinning.errors.MissingExtra` (exit 15) naming the extra when there is none.
    """
    import shutil

    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError, OSError):
        found = shutil.which("uv")
        if found:
            return found
    from pinning.errors import MissingExtra

    raise MissingExtra(f"{command} resolves with uv, and no uv executable was found (pin's "
                       "optional part 'image' ships one).",
                       hint="Install it where pin lives: pip install 'pin[image]', or put "
                            "uv on PATH.")
