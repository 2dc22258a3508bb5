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
    timeout-s = 30                      # locks + probe bound, seconds

    [slurm]
    scontrol = "/usr/bin/scontrol"
    slurm-conf = "/etc/slurm/slurm.conf"
    deadline-s = 50                     # a whole prolog / health-check run, seconds

    [report]
    url = "https://pin.example.org"     # a pin service (pin serve): prolog / health check report
    token-file = "/etc/pin/token"       # a report token (pin serve token create), mode 600
    timeout-s = 5                       # bound on each report, seconds
    group = "mi300x-nodes"              # the host group whose lock the service assigns

``[fleet] default-lock`` is the lock every node that reads this file must match (the health
check's lock, and a job's that asks for none): keep one configuration per node class.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from pinning.errors import UsageError
from pinning.util.models import Strict
from pinning.util.text import printable

__all__ = ["DEFAULT_DEADLINE_S", "DEFAULT_PATH", "DEFAULT_REPORT_TIMEOUT_S", "DEFAULT_TIMEOUT_S",
           "ENV_VAR", "NODE_NAME_MAX", "ConfigError", "FleetConfig", "PinConfig", "ReportConfig",
           "SlurmConfig", "config_path", "key_name", "load_config", "node_name_problem",
           "read_config"]

#: Where pin looks for its site configuration when neither ``--config`` nor
#: ``$PIN_CONFIG`` names one.
DEFAULT_PATH = Path("/etc/pin/config.toml")

#: The environment variable naming the configuration file.
ENV_VAR = "PIN_CONFIG"

#: Default probe bound in seconds: below the 60 s after which slurmd kills a
#: ``HealthCheckProgram`` (``man slurm.conf``, Slurm 22.05, HealthCheckProgram;
#: https://slurm.schedmd.com/slurm.conf.html#OPT_HealthCheckProgram, read 2026-12-01).
DEFAULT_TIMEOUT_S = 30.0

#: Default bound on a whole prolog or health-check run in seconds (reading the locks, the
#: probe and every scontrol call): below the same 60 s health-check kill (source above);
#: keep it below ``PrologEpilogTimeout`` too. ``[fleet] timeout-s`` must be below it.
DEFAULT_DEADLINE_S = 50.0

#: Default bound on one report to a pin service, in seconds (a choice of pin's: the report is
#: best effort and must leave the prolog's deadline time for its real work).
DEFAULT_REPORT_TIMEOUT_S = 10.0

#: The longest node name pin passes to Slurm, in characters: a host name's bound (RFC 1123,
#: 2.1, "Host software MUST handle host names of up to 63 characters and SHOULD handle host
#: names of up to 255 characters").
NODE_NAME_MAX = 255

# Slurm's node names are host names: "Typically this would be the string that
# "/bin/hostname -s" returns. It may also be the fully qualified domain name [...] or any
# valid domain name associated with the host" (slurm.conf(5), NodeName,
# https://slurm.schedmd.com/slurm.conf.html#OPT_NodeName, and `man slurm.conf` of 22.05.8,
# read 2026-12-01): letters, digits, "-" and "." (RFC 952 / RFC 1123: a label starts with a
# letter or digit), and "_", which slurm.conf accepts too. "," and "[...]" are hostlist
# syntax ("alpha,beta,gamma", "linux[0-64,128]", same page) naming several nodes: refused,
# so one node's check can never drain others. One character class: linear.
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

_KEYS = ("[fleet] locks, default-lock, root, replay, site-packages, timeout-s; [slurm] scontrol, "
         "slurm-conf, node-name, resume, drain-in-prolog, deadline-s; [report] url, token-file, "
         "timeout-s, group")
_HINT = (f"Fix the named key in the configuration file (keys: {_KEYS}), or point --config / "
         "PIN_CONFIG at another file. See contrib/slurm/README.md.")
_MISSING_HINT = ("Create the file (contrib/slurm/config.toml.example is a start), or fix the path "
                 "given by --config or PIN_CONFIG.")


