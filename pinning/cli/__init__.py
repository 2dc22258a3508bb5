"""The ``pin`` command line: parse flags, call the core, render, map ``PinError`` to exit codes.

This is the only module that prints or exits. Heavy imports happen inside commands so that
``pin --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from pinning import __version__
from pinning.errors import InternalError, PinError, UsageError

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile, Pinned
    from pinning.resolve.resolver import Resolution

FORMAT = click.Choice(["text", "json"])


def _fail(err: PinError, debug: bool) -> NoReturn:
    if debug:
        traceback.print_exc()
    click.echo(f"pin: error: {err.render()}", err=True)
    sys.exit(err.exit_code)


class PinGroup(click.Group):
    """Click group that turns ``PinError`` into one paragraph and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a ``PinError`` becomes its paragraph and exit code."""
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except PinError as err:
            _fail(err, debug)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            # The reader (e.g. `| head`) went away: stop quietly, like other Unix tools.
            import os

            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            sys.exit(141)
        except KeyboardInterrupt:
            click.echo("pin: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # a bug: exit 1 with a report hint
            _fail(InternalError(f"unexpected {type(exc).__name__}: {exc}"), debug)


@click.group(cls=PinGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pin")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def main(debug: bool) -> None:
    """pin: lock a validated GPU stack (firmware, driver, ROCm/CUDA, frameworks) and keep
    hosts and images on it.

    \b
    Start here:
      pin resolve --gpu mi300x --framework pytorch==2.13.0   # write pin.lock
      pin lock show pin.lock
      pin matrix list                                       # what the matrix validates
      pin probe -o host.json                                # read this host
      pin freeze pin.lock --host host.json                  # pin the trial host's values
      pin verify pin.lock                                   # does this host still match?
      pin doctor collect_env.txt                            # diagnose a pasted dump

    Exit codes: 0 ok, 1 bug, 2 usage, 3 matrix data invalid, 4 no validated combination,
    5 lockfile invalid, 6 drift, 7 probe failed, 8 build/registry, 9 signature, 10 guard.
    """


# ----------------------------------------------------------------------------- resolve
def _date(flag: str, text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"{flag} {text!r}: expected a date as YYYY-MM-DD.") from exc


@main.command()
@click.option("--gpu", required=True, metavar="GPU",
              help="Marketing name (MI300X, 'Instinct MI300X', h200), gfx target (gfx942) or "
                   "PCI device ID (0x74a1).")
@click.option("--framework", "frameworks", multiple=True, required=True, metavar="NAME[SPEC]",
              help="Framework with a PEP 440 specifier: pytorch==2.13.0, pytorch>=2.12, "
                   "jax~=0.10.0. Repeat for several; all must be validated with one runtime.")
@click.option("--rocm", metavar="SPEC", help="Limit ROCm releases, e.g. 7.2.0 or '<7'.")
@click.option("--cuda", metavar="SPEC", help="Limit CUDA versions, e.g. 13.0 or '>=12.8'.")
@click.option("--os", "os_", metavar="ID-VERSION",
              help="Operating system as in /etc/os-release, e.g. ubuntu-24.04, rhel-9.6.")
@click.option("--model", metavar="ORG/NAME@REVISION",
              help="Model to lock, with its 40-hex commit revision.")
@click.option("--as-of", metavar="DATE", help="Resolve against the matrix as published then.")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE",
              help="Site overlay with rows your team validated (also PIN_MATRIX).")
@click.option("-o", "--output", default="pin.lock", show_default=True, metavar="FILE",
              help="Where to write the lockfile; '-' writes it to stdout.")
@click.option("--build-step", "build_steps", multiple=True, metavar="CMD",
              help="A shell command pin build runs after the locked install, under the "
                   "build-time guard (repeatable; files of the wheel house are in "
                   "/tmp/pin-wheels).")
@click.option("--explain", is_flag=True, help="Show the rows that decided and why others lost.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def resolve(gpu: str, frameworks: tuple[str, ...], rocm: str | None, cuda: str | None,
            os_: str | None, model: str | None, as_of: str | None, overlays: tuple[str, ...],
            build_steps: tuple[str, ...], output: str, explain: bool, fmt: str) -> None:
    """Resolve constraints to the newest validated stack and write a lockfile.

    Exit 4 when no validated combination exists (the message names the failing constraint
    and the nearest alternatives); exit 2 for a malformed flag; exit 3 for a bad overlay.
    """
    from pinning.lockfile.io import lock_json, render, write_lock
    from pinning.matrix.load import load_matrix, overlay_paths
    from pinning.resolve.resolver import (
        Constraints,
        parse_framework,
        parse_model,
        parse_os,
        parse_runtime_spec,
    )
    from pinning.resolve.resolver import resolve as do_resolve
    from pinning.resolve.to_lock import lock_from_resolution

    if rocm and cuda:
        raise UsageError("--rocm and --cuda exclude each other: a GPU has one vendor.")
    matrix = load_matrix(overlays)
    used_overlays = [str(p) for p in overlay_paths(overlays)]
    c = Constraints(
        gpu=gpu,
        frameworks=tuple(parse_framework(f, matrix.framework_names()) for f in frameworks),
        rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
        cuda=parse_runtime_spec("--cuda", cuda) if cuda else None,
        os=parse_os(os_) if os_ else None,
        model=parse_model(model) if model else None,
        as_of=_date("--as-of", as_of),
    )
    res = do_resolve(matrix, c)
    to_stdout = output == "-"
    lock = lock_from_resolution(res, matrix, overlays=used_overlays,
                                output=None if to_stdout else output)
    from pinning.guards.engine import apply_at_resolve

    if any("\n" in c or "\r" in c for c in build_steps):
        raise UsageError("--build-step must be one line; give several --build-step flags.")
    if build_steps:
        import shlex

        from pinning.lockfile.io import seal

        data = lock_json(lock)
        data["build-steps"] = list(build_steps)
        data["generator"]["command"] += "".join(
            f" --build-step {shlex.quote(c)}" for c in build_steps)
        data.pop("content-hash", None)
        lock = seal(data)
    lock, guard_notes = apply_at_resolve(lock)
    for note in guard_notes:
        click.echo(note, err=True)
    if to_stdout:
        if fmt == "json":
            click.echo(json.dumps({"lock": lock_json(lock), "considered": _considered(res)},
                                  indent=2))
        else:
            click.echo(render(lock), nl=False)
        return
    write_lock(lock, Path(output))
    if fmt == "json":
        click.echo(json.dumps({"lockfile": output, "lock": lock_json(lock),
                               "considered": _considered(res)}, indent=2))
        return
    click.echo(_summary(lock))
    if explain:
        click.echo(_explain(res))
    click.echo(f"Wrote {output}")


def _considered(res: Resolution) -> list[dict[str, Any]]:
    return [
        {"ref": c.ref, "runtime": c.runtime, "version": c.version, "source": c.source,
         "date": c.date.isoformat() if c.date != dt.date.min else None, "valid": c.valid,
         "verdict": c.verdict, "reasons": c.reasons,
         "frameworks": {f.name: f.version for f in c.frameworks}}
        for c in res.considered
    ]


def _pinned(p: Pinned | None) -> str:
    if p is None:
        return "-"
    if p.value is not None:
        return p.value
    if p.constraint:
        return f"{p.constraint} (freeze from host)"
    if p.allowed:
        shown = ", ".join(p.allowed[:4]) + (", ..." if len(p.allowed) > 4 else "")
        return f"one of {shown} (freeze from host)"
    return f"unknown: {p.reason}"


def _summary(lock: Lockfile) -> str:
    t = lock.target
    tgt = t.gfx_target or t.compute_capability
    rows = [
        ("GPU", f"{_pinned(t.gpu)} ({_pinned(tgt)})"),
        ("Runtime", f"{'ROCm' if lock.runtime.name == 'rocm' else 'CUDA'} "
                    f"{_pinned(lock.runtime.version)}"),
    ]
    rows += [(f"Framework {f.name}", f"{_pinned(f.version)}  build {_pinned(f.build)}")
             for f in lock.frameworks]
    rows += [
        (f"Firmware ({lock.firmware.kind})", _pinned(lock.firmware.version)),
        (f"Kernel driver ({lock.kernel_driver.name})", _pinned(lock.kernel_driver.version)),
        ("OS", _pinned(lock.os)),
    ]
    if lock.model:
        rows.append(("Model", f"{lock.model.id}@{lock.model.revision}"))
    if lock.packages is not None:
        from pinning.matrix.names import TRITON_DISTRIBUTIONS

        tritons = [f"{n}=={v}" for n, v in lock.packages.items() if n in TRITON_DISTRIBUTIONS]
        rows.append(("Python packages", f"{len(lock.packages)} frozen"
                     + (f" (Triton: {', '.join(tritons)})" if tritons else "")))
    if lock.frozen is not None:
        fz = lock.frozen
        forced = f"; forced, {len(fz.deviations)} deviation(s)" if fz.forced else ""
        rows.append(("Frozen from", f"{lock.frozen.host} ({lock.frozen.snapshot}{forced})"))
    width = max(len(k) for k, _ in rows)
    out = [f"{k:<{width}}  {v}" for k, v in rows]
    out.append("Sources:")
    for r in lock.matrix.rows:
        when = f"published {r.published}" if r.published else f"checked {r.checked}"
        out.append(f"  {r.ref}: {r.source} ({when})")
    out += [f"Note: {n}" for n in lock.notes[:3]]
    return "\n".join(out)


def _explain(res: Resolution) -> str:
    out = ["", "Candidates (newest first):"]
    for c in res.considered:
        fws = ", ".join(f"{f.name} {f.version or '?'}" for f in c.frameworks)
        head = f"  {'ROCm' if c.runtime == 'rocm' else 'CUDA'} {c.version:<8} "
        head += f"[{c.verdict}] {c.ref}"
        if c.date != dt.date.min:
            head += f" ({c.date})"
        out.append(head)
        if fws and c.valid:
            out.append(f"      validates {fws}")
        for r in c.reasons:
            out.append(f"      - {r}")
    return "\n".join(out)


# ------------------------------------------------------------------------------ matrix
@main.group()
def matrix() -> None:
    """Inspect and import the compatibility matrix."""


@matrix.command("list")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--as-of", metavar="DATE", help="Show the matrix as published on DATE.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def matrix_list(overlays: tuple[str, ...], as_of: str | None, fmt: str) -> None:
    """List the runtime releases, wheel variants and data files, each with source and date."""
    from pinning.matrix.load import load_matrix

    m = load_matrix(overlays)
    when = _date("--as-of", as_of)
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
        click.echo(f"  {r.runtime.upper():4} {r.version:<7} {fws}")
        click.echo(f"       source: {r.source}; {date} [{rr.file.name}]")
    click.echo("PyTorch wheel variants (upstream):")
    by_series: dict[str, list[str]] = {}
    for w, _ in m.wheels(as_of=when):
        by_series.setdefault(w.series, []).append(w.tag + ("*" if w.status != "stable" else ""))
    for s, tags in by_series.items():
        click.echo(f"  pytorch {s:<5} {', '.join(tags)}")
    click.echo("  (* experimental)  source: PyTorch RELEASE.md release compatibility matrix")
    click.echo("Data files:")
    for f in m.files:
        click.echo(f"  {f.name:<22} {'overlay ' if f.overlay else ''}{f.path}")


@matrix.command("show")
@click.argument("what")
@click.option("--matrix", "overlays", multiple=True, metavar="FILE", help="Add a site overlay.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def matrix_show(what: str, overlays: tuple[str, ...], fmt: str) -> None:
    """Show rows with their sources: WHAT is a release (rocm-7.2.0, cuda-13.4.2, 10.0.0), a
    GPU (mi300x), `gpus`, `cuda`, or a data file name.
    """
    from pinning.matrix.load import load_matrix

    m = load_matrix(overlays)
    w = what.strip().lower()
    rows: list[tuple[str, Any]] = []
    if w == "gpus":
        rows = [(f"gpus:{g.id}", g) for g in m.gpus]
    elif w == "cuda":
        rows = [(f"{f.name}:cuda-{t.version}", t) for t, f in m.cuda_toolkits()]
        rows += [(f"{f.name}:{r.key}", r) for r, f in m.driver_rules()]
    elif any(f.name == w for f in m.files):
        f = next(f for f in m.files if f.name == w)
        rows = [(f"{f.name}:{r.key}", r) for r in f.data.releases]
        rows += [(f"{f.name}:{g.id}", g) for g in f.data.gpus]
    else:
        key = w if w.startswith(("rocm-", "cuda-")) else None
        for f in m.files:
            for r in f.data.releases:
                if r.key == key or r.version == w:
                    rows.append((f"{f.name}:{r.key}", r))
            for fw in f.data.firmware:
                if key == f"rocm-{fw.runtime_version}" or fw.runtime_version == w:
                    rows.append((f"{f.name}:rocm-{fw.runtime_version}/{fw.gpu}", fw))
            for t in f.data.cuda_toolkits:
                if key == f"cuda-{t.version}" or t.version == w:
                    rows.append((f"{f.name}:cuda-{t.version}", t))
        if not rows:
            found = m.find_gpu(what)
            for g in (found if isinstance(found, list) else [found]):
                rows.append((f"gpus:{g.id}", g))
    if fmt == "json":
        click.echo(json.dumps([{"ref": ref, **row.model_dump(mode="json", by_alias=True,
                                                             exclude_none=True)}
                               for ref, row in rows], indent=2))
        return
    for ref, row in rows:
        click.echo(f"[{ref}]")
        for k, v in row.model_dump(mode="json", by_alias=True, exclude_none=True,
                                   exclude_defaults=True).items():
            click.echo(f"  {k}: {json.dumps(v) if not isinstance(v, str) else v}")


@matrix.command("import-amd")
@click.argument("csv_path", metavar="CSV", type=click.Path(dir_okay=False))
@click.option("--page", type=click.Path(dir_okay=False),
              help="The matrix .rst page of the same copy (resolves footnote texts).")
@click.option("--release-notes", multiple=True, type=click.Path(dir_okay=False),
              help="ROCm 7.x RELEASE.md files whose firmware tables to import.")
@click.option("--published", metavar="DATE",
              help="Date of the copy (default: the YYYY-MM-DD in the CSV file name).")
@click.option("-o", "--output", default="-", show_default=True, metavar="FILE",
              help="Matrix TOML to write; '-' prints it.")
def matrix_import_amd(csv_path: str, page: str | None, release_notes: tuple[str, ...],
                      published: str | None, output: str) -> None:
    """Convert AMD's historical compatibility CSV (and release-note firmware tables) into a
    pin matrix file.
    """
    from pinning.matrix.importers.build import amd_matrix_file

    mf = amd_matrix_file(Path(csv_path), page=Path(page) if page else None,
                         release_notes=[Path(p) for p in release_notes],
                         published=_date("--published", published))
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
@click.option("-o", "--output", default="-", show_default=True, metavar="FILE")
def matrix_import_pytorch(md_path: str, checked: str, output: str) -> None:
    """Convert PyTorch's release compatibility matrix into wheel-variant rows."""
    from pinning.matrix.importers.build import pytorch_wheels_file

    when = _date("--checked", checked)
    assert when is not None
    mf = pytorch_wheels_file(Path(md_path), checked=when)
    _emit_matrix_file(mf, "import-pytorch", output, f"{len(mf.wheels)} wheel variants")


