"""pin's site configuration file: where a node's locks are, what host to probe, how to reach
Slurm.

The file is TOML (read with :mod:`tomllib`), found at ``--config FILE``, else ``$PIN_CONFIG``,
else :data:`DEFAULT_PATH`. A missing file at the default place means "all defaults"; a
missing file named by ``--config`` or ``$PIN_CONFIG`` is an error. Unknown keys are refused,
with the file and key named (exit 2). Relative paths are resolved against the folder of the
file. Example::

    [fleet]
    locks = "/etc/pin/locks"            # folder of *.lock files (pin_<digest12> features)
    default-lock = "/etc/pin/locks/site.lock"
    timeout-s = 30                      # probe bound, seconds

    [slurm]
    scontrol = "/usr/bin/scontrol"
    slurm-conf = "/etc/slurm/slurm.conf"
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from pinning.errors import UsageError
from pinning.util.models import Strict, validation_summary

__all__ = ["DEFAULT_PATH", "ENV_VAR", "FleetConfig", "PinConfig", "SlurmConfig",
           "config_path", "load_config", "read_config"]

#: Where pin looks for its site configuration when neither ``--config`` nor
#: ``$PIN_CONFIG`` names one.
DEFAULT_PATH = Path("/etc/pin/config.toml")

#: The environment variable naming the configuration file.
ENV_VAR = "PIN_CONFIG"

#: Default probe bound in seconds: below the 60 s after which slurmd kills a
#: ``HealthCheckProgram`` (``man slurm.conf``, Slurm 22.05, HealthCheckProgram;
#: https://slurm.schedmd.com/slurm.conf.html#OPT_HealthCheckProgram, read 2026-12).
DEFAULT_TIMEOUT_S = 30.0

_HINT = ("Fix the named key in the configuration file (keys: [fleet] locks, default-lock, root, "
         "replay, site-packages, timeout-s; [slurm] scontrol, slurm-conf, node-name, resume), "
         "or point --config / PIN_CONFIG at another file. See contrib/slurm/README.md.")


class FleetConfig(Strict):
    """``[fleet]``: which locks this node is checked against and which host is probed.

    ``locks``: a folder whose ``*.lock`` files a job can ask for by feature
    ``pin_<first 12 hex of the lock's content hash>``. ``default_lock``: the lock a job that
    asks for none, and the health check, are checked against. ``root``: the host tree to probe
    (``/``: this machine, live); ``replay``: a ``commands.toml`` answering the tools of a
    recorded ``root`` (tests and demonstrations). ``site_packages``: the workload's Python
    site-packages as the host sees them (absolute paths; default: discovery, which on a live
    host is pin's own interpreter). ``timeout_s``: the probe's bound in seconds.
    """

    locks: Path | None = None
    default_lock: Path | None = None
    root: Path = Path("/")
    replay: Path | None = None
    site_packages: tuple[str, ...] = ()
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=3600, strict=True)

    @field_validator("site_packages")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for d in value:
            if not d.startswith("/"):
                raise ValueError(f"{d!r}: give the path as the host sees it, from /")
        return value


class SlurmConfig(Strict):
    """``[slurm]``: how pin reaches Slurm from a node.

    ``scontrol``: the program (a bare name is looked up on ``PATH``). ``slurm_conf``: set as
    ``SLURM_CONF`` for scontrol (``None``: ``$SLURM_CONF``, which slurmd gives the prolog but
    not the health check, else ``/etc/slurm/slurm.conf``). ``node_name``: this node's Slurm
    name (``None``: ``$SLURMD_NODENAME``, which slurmd sets for both, else the short host
    name). ``resume``: let the health check resume a node that pin itself drained once it
    matches again (never a node drained for another reason).
    """

    scontrol: str = Field(default="scontrol", min_length=1)
    slurm_conf: Path | None = None
    node_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,255}$")
    resume: bool = Field(default=True, strict=True)


class PinConfig(Strict):
    """The whole file: ``[fleet]`` and ``[slurm]`` (later sections are added as fields)."""

    fleet: FleetConfig = FleetConfig()
    slurm: SlurmConfig = SlurmConfig()


def config_path(option: str | None, environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The configuration file to read and whether it was named (``--config`` ``option``,
    else ``$PIN_CONFIG``) rather than the default place. Pure.
    """
    if option:
        return Path(option), True
    if environ.get(ENV_VAR):
        return Path(environ[ENV_VAR]), True
    return DEFAULT_PATH, False


def _resolve(base: Path, value: Path | None) -> Path | None:
    """``value`` made absolute against ``base`` (the config file's folder)."""
    if value is None or value.is_absolute():
        return value
    return base / value


def load_config(path: Path, *, named: bool = True) -> PinConfig:
    """Read and validate the configuration at ``path``; relative paths in it are resolved
    against its folder (a bare ``scontrol`` name stays a name).

    A missing file gives the defaults when ``named`` is false (the default place). Raises
    :class:`~pinning.errors.UsageError` (exit 2) when a named file is missing or unreadable,
    is not TOML, or has an unknown key or a bad value (the key and file named).
    """
    from pinning.util.files import read_toml

    if not named and not path.exists():
        return PinConfig()
    label = f"pin configuration {path}"
    _, data = read_toml(path, UsageError, label=label, unreadable_hint=_HINT,
                        syntax_hint=_HINT)
    try:
        cfg = PinConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{label}: {validation_summary(exc, data)}.", hint=_HINT) from exc
    base = path.resolve().parent
    fleet = cfg.fleet.model_copy(update={
        "locks": _resolve(base, cfg.fleet.locks),
        "default_lock": _resolve(base, cfg.fleet.default_lock),
        "root": _resolve(base, cfg.fleet.root),
        "replay": _resolve(base, cfg.fleet.replay),
    })
    scontrol = cfg.slurm.scontrol
    if "/" in scontrol and not scontrol.startswith("/"):
        scontrol = str(base / scontrol)
    slurm = cfg.slurm.model_copy(update={
        "scontrol": scontrol, "slurm_conf": _resolve(base, cfg.slurm.slurm_conf)})
    return cfg.model_copy(update={"fleet": fleet, "slurm": slurm})


def read_config(option: str | None,
                environ: Mapping[str, str] | None = None) -> tuple[PinConfig, Path | None]:
    """The configuration ``--config option`` / ``$PIN_CONFIG`` / the default place names, and
    the file it came from (``None``: no file at the default place, all defaults). See
    :func:`config_path` and :func:`load_config`; same errors.
    """
    path, named = config_path(option, os.environ if environ is None else environ)
    if not named and not path.exists():
        return PinConfig(), None
    return load_config(path, named=named), path