class ConfigError(UsageError):
    """A bad configuration file (exit 2). ``short``: the problem in a few words for a drain
    reason (``config [fleet] locks: not a folder``); the message has the file and all of it.
    """

    def __init__(self, message: str, *, short: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.short = short


class FleetConfig(Strict):
    """``[fleet]``: which locks this node is checked against and which host is probed.

    ``locks``: a folder whose ``*.lock`` files a job can ask for by feature
    ``pin_<first 12 hex of the lock's content hash>``. ``default_lock``: the lock a job that
    asks for none, and the health check, are checked against. ``root``: the host tree to probe
    (``/``: this machine, live); ``replay``: a ``commands.toml`` answering the tools of a
    recorded ``root`` (tests and demonstrations). ``site_packages``: the workload's Python
    site-packages as the host sees them (absolute paths; default: discovery, which on a live
    host is pin's own interpreter). ``timeout_s``: the bound in seconds on reading the
    locks and probing (below ``[slurm] deadline-s``).
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
    name). ``resume``: let the health check resume a node once it matches ``[fleet]
    default-lock`` again, when pin drained it for that very lock (its feature in the reason) or
    for a setup error (``pin: error: ...``); never a node drained for another reason or lock.
    ``drain_in_prolog``: the prolog drains with pin's reason itself (scontrol, against
    Slurm's advice for prologs; see contrib/slurm/README.md); ``False``: it only exits
    non-zero (Slurm drains with "Prolog error") and writes pin's reason to stderr.
    ``deadline_s``: the bound in seconds on a whole prolog or health-check run: reading the
    locks and probing (also within ``[fleet] timeout-s``, which must be smaller) and each
    scontrol call (at most 10 s each, and only what is left). Keep it below Slurm's 60 s
    health-check kill and below ``PrologEpilogTimeout``.
    """

    scontrol: str = Field(default="scontrol", min_length=1)
    slurm_conf: Path | None = None
    node_name: str | None = None
    resume: bool = Field(default=True, strict=True)
    drain_in_prolog: bool = Field(default=True, strict=True)
    deadline_s: float = Field(default=DEFAULT_DEADLINE_S, gt=0, le=3600, strict=True)

    @field_validator("node_name")
    @classmethod
    def _node_name(cls, value: str | None) -> str | None:
        why = node_name_problem(value) if value is not None else None
        if why:
            raise ValueError(f"{value!r} is not a Slurm node name: {why}")
        return value


def node_name_problem(name: str) -> str | None:
    """Why ``name`` is not a node name pin hands to Slurm (one clause: empty, too long,
    starts with ``-`` so scontrol would read it as an option, holds a blank or control
    character, or another character than letters, digits, ``.``, ``_`` and ``-`` or does
    not start with a letter or digit), else ``None``. Pure.
    """
    if not name:
        return "it is empty"
    if len(name) > NODE_NAME_MAX:
        return f"it is longer than {NODE_NAME_MAX} characters"
    if name.startswith("-"):
        return "it starts with '-', which scontrol would read as an option"
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        return "it holds a blank or a control character"
    if not _NODE_NAME.fullmatch(name):
        return ("a node name is a host name: letters, digits, '.', '_' and '-', starting "
                "with a letter or digit (',' and '[...]' name several nodes)")
    return None


class ReportConfig(Strict):
    """``[report]``: the pin service (``pin serve``) this node reports to.

    ``url``: the service's base URL (``None``: the Slurm prolog and health check report
    nowhere; ``pin verify`` reports only with ``--report-to``). ``token_file``: the file
    whose first line is the bearer token, used when neither ``--token-file``, ``$PIN_TOKEN``
    nor ``$PIN_TOKEN_FILE`` gives one. ``timeout_s``: the bound on each request in seconds
    (in the prolog also within what ``[slurm] deadline-s`` has left). ``group``: the host
    group sent with a Slurm report, whose assigned lock the service judges by when the host
    has none of its own.
    """

    url: str | None = Field(default=None, pattern=r"^https?://[^\s]{1,2000}$")
    token_file: Path | None = None
    timeout_s: float = Field(default=DEFAULT_REPORT_TIMEOUT_S, gt=0, le=600, strict=True)
    group: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,255}$")


class PinConfig(Strict):
    """The whole file: ``[fleet]``, ``[slurm]`` and ``[report]`` (later sections are added
    as fields). ``[serve]`` belongs to ``pin serve`` (pinning.serve.config checks it); it is
    kept here unread, so one site file can configure a node and the service.
    """

    fleet: FleetConfig = FleetConfig()
    slurm: SlurmConfig = SlurmConfig()
    report: ReportConfig = ReportConfig()
    serve: dict[str, Any] = Field(default_factory=dict)


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


