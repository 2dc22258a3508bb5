"""``pin lock push`` / ``pin lock pull``: store a lock in a pin service and fetch one back
by its content hash (the client options and policy are :mod:`pinning.cli.service`'s).
"""

from __future__ import annotations

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    cli_path,
    format_option,
    lock_target_option,
    output_path,
    path_given,
)
from pinning.cli.service import checked_name, normal_ref, open_service, service_options, warn
from pinning.errors import ServiceError, UsageError
from pinning.util.text import printable

__all__ = ["lock_pull", "lock_push"]


@click.command("push", short_help="Store a lock in a pin service; print its content hash.")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--to", "url", metavar="URL", required=True,
              help="The pin service (pin serve), e.g. https://pin.example.org.")
@click.option("--assign-host", "hosts", multiple=True, metavar="HOST",
              help="Also assign the lock to this host: its reports are judged against it "
                   "(repeatable).")
@click.option("--assign-group", "groups", multiple=True, metavar="GROUP",
              help="Also assign the lock to this host group (repeatable).")
@lock_target_option
@service_options
@format_option
def lock_push(path: str, url: str, hosts: tuple[str, ...], groups: tuple[str, ...],
              target: str | None, token_file: str | None, ca_cert: str | None,
              fmt: str) -> None:
    """Store LOCK in the pin service at URL, content-addressed (its exact bytes), and print
    its content hash on standard output; a lock already stored is not stored twice. With
    --assign-host / --assign-group the service judges those hosts' reports against it.

    A multi-target lock (pin lock's pin.lock) is pushed one target at a time: --target NAME
    (needed when it has several) uploads that target's lock, its view rendered as the
    lock-version 1 document it is, whose content hash is the target's, the one hosts that
    verify against the target report; pin lock pull fetches that document back.

    Needs a token with the publish scope. Exit 0 when stored (and assigned), 5 for an
    invalid LOCK (nothing sent), 13 when the service refused or could not be reached (the
    service's own message and hint are quoted), 2 for bad flags or token file.
    """
    from pinning.lockfile.io import read_lock_at, render

    for h in hosts:
        checked_name(h, "--assign-host")
    for g in groups:
        checked_name(g, "--assign-group")
    read = read_lock_at(cli_path(path), target)
    raw, lock = read.raw, read.lock
    if read.multi is not None:  # the service stores single-target locks: the target's view
        raw = render(lock).encode()
        path = f"{path} [targets.{read.target}]"
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

    want = normal_ref(ref)
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
