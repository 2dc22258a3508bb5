"""``pin slurm``: the Slurm prolog, health check and node-features helper.

The work is in :mod:`pinning.fleet.slurm` and :mod:`pinning.fleet.slurm_checks`; this module
reads the site configuration (:mod:`pinning.fleet.config`), sets ``SLURM_CONF`` for
scontrol, prints one line (or the JSON envelope) and exits with the outcome's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option, lock_target_option, path_given
from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.fleet.slurm_checks import Check, Outcome

__all__ = ["slurm"]

_CONFIG_HELP = ("pin's site configuration (TOML; default $PIN_CONFIG, else "
                "/etc/pin/config.toml; a missing default file means all defaults).")


def config_option(func: click.decorators.FC) -> click.decorators.FC:
    """``--config FILE`` (passed as ``config``)."""
    return click.option("--config", metavar="FILE", type=click.Path(), callback=path_given,
                        help=_CONFIG_HELP)(func)


@click.group()
def slurm() -> None:
    """Keep Slurm nodes on their lock: a Prolog, a HealthCheckProgram and a node-features
    helper (contrib/slurm/ has the scripts, a slurm.conf snippet and a README).
    """


def outcome_text(out: Outcome) -> str:
    """One log line for ``out`` (terminal controls escaped)."""
    locks = ", ".join(out.locks)
    resume = f"scontrol update NodeName={out.node} State=RESUME"
    done = {"drained": "; node drained", "already-drained": "; node already drained by pin",
            "left": "; node already out of service for another reason, left as it is",
            "resumed": "; node resumed (pin had drained it for this lock or a setup error)",
            "kept": ("; node stays drained: pin drained it for another lock or check, left "
                     f"for a person: fix it, then `{resume}`"),
            "drain-failed": f"; could not drain: {out.slurm_error}",
            "resume-failed": f"; could not resume: {out.slurm_error}",
            "state-unknown": (f"; could not read the node's state: {out.slurm_error}; "
                              f"{'not resumed' if out.result == 'match' else 'not drained'}"),
            "none": ""}[out.action]
    if out.result == "match":
        text = f"node {out.node} matches {out.matched}{done}"
    elif out.result == "drift":
        text = f"node {out.node} drifted from {locks}: {out.reason}{done}"
    elif out.result == "error":
        text = f"node {out.node}: check failed ({out.reason}){done}"
    else:
        asked = ("names no pin_ feature this node has a lock for" if out.ignored
                 else "asks for no pin_ feature")
        why = (f"the job {asked} and [fleet] default-lock is not set"
               if out.check == "prolog" else "[fleet] default-lock is not set")
        text = f"node {out.node}: nothing checked ({why})"
    return printable(f"pin slurm {out.check}: {text}", newlines=False)


def _show(out: Outcome, fmt: str, *, drained_by_slurm: bool = False) -> None:
    """Print ``out``; ``drained_by_slurm`` (a prolog that does not drain, on drift or error):
    pin's reason goes to stderr too, which slurmd logs.
    """
    if out.note:
        click.echo(printable(f"pin slurm {out.check}: {out.note}", newlines=False), err=True)
    if fmt == "json":
        emit(out.model_dump(mode="json", by_alias=True))
    else:
        click.echo(outcome_text(out))
    if drained_by_slurm and out.result in ("drift", "error"):
        click.echo(printable(f"pin slurm prolog: {out.reason} (not drained by pin: "
                             "[slurm] drain-in-prolog = false; Slurm drains with "
                             "\"Prolog error\")", newlines=False), err=True)


def _check(check: Check, config: str | None, fmt: str, target: str | None = None) -> None:
    """Run the prolog or the health check with the live runner and this machine's names."""
    import os
    import socket
    import time

    started = time.monotonic()  # the run's deadline counts from here

    from pinning.errors import PinError
    from pinning.fleet.config import SlurmConfig, read_config
    from pinning.fleet.slurm import Deadline, slurm_conf
    from pinning.fleet.slurm_checks import probe_node, run_check, setup_failed
    from pinning.matrix.load import load_matrix
    from pinning.util.proc import SystemRunner

    runner = SystemRunner()
    host = socket.gethostname()
    slurm_cfg = SlurmConfig()
    try:
        cfg, _ = read_config(config)
        slurm_cfg = cfg.slurm
        # scontrol reads SLURM_CONF; the health check is started without it.
        os.environ["SLURM_CONF"] = slurm_conf(slurm_cfg, os.environ)
        matrix = load_matrix(())
    except PinError as err:
        os.environ["SLURM_CONF"] = slurm_conf(slurm_cfg, os.environ)
        _show(setup_failed(check, slurm_cfg, os.environ, err, runner=runner, hostname=host,
                           deadline=Deadline(slurm_cfg.deadline_s, start=started)),
              fmt, drained_by_slurm=check == "prolog" and not slurm_cfg.drain_in_prolog)
        raise
    out, failed = run_check(check, cfg.slurm, cfg.fleet, os.environ, runner=runner,
                            probe=probe_node(cfg.fleet, matrix), matrix=matrix, hostname=host,
                            deadline=Deadline(cfg.slurm.deadline_s, start=started),
                            report=cfg.report, target=target)
    _show(out, fmt, drained_by_slurm=check == "prolog" and not cfg.slurm.drain_in_prolog)
    if failed is not None:
        raise failed


