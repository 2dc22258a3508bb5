"""``pin matrix``: list, show and import the compatibility matrix.

Registered on the main group by :func:`register`; the matrix code is imported inside the
commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pinning.cli.options import format_option, parse_date, path_given
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = [
    "matrix",
    "matrix_import_amd",
    "matrix_import_pytorch",
    "matrix_list",
    "matrix_show",
    "register",
]


@click.group()
def matrix() -> None:
    """Inspect and import the compatibility matrix."""


@matrix.command("list")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--as-of", metavar="DATE", help="Show the matrix as published on DATE.")
@format_option
def matrix_list(overlays: tuple[str, ...], as_of: str | None, fmt: str) -> None:
    """List the runtime releases, wheel variants and data files, each with source and date."""
    from pinning.matrix.load import load_matrix

    m = load_matrix(overlays)
    when = parse_date("--as-of", as_of)
    rels = m.releases(as_of=when)
    if fmt == "json":
        click.echo(json.dumps({
            "sha256": m.sha256,
            "files": [{"name": f.name, "path": str(f.path), "sha256": f.sha256,
                       "overlay": f.overlay} for f in m.files],
            "releases": [{"ref": r.ref, **r.release.model_dump(mode="json", by_alias=True,
                                                               exclude_none=True)}
                         for r in rels],
        }, indent=2))
        return
    click.echo("Runtime releases:")
    for rr in rels:
        r = rr.release
        fws = "; ".join(f"{fw.name} {', '.join(fw.versions) if fw.versions else '?'}"
                        for fw in r.frameworks)
        date = f"published {r.published}" if r.published else f"checked {r.checked}"
        click.echo(printable(f"  {r.runtime.upper():4} {r.version:<7} {fws}", newlines=False))
        click.echo(printable(f"       source: {r.source}; {date} [{rr.file.name}]",
                             newlines=False))
    click.echo("PyTorch wheel variants (upstream):")
    by_series: dict[str, list[str]] = {}
    for w, _ in m.wheels(as_of=when):
        by_series.setdefault(w.series, []).append(w.tag + ("*" if w.status != "stable" else ""))
    for s, tags in by_series.items():
        click.echo(f"  pytorch {s:<5} {', '.join(tags)}")
    click.echo("  (* experimental)  source: PyTorch RELEASE.md release compatibility matrix")
    click.echo("Data files:")
    for f in m.files:
        click.echo(printable(f"  {f.name:<22} {'overlay ' if f.overlay else ''}{f.path}",
                             newlines=False))


@matrix.command("show")
@click.argument("what")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--as-of", metavar="DATE",
              help="Mark the rows in effect on DATE (by publication date).")
@format_option
def matrix_show(what: str, overlays: tuple[str, ...], as_of: str | None, fmt: str) -> None:
    """Show rows with their sources and dates, and whether each is in effect: WHAT is a
    release (rocm-7.2.0, cuda-13.4.2, 10.0.0; every stored copy), a GPU (mi300x), `gpus`,
    `cuda`, or a data file name (every row of the file).
    """
    from pinning.matrix.load import load_matrix
    from pinning.matrix.query import show_rows

    m = load_matrix(overlays)
    rows = show_rows(m, what, as_of=parse_date("--as-of", as_of))
    if fmt == "json":
        click.echo(json.dumps([{"ref": r.ref, "kind": r.kind, "in-effect": r.in_effect,
                                "effect": r.effect,
                                **r.row.model_dump(mode="json", by_alias=True,
                                                   exclude_none=True)}
                               for r in rows], indent=2))
        return
    if not rows:
        click.echo(printable(f"{what}: no rows.", newlines=False))
    for r in rows:
        click.echo(printable(f"[{r.ref}] {r.kind}; {r.effect}", newlines=False))
        for k, v in r.row.model_dump(mode="json", by_alias=True, exclude_none=True,
                                     exclude_defaults=True).items():
            click.echo(printable(f"  {k}: {json.dumps(v) if not isinstance(v, str) else v}",
                                 newlines=False))


@matrix.command("import-amd")
@click.argument("csv_path", metavar="CSV", type=click.Path(dir_okay=False))
@click.option("--page", type=click.Path(dir_okay=False),
              help="The matrix .rst page of the same copy (resolves footnote texts).")
@click.option("--release-notes", multiple=True, type=click.Path(dir_okay=False),
              help="ROCm 7.x RELEASE.md files whose firmware tables to import.")
@click.option("--published", metavar="DATE",
              help="Date of the copy (default: the YYYY-MM-DD in the CSV file name).")
@click.option("-o", "--output", callback=path_given, default="-", show_default=True, metavar="FILE",
              help="Matrix TOML to write; '-' prints it (exit 2 when it cannot be written).")
def matrix_import_amd(csv_path: str, page: str | None, release_notes: tuple[str, ...],
                      published: str | None, output: str) -> None:
    """Convert AMD's historical compatibility CSV (and release-note firmware tables) into a
    pin matrix file.
    """
    from pinning.matrix.importers.build import amd_matrix_file

    mf = amd_matrix_file(Path(csv_path), page=Path(page) if page else None,
                         release_notes=[Path(p) for p in release_notes],
                         published=parse_date("--published", published))
    _emit_matrix_file(mf, "import-amd", output,
                      f"{len(mf.releases)} releases, {len(mf.firmware)} firmware rows")


def _emit_matrix_file(mf: Any, command: str, output: str, summary: str) -> None:
    """Print or atomically write an imported matrix file with its regenerate header."""
    from pinning.matrix.load import dump_matrix_file
    from pinning.util.files import atomic_write_bytes

    text = dump_matrix_file(mf, header=[
        f"Generated by `pin matrix {command}`: do not edit by hand; regenerate with "
        "`make matrix-data`."])
    if output == "-":
        click.echo(text, nl=False)
        return
    try:
        atomic_write_bytes(Path(output), text.encode())
    except OSError as exc:
        raise UsageError(f"{output}: cannot write ({exc.strerror or exc}).") from exc
    click.echo(f"Wrote {output}: {summary}", err=True)


@matrix.command("import-pytorch")
@click.argument("md_path", metavar="MARKDOWN", type=click.Path(dir_okay=False))
@click.option("--checked", metavar="DATE", required=True, help="Date the copy was read.")
@click.option("-o", "--output", callback=path_given, default="-", show_default=True, metavar="FILE",
              help="Matrix TOML to write; '-' prints it (exit 2 when it cannot be written).")
def matrix_import_pytorch(md_path: str, checked: str, output: str) -> None:
    """Convert PyTorch's release compatibility matrix into wheel-variant rows."""
    from pinning.matrix.importers.build import pytorch_wheels_file

    when = parse_date("--checked", checked)
    assert when is not None
    mf = pytorch_wheels_file(Path(md_path), checked=when)
    _emit_matrix_file(mf, "import-pytorch", output, f"{len(mf.wheels)} wheel variants")


def register(group: click.Group) -> None:
    """Add the ``pin matrix`` group to the ``pin`` group."""
    group.add_command(matrix)