def key_name(loc: tuple[int | str, ...]) -> str:
    """``[fleet] site-packages`` for a pydantic error location (``("fleet", "site-packages",
    0)`` gives ``[fleet] site-packages[0]``); a top-level name alone is ``[name]``. Pure.
    """
    names = [printable(str(p), newlines=False) for p in loc if not isinstance(p, int)]
    index = "".join(f"[{p}]" for p in loc[2:] if isinstance(p, int))
    if not names:
        return "(top level)"
    if len(names) == 1:
        return f"[{names[0]}]"
    return f"[{names[0]}] {'.'.join(names[1:])}{index}"


def _known(model: type[Strict]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _problem(error: Any) -> tuple[str, str]:
    """``(key, problem)`` of one pydantic error, the problem in pin's words."""
    loc = tuple(error["loc"])
    key = key_name(loc)
    if error["type"] == "extra_forbidden":
        sections: dict[str, type[Strict]] = {"fleet": FleetConfig, "slurm": SlurmConfig,
                                             "report": ReportConfig}
        if len(loc) == 1:
            known = [*sections, "serve"]
            what = f"unknown section [{loc[0]}]" if isinstance(error.get("input"), dict) \
                else f"unknown key {loc[0]} outside a section"
        else:
            known = _known(sections.get(str(loc[0]), PinConfig))
            what = f"unknown key {key}"
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        return key, what + (f"; did you mean {close[0]}?" if close else
                            f" (known: {', '.join(known)})")
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    return key, f"{key}: {msg}"


def load_config(path: Path, *, named: bool = True) -> PinConfig:
    """Read and validate the configuration at ``path``; relative paths in it are resolved
    against its folder (a bare ``scontrol`` name stays a name).

    A missing file gives the defaults when ``named`` is false (the default place). Raises
    :class:`ConfigError` (a :class:`~pinning.errors.UsageError`, exit 2) when a named file is
    missing or unreadable, is not TOML, or has an unknown key (the closest known one offered)
    or a bad value, naming the file and the key as ``[section] key``.
    """
    from pinning.util.files import read_toml

    label = f"pin configuration {path}"
    if not path.exists():
        if not named:
            return PinConfig()
        raise ConfigError(f"{label}: no such file.", short=f"config {path} missing",
                          hint=_MISSING_HINT)
    try:
        _, data = read_toml(path, UsageError, label=label,
                            unreadable_hint="Make the file readable, or fix the path given by "
                                            "--config or PIN_CONFIG.", syntax_hint=_HINT)
    except UsageError as exc:
        raise ConfigError(exc.message, short=f"config {path.name} unreadable or not TOML",
                          hint=exc.hint) from exc
    try:
        cfg = PinConfig.model_validate(data)
    except ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        problems = [_problem(e) for e in errors]
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        text = f"{label}: {'; '.join(p for _, p in problems[:5])}{more}"
        raise ConfigError(text if text.endswith((".", "?")) else text + ".",
                          short=f"config {problems[0][1]}", hint=_HINT) from exc
    if cfg.fleet.timeout_s >= cfg.slurm.deadline_s:
        raise ConfigError(
            f"{label}: [fleet] timeout-s ({cfg.fleet.timeout_s:g}) must be below [slurm] "
            f"deadline-s ({cfg.slurm.deadline_s:g}): the run needs time left to drain the "
            "node after a probe that timed out.",
            short="config [fleet] timeout-s not below [slurm] deadline-s",
            hint=f"Lower [fleet] timeout-s (default {DEFAULT_TIMEOUT_S:g}) or raise [slurm] "
                 f"deadline-s (default {DEFAULT_DEADLINE_S:g}; keep it below Slurm's 60 s "
                 "health-check kill and PrologEpilogTimeout), or point --config / PIN_CONFIG "
                 "at another file.")
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
    report = cfg.report.model_copy(update={"token_file": _resolve(base, cfg.report.token_file)})
    return cfg.model_copy(update={"fleet": fleet, "slurm": slurm, "report": report})


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