@slurm.command()
@config_option
@lock_target_option
@format_option
def prolog(config: str | None, target: str | None, fmt: str) -> None:
    """Slurm Prolog: check this node against the job's lock before the job starts.

    The job's feature (sbatch -C pin_<digest12>: the first 12 hex digits of a lock's content
    hash) picks among this node's locks, those in [fleet] locks; Slurm's scheduler places
    such a job only on nodes offering the feature (pin slurm features, helpers plugin). A
    pin_ feature this node has no lock for is ignored (a line on stderr says so): the job
    is then checked against [fleet] default-lock, the lock every node of this configuration
    must match, as a job naming none is; without it nothing is checked (exit 0). The locks
    are read and the host probed (never stressed) within [fleet] timeout-s; the whole run,
    scontrol included, within [slurm] deadline-s (default 50 s).

    Exit 0 when the node matches; no Slurm command is run then. On drift the node is drained
    with pin's reason (scontrol update NodeName=N State=DRAIN Reason="pin: pin_<digest12>
    <fact> <want>!=<have>") and the exit is 6: Slurm requeues the job held. A broken setup
    (configuration 2, lock 5, probe or timeout 7, scontrol 2) drains with "pin: error: ..."
    and exits with that code. A multi-target lock (pin lock's pin.lock) is checked against
    --target NAME (a single-target lock ignores it), else the target whose pin_<digest12>
    the job asked for (each target has its own), else the one whose GPU the node shows; a
    node no target matches drifts ("pin: pin_<digest12> target <GPUs>!=<node's GPUs>").
    When scontrol cannot show the node's state, pin drains
    nothing (the node may carry someone else's reason) and says so; the exit stays non-zero,
    so Slurm drains the node with "Prolog error".

    Slurm's prolog guide says prolog scripts "should not call Slurm commands (e.g. squeue,
    scontrol, sacctmgr, etc)" (https://slurm.schedmd.com/prolog_epilog.html, read
    2026-12-01). pin calls scontrol only on drift or error (show node, then update; each
    bounded by 10 s and the time left) so that the node's reason is pin's instead of
    "Prolog error". With [slurm] drain-in-prolog = false it calls none: it exits non-zero
    (Slurm drains with "Prolog error") and writes pin's reason to stderr (slurmd's log).

    \b
    slurm.conf (man slurm.conf, Slurm 22.05):
      Prolog=/usr/local/lib/pin/pin-prolog      # contrib/slurm/pin-prolog
      PrologFlags=Alloc
      PrologEpilogTimeout=60                    # above [slurm] deadline-s
    """
    _check("prolog", config, fmt, target)


