"""Talking to a pin service from the CLI: the ``--report-to URL`` / ``--token-file FILE`` /
``--ca-cert FILE`` options, the client they open (:class:`~pinning.remote.client.ServiceClient`),
how a report's failure combines with the command's own result, and ``pin lock push`` /
``pin lock pull``.

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

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, output_path, path_given
from pinning.errors import ServiceError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.remote.client import ServiceClient

__all__ = ["lock_pull", "lock_push", "open_service", "report_options",
           "report_or_note", "report_url_option", "service_options", "warn"]

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


def lock_ref(value: str | None, flag: str) -> str | None:
    """A lock for a ``?lock=`` parameter: ``sha256:<hex>`` / a hex prefix of at least 12
    digits / ``pin_<12 hex>`` as given, or a lock file whose content hash is used. Raises
    ``UsageError`` (exit 2) naming ``flag``, ``LockfileError`` (5) for a bad lock file.
    """
    if value is None:
        return None
    norm = _normal_ref(value)
    if norm is not None:
        return norm
    from pinning.lockfile.io import read_lock

    if not Path(value).exists():
        raise UsageError(f"{flag} {value}: neither a lock file nor a content hash "
                         "(sha256:<64 hex>, or at least 12 hex digits).")
    return read_lock(cli_path(value)).content_hash


def _normal_ref(value: str) -> str | None:
    """``sha256:<hex>`` or a bare hex prefix for a lock reference, else ``None``."""
    m = _FEATURE.match(value)
    if m:
        return m.group(1)
    m = _HASH.match(value)
    if not m:
        return None
    return f"sha256:{m.group(1)}" if len(m.group(1)) == 64 else m.group(1)


def _name(value: str, flag: str) -> str:
    """``value`` when the service accepts it as a host or group name
    (:func:`~pinning.remote.client.is_name`), else ``UsageError`` (exit 2) naming ``flag``.
    """
    from pinning.remote.client import NAME_RULE, is_name

    if not is_name(value):
        raise UsageError(f"{flag} {printable(value[:80], newlines=False)!r}: not a host or "
                         f"group name pin serve accepts; use {NAME_RULE}.")
    return value


# --- pin lock push / pull ---------------------------------------------------------------------

@click.command("push", short_help="Store a lock in a pin service; print its content hash.")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--to", "url", metavar="URL", required=True,
              help="The pin service (pin serve), e.g. https://pin.example.org.")
@click.option("--assign-host", "hosts", multiple=True, metavar="HOST",
              help="Also assign the lock to this host: its reports are judged against it "
                   "(repeatable).")
@click.option("--assign-group", "groups", multiple=True, metavar="GROUP",
              help="Also assign the lock to this host group (repeatable).")
@service_options
@format_option
def lock_push(path: str, url: str, hosts: tuple[str, ...], groups: tuple[str, ...],
              token_file: str | None, ca_cert: str | None, fmt: str) -> None:
    """Store LOCK in the pin service at URL, content-addressed (its exact bytes), and print
    its content hash on standard output; a lock already stored is not stored twice. With
    --assign-host / --assign-group the service judges those hosts' reports against it.

    Needs a token with the publish scope. Exit 0 when stored (and assigned), 5 for an
    invalid LOCK (nothing sent), 13 when the service refused or could not be reached (the
    service's own message and hint are quoted), 2 for bad flags or token file.
    """
    from pinning.lockfile.io import read_lock_bytes

    for h in hosts:
        _name(h, "--assign-host")
    for g in groups:
        _name(g, "--assign-group")
    raw, lock = read_lock_bytes(cli_path(path))
    client = open_service(url, token_file, ca_cert)
    answer = client.upload_lock(raw)
    stored = str(answer["content_hash"])
    if stored != lock.content_hash:
        raise ServiceError(f"{client.label} stored {path} as {printable(stored)}, but the lock's "
                           f"content hash is {lock.content_hash}.",
                           hint="The service computes content hashes differently from this "
                                "pin: check that both run the same pin version.")
    for h in hosts:
        client.assign_host(h, stored)
    for g in groups:
        client.assign_group(g, stored)
    if fmt == "json":
        emit({"content_hash": stored, "created": bool(answer.get("created")),
              "url": answer.get("url"), "service": client.label,
              "assigned": {"hosts": list(hosts), "groups": list(groups)}})
        return
    click.echo(stored)
    how = "stored" if answer.get("created") else "already stored"
    warn(f"Pushed {path} to {client.label} ({how}).")
    for kind, names in (("host", hosts), ("group", groups)):
        for n in names:
            warn(f"Assigned {kind} {n} to {stored}.")


@click.command("pull", short_help="Fetch a stored lock by its content hash.")
@click.argument("ref", metavar="REF")
@click.option("--from", "url", metavar="URL", required=True,
              help="The pin service (pin serve), e.g. https://pin.example.org.")
@click.option("-o", "--output", callback=output_path, metavar="FILE", required=True,
              help="Write the lock here, atomically ('-': standard output).")
@service_options
@format_option
def lock_pull(ref: str, url: str, output: str, token_file: str | None, ca_cert: str | None,
              fmt: str) -> None:
    """Fetch the lock REF from the pin service at URL and write its exact bytes to -o FILE.

    REF is a content hash (sha256:<64 hex>), a unique prefix of at least 12 hex digits, or a
    Slurm feature pin_<12 hex>. The bytes are checked before anything is written: a valid
    lock whose content hash is REF (or starts with the prefix). Exit 0 when written, 13 when
    the service refused (404 unknown, 409 an ambiguous prefix), could not be reached, or
    answered a lock that is not REF (nothing written), 2 for bad flags or an unwritable
    FILE.
    """
    from pinning.errors import LockfileError
    from pinning.lockfile.io import parse_lock_bytes
    from pinning.util.files import atomic_write_bytes

    want = _normal_ref(ref)
    if want is None:
        raise UsageError(f"REF {ref!r}: expected sha256:<64 hex>, at least 12 hex digits, or "
                         "pin_<12 hex>.")
    if output == "-" and fmt == "json":
        raise UsageError("-o - writes the lock to standard output and so would --format json; "
                         "choose one.")
    client = open_service(url, token_file, ca_cert)
    raw = client.pull_lock(want)
    label = f"The lock {client.label} answered for {ref}"
    try:
        lock = parse_lock_bytes(raw, label=label)
    except LockfileError as err:
        raise ServiceError(f"{err.message} Nothing was written.",
                           hint="The service holds or sent a broken lock: tell its operator."
                           ) from err
    got = lock.content_hash
    full = want.startswith("sha256:")
    if (got != want) if full else not got.removeprefix("sha256:").startswith(want):
        raise ServiceError(
            f"{label} has the content hash {got}, not the {ref} asked for; nothing was "
            "written.",
            hint="Something between pin and the service, or the service itself, changed the "
                 "lock: do not use it; tell the service's operator.")
    try:
        atomic_write_bytes(cli_path(output), raw)
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc
    if fmt == "json":
        emit({"content_hash": got, "output": output, "bytes": len(raw),
              "service": client.label})
        return
    where = "standard output" if output == "-" else output
    click.echo(printable(f"Wrote {where} ({got}).", newlines=False), err=output == "-")


# --- pin verify --report-to ---------------------------------------------------------------------

def report_host_name(given: str | None, host_file: str | None, root: str | None) -> str:
    """The host name a verify report is filed under: ``--report-host``; else, for ``--root
    DIR``, the first line of ``DIR/etc/hostname`` (the host's own name, not the container's);
    else this machine's short host name (what Slurm falls back to for a node name). Raises
    ``UsageError`` (exit 2) for ``--host SNAPSHOT`` without ``--report-host`` (a snapshot
    does not say whose it is), a ``--root`` without ``etc/hostname``, or a name that is not
    letters, digits, ``.``, ``_`` and ``-``.
    """
    if given is not None:
        return _name(given, "--report-host")
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
        return _name(name.split(".")[0], f"{root}/etc/hostname:")
    import socket

    return _name(socket.gethostname().split(".")[0], "this machine's host name")


class VerifyReporter:
    """Posts a ``pin verify`` run's host facts to a service and words its verdict.

    ``client``: the service; ``host`` / ``group``: where the report is filed.
    """

    def __init__(self, client: ServiceClient, host: str, group: str | None) -> None:
        self.client, self.host, self.group = client, host, group

    def send(self, facts: Any, lock_hash: str, *, node_only: bool = False) -> dict[str, Any]:
        """POST the snapshot bytes exactly as ``pin probe -o`` writes them
        (:func:`~pinning.probe.snapshot.snapshot_text`) with ``?lock=lock_hash`` (the lock the
        service falls back to when it assigns none); ``node_only``: judged as ``pin verify
        --node-only`` judges. Raises ``ServiceError`` (exit 13).
        """
        from pinning.probe.snapshot import snapshot_text

        return self.client.post_report(self.host, snapshot_text(facts).encode(),
                                       group=self.group, lock=lock_hash, node_only=node_only)

    def line(self, answer: dict[str, Any], lock_hash: str) -> str:
        """``reported to URL: drift (pin: ...)``; the service's lock named when it judged by
        another lock than ``lock_hash`` (its assignment for the host or group).
        """
        result = str(answer.get("result") or "unknown")
        reason = answer.get("reason")
        text = f"reported to {self.client.label}: {result}" + (f" ({reason})" if reason else "")
        theirs = answer.get("lock_hash")
        if isinstance(theirs, str) and theirs != lock_hash:
            text += f"; judged against {theirs}, the lock the service assigns to {self.host}"
        return printable(text, newlines=False)


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
        _name(group, "--report-group")
    return VerifyReporter(open_service(report_to, token_file, ca_cert), host, group)


# --- pin accept run / audit / cost --report-to ----------------------------------------------------

def artefact_target(report_to: str | None, token_file: str | None, ca_cert: str | None,
                    report_lock: str | None = None,
                    what: str = "report") -> tuple[ServiceClient | None, str | None]:
    """The client for ``--report-to`` (``None`` without it) and the ``--report-lock``'s
    content hash (see :func:`lock_ref`), set up before the command's work so a bad flag
    costs nothing. Raises ``UsageError`` (exit 2) for ``--report-lock`` without
    ``--report-to`` (``what`` names the artefact), and what :func:`open_service` raises.
    """
    if report_to is None:
        if report_lock is not None:
            raise UsageError(f"--report-lock names the lock a reported {what} is for; give "
                             "--report-to URL too.")
        return None, None
    lock_hash = lock_ref(report_lock, "--report-lock")
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
