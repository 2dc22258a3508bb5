"""A node name never reaches scontrol as an option: names are checked against Slurm's rules
before any Slurm command (exit 2, naming the name and where it came from), and the argv
pin builds ends scontrol's options with ``--`` (or carries the name in ``NodeName=``)."""

from __future__ import annotations

import getopt
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import ValidationError

from pinning.errors import UsageError
from pinning.fleet.config import ConfigError, FleetConfig, SlurmConfig, load_config
from pinning.fleet.config import node_name_problem as problem
from pinning.fleet.slurm import Node, drain_argv, node_name, resume_argv, show_argv
from pinning.fleet.slurm_checks import run_check, setup_failed
from pinning.lockfile.models import Model
from pinning.matrix.load import load_matrix
from pinning.probe.models import HostFacts
from pinning.util.proc import CommandResult
from tests.support.cli import pin

# scontrol's own options: getopt_long(argc, argv, "adhM:FoQu:vV", long_options) in
# SchedMD/slurm src/scontrol/scontrol.c (read 2026-12-01).
SHORT = "adhM:FoQu:vV"
LONG = ["autocomplete=", "all", "cluster=", "clusters=", "details", "federation", "future",
        "help", "hide", "json", "local", "oneliner", "quiet", "sibling", "uid=", "usage",
        "verbose", "version", "yaml"]

BAD = {
    "": "empty",
    "-h": "starts with '-'",
    "--help": "starts with '-'",
    "-o": "starts with '-'",
    "gpu 01": "blank or a control character",
    "gpu01\n": "blank or a control character",
    "gpu\x0001": "blank or a control character",
    "gpu[01-04]": "name several nodes",
    "gpu01,gpu02": "name several nodes",
    ".gpu01": "starting with a letter or digit",
    "gpü01": "letters, digits",
    "x" * 256: "longer than 255",
}
GOOD = ["gpu01", "gpu-01.cluster.example.org", "node_7", "1node", "N", "x" * 255]


class Recorder:
    """A Runner that records every argv; scontrol answers an idle node."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        self.calls.append(list(argv))
        return CommandResult(tuple(argv), 0, f"NodeName={argv[-1]} State=IDLE\n")


def scontrol_reads(argv: list[str]) -> tuple[list[str], list[str]]:
    """The options and operands scontrol's GNU getopt_long sees in ``argv``."""
    opts, operands = getopt.gnu_getopt(argv[1:], SHORT, LONG)
    return [o for o, _ in opts], operands


@pytest.mark.parametrize(("name", "why"), sorted(BAD.items()))
def test_names_slurm_cannot_take_are_named_with_the_reason(name: str, why: str) -> None:
    assert why in (problem(name) or "")
    with pytest.raises(UsageError) as err:
        node_name(SlurmConfig(), {"SLURMD_NODENAME": name}, name)  # "": the host name
    assert err.value.exit_code == 2
    assert f"Node name {name!r} (from " in err.value.message
    assert "no Slurm command was run" in err.value.message and "[slurm] node-name" in \
        err.value.hint


@pytest.mark.parametrize("name", GOOD)
def test_host_names_are_node_names(name: str) -> None:
    assert problem(name) is None
    assert node_name(SlurmConfig(node_name=name), {}, "h") == name


def test_the_message_says_where_the_name_came_from() -> None:
    with pytest.raises(UsageError, match=r"'-h' \(from \$SLURMD_NODENAME\)"):
        node_name(SlurmConfig(), {"SLURMD_NODENAME": "-h"}, "host")
    with pytest.raises(UsageError, match=r"'-bad' \(from the host name\)"):
        node_name(SlurmConfig(), {}, "-bad.example.org")


def test_a_config_naming_an_option_is_refused_on_load(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="starts with '-'"):
        SlurmConfig(node_name="--help")
    config = tmp_path / "config.toml"
    config.write_text('[slurm]\nnode-name = "-h"\n')
    with pytest.raises(ConfigError) as err:
        load_config(config)
    assert err.value.exit_code == 2
    assert "[slurm] node-name" in err.value.message and "'-h' is not a Slurm node name" in \
        err.value.message


