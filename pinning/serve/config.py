"""pin serve's settings: the ``[serve]`` table of pin's site configuration file.

The file is the one :mod:`pinning.fleet.config` reads (``--config FILE``, else
``$PIN_CONFIG``, else ``/etc/pin/config.toml`` when present); only its ``[serve]`` table is
read here, other tables are left to their readers. Relative paths are resolved against the
file's folder. Example::

    [serve]
    db = "postgresql://pin@db.example:5432/pin"   # default: SQLite in pin's data folder
    host = "0.0.0.0"                              # default 127.0.0.1
    port = 8470
    reads = "token"                               # "open" (default) or "token"
    max-body-bytes = 4194304                      # request bodies, bytes (default 4 MiB)
    acceptance-keys = ["keys/team.pub"]           # PEM public keys of signed results
    header-timeout = 10        # seconds to receive a request's headers (then 408, closed)
    body-timeout = 60          # seconds to receive its body once the headers are in
    keep-alive = 5             # seconds an idle connection is kept between requests
    max-connections = 1024     # open connections; past it the oldest idle one is closed

The last four bound slow and idle clients (:mod:`pinning.serve.transport`); the defaults
are pin's own choice.

Flags given on the command line (``--db``, ``--host``, ``--port``) win over the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from pinning.errors import UsageError
from pinning.util.models import Strict

__all__ = ["DEFAULT_HOST", "DEFAULT_MAX_BODY", "DEFAULT_PORT", "ServeConfig",
           "load_serve_config", "read_serve_config"]

#: The port ``pin serve`` listens on by default: pin's own choice.
DEFAULT_PORT = 8470
#: The address ``pin serve`` binds by default: loopback only.
DEFAULT_HOST = "127.0.0.1"
#: Request bodies larger than this many bytes are refused with 413 (4 MiB).
DEFAULT_MAX_BODY = 4 * 1024 * 1024

_KEYS = ("[serve] db, host, port, reads, max-body-bytes, acceptance-keys, header-timeout, "
         "body-timeout, keep-alive, max-connections")
_HINT = (f"Fix the named key in the configuration file (keys: {_KEYS}), or point --config / "
         "PIN_CONFIG at another file.")


class ServeConfig(Strict):
    """``[serve]``: ``db`` the database URL (``None``: the default SQLite file), ``host``
    and ``port`` where to listen (port 0: any free port), ``reads`` ``open`` (GET needs no
    token) or ``token`` (any valid token may read), ``max_body_bytes`` the largest request
    body accepted (bytes), ``acceptance_keys`` PEM public keys that signed acceptance
    results are verified with (absolute once loaded); ``header_timeout``, ``body_timeout``
    and ``keep_alive`` in seconds and ``max_connections`` bound slow and idle clients
    (:class:`pinning.serve.transport.Limits`).
    """

    db: str | None = Field(default=None, min_length=1)
    host: str = Field(default=DEFAULT_HOST, min_length=1)
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, strict=True)
    reads: Literal["open", "token"] = "open"
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY, ge=1024, le=1 << 30, strict=True)
    acceptance_keys: tuple[Path, ...] = ()
    header_timeout: float = Field(default=10.0, gt=0, le=3600)
    body_timeout: float = Field(default=60.0, gt=0, le=3600)
    keep_alive: int = Field(default=5, ge=1, le=3600, strict=True)
    max_connections: int = Field(default=1024, ge=16, le=1_000_000, strict=True)


def load_serve_config(path: Path, *, named: bool = True) -> ServeConfig:
    """The ``[serve]`` table of the configuration file at ``path`` (defaults when the file
    has none; also when it is missing and not ``named``: the default place).

    Raises :class:`~pinning.fleet.config.ConfigError` (a ``UsageError``, exit 2) naming the
    file and the key as ``[serve] key`` when a named file is missing or unreadable, is not
    TOML, or its ``[serve]`` table has an unknown key or a bad value.
    """
    from pinning.fleet.config import ConfigError, key_name
    from pinning.util.files import read_toml

    label = f"pin configuration {path}"
    if not path.exists():
        if not named:
            return ServeConfig()
        raise ConfigError(f"{label}: no such file.", short=f"config {path} missing",
                          hint="Fix the path given by --config or PIN_CONFIG.")
    _, data = read_toml(path, UsageError, label=label,
                        unreadable_hint="Make the file readable, or fix the path given by "
                                        "--config or PIN_CONFIG.", syntax_hint=_HINT)
    table: Any = data.get("serve", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{label}: [serve] must be a table.", short="config [serve]",
                          hint=_HINT)
    try:
        cfg = ServeConfig.model_validate(table)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            key = key_name(("serve", *err["loc"]))
            msg = ("unknown key" if err["type"] == "extra_forbidden"
                   else str(err["msg"]).removeprefix("Value error, "))
            problems.append(f"{key}: {msg}")
        raise ConfigError(f"{label}: {'; '.join(problems)}.", short=f"config {problems[0]}",
                          hint=_HINT) from exc
    base = path.resolve().parent
    return cfg.model_copy(update={
        "acceptance_keys": tuple(k if k.is_absolute() else base / k
                                 for k in cfg.acceptance_keys)})


def read_serve_config(option: str | None, environ: Mapping[str, str] | None = None
                      ) -> tuple[ServeConfig, Path | None]:
    """The ``[serve]`` settings of the file ``--config option`` / ``$PIN_CONFIG`` / the
    default place names, and that file (``None``: no file at the default place, all
    defaults). Same errors as :func:`load_serve_config`.
    """
    from pinning.fleet.config import config_path

    path, named = config_path(option, os.environ if environ is None else environ)
    if not named and not path.exists():
        return ServeConfig(), None
    return load_serve_config(path, named=named), path
