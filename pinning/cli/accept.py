"""``pin accept``: acceptance gates. ``init`` writes a commented gates file; ``judge``
judges serving results a team already has (vLLM, SGLang, GuideLLM) against its SLOs.

Registered on the main group by :func:`register`; the core is imported inside the commands
so ``pin --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, output_path, path_given
from pinning.errors import AcceptanceFailed, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["accept", "register"]


@click.group()
def accept() -> None:
    """Acceptance gates: whether this stack imports, trains and serves as you require.

    \b
      pin accept init                                   # write accept.toml (commented)
      pin accept judge accept.toml --from result.json   # judge results you already have
      pin accept run accept.toml --python .venv/bin/python  # run the [train] gate here
    """


@accept.command("init")
@click.option("-o", "--output", callback=output_path, default="accept.toml",
              show_default=True, metavar="FILE", help="Where to write the template.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def init(output: str, force: bool) -> None:
    """Write a commented gates file whose example values name their public source.

    Never replaces an existing file unless --force is given (exit 2).
    """
    from importlib.resources import files

    from pinning.util.files import atomic_write_bytes

    path = cli_path(output)
    if output != "-" and (path.exists() or path.is_symlink()) and not force:
        raise UsageError(f"{output} exists; pin accept init does not replace it.",
                         hint="Give --force to replace it, or -o another file.")
    data = files("pinning.accept").joinpath("template.toml").read_bytes()
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc
    if output != "-":
        click.echo(f"Wrote {printable(output, newlines=False)}: edit every EXAMPLE value "
                   "before you rely on it.")


@accept.command("judge")
@click.argument("config", metavar="ACCEPT.TOML", callback=path_given)
@click.argument("more_sources", metavar="[FILE]...", nargs=-1, callback=path_given)
@click.option("--from", "sources", multiple=True, metavar="FILE", callback=path_given,
              help="A result file: `vllm bench serve --save-result` JSON, SGLang "
                   "bench_serving JSON lines, or GuideLLM benchmarks.json. Repeatable; "
                   "further files may follow it (--from a.json b.json).")
@click.option("--lock", "lock_file", metavar="LOCK", callback=path_given,
              help="The lockfile of the stack that was measured: its content hash goes "
                   "into the result.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the result JSON (schemas/accept-result.schema.json) here.")
@format_option
def judge(config: str, more_sources: tuple[str, ...], sources: tuple[str, ...],
          lock_file: str | None, output: str | None, fmt: str) -> None:
    """Judge serving results you already have against the [serve.slo] of ACCEPT.TOML.

    Prints, per run (each concurrency or rate point), every SLO with the measured value,
    the limit and pass or fail with the reason. Goodput is recomputed from per-request
    data when the file holds it (--save-detailed), else taken from the file and marked so.

    Exit 0 when every SLO holds on every run, 12 naming the failed SLOs otherwise, 2 for
    a bad gates or result file, 5 for a bad lockfile.
    """
    from pinning import __version__
    from pinning.accept.config import read_config
    from pinning.accept.judge import judge as run_judge
    from pinning.accept.results import read_results
    from pinning.util.files import sha256_hex

    sources = (*sources, *more_sources)
    if not sources:
        raise UsageError("pin accept judge needs at least one result file (--from FILE).",
                         hint="e.g. pin accept judge accept.toml --from result.json")
    raw, cfg = read_config(cli_path(config))
    if cfg.serve is None:
        raise UsageError(f"Gates file {config}: no [serve] section; judge needs its "
                         "[serve.slo].", hint="Add [serve.slo] (see `pin accept init`).")
    if not cfg.serve.slo.model_dump(exclude_none=True):
        raise UsageError(f"Gates file {config}: [serve.slo] sets no limit; nothing to "
                         "judge.", hint="Set e.g. ttft-p99-ms, tpot-p99-ms, failed-max.")
    lock_hash = None
    if lock_file is not None:
        from pinning.lockfile.io import read_lock

        lock_hash = read_lock(cli_path(lock_file)).content_hash
    reads = [r for src in sources for r in read_results(cli_path(src))]
    result = run_judge(reads, cfg.serve.slo, config_hash=sha256_hex(raw),
                       lock_content_hash=lock_hash, pin_version=__version__)
    document = result.model_dump(mode="json", by_alias=True)
    if output is not None:
        _write_result(output, result)
    if fmt == "json":
        emit(document)
    elif output != "-":
        click.echo(_text(result))
        if output is not None:
            click.echo(f"Wrote {printable(output, newlines=False)}.")
    if not result.passed:
        raise AcceptanceFailed("The serving gate failed: " + "; ".join(result.failed_slos)
                               + ".")


@accept.command("run")
@click.argument("config", metavar="ACCEPT.TOML", callback=path_given)
@click.option("--python", "python", metavar="PYTHON",
              help="The Python of the environment under test (with torch) that runs the "
                   "builtin tiny-lm trainer; unused for a [train] command.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1, max=86_400),
              default=600.0, show_default=True, metavar="SECONDS",
              help="The limit for each trainer process.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the result JSON here.")
@format_option
def run(config: str, python: str | None, timeout_s: float, output: str | None,
        fmt: str) -> None:
    """Run the [train] gate of ACCEPT.TOML on this host: a full run, a run stopped at
    resume-at and resumed in a new process, and the loss, checkpoint and step-time checks.

    Only [train] runs in this version. Exit 0 when every check passes, 12 naming the
    failed checks otherwise, 2 for a bad gates file or a missing --python.
    """
    import tempfile

    from pinning import __version__
    from pinning.accept.config import read_config
    from pinning.accept.train import AcceptRunResult, run_train_gate
    from pinning.util.files import sha256_hex

    path = cli_path(config)
    raw, cfg = read_config(path)
    if cfg.train is None:
        raise UsageError(f"Gates file {config}: no [train] section; only the [train] gate "
                         "runs in this version of pin accept run.",
                         hint="Add [train] (see `pin accept init`); judge serving results "
                              "with `pin accept judge`.")
    if cfg.train.builtin is not None and not python:
        raise UsageError("The builtin tiny-lm trainer needs --python: the Python of the "
                         "environment under test, with torch installed.",
                         hint="e.g. pin accept run accept.toml --python .venv/bin/python")
    with tempfile.TemporaryDirectory(prefix="pin-accept-") as work:
        train = run_train_gate(cfg.train, python, Path(work), timeout_s=timeout_s,
                               config_dir=path.parent)
    result = AcceptRunResult(pin_version=__version__, config_sha256=sha256_hex(raw),
                             train=train, passed=train.passed)
    if output is not None:
        _write_result(output, result)
    if fmt == "json":
        emit(result.model_dump(mode="json", by_alias=True))
    elif output != "-":
        click.echo(_train_text(train))
        if output is not None:
            click.echo(f"Wrote {printable(output, newlines=False)}.")
    if not train.passed:
        raise AcceptanceFailed("The training gate failed: " + "; ".join(train.failed_checks)
                               + ".")


def _train_text(train: object) -> str:
    """The training gate's checks as a table for people, then the verdict."""
    from pinning.accept.train import TrainResult
    from pinning.cli.render import table_text

    assert isinstance(train, TrainResult)
    rows = [(c.name, "-" if c.measured is None else f"{c.measured:.6g}",
             "-" if c.limit is None else f"{c.limit:.6g}", "pass" if c.passed else "FAIL",
             printable(c.reason, newlines=False)) for c in train.checks]
    title = f"train: {train.trainer}, {train.steps} steps {'PASS' if train.passed else 'FAIL'}"
    verdict = "PASS: every training check holds." if train.passed else (
        f"FAIL: {len(train.failed_checks)} training check(s) failed.")
    return table_text(("check", "measured", "limit", "verdict", "reason"), rows,
                      title=title) + "\n\n" + verdict