@slurm.command()
@config_option
@lock_target_option
@format_option
def healthcheck(config: str | None, target: str | None, fmt: str) -> None:
    """Slurm HealthCheckProgram: check an idle or busy node against [fleet] default-lock.

    [fleet] default-lock is the lock every node using this configuration must match: keep
    one configuration per node class. On drift the node is drained with pin's reason
    ("pin: pin_<digest12> ..."); Slurm ignores the exit code, so pin drains by itself and
    exits 0. When the node matches again, it is resumed if pin drained it for this very lock
    (pin_<digest12> of [fleet] default-lock in the reason) or for a setup error ("pin: error:
    ..."), unless [slurm] resume = false. A drain of pin's for another lock (a job's, from
    the prolog) is left for a person: fix the node, then `scontrol update NodeName=N
    State=RESUME`. A node drained or down for another reason is never touched. A
    multi-target default-lock is checked as in the prolog (--target NAME, else by GPU). A
    broken setup drains with "pin: error: ..." and exits with its code (2, 5, 7); when scontrol
    cannot drain or resume, the output says "could not drain: ..." and the exit is 2; when
    it cannot show the node's state, nothing is drained or resumed ("could not read the
    node's state: ...") and the exit is 2. The whole run stays within [slurm] deadline-s
    (default 50 s, below the 60 s after which slurmd kills it).
    SLURM_CONF comes from [slurm] slurm-conf, else the environment, else
    /etc/slurm/slurm.conf (slurmd does not pass it to the health check).

    \b
    slurm.conf (man slurm.conf, Slurm 22.05):
      HealthCheckProgram=/usr/local/lib/pin/pin-healthcheck   # contrib/slurm/pin-healthcheck
      HealthCheckInterval=300
    """
    _check("healthcheck", config, fmt, target)


@slurm.command()
@config_option
@format_option
@click.argument("feature", required=False)
def features(config: str | None, fmt: str, feature: str | None) -> None:
    """Node-features helper: print the features this node offers, one per line.

    pin_<digest12> for every lock in [fleet] locks the node matches (a multi-target lock:
    each of its targets, by its own digest; model files are not hashed here), then
    pin_<gfx target> / pin_sm<compute capability> of its GPUs. Jobs then
    ask for a lock with sbatch -C pin_<digest12>. Slurm runs the helper with a FEATURE
    argument to switch a feature on at reboot: pin cannot change a node's stack, so that
    is refused (exit 2). Exit 5 for a bad lock, 7 when the probe fails.

    \b
    slurm.conf:   NodeFeaturesPlugins=node_features/helpers
    helpers.conf: Feature=pin_<digest12> Helper=/usr/local/lib/pin/pin-features
                  ExecTime=60               # above [fleet] timeout-s
    (man helpers.conf, https://slurm.schedmd.com/helpers.conf.html, read 2026-12-01)
    """
    from pinning.fleet.config import read_config
    from pinning.fleet.slurm_checks import node_features, probe_node
    from pinning.matrix.load import load_matrix

    if feature is not None:
        raise UsageError(
            f"pin cannot switch this node to {printable(feature, newlines=False)}: a lock's "
            "feature is on when the node's stack matches the lock, and pin changes no stack.",
            hint="Install the lock's stack on the node (or build its image); the feature "
                 "appears at the next query.")
    cfg, _ = read_config(config)
    matrix = load_matrix(())
    found = node_features(cfg.fleet, probe=probe_node(cfg.fleet, matrix), matrix=matrix)
    if fmt == "json":
        emit({"features": list(found),
              "locks": {f: str(path) for f, path in found.items() if path is not None}})
        return
    for name in found:
        click.echo(name)
