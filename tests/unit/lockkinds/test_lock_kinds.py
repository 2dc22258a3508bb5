"""Issue 30 §1: no lock pin writes makes pin exit 1. Every kind of lock
(:data:`~tests.unit.lockkinds.kinds.KINDS`: resolve, resolve --model, freeze, lock packages,
build, upgrade, lock model, the shipped examples) goes through every command that reads a
lock (:data:`COMMANDS`). A command that needs what is not here (a registry, a Docker engine)
may exit with its documented code (2, 4, 5, 6, 8, 12, 13...); exit 1, an exception click did
not map, or a traceback on stderr fails. ``pin lock push`` goes to a real ``pin serve`` and
must be stored (exit 0). Reproduces the crash of ``pin lock check`` / ``pin lock upgrade`` on
a lock from ``pin lock packages`` or ``pin build`` (``KeyError: 'frozen'``).
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT
from tests.support.serve import admin_token, serving
from tests.unit.lockkinds.kinds import (
    HOST,
    KINDS,
    TARGET,
    Pin,
    copy_in,
    crashed,
    made,
    make_kinds,
    package_index,
)

PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
VLLM = DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json"


@dataclass
class Kit:
    """What the commands need beside a lock: the locks by kind, the package index, a signing
    key, an imports-only gates file, the recorded host's snapshot folder and a pin service
    with a publish token.
    """

    pin: Pin
    locks: dict[str, Path]
    index: str
    key: Path
    gates: Path
    snapshots: Path
    service: str
    token: str


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    tmp = tmp_path_factory.mktemp("lock-kinds")
    pin = Pin(tmp)
    gates = tmp / "gates.toml"
    gates.write_text('[import]\nmodules = ["json"]\nnumeric-check = false\n')
    made(pin("keygen", "-o", tmp / "k"), "keygen")
    snapshots = tmp / "snapshots"
    snapshots.mkdir()
    made(pin("probe", *HOST, "-o", snapshots / "mi300x.json"), "probe")
    db = f"sqlite:///{tmp / 'pin.db'}"
    with package_index(tmp) as index, serving(db) as (url, _, _proc):
        locks = make_kinds(pin, tmp, index)
        yield Kit(pin, locks, index, tmp / "k.key", gates, snapshots, url,
                  admin_token(db, "publish"))


def _judged(kit: Kit, lock: Path, out: Path) -> Path:
    """An acceptance result judged from the real vLLM file against ``lock``."""
    result = out / "judged.json"
    done = kit.pin("accept", "judge", TEMPLATE, "--from", VLLM, "--lock", lock, "-o", result)
    assert crashed(done) is None, crashed(done)
    return result


def _slurm(kit: Kit, lock: Path, out: Path, command: str) -> list[str | Path]:
    """``pin slurm COMMAND`` on a site whose only (and default) lock is ``lock``."""
    fake = out / "bin" / "scontrol"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\n[ "$3" = show ] && echo "NodeName=gpu01 State=IDLE"\nexit 0\n')
    fake.chmod(0o755)
    site = copy_in(lock, out / "locks", "site.lock")
    config = out / "config.toml"
    config.write_text(f'[fleet]\nlocks = "{site.parent}"\ndefault-lock = "{site}"\n'
                      f'root = "{HOST[1]}"\nreplay = "{HOST[3]}"\n'
                      f'[slurm]\nscontrol = "{fake}"\nnode-name = "gpu01"\n')
    return ["slurm", command, "--config", config]


def _hash(lock: Path) -> str:
    """The lock's content hash (what ``pin lock pull`` fetches by)."""
    return str(tomllib.loads(lock.read_text())["content-hash"])


# ``--engine`` and ``--registry`` at a closed port. (Not a missing unix socket: the Docker SDK
# leaves that socket unclosed when it cannot connect, a ResourceWarning.)
NO_DOCKER = ("--engine", "tcp://127.0.0.1:9", "--registry", "http://127.0.0.1:9")