@pytest.mark.parametrize("name", ["-h", "--help", "-M", "--uid=0"])
def test_a_node_with_an_option_for_a_name_runs_no_scontrol(name: str) -> None:
    rec = Recorder()
    with pytest.raises(UsageError, match="is not a Slurm node name"):
        Node(rec, "scontrol", name).drain("pin: a 1!=2")
    assert rec.calls == []


@pytest.mark.parametrize("name", ["-h", "--help"])
def test_runs_with_an_option_for_a_name_run_no_slurm_command(name: str) -> None:
    rec = Recorder()

    def never(_lock: Path | None, _model: Model | None) -> HostFacts:
        raise AssertionError("probed")
    with pytest.raises(UsageError, match="is not a Slurm node name"):
        run_check("healthcheck", SlurmConfig(), FleetConfig(), {"SLURMD_NODENAME": name},
                  runner=rec, probe=never, matrix=load_matrix(), hostname="h")
    with pytest.raises(UsageError, match="is not a Slurm node name"):
        setup_failed("healthcheck", SlurmConfig(), {"SLURMD_NODENAME": name},
                     UsageError("broken"), runner=rec, hostname="h")
    assert rec.calls == []


@pytest.mark.parametrize("name", ["gpu01", "-h", "--help", "-M", "--uid=0"])
def test_the_argv_never_lets_a_name_be_read_as_an_option(name: str) -> None:
    # Even a name that slipped past the check: `--` ends scontrol's options, and in the
    # updates the name is inside a NodeName= word.
    for argv in (show_argv("scontrol", name), drain_argv("scontrol", name, "pin: a 1!=2"),
                 resume_argv("scontrol", name)):
        options, operands = scontrol_reads(argv)
        assert options in (["-o"], [])
        assert name in operands or f"NodeName={name}" in operands
    assert show_argv("scontrol", name) == ["scontrol", "-o", "--", "show", "node", name]
    # Without `--` GNU getopt would have taken the name as scontrol's own option.
    if name == "-M":  # an option wanting an argument: scontrol would fail outright
        with pytest.raises(getopt.GetoptError):
            scontrol_reads(["scontrol", "-o", "show", "node", name])
    elif name != "gpu01":
        options, _ = scontrol_reads(["scontrol", "-o", "show", "node", name])
        assert options[1:] == [name.split("=")[0]]


def test_the_node_calls_scontrol_with_the_name_after_the_options() -> None:
    rec = Recorder()
    assert Node(rec, "/usr/bin/scontrol", "gpu01").drain("pin: a 1!=2") == "drained"
    assert rec.calls == [
        ["/usr/bin/scontrol", "-o", "--", "show", "node", "gpu01"],
        ["/usr/bin/scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=pin: a 1!=2"],
    ]


@pytest.mark.parametrize("check", ["prolog", "healthcheck"])
def test_pin_slurm_refuses_an_option_for_a_node_name(tmp_path: Path, check: str) -> None:
    import os

    log = tmp_path / "scontrol.log"
    fake = tmp_path / "scontrol"
    fake.write_text(f"#!/bin/bash\nprintf '%s|' \"$@\" >> {log}\nexit 0\n")
    fake.chmod(0o755)
    config = tmp_path / "config.toml"
    config.write_text(f'[slurm]\nscontrol = "{fake}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "PIN_CONFIG"))}
    done = pin("slurm", check, "--config", str(config), env={**env, "SLURMD_NODENAME": "-h"})
    assert done.returncode == 2, done.stderr
    assert "Node name '-h' (from $SLURMD_NODENAME) is not a Slurm node name: it starts " \
           "with '-'" in done.stderr
    assert "Traceback" not in done.stderr and not log.exists()
