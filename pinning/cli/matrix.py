"""``pin matrix``: list, show and import the compatibility matrix.

Loaded from :data:`pinning.cli.COMMANDS` when used; the matrix code is imported inside the
commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pinning.cli.completers import complete_gpu
from pinning.cli.envelope import emit
from pinning.cli.matrix_update import matrix_update
from pinning.cli.options import format_option, output_path, parse_date
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = [
    "gpu_json",
    "gpu_row",
    "matrix",
    "matrix_gpus",
    "matrix_import_amd",
    "matrix_import_pytorch",
    "matrix_list",
    "matrix_show",
    "matrix_update",
]


@click.group()
def matrix() -> None:
    """Inspect and import the compatibility matrix."""


matrix.add_command(matrix_update)


@matrix.command("list")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--as-of", metavar="DATE", help="Show the matrix as published on DATE.")
@format_option
def matrix_list(overlays: tuple[str, ...], as_of: str | None, fmt: str) -> None:
    """List the runtime releases (ROCm and CUDA), wheel variants, GPUs and data files, each
    with source and date. Tables on a terminal, plain text when piped; NO_COLOR turns colour
    off.
    """
    from pinning.cli.render import table_text, terminal_style
    from pinning.matrix.load import load_matrix

    m = load_matrix(overlays)
    when = parse_date("--as-of", as_of)
    rels = m.releases(as_of=when)
    toolkits = m.cuda_toolkits(as_of=when)
    if fmt == "json":
        emit({
            "sha256": m.sha256,
            "files": [{"name": f.name, "path": str(f.path), "sha256": f.sha256,
                       "overlay": f.overlay, "origin": _origin(f),
                       "releases-in-effect": sum(r.file.name == f.name for r in rels)}
                      for f in m.files],
            "releases": [{"ref": r.ref, **r.release.model_dump(mode="json", by_alias=True,
                                                               exclude_none=True)}
                         for r in rels],
            "cuda-toolkits": [{"ref": f"{f.name}:cuda-{t.version}",
                               **t.model_dump(mode="json", by_alias=True, exclude_none=True)}
                              for t, f in toolkits],
            "gpus": [gpu_json(g) for g in m.gpus],
        })
        return
    style = terminal_style()
    if style.rich:
        click.echo(table_text(
            ["Runtime", "Version", "Frameworks", "Date", "File"],
            [[r.release.runtime.upper(), r.release.version, _frameworks(r.release),
              _date(r.release), r.file.name] for r in rels], title="Runtime releases",
            style=style))
    else:
        click.echo("Runtime releases:")
        for rr in rels:
            r = rr.release
            click.echo(printable(f"  {r.runtime.upper():4} {r.version:<7} {_frameworks(r)}",
                                 newlines=False))
            _echo_source(r, rr.file.name)
    click.echo(table_text(
        ["Version", "Bundled driver", "Date", "File"],
        [[t.version, t.bundled_driver or f"unknown: {t.unknown.get('bundled-driver', '')}",
          _date(t), f.name] for t, f in toolkits],
        title="CUDA toolkit releases (NVIDIA)", style=style))
    click.echo("PyTorch wheel variants (upstream):")
    by_series: dict[str, list[str]] = {}
    for w, _ in m.wheels(as_of=when):
        by_series.setdefault(w.series, []).append(w.tag + ("*" if w.status != "stable" else ""))
    for s, tags in by_series.items():
        click.echo(f"  pytorch {s:<5} {', '.join(tags)}")
    click.echo("  (* experimental)  source: PyTorch RELEASE.md release compatibility matrix")
    click.echo(table_text(_GPU_HEADERS, [gpu_row(g) for g in m.gpus],
                          title="GPUs (pin matrix gpus)", style=style))
    _files_text(m.files, rels)


def _files_text(files: Any, rels: Any) -> None:
    """The ``Data files:`` lines: name, origin (:func:`_origin`), releases in effect, path."""
    click.echo("Data files:")
    for f in files:
        used = sum(r.file.name == f.name for r in rels)
        click.echo(printable(f"  {f.name:<22} {_origin(f):<8} {used:>3} releases in effect  "
                             f"{f.path}", newlines=False))


def _origin(f: Any) -> str:
    """Where a loaded matrix file comes from: ``shipped``, ``user`` (``pin matrix update``)
    or ``overlay``.
    """
    return "overlay" if f.overlay else "user" if f.user else "shipped"


def _frameworks(r: Any) -> str:
    """``pytorch 2.9.1, 2.8.0; jax 0.8.0`` for a release row."""
    return "; ".join(f"{fw.name} {', '.join(fw.versions) if fw.versions else '?'}"
                     for fw in r.frameworks)


def _echo_source(r: Any, file_name: str) -> None:
    """A release's source line for `pin matrix list`, and the copy read when it is not the
    source (``read_from``).
    """
    click.echo(printable(f"       source: {r.source}; {_date(r)} [{file_name}]", newlines=False))
    if r.read_from:
        click.echo(printable(f"       read from: {r.read_from}", newlines=False))


def _date(row: Any) -> str:
    """``published DATE`` or ``checked DATE`` of a matrix row."""
    return f"published {row.published}" if row.published else f"checked {row.checked}"


_GPU_HEADERS = ["GPU", "Name", "Vendor", "Target/CC", "PCI IDs", "Memory"]


def gpu_row(g: Any) -> list[str]:
    """One row of ``pin matrix gpus``: id, name, vendor, gfx target or compute capability,
    PCI vendor:device IDs, memory (``192 GiB``; ``-`` when the matrix holds none).
    """
    target = g.gfx_target or g.compute_capability or "-"
    memory = "-" if g.memory_gib is None else (
        f"{g.memory_gib:g} {'GiB' if g.vendor == 'amd' else 'GB'}")
    pci = ", ".join(f"{g.pci_vendor_id[2:]}:{d[2:]}" for d in g.pci_device_ids) or "-"
    return [g.id, g.name, g.vendor, target, pci, memory]


def gpu_json(g: Any) -> dict[str, Any]:
    """A GPU identity row as JSON (kebab-case keys, ``None`` left out), with ``target``."""
    return {"target": g.target, **g.model_dump(mode="json", by_alias=True, exclude_none=True)}


@matrix.command("gpus")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@format_option
def matrix_gpus(overlays: tuple[str, ...], fmt: str) -> None:
    """One row per GPU the matrix knows: id, name, vendor, gfx target or compute capability,
    PCI vendor:device IDs and memory (AMD in GiB; NVIDIA in GB as the product name states).
    JSON adds each row's source and date.
    """
    from pinning.cli.render import table_text, terminal_style
    from pinning.matrix.load import load_matrix

    m = load_matrix(overlays)
    if fmt == "json":
        emit([gpu_json(g) for g in m.gpus])
        return
    click.echo(table_text(_GPU_HEADERS, [gpu_row(g) for g in m.gpus], style=terminal_style()))


@matrix.command("show")
@click.argument("what")
@click.option("--gpu", metavar="GPU", shell_complete=complete_gpu,
              help="Only rows about this GPU (name, gfx target, compute capability or PCI ID).")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--as-of", metavar="DATE",
              help="Mark the rows in effect on DATE (by publication date).")
@format_option
def matrix_show(what: str, gpu: str | None, overlays: tuple[str, ...], as_of: str | None,
                fmt: str) -> None:
    """Show rows with their sources and dates, and whether each is in effect: WHAT is a
    release (rocm-7.2.0, cuda-13.4.2, 10.0.0; every stored copy), a release series
    (rocm-7.1: 7.1.0 and 7.1.1), a GPU (mi300x), `gpus`, `cuda`, or a data file name (every
    row of the file). --gpu keeps the rows about one GPU.
    """
    from pinning.matrix.load import load_matrix
    from pinning.matrix.query import show_rows

    m = load_matrix(overlays)
    rows = show_rows(m, what, as_of=parse_date("--as-of", as_of), gpu=gpu)
    if fmt == "json":
        emit([{"ref": r.ref, "kind": r.kind, "in-effect": r.in_effect, "effect": r.effect,
               **r.row.model_dump(mode="json", by_alias=True, exclude_none=True)}
              for r in rows])
        return
    if not rows:
        click.echo(printable(f"{what}: no rows" + (f" about {gpu}." if gpu else "."),
                             newlines=False))
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
@click.option("-o", "--output", callback=output_path, default="-", show_default=True,
              metavar="FILE",
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
    from pinning.matrix.dump import dump_matrix_file
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
@click.option("-o", "--output", callback=output_path, default="-", show_default=True,
              metavar="FILE",
              help="Matrix TOML to write; '-' prints it (exit 2 when it cannot be written).")
def matrix_import_pytorch(md_path: str, checked: str, output: str) -> None:
    """Convert PyTorch's release compatibility matrix into wheel-variant rows."""
    from pinning.matrix.importers.build import pytorch_wheels_file

    when = parse_date("--checked", checked)
    assert when is not None
    mf = pytorch_wheels_file(Path(md_path), checked=when)
    _emit_matrix_file(mf, "import-pytorch", output, f"{len(mf.wheels)} wheel variants")
