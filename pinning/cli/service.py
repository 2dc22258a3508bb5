"""Talking to a pin service from the CLI: the ``--report-to URL`` / ``--token-file FILE`` /
``--ca-cert FILE`` options, the client they open (:class:`~pinning.remote.client.ServiceClient`),
and how a report's failure combines with the command's own result. Shared by ``pin
verify``, ``pin audit``, ``pin accept``, ``pin cost`` and ``pin lock push`` / ``pull``.

Policy: the local result decides. A report that fails is exit 13 only when the command
itself succeeded; when it failed (drift 6, a failed gate 12, an audit at ``--fail-on`` 11)
the report's error is printed on stderr and the command's own code stays.

Only click and the standard library are imported at module level (``pin --help`` stays fast).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pinning.cli.options import cli_path, path_given
from pinning.errors import ServiceError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.remote.client import ServiceClient
    from pinning.remote.reporter import VerifyReporter

__all__ = ["artefact_target", "checked_name", "normal_ref", "open_service", "post_artefact",
           "report_options", "report_or_note", "report_url_option", "service_options",
           "verify_reporter", "warn"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_HASH = re.compile(r"^(?:sha256:)?([0-9a-f]{12,64})$")
_FEATURE = re.compile(r"^pin_([0-9a-f]{12})$")


def warn(line: str) -> None:
    """Print one warning line on stderr (hidden characters escaped)."""
    click.echo(printable(line, newlines=False), err=True)


def service_options(func: F) -> F:
    """Add ``--token-file FILE`` (``token_file``) and ``--ca-cert FILE`` (``ca_cert``, also
    ``$PIN_CA_CERT``).
    """
    for option in reversed([
        click.option("--token-file", "token_file", metavar="FILE", callback=path_given,
                     help="The bearer token for the pin service: the file's first line "
                          "(default: $PIN_TOKEN, else the file $PIN_TOKEN_FILE, else [report] "
                          "token-file of pin's configuration). Never printed."),
        click.option("--ca-cert", "ca_cert", metavar="FILE", envvar="PIN_CA_CERT",
                     type=click.Path(exists=True, dir_okay=False), callback=path_given,
                     help="CA certificate (PEM) that signed the pin service's TLS "
                          "certificate (also PIN_CA_CERT; default: the system's CAs)."),
    ]):
        func = option(func)
    return func


def report_url_option(help_text: str) -> Callable[[F], F]:
    """``--report-to URL`` (``report_to``) with ``help_text``."""
    def add(func: F) -> F:
        return click.option("--report-to", "report_to", metavar="URL", help=help_text)(func)
    return add


def report_options(help_text: str) -> Callable[[F], F]:
    """``--report-to URL`` plus :func:`service_options`."""
    def add(func: F) -> F:
        return report_url_option(help_text)(service_options(func))
    return add


def _config_report() -> Any:
    """The site configuration's ``[report]`` table (defaults without a file)."""
    from pinning.fleet.config import read_config

    cfg, _ = read_config(None)
    return cfg.report


def open_service(url: str, token_file: str | None, ca_cert: str | None) -> ServiceClient:
    """A client of the service at ``url``: the token by the documented precedence
    (:func:`~pinning.remote.token.resolve_token`; the site configuration is read only when
    no flag or variable gives one), the timeout from ``[report] timeout-s`` when a site
    configuration exists. Raises :class:`~pinning.errors.UsageError` (exit 2) for a bad URL,
    token or configuration file.
    """
    from pinning.fleet.config import config_path
    from pinning.remote.client import DEFAULT_TIMEOUT_S, ServiceClient
    from pinning.remote.token import resolve_token

    path, named = config_path(None, os.environ)
    has_config = named or path.exists()
    where = f"{path} ($PIN_CONFIG)" if named else str(path)
    cached: list[Any] = []

    def report_cfg() -> Any:
        if not cached:
            cached.append(_config_report())
        return cached[0]

    client = ServiceClient(url, None, DEFAULT_TIMEOUT_S, ca_cert, warn=warn,  # URL checked
                           config=where if has_config else None)
    token = resolve_token(token_file, os.environ,
                          (lambda: report_cfg().token_file) if has_config else None, warn,
                          config=where)
    if token is not None:
        client.token, client.token_source = token.secret, token.source
    if has_config:
        client.timeout_s = report_cfg().timeout_s
    return client


def report_or_note(send: Callable[[], T], *, local_failed: bool) -> T | None:
    """``send()``'s answer; when it raises :class:`~pinning.errors.ServiceError` and the
    command's own result already failed (``local_failed``), the error's paragraph goes to
    stderr and ``None`` is returned (the command's own exit code stays); otherwise it is
    raised (exit 13).
    """
    try:
        return send()
    except ServiceError as err:
        if not local_failed:
            raise
        click.echo(f"pin: error: {printable(err.render())}", err=True)
        return None


def stored_line(client: ServiceClient, what: str, answer: dict[str, Any]) -> str:
    """``reported to URL: acceptance result #12`` for an artefact the service stored."""
    ident = answer.get("id")
    return printable(f"reported to {client.label}: {what}"
                     + (f" #{ident}" if ident is not None else ""), newlines=False)