# -------------------------------------------------------------------------------- lock
@main.group()
def lock() -> None:
    """Show and validate lockfiles."""


@lock.command("show")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def lock_show(path: str, fmt: str) -> None:
    """Print a lockfile's stack, with where each value came from."""
    from pinning.lockfile.io import lock_json, read_lock

    lk = read_lock(Path(path))
    if fmt == "json":
        click.echo(json.dumps(lock_json(lk), indent=2))
        return
    click.echo(f"{path}: lock-version {lk.lock_version}, {lk.content_hash}")
    click.echo(f"Generated by pin {lk.generator.version}: {lk.generator.command}")
    click.echo(_summary(lk))


@lock.command("validate")
@click.argument("paths", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))
def lock_validate(paths: tuple[str, ...]) -> None:
    """Check lockfiles against the schema, their lock-version and content hash (exit 5)."""
    from pinning.lockfile.io import read_lock

    for p in paths:
        lk = read_lock(Path(p))
        click.echo(f"{p}: valid (lock-version {lk.lock_version}, {lk.content_hash})")


def _register_host_commands() -> None:
    from pinning.cli.guard import register as register_guard
    from pinning.cli.host import register
    from pinning.cli.image import register as register_build
    from pinning.cli.sign import register as register_sign

    register(main)
    register_build(main)
    register_sign(main)
    register_guard(main)


_register_host_commands()
