"""Every kind of lock pin writes, made once for the lock-kind x command table
(``test_lock_kinds.py``), as a user makes them: ``pin resolve`` (plain and with a local
``--model`` folder), ``pin freeze`` from the recorded MI300X host, ``pin lock packages``
against a PEP 503 index on 127.0.0.1 (real uv), ``pin lock upgrade`` of the frozen lock,
``pin lock model``, the shipped examples in ``lockfiles/``, and the lock ``pin build``
leaves: the image can only be built with Docker, so the ``build`` kind is the packages lock
with ``[image]`` recorded through :func:`~pinning.lockfile.io.amend`, as
:func:`pinning.image.record.record` records it after a push.

:class:`Pin` runs pin in-process (click's ``CliRunner``) with the user's caches pointed into
a temp folder and no proxy for loopback.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner, Result

from pinning.cli import main
from pinning.lockfile.io import amend, read_lock, write_lock
from pinning.lockfile.models import Image, Pinned
from tests.support.hosts import MI300X
from tests.support.paths import ROOT
from tests.support.pyindex import serve_index

SHIPPED = sorted((ROOT / "lockfiles").glob("*.lock"))
KINDS = ("resolve", "resolve-model", "freeze", "lock-packages", "build", "upgrade",
         "lock-model", *(f"shipped:{p.name}" for p in SHIPPED))
RESOLVE = ("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1")
HOST = ("--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml"))
# The index of test_lock_packages.py: the shipped MI300X lock's PyTorch 2.13.0 build.
GRAPH: dict[str, list[str]] = {"torch==2.13.0+rocm7.2": ["filelock>=3"], "filelock==3.0": []}
TAGS = {"torch==2.13.0+rocm7.2": ["cp312-cp312-manylinux_2_28_x86_64", "py3-none-any"]}
TARGET = ("--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28")


class Pin:
    """``pin ARGS`` in-process with caches under ``tmp`` and no proxy for loopback."""

    def __init__(self, tmp: Path) -> None:
        self.env: dict[str, str | None] = {
            k: None for k in os.environ
            if "proxy" in k.lower() or k.startswith(("PIN_", "SLURM", "HF_"))}
        self.env.update(PIN_CACHE_DIR=str(tmp / "pin-cache"), UV_CACHE_DIR=str(tmp / "uv"),
                        HF_HUB_CACHE=str(tmp / "no-hub-cache"), NO_PROXY="127.0.0.1",
                        PIN_KEY_PASSWORD="lock-kinds")

    def __call__(self, *args: str | Path, env: dict[str, str] | None = None) -> Result:
        runner = CliRunner(env={**self.env, **(env or {})})
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=True)


def crashed(done: Result) -> str | None:
    """Why ``done`` is a crash (exit 1, an exception click did not turn into an exit code,
    or a traceback printed), else ``None``.
    """
    text = done.stdout + done.stderr
    if done.exit_code == 1 or "Traceback" in text or "This is a bug in pin" in text:
        return f"exit {done.exit_code}: {text[-1500:]}"
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        return f"{type(done.exception).__name__}: {done.exception}"
    return None


def made(done: Result, what: str) -> None:
    """Fail the fixture when pin could not make a lock kind."""
    assert done.exit_code == 0, f"{what}: exit {done.exit_code}\n{done.output}"


@contextmanager
def package_index(tmp: Path) -> Iterator[str]:
    """The simple index URL of :data:`GRAPH` served on 127.0.0.1 while the block runs."""
    with serve_index(tmp / "index", GRAPH, tags=TAGS) as (url, _):
        yield url


def model_folder(tmp: Path) -> Path:
    """A small local model folder (a config and a weights file)."""
    folder = tmp / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_bytes(b'{"hidden_size": 384}\n')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    return folder


def built(packages_lock: Path, dest: Path) -> None:
    """``packages_lock`` as ``pin build`` leaves it: the base and the pushed image recorded
    (the digests are sha256 of named bytes, the registry one nothing listens on).
    """
    def digest(name: str) -> str:
        return "sha256:" + hashlib.sha256(name.encode()).hexdigest()

    image = Image(base=Pinned(value="127.0.0.1:9/pin/base", origin="user"),
                  base_digest=Pinned(value=digest("base"), origin="user"),
                  digest=Pinned(value=digest("image"), origin="derived"),
                  ref=Pinned(value=f"127.0.0.1:9/team/trial@{digest('image')}",
                             origin="derived"),
                  epoch=1_700_000_000)
    lock = read_lock(packages_lock)
    write_lock(amend(lock, image=image, wheels=list(lock.wheels or [])), dest)


def make_kinds(pin: Pin, tmp: Path, index: str) -> dict[str, Path]:
    """Every kind of :data:`KINDS` written under ``tmp``; kind -> lock path."""
    out = {k: tmp / f"{k.replace(':', '-')}.lock" for k in KINDS if not k.startswith("shipped:")}
    ckpt = model_folder(tmp)
    made(pin(*RESOLVE, "-o", out["resolve"]), "resolve")
    made(pin(*RESOLVE, "--model", ckpt, "-o", out["resolve-model"]), "resolve --model")
    made(pin("freeze", out["resolve"], *HOST, "-o", out["freeze"]), "freeze")
    shutil.copyfile(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock", out["lock-packages"])
    made(pin("lock", "packages", out["lock-packages"], "--index", index, *TARGET),
         "lock packages")
    built(out["lock-packages"], out["build"])
    made(pin("lock", "upgrade", out["freeze"], "--framework", "pytorch==2.8",
             "-o", out["upgrade"]), "lock upgrade")
    bare = tmp / "no-model-files.lock"
    made(pin(*RESOLVE, "--model", ckpt, "--no-model-files", "-o", bare), "resolve")
    made(pin("lock", "model", bare, "-o", out["lock-model"]), "lock model")
    return out | {f"shipped:{p.name}": p for p in SHIPPED}


def copy_in(lock: Path, folder: Path, name: str = "pin.lock") -> Path:
    """A copy of ``lock`` in ``folder`` (commands that write a lock never touch the kinds)."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / name
    shutil.copyfile(lock, dest)
    return dest


def args_of(values: Sequence[str | Path]) -> list[str]:
    """``values`` as command-line words."""
    return [str(v) for v in values]
