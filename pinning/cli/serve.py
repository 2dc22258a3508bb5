"""``pin serve``: run the team's pinning service; ``pin serve token``: its access tokens.

``pin serve`` alone runs the HTTP service (:mod:`pinning.serve.server`) until SIGTERM or
SIGINT; ``pin serve token create|list|revoke`` work on the database directly (the server
need not run). The database is ``--db``, else ``[serve] db`` of the configuration file
(``--config``, ``$PIN_CONFIG``, ``/etc/pin/config.toml``), else SQLite in pin's data folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option, path_given
from pinning.errors import UsageError
from pinning.util.net import is_loopback_host
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.serve.config import ServeConfig
    from pinning.serve.storage.store import Store

__all__ = ["serve"]

_DB_HELP = ("Database URL: sqlite:///PATH or postgresql://USER@HOST:PORT/DB (default: [serve] "
            "db of the configuration, else pin.db in pin's data folder).")
_CONFIG_HELP = "Configuration file with a [serve] table (default: $PIN_CONFIG, else " \
               "/etc/pin/config.toml when present)."


def _settings(config: str | None, **given: Any) -> ServeConfig:
    """The ``[serve]`` settings with the flags that were given (not ``None``) applied."""
    from pinning.serve.config import read_serve_config

    cfg, _ = read_serve_config(config)
    return cfg.model_copy(update={k: v for k, v in given.items() if v is not None})


def _open(db: str | None, config: str | None) -> Store:
    from pinning.serve.storage import Store

    return Store(_settings(config, db=db).db)


@click.group(invoke_without_command=True)
@click.option("--db", metavar="URL", help=_DB_HELP)
@click.option("--host", metavar="ADDRESS", help="Address to listen on (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535),
              help="Port to listen on; 0: any free port (default 8470).")
@click.option("--config", metavar="FILE", callback=path_given, help=_CONFIG_HELP)
@click.pass_context
def serve(ctx: click.Context, db: str | None, host: str | None, port: int | None,
          config: str | None) -> None:
    """Run pin's team service: locks, host reports (verified against the lock assigned to
    the host or its group), acceptance results, audits and cost verdicts over a JSON API
    (/api/v1, /openapi.json), a dashboard at / and /metrics for Prometheus.

    \b
    Start here:
      pin serve                                  # SQLite in pin's data folder, port 8470
      pin serve token create --scope publish     # a token for pin lock push
      pin serve --db postgresql://pin@db/pin      # a team: behind your TLS proxy

    Prints `pin serve: listening on http://HOST:PORT (database URL)` when ready; SIGTERM
    or Ctrl-C stops it after storing every report it acknowledged. It speaks plain HTTP:
    on an address other than loopback it warns that tokens would cross the network in
    clear text (put a TLS proxy in front).
    """
    if ctx.invoked_subcommand is not None:
        return
    from pinning.serve.server import run

    settings = _settings(config, db=db, host=host, port=port)
    if not is_loopback_host(settings.host):
        click.echo(f"pin: warning: listening on {settings.host}, not loopback: pin serve "
                   "speaks plain HTTP, so bearer tokens and reports would cross the network "
                   "in clear text. Put a TLS proxy in front and listen on 127.0.0.1.",
                   err=True)
    run(settings)


@serve.command("migrate")
@click.option("--db", metavar="URL", help=_DB_HELP)
@click.option("--config", metavar="FILE", callback=path_given, help=_CONFIG_HELP)
@click.option("--check", is_flag=True,
              help="Change nothing: exit 0 when the database is at this pin's revision, "
                   "else 2.")
@click.option("--wait", "wait_s", type=click.FloatRange(0), default=0.0, show_default=True,
              metavar="SECONDS",
              help="With --check: keep checking every 5 s for this long (a pod waiting for "
                   "the migration Job).")
def serve_migrate(db: str | None, config: str | None, check: bool, wait_s: float) -> None:
    """Bring the service's database to the schema revision this pin ships (Alembic's
    migrations inside pin), or with --check say whether it is there.

    \b
      pin serve migrate --db postgresql://pin@db/pin          # once, before a rollout
      pin serve migrate --db ... --check --wait 600           # a pod's init container

    Run it once before starting a new pin version on a shared database (deploy/kubernetes:
    the Job pin-serve-migrate; the pods' init container runs --check --wait). A database a
    newer pin migrated is refused (exit 2). Safe to repeat: at the newest revision it
    changes nothing.
    """
    from pathlib import Path

    from pinning.serve.storage.engine import default_url, parse_url
    from pinning.serve.storage.migrate import head, upgrade

    if wait_s and not check:
        raise UsageError("--wait waits for someone else's migration: it goes with --check.",
                         hint="pin serve migrate --check --wait SECONDS, or leave --wait out "
                              "to migrate now.")
    url = _settings(config, db=db).db or default_url()
    parsed = parse_url(url)  # a malformed URL is refused before any wait (exit 2)
    if check and parsed.drivername.startswith("sqlite") and \
            not Path(parsed.database or "").exists():
        _wait_for(url, head(), 0.0, missing=True)  # --check creates no file
        return
    if not check:
        was = _revision(url) if not parsed.drivername.startswith("sqlite") or \
            Path(parsed.database or "").exists() else "not migrated"
        upgrade(url)
        now = _revision(url)
        click.echo(f"pin: database already at {now}; nothing to do" if was == now
                   else f"pin: database migrated to {now}")
        return
    _wait_for(url, head(), wait_s)


def _revision(url: str) -> str:
    """The revision the database at ``url`` is at (``"not migrated"`` when none)."""
    from pinning.serve.storage import Store

    store = Store(url, migrate=False)
    try:
        return store.revision() or "not migrated"
    finally:
        store.close()


def _wait_for(url: str, want: str, wait_s: float, *, missing: bool = False) -> None:
    """Return once the database at ``url`` is at revision ``want``; check every 5 s for
    ``wait_s`` seconds, then raise ``UsageError`` (exit 2) saying where it is. ``missing``:
    a SQLite file that does not exist (not migrated; not created by looking).
    """
    import time

    from pinning.errors import PinError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            at = "not migrated" if missing else _revision(url)
        except PinError as exc:
            at = f"unreachable ({exc.message.rstrip('.')})"
        if at == want:
            click.echo(f"pin: database at {want}")
            return
        if time.monotonic() >= deadline:
            state = at if at == "not migrated" or at.startswith("unreachable") else f"at {at}"
            raise UsageError(
                f"The database is {state}; this pin needs schema revision {want}.",
                hint="Run `pin serve migrate` with this --db once (on Kubernetes: the Job "
                     "pin-serve-migrate), then start pin serve.")
        left = max(0.0, deadline - time.monotonic())
        click.echo(f"pin: database {at}; waiting for the migration to {want} ({left:.0f} s "
                   "left)", err=True)
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


@serve.group("token")
def token() -> None:
    """Create, list and revoke the service's bearer tokens (stored hashed)."""


_db_option = click.option("--db", metavar="URL", help=_DB_HELP)
_config_option = click.option("--config", metavar="FILE", callback=path_given,
                              help=_CONFIG_HELP)


def _token_json(info: Any) -> dict[str, Any]:
    return {"id": info.id, "scope": info.scope, "host": info.host,
            "created_at": info.created_at.isoformat(),
            "revoked_at": info.revoked_at.isoformat() if info.revoked_at else None}


@token.command("create")
@click.option("--scope", type=click.Choice(["report", "publish", "admin"]), required=True,
              help="report: post host reports; publish: locks, assignments, acceptance, "
                   "audits, cost verdicts; admin: everything.")
@click.option("--host", "host_name", metavar="NAME",
              help="Bind a report token to one host name: it may post only that host's "
                   "reports.")
@click.option("--out", "out", metavar="FILE", callback=path_given,
              help="Write the secret to FILE, created 0600 (an existing FILE must already be "
                   "0600), instead of standard output.")
@_db_option
@_config_option
@format_option
def token_create(scope: str, host_name: str | None, out: str | None, db: str | None,
                 config: str | None, fmt: str) -> None:
    """Create a token and print its secret, once (only its sha256 is stored).

    \b
    pin serve token create --scope report --host gpu-01 --out gpu-01.token
    pin verify pin.lock --report-to URL --token-file gpu-01.token

    Text: the secret alone on standard output (or in --out FILE, private to its user: a
    shell redirection would leave it readable by others), its id and a warning on standard
    error. JSON: {"id", "scope", "host", "secret"}; with --out, "secret-file" instead of
    "secret".
    """
    if out is not None:
        _check_secret_file(out)
        _refuse_database(out, _settings(config, db=db).db)
    from pinning.serve.api.context import check_name
    from pinning.serve.errors import ApiError

    if host_name is not None:
        if scope != "report":
            raise UsageError(f"--host binds report tokens only, not scope {scope!r}.",
                             hint="Drop --host, or use --scope report.")
        try:
            check_name("Host", host_name)
        except ApiError as exc:
            raise UsageError(f"--host: {printable(exc.message, newlines=False)}",
                             hint="Bind the token to the name the node reports as (pin "
                                  "verify: its short host name, or --report-host).") from exc
    store = _open(db, config)
    try:
        token_id, secret = store.create_token(scope, host_name)
    finally:
        store.close()
    if out is not None:
        _write_secret(out, secret)
    if fmt == "json":
        where = {"secret-file": out} if out is not None else {"secret": secret}
        emit({"id": token_id, "scope": scope, "host": host_name, **where})
        return
    bound = f" bound to host {host_name}" if host_name else ""
    if out is not None:
        click.echo(f"Created token {token_id} (scope {scope}{bound}); its secret is in {out} "
                   "(mode 0600), shown nowhere else.", err=True)
        return
    click.echo(secret)
    click.echo(f"Created token {token_id} (scope {scope}{bound}). The secret above is shown "
               "this once; keep it in a file only its user can read (--out FILE writes one).",
               err=True)


def _check_secret_file(out: str) -> None:
    """Refuse (``UsageError``, exit 2) ``--out`` naming standard output, or something other
    than a missing file or a regular file of mode 0600 (group or others could read it).
    """
    import os
    import stat

    from pinning.cli.options import cli_path

    hint = "Name a new file, or `chmod 600` the existing one first."
    if out == "-":
        raise UsageError("--out - would print the secret; drop --out to print it.")
    try:
        st = os.stat(cli_path(out))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--out {out}: {exc.strerror or exc}.", hint=hint) from exc
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"--out {out} is not a regular file; pin writes the secret only "
                         "to a file of its own.", hint=hint)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise UsageError(f"--out {out} exists with mode {mode:04o}: others could read the "
                         "secret written there.", hint=hint)


