"""Every ``--format json`` output is one envelope (schemas/envelope.schema.json): for each
command that takes ``--format`` (found by walking the click tree, so a new command cannot
skip it), a run that gives a result and a run that fails both print a valid envelope whose
``ok`` and ``exit-code`` agree with the process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest

from pinning.cli import main
from tests.support.cli import json_result, pin
from tests.support.paths import DATA, HOSTS, ROOT

LOCK = str(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock")
H200 = HOSTS / "h200-cuda13"
PROBE = ["--root", str(H200 / "root"), "--replay", str(H200 / "commands.toml")]
MISSING = "/nonexistent/pin-envelope-test"
SCHEMA = json.loads((ROOT / "schemas" / "envelope.schema.json").read_text())
NEEDS_REGISTRY = None  # a result needs Docker and a registry: tests/integration covers it
NEEDS_MODEL = None  # a result needs a lock with a [model] and its files
NEEDS_TORCH = None  # a result needs a Python with torch (the training gate)
NEEDS_VENDOR = None  # a result needs a vendor mirror: tests/unit/matrix/test_update.py serves one

#: command -> (arguments that give a result, or NEEDS_REGISTRY; arguments that fail).
#: ``{tmp}`` is replaced by a fresh folder, ``{lock}`` by a copy of LOCK in it.
CASES: dict[str, tuple[list[str] | None, list[str]]] = {
    "resolve": (["--gpu", "h200", "--framework", "pytorch==2.13.0", "-o", "-"],
                ["--gpu", "h200", "--framework", "pytorch==0.0.1", "-o", "-"]),
    "config show": ([], ["no-such-command"]),
    "matrix list": ([], ["--matrix", MISSING]),
    "matrix gpus": ([], ["--matrix", MISSING]),
    "matrix show": (["mi300x"], ["no-such-release"]),
    "matrix update": (NEEDS_VENDOR, ["--from", MISSING, "--published", "2026-01-21",
                                     "--offline", "--dry-run"]),
    "lock show": ([LOCK], [MISSING]),
    "lock validate": ([LOCK], [LOCK, MISSING]),
    "lock diff": ([LOCK, LOCK], [LOCK, MISSING]),
    "lock check": ([LOCK], [MISSING]),
    # pin lock itself: a result needs a project file (tests/unit/cli/test_lock_project.py
    # checks its envelope); here, without one, exit 2.
    "lock": (None, ["--target", "current"]),
    "lock migrate": (["{lock}"], [MISSING]),
    # A result needs a lock with a [model]: tests/unit/cli/test_lock_model.py covers it.
    "lock model": (NEEDS_MODEL, [MISSING]),
    "lock upgrade": (["{lock}", "--dry-run"], [MISSING]),
    # A result needs a PEP 503 index: tests/unit/cli/test_lock_packages.py covers it.
    "lock packages": (None, [MISSING]),
    # A result needs a registry: tests/integration/test_walkthrough.py covers it.
    "login": (NEEDS_REGISTRY, ["127.0.0.1:9", "-u", "x", "--password-stdin"]),
    "probe": (PROBE, ["--host", MISSING]),
    # No /etc/pin/config.toml nor PIN_CONFIG here: nothing to check, exit 0. A missing
    # --config would make prolog/healthcheck drain this node through scontrol.
    # A result needs host snapshots: tests/unit/cli/test_fleet_cli.py covers it (schema-checked).
    "fleet verify": (None, [MISSING, "{tmp}"]),
    "lock push": (None, [LOCK, "--to", "http://127.0.0.1:9"]),
    "lock pull": (None, ["sha256:" + "0" * 64, "--from", "http://127.0.0.1:9", "-o",
                         "{tmp}/x.lock"]),
    "serve token create": (["--scope", "report", "--db", "sqlite:///{tmp}/pin.db"],
                           ["--scope", "report", "--db", "mysql://db.example/pin"]),
    "serve token list": (["--db", "sqlite:///{tmp}/pin.db"], ["--db", "mysql://db.example/pin"]),
    "serve token revoke": (None, ["0123456789abcdef", "--db", "sqlite:///{tmp}/pin.db"]),
    "slurm prolog": ([], ["--no-such-flag"]),
    "slurm healthcheck": ([], ["--no-such-flag"]),
    "slurm features": ([], ["--config", MISSING]),
    "verify": ([LOCK, *PROBE], [MISSING, *PROBE]),
    "freeze": (["{lock}", *PROBE], [MISSING, *PROBE]),
    "doctor": ([str(DATA / "dumps" / "pytorch-pytorch-37320.txt")], [MISSING]),
    "base build": (NEEDS_REGISTRY, ["--recipe", MISSING, "--registry", "http://127.0.0.1:9"]),
    "build": (NEEDS_REGISTRY, [MISSING, "--wheelhouse", "{tmp}", "--registry",
                               "http://127.0.0.1:9"]),
    "rebuild": (NEEDS_REGISTRY, [MISSING, "--wheelhouse", "{tmp}"]),
    "sign": (NEEDS_REGISTRY, ["127.0.0.1:9/pin/x@sha256:" + "0" * 64, "--key", MISSING]),
    "verify-image": (NEEDS_REGISTRY, ["127.0.0.1:9/pin/x@sha256:" + "0" * 64, "--key",
                                      MISSING]),
    "guard list": ([], ["--no-such-flag"]),
    "guard show": (["torch-device-rocm"], ["no-such-rule"]),
    "audit": ([str(ROOT / "examples" / "cuda-project" / "requirements.txt")], [MISSING]),
    # A result needs a Python with torch: tests/unit/accept/test_train.py covers it.
    "accept run": (NEEDS_TORCH, [MISSING]),
    # A result needs a streaming endpoint: tests/unit/accept/test_accept_run.py covers it.
    "accept reference": (NEEDS_TORCH, [MISSING, "-o", "{tmp}/ref.jsonl"]),
    "accept show": ([str(DATA / "acceptance" / "judged-c1.json")], [MISSING]),
    "accept compare": ([str(DATA / "acceptance" / "judged-c1.json"),
                        str(DATA / "acceptance" / "judged-c4.json")], [MISSING, MISSING]),
    "accept judge": ([str(ROOT / "pinning" / "accept" / "template.toml"), "--from",
                      str(DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json")],
                     [MISSING, "--from", MISSING]),
    # A result needs a project folder: tests/unit/cli/test_trial.py covers it (the record).
    "trial": (None, ["--from", "cost", "--until", "audit"]),
    "cost": ([str(DATA / "acceptance" / "judged-c1.json"), "--gpu", "H100", "--unbound-ok",
              "--prices",
              str(ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml")],
             [MISSING, "--prices", MISSING]),
}


def json_commands(group: click.Group = main, prefix: str = "") -> list[str]:
    """Every command path under ``group`` whose ``--format`` offers ``json``."""
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        path = f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            if any("--format" in p.opts for p in cmd.params):  # pin lock runs on its own
                found.append(path)
            found += json_commands(cmd, f"{path} ")
        elif any("--format" in p.opts and isinstance(p.type, click.Choice)
                 and "json" in p.type.choices for p in cmd.params):
            found.append(path)  # pin report's --format is html|md: no envelope
    return found


def test_every_json_command_has_cases() -> None:
    assert sorted(json_commands()) == sorted(CASES)


def _run(command: str, args: list[str], tmp_path: Path) -> Any:
    lock = tmp_path / "pin.lock"
    shutil.copyfile(LOCK, lock)
    args = [a.replace("{tmp}", str(tmp_path)).replace("{lock}", str(lock)) for a in args]
    r = pin(*command.split(), *args, "--format", "json")
    env = json.loads(r.stdout)
    jsonschema.validate(env, SCHEMA)
    assert env["command"] == command
    json_result(r)  # ok and exit-code agree with the process
    return r, env


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_result_is_enveloped(command: str, tmp_path: Path) -> None:
    args = CASES[command][0]
    if args is None:
        pytest.skip("a result needs Docker and a registry (tests/integration), a lock with "
                    "a [model] (tests/unit/cli/test_lock_model.py), a Python with torch "
                    "(tests/unit/accept/test_train.py) or a streaming endpoint "
                    "(tests/unit/accept/test_accept_run.py)")
    r, env = _run(command, args, tmp_path)
    assert env["result"] is not None, r.stderr
    assert env["ok"] or env["exit-code"] == 6  # doctor's dump has a problem: result, exit 6


@pytest.mark.parametrize("command", sorted(CASES))
def test_an_error_is_enveloped(command: str, tmp_path: Path) -> None:
    r, env = _run(command, CASES[command][1], tmp_path)
    assert r.returncode not in (0, 1), r.stderr  # a documented code, not a bug
    assert env["ok"] is False and env["error"] is not None
    assert env["error"]["code"] == r.returncode and env["error"]["message"]
    assert "error" in r.stderr.lower()  # the paragraph for people still goes to stderr


def test_drift_keeps_the_result(tmp_path: Path) -> None:
    other = str(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    r = pin("lock", "diff", LOCK, other, "--format", "json")
    assert r.returncode == 6 and json_result(r)["equal"] is False
    r = pin("lock", "validate", LOCK, MISSING, "--format", "json")
    result = json_result(r)
    assert r.returncode == 5 and [x["valid"] for x in result["locks"]] == [True, False]
    assert json.loads(r.stdout)["error"]["kind"] == "LockfileError"


def test_help_prints_no_envelope() -> None:
    r = pin("lock", "diff", "--format", "json", "--help")
    assert r.returncode == 0 and r.stdout.startswith("Usage:")
