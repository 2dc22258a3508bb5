"""Registry commands of the CLI: ``pin login``.

Loaded from :data:`pinning.cli.COMMANDS` when used; requests and the registry client are
imported inside the command so ``pin --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pinning.cli.envelope import emit
from pinning.cli.options import ca_cert_option, format_option
from pinning.errors import UsageError


@click.command()
@click.argument("host", metavar="HOST[:PORT]")
@click.option("-u", "--username", required=True, help="Your user name at the registry.")
@click.option("--password-stdin", is_flag=True,
              help="Read the password (or token) from standard input (one line); without "
                   "it pin asks on the terminal.")
@ca_cert_option
@format_option
def login(host: str, username: str, password_stdin: bool, ca_cert: str | None,
          fmt: str) -> None:
    """Sign in to the registry HOST and store the credentials as `docker login` does.

    pin first checks them against the registry (HTTPS, plain HTTP only on 127.0.0.1 /
    localhost; the Basic or bearer-token flow the registry asks for), then stores them in
    the Docker config's credential helper when it names one for HOST, else in
    $DOCKER_CONFIG/config.json (default ~/.docker/config.json, mode 0600). pin build, pin
    sign, pin verify-image and the engine's pull of a base then sign in from there.

    Exit 8 when the registry refuses the credentials or cannot be reached, 2 for bad input.
    """
    from pinning.oci.auth import Credentials
    from pinning.oci.login import check_credentials, store_credentials
    from pinning.oci.registry import Registry

    if sys.stdin is None or sys.stdin.closed:
        raise UsageError("Standard input is closed, so there is no password to read.",
                         hint="Pipe the password in: printf '%s\\n' \"$PASSWORD\" | pin login "
                              "HOST -u USER --password-stdin.")
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif sys.stdin.isatty():
        password = str(click.prompt("Password", hide_input=True))
    else:
        raise UsageError("pin login reads the password from the terminal, and there is none.",
                         hint="Pipe it in with --password-stdin.")
    check_credentials(username, password)
    creds = Credentials(username=username, password=password, source="pin login")
    registry = Registry(host, ca_cert=Path(ca_cert) if ca_cert else None, credentials=creds)
    registry.ping()
    where = store_credentials(registry.host, username, password)
    if fmt == "json":
        emit({"registry": registry.host, "username": username, "stored-in": where})
    else:
        click.echo(f"Login to {registry.host} succeeded; credentials stored in {where}.")