def lock_ref(value: str | None, flag: str, target: str | None = None) -> str | None:
    """A lock for a ``?lock=`` parameter: ``sha256:<hex>`` / a hex prefix of at least 12
    digits / ``pin_<12 hex>`` as given, or a lock file whose content hash is used (of a
    multi-target lock, the content hash of ``target``, or of its only target). Raises
    ``UsageError`` (exit 2) naming ``flag``, and as
    :func:`~pinning.lockfile.io.read_lock` for the target (several and none named, an
    unknown one, one given with a single-target lock or with a content hash);
    ``LockfileError`` (5) for a bad lock file.
    """
    if value is None:
        return None
    norm = normal_ref(value)
    if norm is not None:
        if target is not None:
            raise UsageError(f"{flag} {value} is a content hash, which names one lock: "
                             f"--target {target!r} chooses a target of a lock file.")
        return norm
    from pinning.lockfile.io import read_lock

    if not Path(value).exists():
        raise UsageError(f"{flag} {value}: neither a lock file nor a content hash "
                         "(sha256:<64 hex>, or at least 12 hex digits).")
    return read_lock(cli_path(value), target).content_hash


def normal_ref(value: str) -> str | None:
    """``sha256:<hex>`` or a bare hex prefix for a lock reference, else ``None``."""
    m = _FEATURE.match(value)
    if m:
        return m.group(1)
    m = _HASH.match(value)
    if not m:
        return None
    return f"sha256:{m.group(1)}" if len(m.group(1)) == 64 else m.group(1)


def checked_name(value: str, flag: str) -> str:
    """``value`` when the service accepts it as a host or group name
    (:func:`~pinning.remote.client.is_name`), else ``UsageError`` (exit 2) naming ``flag``.
    """
    from pinning.remote.client import NAME_RULE, is_name

    if not is_name(value):
        raise UsageError(f"{flag} {printable(value[:80], newlines=False)!r}: not a host or "
                         f"group name pin serve accepts; use {NAME_RULE}.")
    return value


def report_host_name(given: str | None, host_file: str | None, root: str | None) -> str:
    """The host name a verify report is filed under: ``--report-host``; else, for ``--root
    DIR``, the first line of ``DIR/etc/hostname`` (the host's own name, not the container's);
    else this machine's short host name (what Slurm falls back to for a node name). Raises
    ``UsageError`` (exit 2) for ``--host SNAPSHOT`` without ``--report-host`` (a snapshot
    does not say whose it is), a ``--root`` without ``etc/hostname``, or a name that is not
    letters, digits, ``.``, ``_`` and ``-``.
    """
    if given is not None:
        return checked_name(given, "--report-host")
    if host_file is not None:
        raise UsageError("--report-to with --host SNAPSHOT: a snapshot does not say which host "
                         "it is; name it with --report-host NAME.")
    if root is not None:
        try:
            first = (Path(root) / "etc" / "hostname").read_text(errors="replace")
        except OSError as exc:
            raise UsageError(f"--report-to with --root {root}: its etc/hostname cannot be read "
                             f"({exc.strerror or exc}); name the host with --report-host NAME."
                             ) from exc
        name = (first.strip().splitlines() or [""])[0].strip()
        return checked_name(name.split(".")[0], f"{root}/etc/hostname:")
    import socket

    return checked_name(socket.gethostname().split(".")[0], "this machine's host name")


def verify_reporter(report_to: str | None, report_host: str | None, group: str | None,
                    token_file: str | None, ca_cert: str | None, host_file: str | None,
                    root: str | None) -> VerifyReporter | None:
    """The reporter for ``pin verify --report-to`` (``None`` without it), set up before the
    probe so a bad flag costs nothing. Raises ``UsageError`` (exit 2) for ``--report-host`` /
    ``--report-group`` without ``--report-to``, and what :func:`report_host_name` and
    :func:`open_service` raise.
    """
    if report_to is None:
        if report_host is not None or group is not None:
            raise UsageError("--report-host and --report-group say how a report is filed; "
                             "give --report-to URL too.")
        return None
    host = report_host_name(report_host, host_file, root)
    if group is not None:
        checked_name(group, "--report-group")
    from pinning.remote.reporter import VerifyReporter

    return VerifyReporter(open_service(report_to, token_file, ca_cert), host, group)


# --- pin accept run / audit / cost --report-to ----------------------------------------------------

def artefact_target(report_to: str | None, token_file: str | None, ca_cert: str | None,
                    report_lock: str | None = None, what: str = "report",
                    target: str | None = None) -> tuple[ServiceClient | None, str | None]:
    """The client for ``--report-to`` (``None`` without it) and the ``--report-lock``'s
    content hash (see :func:`lock_ref`; ``target``: of a multi-target lock), set up before
    the command's work so a bad flag costs nothing. Raises ``UsageError`` (exit 2) for
    ``--report-lock`` without ``--report-to`` (``what`` names the artefact), and what
    :func:`lock_ref` and :func:`open_service` raise.
    """
    if report_to is None:
        if report_lock is not None:
            raise UsageError(f"--report-lock names the lock a reported {what} is for; give "
                             "--report-to URL too.")
        return None, None
    lock_hash = lock_ref(report_lock, "--report-lock", target)
    return open_service(report_to, token_file, ca_cert), lock_hash


def post_artefact(client: ServiceClient | None, send: Callable[[ServiceClient],
                  dict[str, Any]], what: str, *, local_failed: bool = False) -> None:
    """``send(client)`` after the command wrote its output (nothing without a client); the
    id the service answered goes to stderr (``reported to URL: audit #12``). A failure is
    handled by :func:`report_or_note`.
    """
    if client is None:
        return
    answer = report_or_note(lambda: send(client), local_failed=local_failed)
    if answer is not None:
        click.echo(stored_line(client, what, answer), err=True)