def _refuse_database(out: str, db: str | None) -> None:
    """Refuse (``UsageError``, exit 2) ``--out`` naming the SQLite file of ``db`` (a URL;
    ``None``: the default file), which the secret would replace.
    """
    from pathlib import Path

    from pinning.cli.options import cli_path
    from pinning.serve.storage.engine import default_url, parse_url
    from pinning.util.samefile import refuse_overwrite

    url = parse_url(db or default_url())
    if url.drivername.startswith("sqlite") and url.database:
        refuse_overwrite(cli_path(out), [("--db", Path(url.database))], option="--out",
                         command="pin serve token create")


def _write_secret(out: str, secret: str) -> None:
    """Write ``secret`` and a newline to ``out`` atomically, mode 0600 (the file's own mode,
    checked by :func:`_check_secret_file`, when it exists). ``UsageError`` when it cannot.
    """
    from pinning.cli.options import cli_path
    from pinning.util.files import atomic_write_bytes

    try:
        atomic_write_bytes(cli_path(out), (secret + "\n").encode(), new_mode=0o600)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write the secret ({exc.strerror or exc}); "
                         "the token was created: revoke it with `pin serve token revoke`.",
                         hint="Name a writable file.") from exc


@token.command("list")
@_db_option
@_config_option
@format_option
def token_list(db: str | None, config: str | None, fmt: str) -> None:
    """List the tokens (id, scope, bound host, created, revoked); never their secrets."""
    store = _open(db, config)
    try:
        tokens = store.list_tokens()
    finally:
        store.close()
    if fmt == "json":
        emit({"tokens": [_token_json(t) for t in tokens]})
        return
    if not tokens:
        click.echo("No tokens; create one with `pin serve token create --scope SCOPE`.")
        return
    for t in tokens:
        state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}Z" if t.revoked_at else "live"
        click.echo(printable(f"{t.id}  {t.scope:<8} {t.host or '-':<20} created "
                             f"{t.created_at:%Y-%m-%d %H:%M}Z  {state}", newlines=False))


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@_db_option
@_config_option
@format_option
def token_revoke(token_id: str, db: str | None, config: str | None, fmt: str) -> None:
    """Revoke token ID (a running server refuses it within 5 s). Exit 2 when no live
    token has that id.
    """
    store = _open(db, config)
    try:
        done = store.revoke_token(token_id)
    finally:
        store.close()
    if not done:
        raise UsageError(f"No live token has id {printable(token_id, newlines=False)!r}.",
                         hint="List them with `pin serve token list`.")
    if fmt == "json":
        emit({"id": token_id, "revoked": True})
    else:
        click.echo(f"Revoked token {token_id}.")
