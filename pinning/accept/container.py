"""Run an acceptance trainer or import check inside the lock's image (Docker SDK).

``python -m pinning.accept.container --spec SPEC.json -- ARGV...`` is a shim: it runs
``ARGV`` in the image that ``SPEC.json`` (a :class:`ContainerSpec`) names, with the network
off, the spec's folders bind-mounted at the same paths, the caller's uid:gid, every
``PIN_*`` variable of its own environment plus the ones the spec names, and the GPUs of the
spec's vendor (:func:`~pinning.accept.engine.device_options`). It streams the container's
standard output to its own standard output and standard error to standard error, exits
with the container's exit status, and removes the container at the end, also on SIGTERM or
SIGINT (then it exits with 128 + the signal number). A shim killed with SIGKILL cannot
clean up: the next shim with the same container name removes the leftover before it
starts, and :func:`~pinning.accept.engine.remove_leftovers` removes it for good. Because
the shim is an ordinary process, the gates run it as they run a trainer on the host:
:func:`wrap_argv` turns a trainer's argv into the shim's.

When the shim itself fails it prints one paragraph on standard error and exits with the
:class:`~pinning.errors.PinError` exit status (2 for a bad spec or a missing image, 8 when
the engine fails); when the engine cannot start ``ARGV[0]`` it exits 127 (not found) or 126
(cannot be invoked), the statuses ``docker run`` uses for the same failures
(https://docs.docker.com/engine/containers/run/#exit-status, read on a date not recorded).
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, model_validator

from pinning.accept.engine import (
    ACCEPT_LABEL,
    Vendor,
    connect,
    device_options,
    engine_error,
    missing_image,
    remove_leftovers,
)
from pinning.errors import PinError, UsageError
from pinning.util.files import atomic_write_bytes
from pinning.util.models import EnvName, OneLine, Strict, validation_summary
from pinning.util.text import printable

__all__ = ["ContainerSpec", "Mount", "main", "new_name", "read_spec", "wrap_argv",
           "write_spec"]

# A container name: Docker's own rule ([a-zA-Z0-9][a-zA-Z0-9_.-]+, moby/moby
# daemon/names/names.go, read on a date not recorded), at most 128 characters here.
_NAME_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{1,127}$"
# A bound on how long one wait call blocks (seconds) before it is asked again, so that a
# long run never meets the client's read timeout.
_WAIT_SLICE_S = 60


def _absolute(value: str) -> str:
    """``value`` unchanged when it is an absolute, normalised POSIX path other than ``/``."""
    if not value.startswith("/") or os.path.normpath(value) != value or value == "/":
        raise ValueError("must be an absolute, normalised path other than / "
                         "(no trailing slash, no . or .. parts)")
    return value


AbsPath = Annotated[OneLine, AfterValidator(_absolute)]


class Mount(Strict):
    """One host folder or file bind-mounted at the same ``path`` inside the container;
    ``read-only`` (default false) mounts it read-only.
    """

    path: AbsPath
    read_only: bool = False


class ContainerSpec(Strict):
    """What the shim runs: read from JSON with kebab-case keys.

    ``image``: the image reference or ID, present in the engine (never pulled);
    ``name``: the container name (``pin-accept-<hex>``, see :func:`new_name`);
    ``vendor``: ``amd``, ``nvidia`` or ``cpu`` (which GPUs to pass,
    :func:`~pinning.accept.engine.device_options`);
    ``mounts``: bind mounts (distinct paths); ``workdir``: the working directory inside
    (absolute; ``None`` keeps the image's); ``env``: names of variables passed from the
    shim's environment besides every ``PIN_*`` one (a name that is not set is skipped);
    ``engine``: the Docker Engine URL (``None``: ``DOCKER_HOST``, else the local socket).
    """

    image: Annotated[OneLine, Field(min_length=1)]
    name: Annotated[str, Field(pattern=_NAME_PATTERN)]
    vendor: Vendor
    mounts: list[Mount] = Field(default_factory=list)
    workdir: AbsPath | None = None
    env: list[EnvName] = Field(default_factory=list)
    engine: OneLine | None = None

    @model_validator(mode="after")
    def _distinct_mounts(self) -> ContainerSpec:
        """Reject a path mounted twice (the engine would refuse the container)."""
        paths = [m.path for m in self.mounts]
        twice = sorted({p for p in paths if paths.count(p) > 1})
        if twice:
            raise ValueError(f"mount path {twice[0]} is listed twice")
        return self


def new_name() -> str:
    """A fresh container name, ``pin-accept-`` and 16 random lower-case hex digits."""
    return f"pin-accept-{secrets.token_hex(8)}"


def write_spec(spec: ContainerSpec, path: Path) -> None:
    """Write ``spec`` to ``path`` as JSON (kebab-case keys), atomically."""
    atomic_write_bytes(path, (spec.model_dump_json(by_alias=True, indent=1) + "\n").encode())


def read_spec(path: Path) -> ContainerSpec:
    """Read a :class:`ContainerSpec` from the JSON file ``path``.

    Raises :class:`~pinning.errors.UsageError` (exit 2) naming the file and the field when
    it is unreadable, not JSON or not a valid spec.
    """
    from pinning.util.jsonread import load_json

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"Container spec {path}: cannot read it ({exc.strerror or exc}).",
                         hint="Pass the spec file pin wrote (--spec FILE).") from exc
    data = load_json(raw, UsageError, label=f"Container spec {path}",
                     hint="Pass the spec file pin wrote (--spec FILE).")
    try:
        return ContainerSpec.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"Container spec {path}: {validation_summary(exc, data)}.",
                         hint="Write the spec with pinning.accept.container.write_spec."
                         ) from exc


def wrap_argv(spec_path: Path, argv: list[str]) -> list[str]:
    """The shim's argv that runs ``argv`` in the container ``spec_path`` describes:
    ``[sys.executable, "-m", "pinning.accept.container", "--spec", str(spec_path), "--",
    *argv]``.
    """
    return [sys.executable, "-m", "pinning.accept.container", "--spec", str(spec_path), "--",
            *argv]


class _Signalled(BaseException):
    """SIGTERM or SIGINT arrived; carries the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_signal(signum: int, frame: FrameType | None) -> None:
    raise _Signalled(signum)


def _environment(spec: ContainerSpec, environ: dict[str, str]) -> dict[str, str]:
    """Every ``PIN_*`` variable of ``environ`` and the spec's named ones that are set; and,
    unless the spec passes ``HOME`` on, ``HOME`` set to the first writable mount: the
    process runs as the caller's uid, which the image's ``/etc/passwd`` may not know, and
    torch, Triton and Hugging Face write their caches under ``HOME``.
    """
    names = [n for n in environ if n.startswith("PIN_")] + list(spec.env)
    out = {n: environ[n] for n in dict.fromkeys(names) if n in environ}
    writable = next((m.path for m in spec.mounts if not m.read_only), None)
    if "HOME" not in out and writable is not None:
        out["HOME"] = writable
    return out


def _pump(chunks: Iterator[bytes], out: IO[bytes]) -> None:
    """Copy a log stream to ``out`` until it ends (or the engine goes away)."""
    try:
        for chunk in chunks:
            out.write(chunk)
            out.flush()
    except Exception:  # the container was removed under us (a signal): nothing to copy
        return


def _create(client: Any, spec: ContainerSpec, argv: list[str]) -> Any:
    """Create (not start) the container; a leftover of the same name is removed first."""
    import docker.errors

    from pinning.image.engine import engine_errors

    create: dict[str, Any] = dict(
        image=spec.image, command=argv, name=spec.name, detach=True, network_mode="none",
        volumes={m.path: {"bind": m.path, "mode": "ro" if m.read_only else "rw"}
                 for m in spec.mounts},
        environment=_environment(spec, dict(os.environ)),
        user=f"{os.getuid()}:{os.getgid()}", labels={ACCEPT_LABEL: "1"},
        stdin_open=False, tty=False, **device_options(spec.vendor))
    if spec.workdir is not None:
        create["working_dir"] = spec.workdir
    remove_leftovers(client, [spec.name])
    try:
        return client.containers.create(**create)
    except docker.errors.ImageNotFound as exc:
        raise missing_image(spec.image) from exc
    except engine_errors() as exc:
        hint = (" (is the NVIDIA Container Toolkit installed for this engine?)"
                if spec.vendor == "nvidia" and "device driver" in str(exc) else "")
        raise engine_error(f"cannot create the container{hint}", exc) from exc


def _start_and_stream(container: Any, spec: ContainerSpec, argv: list[str]) -> int:
    """Start the container, copy its output until it exits, return its exit status."""
    import docker.errors

    from pinning.image.engine import engine_errors

    try:
        container.start()
    except docker.errors.APIError as exc:
        text = str(exc)
        sys.stderr.write(f"pin accept container: cannot start "
                         f"{printable(argv[0], newlines=False)} in {spec.image}: "
                         f"{printable(text, newlines=False)}\n")
        return 127 if "not found" in text or "no such file" in text else 126
    pumps = [threading.Thread(target=_pump, daemon=True, args=(
        container.logs(stdout=which == "out", stderr=which == "err", stream=True,
                       follow=True), out))
        for which, out in (("out", sys.stdout.buffer), ("err", sys.stderr.buffer))]
    for t in pumps:
        t.start()
    for t in pumps:
        t.join()
    while True:
        try:
            status = container.wait(timeout=_WAIT_SLICE_S)
            return int(status.get("StatusCode", 1))
        except engine_errors() as exc:
            if "timed out" not in str(exc).lower():
                raise engine_error("lost the container", exc) from exc


def _run(spec: ContainerSpec, argv: list[str]) -> int:
    """Run ``argv`` in the container and return its exit status (see the module)."""
    import docker.errors

    from pinning.image.engine import engine_errors

    for m in spec.mounts:
        if not os.path.exists(m.path):
            raise UsageError(f"Container spec: mount {m.path} does not exist on this host.",
                             hint="Create the folder before running the gate.")
    client = connect(spec.engine)
    container = None
    try:
        container = _create(client, spec, argv)
        return _start_and_stream(container, spec, argv)
    finally:
        # Ignore further signals while the container goes away.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        quiet: tuple[type[BaseException], ...] = (PinError, *engine_errors())
        try:
            if container is not None:
                container.remove(force=True)
            else:
                remove_leftovers(client, [spec.name])
        except docker.errors.NotFound:
            pass
        except quiet as exc:
            sys.stderr.write(f"pin accept container: could not remove container "
                             f"{spec.name}: {printable(str(exc), newlines=False)}\n")


_USAGE = "python -m pinning.accept.container --spec SPEC.json -- ARGV..."


def _parse(args: list[str]) -> tuple[Path, list[str]]:
    """``(spec path, argv)`` from the shim's arguments; :class:`UsageError` otherwise."""
    hint = f"Usage: {_USAGE}"
    if "--" not in args:
        raise UsageError("The command to run is missing: put it after `--`.", hint=hint)
    cut = args.index("--")
    opts, argv = args[:cut], args[cut + 1:]
    if not argv:
        raise UsageError("The command after `--` is empty.", hint=hint)
    spec: str | None = None
    i = 0
    while i < len(opts):
        opt = opts[i]
        if opt == "--spec" and i + 1 < len(opts):
            value, i = opts[i + 1], i + 2
        elif opt.startswith("--spec="):
            value, i = opt.removeprefix("--spec="), i + 1
        elif opt == "--spec":
            raise UsageError("--spec needs a file.", hint=hint)
        else:
            raise UsageError(f"Unknown argument {printable(opt, newlines=False)!s}.",
                             hint=hint)
        if spec is not None:
            raise UsageError("--spec is given twice.", hint=hint)
        spec = value
    if not spec:
        raise UsageError("--spec SPEC.json is required.", hint=hint)
    return Path(spec), argv


def main(args: list[str] | None = None) -> int:
    """The shim's entry point; returns the exit status (the container's, 128 + signal on
    SIGTERM/SIGINT, or a :class:`~pinning.errors.PinError` exit code after printing it).
    """
    old = {s: signal.signal(s, _raise_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        spec_path, argv = _parse(sys.argv[1:] if args is None else args)
        return _run(read_spec(spec_path), argv)
    except _Signalled as sig:
        return 128 + sig.signum
    except PinError as exc:
        sys.stderr.write(f"pin accept container: {exc.render()}\n")
        return exc.exit_code
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


if __name__ == "__main__":
    sys.exit(main())
