"""``pin audit``: the porting bill of a project before it moves from CUDA to ROCm.

Loaded from :data:`pinning.cli.COMMANDS` when used; the scanners are imported inside the command
so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit, note_format
from pinning.cli.options import (
    cli_path,
    lock_target_option,
    output_path,
    own_folder_rule,
    path_given,
)
from pinning.cli.render import Style, paint, paint_words, status_colour, terminal_style
from pinning.cli.service import artefact_target, post_artefact, report_options
from pinning.errors import AuditFailed, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.audit.bill import AuditReport
    from pinning.audit.run import AuditRequest

__all__ = ["audit"]

_FAIL_ON = ("swap", "port", "blocked")
_KINDS = ("package", "index", "base-image", "arch-list", "extension", "cuda-api", "inline-ptx",
          "warp-size", "tensor-core", "arch-macro", "library", "build-hook", "embedded-kernel",
          "device-string", "nvml", "nvidia-smi", "tf32")
"""The finding kinds (:class:`pinning.audit.model.Kind`; a test keeps them equal), spelled
here so ``pin --help`` does not import the audit package."""


@click.command()
@own_folder_rule
@click.argument("paths", metavar="[PATH]...", nargs=-1, callback=path_given,
                type=click.Path(exists=True))
@click.option("-r", "--requirement", "requirements", multiple=True, metavar="SPEC",
              help="Audit the whole dependency closure of SPEC ('vllm==0.11.0'), resolved "
                   "from index metadata with uv (no wheel is downloaded). Repeatable.")
@click.option("--index-url", "index_urls", multiple=True, metavar="URL",
              help="Index for --requirement (default: uv's, PyPI). Repeatable: the first is "
                   "the index, the others extra indexes.")
@click.option("--site-packages", metavar="DIR", callback=path_given,
              type=click.Path(exists=True, file_okay=False),
              help="An installed environment: its distributions and compiled extensions.")
@click.option("--host", "host_file", metavar="SNAPSHOT", callback=path_given,
              type=click.Path(exists=True, dir_okay=False),
              help="A host snapshot (pin probe -o FILE): its Python distributions.")
@click.option("--gpu", metavar="GPU",
              help="The GPU the move is for (mi300x, gfx942, MI355X): code objects and "
                   "packages limited to some GPUs are judged for it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]),
              default="text", show_default=True, callback=note_format,
              help="text for people; json: the envelope {pin, command, ok, exit-code, result, "
                   "error}, its result is schemas/audit-report.schema.json; sarif: a SARIF "
                   "2.1.0 log for code-scanning views.")
@click.option("--fail-on", type=click.Choice(_FAIL_ON), default="blocked", show_default=True,
              help="Exit 11 when a finding is at or above this verdict "
                   "(ready < swap < port < blocked).")
@click.option("--effort", "effort_file", metavar="FILE", callback=path_given,
              type=click.Path(dir_okay=False),
              help="Your team's hours per finding kind (TOML [hours] table); the bill adds "
                   "them up. pin ships no effort numbers.")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB",
              help="Leave out the findings in files matching GLOB, a path relative to the "
                   "audited folder ('third_party', 'csrc/*.cuh'; '*' also crosses '/'; a "
                   "folder excludes all below it). Repeatable. Applies to every format.")
@click.option("--only", "only", multiple=True, metavar="KIND", type=click.Choice(_KINDS),
              help="Only findings of this kind (the --effort keys: " + ", ".join(_KINDS)
                   + "). Repeatable. Applies to every format.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N",
              help="Text bill only: at most N groups per verdict (and N packages, N files), "
                   "saying how many more. JSON and SARIF always list every finding.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the bill here in the chosen format ('-': standard output); "
                   "standard output gets a one-line summary (with --format json: the "
                   "envelope, its result {output, totals, files-scanned, fail-on, failed}).")
@click.option("--hipify-perl/--no-hipify-perl", "hipify_perl", default=True,
              show_default=True,
              help="Add hipify-perl -examine statistics beside pin's findings when "
                   "hipify-perl is on PATH.")
@click.option("--include-vendored", is_flag=True,
              help="Also read vendored CUTLASS / CuTe, CUB and Thrust trees inside the "
                   "project and list their findings (by default each tree is one item).")
@report_options("Also post the bill as JSON (the document -o FILE --format json writes, "
                "whatever --format says) to this pin service; the id it stores it under "
                "goes to stderr.")
@click.option("--report-lock", "report_lock", metavar="LOCK", callback=path_given,
              help="With --report-to: the lock the audit is for (a lock file, or its content "
                   "hash), so the service lists the audit with that lock.")
@lock_target_option
def audit(paths: tuple[str, ...], requirements: tuple[str, ...], index_urls: tuple[str, ...],
          site_packages: str | None, host_file: str | None, gpu: str | None, fmt: str,
          fail_on: str, effort_file: str | None, exclude: tuple[str, ...],
          only: tuple[str, ...], limit: int | None, output: str | None,
          hipify_perl: bool, include_vendored: bool, report_to: str | None, token_file: str | None,
          ca_cert: str | None, report_lock: str | None, target: str | None) -> None:
    """Audit a project before moving it from CUDA to ROCm: the porting bill.

    Reads requirements files (with -r/-c includes and index URLs), pyproject.toml (PEP 621,
    dependency groups, Poetry, uv sources), uv.lock, pylock.toml, poetry.lock, conda
    environment.yml, setup.py/setup.cfg (statically; never run), Dockerfiles, CUDA/C++
    sources and CMake files, Python sources, and ELF extensions, in folders, sdists or wheels;
    with --site-packages or --host an installed environment; with --requirement a package's
    dependency closure. A vendored CUTLASS, CUB or Thrust tree is one item.
    PATH defaults to '.' when no other input is given.

    Each finding says where, why, what to do and its public source, with a verdict: ready,
    swap (a ROCm build or replacement exists), port (code or a source build must change),
    blocked (no ROCm equivalent), or no-data (pin's data does not know it; never guessed).
    Files that cannot be read are listed as skipped with the reason. Identical files count
    once (copies named). The text bill opens with a summary by verdict, kind and folder,
    one line per rule and file; --exclude/--only narrow every format, --limit the text.

    Exit 0 when nothing is at or above --fail-on (default blocked), 11 when something is,
    2 for bad flags, a --requirement uv cannot resolve, paths that hold nothing pin reads
    or a decompression bomb, 7 for an unreadable --host
    snapshot. With --report-to URL (a publish token) the bill is posted once written: a
    failed report is exit 13 when the audit passed, else only printed (exit 11 stays).
    """
    from pinning.audit.run import audit as run_audit

    request = _request(paths, requirements, index_urls, site_packages, host_file, gpu,
                       fail_on, effort_file, output, hipify_perl, include_vendored)
    client, lock_hash = artefact_target(report_to, token_file, ca_cert, report_lock, "audit",
                                        target)
    report = _refined(run_audit(request), exclude, only)
    document = _document(report, fmt, limit)
    summary = _summary(report)
    if output is not None and output != "-":
        _write(output, document)
        if fmt == "json":
            emit({"output": output, "totals": {v.value: n for v, n in report.totals.items()},
                  "files-scanned": report.files_scanned, "fail-on": fail_on,
                  "failed": report.failed})
        else:
            click.echo(f"{summary} Wrote {printable(output, newlines=False)}.")
    elif fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True))
    else:
        click.echo(_painted(document, terminal_style()) if output is None else document,
                   nl=False)
    body = (document if fmt == "json" else _document(report, "json")).encode()
    post_artefact(client, lambda c: c.post_audit(body, lock=lock_hash), "audit",
                  local_failed=report.failed)
    if report.failed:
        raise AuditFailed(f"The porting audit found something at or above --fail-on "
                          f"{fail_on}: {summary}",
                          hint="Read the bill (blocked and port first); --fail-on sets the "
                               "threshold.")


def _request(paths: tuple[str, ...], requirements: tuple[str, ...],
             index_urls: tuple[str, ...], site_packages: str | None, host_file: str | None,
             gpu: str | None, fail_on: str, effort_file: str | None, output: str | None,
             hipify_perl: bool, include_vendored: bool = False) -> AuditRequest:
    """The audit the flags ask for (PATH ``.`` when no input is given). Raises
    ``UsageError`` (exit 2) for --site-packages with --host, --index-url without
    --requirement, or ``-o`` inside an audited folder; what
    :func:`~pinning.audit.bill.read_effort` raises for a bad --effort file.
    """
    from pinning.audit.bill import read_effort
    from pinning.audit.model import Verdict
    from pinning.audit.run import AuditRequest

    if site_packages and host_file:
        raise UsageError("--site-packages and --host both name an installed environment; "
                         "give one.")
    if not paths and not (requirements or site_packages or host_file):
        paths = (".",)
    if index_urls and not requirements:
        raise UsageError("--index-url is for --requirement; index URLs in requirements files "
                         "and pyproject.toml are read from the files themselves.")
    if output is not None and output != "-":
        _refuse_output_in_audited_folder(output, paths)
    effort = (effort_file, read_effort(cli_path(effort_file))) if effort_file else None
    progress = ((lambda line: click.echo(printable(line, newlines=False), err=True))
                if sys.stderr.isatty() else None)
    return AuditRequest(paths=list(paths), requirements=list(requirements),
                        index_urls=list(index_urls), site_packages=site_packages,
                        host=host_file, gpu=gpu, fail_on=Verdict(fail_on), effort=effort,
                        hipify_perl=hipify_perl, include_vendored=include_vendored,
                        progress=progress)


def _write(output: str, document: str) -> None:
    """Write the bill to ``-o FILE`` atomically; ``UsageError`` (exit 2) when it cannot be."""
    from pinning.util.files import atomic_write_bytes

    try:
        atomic_write_bytes(cli_path(output), document.encode())
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc


_HEADS = {"BLOCKED": "red", "PORT": "red", "SWAP": "yellow", "NO DATA": "yellow",
          "READY": "green"}
_VERDICTS = ("blocked", "port", "swap", "no data", "ready", "passes", "fails", "failed")


def _painted(text: str, style: Style) -> str:
    """The text bill with verdicts in colour when ``style`` has colour on: the section
    heads, the totals and result lines, and each package line's verdict; unchanged (byte
    for byte) otherwise.
    """
    if not style.color:
        return text
    out = []
    for line in text.split("\n"):
        head = line.split(" (")[0]
        if head in _HEADS and line.endswith(")"):
            line = paint(head, _HEADS[head], style) + line[len(head):]
        elif line.startswith(("pin audit:", "Result:")):
            line = paint_words(line, _VERDICTS, style)
        elif line[:2] == "  " and line[2:].split(" ", 1)[0] in _VERDICTS:
            word = line[2:].split(" ", 1)[0]
            line = "  " + paint(word, status_colour(word), style) + line[2 + len(word):]
        out.append(line)
    return "\n".join(out)


def _refuse_output_in_audited_folder(output: str, paths: tuple[str, ...]) -> None:
    """Raise ``UsageError`` (exit 2) when ``-o`` names a file of a kind pin audits inside
    one of the PATH folders (the bill would replace the project's own file, and be audited
    next time). ``-o`` naming a PATH itself is refused before, by the rule every command
    keeps (:func:`pinning.cli.options.guard_outputs`).
    """
    from pinning.audit.scan import scanners_for

    target = cli_path(output).resolve()
    for typed in paths:
        root = cli_path(typed).resolve()
        if root.is_dir() and target.is_relative_to(root) and scanners_for(target.name):
            raise UsageError(f"-o {output}: a file of a kind pin audits, inside the audited "
                             f"folder {typed}; the bill would replace or join the project's "
                             "files.", hint="Name the bill audit.sarif, audit.json or "
                                            "audit.txt, or write it outside the folder.")


def _summary(report: AuditReport) -> str:
    from pinning.audit.model import VERDICTS_SHOWN

    return ", ".join(f"{report.totals.get(v, 0)} {v.value}" for v in VERDICTS_SHOWN) + "."


def _refined(report: AuditReport, exclude: tuple[str, ...],
             only: tuple[str, ...]) -> AuditReport:
    """``report`` narrowed by --exclude and --only, with byte-identical files (read from
    disk where the bill's paths are files) counted once.
    """
    from pinning.audit.model import Kind
    from pinning.audit.narrow import digests_on_disk, merge_copies, narrow

    report = narrow(report, exclude=exclude, only=[Kind(k) for k in only])
    paths = [f.path for f in report.findings if f.path]
    return merge_copies(report, digests_on_disk(paths, cli_path))


def _document(report: AuditReport, fmt: str, limit: int | None = None) -> str:
    """The bill in ``fmt``: the text bill (``limit`` groups per verdict at most), the
    report JSON, or a SARIF log.
    """
    from pinning import __version__
    from pinning.audit.render import render_sarif, render_text

    if fmt == "text":
        return render_text(report, limit=limit)
    if fmt == "sarif":
        return json.dumps(render_sarif(report, version=__version__), indent=2,
                          ensure_ascii=True) + "\n"
    return report.model_dump_json(by_alias=True, indent=1) + "\n"
