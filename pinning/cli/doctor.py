"""``pin doctor``: diagnose pasted environment dumps against the matrix.

Loaded from :data:`pinning.cli.COMMANDS` when used; the doctor and matrix code are imported
inside the command so ``pin --help`` stays fast.
"""

from __future__ import annotations

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option
from pinning.cli.render import terminal_style
from pinning.cli.render_host import doctor_text
from pinning.errors import DriftError, NothingToJudge, ProbeError, UsageError

__all__ = ["doctor"]

_LIMIT = 64 * 1024 * 1024
"""The most bytes read from one dump file or stdin (64 MiB)."""


def _read_dump(path: str) -> tuple[str, str]:
    """``(label, text)`` of one dump: a regular file, or stdin for ``-``.

    Raises ``ProbeError`` (exit 7, a dump that cannot be read) when the file is absent, not
    a regular file (a FIFO, a device, a directory), cannot be read or is over 64 MiB;
    stdin is read to at most 64 MiB + 1 byte. Bytes that are not UTF-8 are replaced.
    """
    from pinning.cli.options import cli_path
    from pinning.util.files import read_regular_bytes

    label = "<stdin>" if path == "-" else path
    hint = "Pass files that hold pasted tool output ('-' reads standard input)."
    data = read_regular_bytes(cli_path(path), ProbeError, label=label, hint=hint, limit=_LIMIT)
    return (label, data.decode("utf-8", "replace"))


@click.command()
@click.argument("paths", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(allow_dash=True))
@click.option("--matrix", "overlays", multiple=True, metavar="FILE",
              help="Add a site overlay to the matrix (also PIN_MATRIX).")
@format_option
def doctor(paths: tuple[str, ...], overlays: tuple[str, ...], fmt: str) -> None:
    """Diagnose pasted environment dumps against the matrix.

    Reads python -m torch.utils.collect_env (and vLLM's), python -m sglang.check_env,
    pip list / pip freeze / pip inspect, uv pip list / uv pip freeze, uv tree, pipdeptree,
    conda list (text or --json), amd-smi version / static / firmware, rocm-smi, rocminfo,
    nvidia-smi (--query-gpu CSV with its header line, or the banner) and
    /proc/driver/nvidia/version: several files, or one file with several dumps. '-' reads
    stdin.

    Reports each problem with a code, an explanation and its source: unsupported gfx target,
    CUDA torch on an AMD host, several Triton distributions, a JAX plugin for another ROCm
    major, a driver too old for the CUDA build, HSA_OVERRIDE_GFX_VERSION, an inbox or old
    amdgpu, and more. --format json carries every fact read. Exit 0 when nothing is wrong, 6
    when an error is found, 7 when a file cannot be read or holds no recognisable dump, 14
    when the dumps give no rule anything to judge.
    """
    from pinning.doctor.report import doctor as do_doctor
    from pinning.matrix.load import load_matrix

    if paths.count("-") > 1:
        raise UsageError("'-' (stdin) can be given once.")
    files = [_read_dump(path) for path in paths]
    report = do_doctor(files, load_matrix(overlays))
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True, exclude_none=True), ascii_only=False)
    else:
        click.echo(doctor_text(report, style=terminal_style()))
    if not report.judged:
        raise NothingToJudge(
            "Nothing to judge: the dumps were read, but none shows a GPU model or target, torch "
            "build, package, driver, ROCm release or environment variable that a rule checks.")
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        raise DriftError(
            f"{len(errors)} problem(s) found: {', '.join(sorted({f.code for f in errors}))}.",
            hint="Fix the environment as each finding says, then paste a fresh dump.",
        )
