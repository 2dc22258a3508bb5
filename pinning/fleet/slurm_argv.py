"""The node's Slurm name and the scontrol command lines pin runs for it.

The name comes from pin's configuration, slurmd or the host name, and is checked before any
Slurm command runs (:func:`check_node_name`, Slurm's rules in
:func:`~pinning.fleet.config.node_name_problem`). Every argv here keeps the name out of
scontrol's option parsing: scontrol's ``main`` parses its options with GNU
``getopt_long(argc, argv, "adhM:FoQu:vV", ...)`` (SchedMD/slurm ``src/scontrol/scontrol.c``,
read 2026-12-01), which permutes arguments, so an operand such as ``-h`` or ``--help``
anywhere on the line would be read as an option; ``--`` ends the options (getopt(3)), and a
``NodeName=<name>`` word starts with ``N``. All pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.fleet.config import SlurmConfig

__all__ = ["DEFAULT_SLURM_CONF", "check_node_name", "drain_argv", "node_name", "resume_argv",
           "show_argv", "slurm_conf"]

#: Where Slurm reads its configuration when ``SLURM_CONF`` is unset (Debian's build).
DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"


def node_name(slurm: SlurmConfig, environ: Mapping[str, str], hostname: str) -> str:
    """The node's Slurm name: ``[slurm] node-name``, else ``$SLURMD_NODENAME``, else the
    short ``hostname``; checked by :func:`check_node_name` (exit 2) before any Slurm command.
    """
    source = ("[slurm] node-name" if slurm.node_name else "$SLURMD_NODENAME"
              if environ.get("SLURMD_NODENAME") else "the host name")
    name = slurm.node_name or environ.get("SLURMD_NODENAME") or hostname.split(".")[0]
    return check_node_name(name, source)


def check_node_name(name: str, source: str = "") -> str:
    """``name`` when Slurm can take it as one node's name
    (:func:`~pinning.fleet.config.node_name_problem`: a host name, never ``-`` first);
    raises :class:`~pinning.errors.UsageError` (exit 2) naming it and ``source``.
    """
    from pinning.fleet.config import node_name_problem  # pydantic: only when a name is checked

    why = node_name_problem(name)
    if why:
        raise UsageError(f"Node name {name!r}{f' (from {source})' if source else ''} is not "
                         f"a Slurm node name: {why}; no Slurm command was run.",
                         hint="Set [slurm] node-name in pin's configuration to the node's "
                              "NodeName in slurm.conf.")
    return name


def slurm_conf(slurm: SlurmConfig, environ: Mapping[str, str]) -> str:
    """The ``SLURM_CONF`` scontrol gets: ``[slurm] slurm-conf``, else ``$SLURM_CONF`` (slurmd
    gives the prolog its own), else ``/etc/slurm/slurm.conf``. Pure.
    """
    if slurm.slurm_conf is not None:
        return str(slurm.slurm_conf)
    return environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF


def show_argv(scontrol: str, node: str) -> list[str]:
    """``scontrol -o -- show node <node>`` as argv: ``--`` right after the options, so the
    node name is never read as one (whatever it is; :func:`check_node_name` refuses a name
    starting with ``-`` before this runs anyway).
    """
    return [scontrol, "-o", "--", "show", "node", node]


def drain_argv(scontrol: str, node: str, reason: str) -> list[str]:
    """``scontrol update NodeName=<node> State=DRAIN Reason=<reason>`` as argv (no shell;
    ``key=value`` words, never read as options).
    """
    return [scontrol, "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(scontrol: str, node: str) -> list[str]:
    """``scontrol update NodeName=<node> State=RESUME`` as argv (``key=value`` words)."""
    return [scontrol, "update", f"NodeName={node}", "State=RESUME"]
