"""``pin lock export``: write a lock's Python environment as a PEP 751 ``pylock.toml`` or a
hash-pinned requirements file (:mod:`pinning.lockfile.export`).
"""

from __future__ import annotations

from pathlib import Path

import click

from pinning.cli.options import cli_path, lock_target_option, output_path, path_given
from pinning.util.text import printable

__all__ = ["lock_export"]


@click.command("export")
@click.argument("path", metavar="LOCK", callback=path_given)
@click.option("--format", "fmt", type=click.Choice(["pylock", "requirements"]), required=True,
              help="pylock: a PEP 751 pylock.toml (uv pip sync, uv pip install -r); "
                   "requirements: name==version with --hash lines (pip install "
                   "--require-hashes --no-deps -r, uv pip sync).")
@click.option("-o", "--output", default="-", show_default=True, callback=output_path,
              metavar="FILE", help="Write here, atomically ('-': standard output).")
@lock_target_option
def lock_export(path: str, fmt: str, output: str, target: str | None) -> None:
    """Write LOCK's Python environment for a node that installs without containers: every
    wheel `pin lock packages` recorded, with its sha256, for the lock's Python version and
    platform ([python]).

    --format pylock writes a PEP 751 pylock.toml (wheel URLs, sizes and hashes;
    requires-python and environments from [python]); --format requirements writes
    name==version lines with --hash options and the lock's indexes (--index-url, then
    --extra-index-url). A package is never written without its hash: exit 2, naming it, for
    a lock with no [[wheels]] or a [packages] entry no wheel covers (run `pin lock packages
    LOCK` first), and, for pylock, a wheel with no URL; 5 for an invalid LOCK.

    A multi-target lock (lock-version 2) exports one target: --target NAME (exit 2 naming
    the targets when it has several and none is named; exit 2 for --target with a
    single-target lock).
    """
    from pinning.errors import UsageError
    from pinning.lockfile.export import export_text
    from pinning.lockfile.io import read_lock_at
    from pinning.util.files import atomic_write_bytes, is_stdio

    read = read_lock_at(Path(path), target)
    lock = read.lock
    text = export_text(lock, "pylock" if fmt == "pylock" else "requirements", label=path,
                       target=read.target)
    data = text.encode("utf-8")
    if not is_stdio(output) and _unchanged(Path(output), data):
        click.echo(printable(f"{output}: unchanged, not rewritten.", newlines=False), err=True)
        return
    try:
        atomic_write_bytes(cli_path(output), data)
    except OSError as exc:
        raise UsageError(printable(f"{output}: cannot write the export "
                                   f"({exc.strerror or exc}).", newlines=False),
                         hint="Check that -o names a file in a folder that exists and is "
                              "writable.") from exc
    if not is_stdio(output):
        count = len(lock.wheels or [])
        click.echo(printable(f"Wrote {output} ({fmt}, {count} wheel(s))", newlines=False),
                   err=True)


def _unchanged(path: Path, data: bytes) -> bool:
    """True when ``path`` already holds exactly ``data`` (then it is not rewritten)."""
    from pinning.util.files import holds_bytes

    try:
        return holds_bytes(path, data)
    except OSError:
        return False  # the write says what is wrong with the path