Args = list[str | Path]
# A base and an image reference by digest on a port nothing listens on.
BASE = "127.0.0.1:9/pin/base@sha256:" + "0" * 64
IMAGE = "127.0.0.1:9/team/trial@sha256:" + "0" * 64
#: command -> (kit, the lock's copy, a scratch folder) -> the pin invocations to run.
COMMANDS: dict[str, Callable[[Kit, Path, Path], list[Args]]] = {
    "lock validate": lambda k, lock, o: [["lock", "validate", lock]],
    "lock show": lambda k, lock, o: [["lock", "show", lock], ["lock", "show", lock, "--full"],
                                     ["lock", "show", lock, "--format", "json"]],
    "lock diff": lambda k, lock, o: [["lock", "diff", k.locks["freeze"], lock],
                                     ["lock", "diff", lock, k.locks["build"]]],
    "lock check": lambda k, lock, o: [["lock", "check", lock],
                                      ["lock", "check", lock, "--format", "json"]],
    "lock upgrade": lambda k, lock, o: [
        ["lock", "upgrade", lock, "-o", o / "same.lock"],
        ["lock", "upgrade", lock, "--framework", "pytorch==2.8", "-o", o / "other.lock"]],
    "lock model": lambda k, lock, o: [["lock", "model", lock, "-o", o / "model.lock"]],
    "lock packages": lambda k, lock, o: [["lock", "packages", lock, "--index", k.index,
                                          *TARGET, "-o", o / "packages.lock"]],
    "lock push": lambda k, lock, o: [
        ["lock", "push", lock, "--to", k.service],
        ["lock", "pull", _hash(lock), "--from", k.service, "-o", o / "pulled.lock"]],
    "freeze": lambda k, lock, o: [["freeze", lock, *HOST, "-o", o / "frozen.lock"]],
    "probe --lock": lambda k, lock, o: [["probe", *HOST, "--lock", lock, "-o", o / "p.json"]],
    "verify": lambda k, lock, o: [["verify", lock, *HOST],
                                  ["verify", lock, *HOST, "--format", "json"]],
    "build": lambda k, lock, o: [
        ["build", lock, *NO_DOCKER, "--wheelhouse", o, "-o", o / "built.lock", "--quiet"],
        ["build", lock, *NO_DOCKER, "--base", BASE, "--wheelhouse", o, "--quiet",
         "-o", o / "built.lock"]],
    "rebuild": lambda k, lock, o: [["rebuild", lock, *NO_DOCKER, "--wheelhouse", o,
                                    "--quiet"]],
    "sign": lambda k, lock, o: [["sign", "--key", k.key, "--lock", lock],
                                ["sign", IMAGE, "--key", k.key, "--lock", lock]],
    "verify-image": lambda k, lock, o: [
        ["verify-image", "--key", k.key.with_suffix(".pub"), "--lock", lock],
        ["verify-image", IMAGE, "--key", k.key.with_suffix(".pub"), "--lock", lock,
         "--require-acceptance"]],
    "accept run": lambda k, lock, o: [["accept", "run", k.gates, "--gate", "import",
                                       "--python", sys.executable, "--lock", lock,
                                       "-o", o / "run.json"]],
    "accept judge": lambda k, lock, o: [["accept", "judge", TEMPLATE, "--from", VLLM,
                                         "--lock", lock, "-o", o / "judge.json"]],
    "cost": lambda k, lock, o: [["cost", _judged(k, lock, o), "--lock", lock,
                                 "--prices", PRICES]],
    "report": lambda k, lock, o: [["report", "--lock", lock, "--accept", _judged(k, lock, o),
                                   "--format", "md", "-o", o / "report.md"]],
    "fleet verify": lambda k, lock, o: [["fleet", "verify", lock, k.snapshots, "--quiet"]],
    "slurm healthcheck": lambda k, lock, o: [_slurm(k, lock, o, "healthcheck")],
    "slurm prolog": lambda k, lock, o: [_slurm(k, lock, o, "prolog")],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", KINDS)
def test_no_lock_pin_writes_makes_a_command_exit_1(kit: Kit, kind: str, command: str,
                                                    tmp_path: Path) -> None:
    lock = copy_in(kit.locks[kind], tmp_path / "in")
    for args in COMMANDS[command](kit, lock, tmp_path):
        env = {"PIN_TOKEN": kit.token} if command == "lock push" else None
        done = kit.pin(*args, env=env)
        assert crashed(done) is None, f"pin {' '.join(map(str, args))}: {crashed(done)}"
        if command == "lock push":
            assert done.exit_code == 0, done.output  # the service stores every lock pin wrote


def test_the_kinds_are_what_they_say(kit: Kit) -> None:
    """The fixture made each kind: frozen values, packages and wheels, an image, a model."""
    data = {k: tomllib.loads(p.read_text()) for k, p in kit.locks.items()}
    assert "frozen" not in data["resolve"] and "packages" not in data["resolve"]
    assert data["resolve-model"]["model"]["files"] and "frozen" in data["freeze"]
    assert data["lock-packages"]["packages"]["torch"] == "2.13.0+rocm7.2"
    assert "frozen" not in data["lock-packages"] and data["lock-packages"]["wheels"]
    assert data["build"]["image"]["digest"]["value"].startswith("sha256:")
    assert data["upgrade"]["frameworks"][0]["version"]["value"] != \
        data["freeze"]["frameworks"][0]["version"]["value"]
    assert data["lock-model"]["model"]["files"]


@pytest.mark.parametrize("kind", ["lock-packages", "build"])
def test_upgrade_keeps_resolved_packages_only_with_their_stack(kit: Kit, kind: str,
                                                               tmp_path: Path) -> None:
    """A lock from ``pin lock packages`` (or ``pin build``, no host frozen in): ``lock check``
    finds it current and an unchanged upgrade keeps its ``[packages]`` and wheels; another
    PyTorch drops them with why, instead of keeping torch 2.13.0 beside PyTorch 2.12.0.
    """
    lock = kit.locks[kind]
    done = kit.pin("lock", "check", lock)
    assert done.exit_code == 0 and "up to date" in done.stdout, done.output
    same = tmp_path / "same.lock"
    assert kit.pin("lock", "upgrade", lock, "-o", same).exit_code == 0
    old, new = tomllib.loads(lock.read_text()), tomllib.loads(same.read_text())
    assert (new["packages"], new["wheels"], new["image"]) == \
        (old["packages"], old["wheels"], old["image"])
    other = tmp_path / "other.lock"
    done = kit.pin("lock", "upgrade", lock, "--framework", "pytorch==2.12.0", "-o", other)
    assert done.exit_code == 0, done.output
    assert "Dropped frozen packages: resolved with its wheels for the old stack; run pin " \
           "lock packages again" in done.stdout
    assert ("Dropped frozen image" in done.stdout) is (kind == "build")
    data = tomllib.loads(other.read_text())
    assert "packages" not in data and "wheels" not in data and "frozen" not in data
    assert data["python"] == old["python"]  # what to run pin lock packages with again