def _text(result: object) -> str:
    """The tables for people: one per run, then the verdict."""
    from pinning.accept.judge import AcceptResult
    from pinning.cli.render import table_text

    assert isinstance(result, AcceptResult)
    parts = []
    for p in result.points:
        s = p.summary
        where = (f"concurrency {s.max_concurrency}" if s.max_concurrency else
                 f"rate {s.request_rate}/s" if s.request_rate else "unlimited rate")
        version = s.harness_version or "version not recorded"
        title = (f"{s.source}#{s.index} ({s.harness}, {version}; {where}; "
                 f"{s.completed} completed) {'PASS' if p.passed else 'FAIL'}")
        rows = [(c.slo, "-" if c.measured is None else f"{c.measured:.6g}",
                 f"{'<=' if c.bound == 'max' else '>='} {c.limit:.6g} {c.unit}",
                 "pass" if c.passed else "FAIL", c.reason) for c in p.checks]
        rates = ", ".join(f"{t.per_s:.4g}/s {t.basis}" for t in s.throughput)
        parts.append(table_text(("metric", "measured", "limit", "verdict", "reason"), rows,
                                title=title) + (f"\n  throughput: {rates}" if rates else ""))
    verdict = "PASS: every SLO holds." if result.passed else (
        f"FAIL: {len(result.failed_slos)} SLO check(s) failed.")
    return "\n\n".join(parts) + "\n\n" + verdict


def _write_result(output: str, result: BaseModel) -> None:
    """Write ``result`` as JSON to ``-o output`` atomically ('-': standard output); exit 2
    naming the path when it cannot be written.
    """
    from pinning.util.files import atomic_write_bytes

    try:
        atomic_write_bytes(cli_path(output),
                           (result.model_dump_json(by_alias=True, indent=1) + "\n").encode())
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc


def register(group: click.Group) -> None:
    """Add ``pin accept`` (init, judge, run) to the ``pin`` group."""
    group.add_command(accept)
