"""``pin accept``: acceptance gates. ``init`` writes a commented gates file; ``judge``
judges serving results a team already has (vLLM, SGLang, GuideLLM) against its SLOs.

Registered on the main group by :func:`register`; the core is imported inside the commands
so ``pin --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    cli_path,
    format_option,
    lock_target_option,
    output_path,
    path_given,
    refuse_stdout_twice,
)
from pinning.cli.results import json_bytes, write_output
from pinning.cli.service import open_service, post_artefact, report_options
from pinning.errors import AcceptanceFailed, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

    from pinning.accept.result import AcceptanceResult

__all__ = ["accept"]


_UNBOUND_OK = click.option(
    "--unbound-ok", "unbound_ok", is_flag=True,
    help="Keep a result whose stack differs from the lock's (or could not be checked) "
         "and exit on its gates alone: it is still marked unbound, says so on its first "
         "line, and pin cost and pin report never count it as evidence for the lock.")


@click.group()
def accept() -> None:
    """Acceptance gates: whether this stack imports, trains and serves as you require.

    \b
      pin accept init                                   # write accept.toml (commented)
      pin accept judge accept.toml --from result.json   # judge results you already have
      pin accept run accept.toml --python .venv/bin/python  # run every gate here
      pin accept run accept.toml --image REF --lock pin.lock -o result.json --sign pin.key
      pin accept reference accept.toml --prompts p.jsonl -o ref.jsonl  # on the trusted stack
      pin accept show result.json                       # what was tested, every check
      pin accept compare nvidia.json rocm.json          # two platforms side by side
    """


@accept.command("init", short_help="Write a commented gates file (accept.toml).")
@click.option("-o", "--output", callback=output_path, default="accept.toml",
              show_default=True, metavar="FILE", help="Where to write the template.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def init(output: str, force: bool) -> None:
    """Write a commented gates file whose example values name their public source.

    Never replaces an existing file unless --force is given (exit 2); --force replaces a
    symbolic link itself, not the file it points to.
    """
    from importlib.resources import files

    path = cli_path(output)
    if output != "-" and (path.exists() or path.is_symlink()) and not force:
        raise UsageError(f"{output} exists; pin accept init does not replace it.",
                         hint="Give --force to replace it, or -o another file.")
    data = files("pinning.accept").joinpath("template.toml").read_bytes()
    if output != "-" and path.is_symlink():
        try:
            path.unlink()  # --force replaces the link itself, never the file it points to
        except OSError as exc:
            raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc
    write_output(output, data)
    if output != "-":
        click.echo(f"Wrote {printable(output, newlines=False)}: edit every EXAMPLE value "
                   "before you rely on it.")


@accept.command("judge", short_help="Judge vLLM, SGLang or GuideLLM results against SLOs.")
@click.argument("config", metavar="ACCEPT.TOML", callback=path_given)
@click.argument("more_sources", metavar="[FILE]...", nargs=-1, callback=path_given)
@click.option("--from", "sources", multiple=True, metavar="FILE", callback=path_given,
              help="A result file: `vllm bench serve --save-result` JSON, SGLang "
                   "bench_serving JSON lines, or GuideLLM benchmarks.json. Repeatable; "
                   "further files may follow it (--from a.json b.json).")
@click.option("--lock", "lock_file", metavar="LOCK", callback=path_given,
              help="The lockfile of the stack that was measured: its content hash goes "
                   "into the result (of a multi-target lock, --target's).")
@lock_target_option
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the result JSON (schemas/accept-result.schema.json) here.")
@_UNBOUND_OK
@format_option
def judge(config: str, more_sources: tuple[str, ...], sources: tuple[str, ...],
          lock_file: str | None, target: str | None, output: str | None, unbound_ok: bool,
          fmt: str) -> None:
    """Judge serving results you already have against the [serve.slo] of ACCEPT.TOML.

    Prints, per run (each concurrency or rate point), every SLO with the measured value,
    the limit and pass or fail with the reason. Goodput is recomputed from per-request
    data when the file holds it (--save-detailed), else taken from the file and marked so.

    A result file names the model, not its files: with a --lock that pins its model's
    files the result records "model: not verified" and is unbound (exit 12 naming it,
    unless --unbound-ok).

    Exit 0 when every SLO holds on every run, 12 naming the failed SLOs (or why the
    result is unbound) otherwise, 2 for a bad gates or result file, 5 for a bad lockfile.
    """
    from pinning.accept.runner import judge_files

    sources = (*sources, *more_sources)
    if not sources:
        raise UsageError("pin accept judge needs at least one result file (--from FILE).",
                         hint="e.g. pin accept judge accept.toml --from result.json")
    refuse_stdout_twice(output, fmt)
    result = judge_files(cli_path(config), [cli_path(s) for s in sources],
                         lock=lock_file, unbound_ok=unbound_ok, target=target)
    _deliver(result, output, fmt)
    _exit_for(result)


def _exit_for(result: AcceptanceResult) -> None:
    """Raise :class:`AcceptanceFailed` (exit 12) when a gate failed or the result is
    unbound without --unbound-ok, naming both; return for a result that counts.
    """
    from pinning.cli.accept_report import failure_text, unbound_refusal

    unbound = unbound_refusal(result)
    if not result.passed:
        raise AcceptanceFailed(" ".join(t for t in (unbound, failure_text(result)) if t))
    if unbound is not None:
        raise AcceptanceFailed(unbound, hint="Run the gates on the stack the lock pins "
                                             "(pin verify LOCK shows how this host differs), "
                                             "or pass --unbound-ok to keep the result as "
                                             "unbound.")


@accept.command("run", short_help="Run the import, training and serving gates.")
@click.argument("config", metavar="ACCEPT.TOML", callback=path_given)
@click.option("--gate", "gates", multiple=True, type=click.Choice(["import", "train", "serve"]),
              help="Run only this gate (repeatable). Default: every gate the file has.")
@click.option("--lock", "lock_file", metavar="LOCK", callback=path_given,
              help="The lockfile of the stack under test: its content hash (and its model's) "
                   "goes into the result (of a multi-target lock, --target's).")
@lock_target_option
@click.option("--image", "image", metavar="REF",
              help="Run the import and training gates inside this image (Docker): AMD "
                   "gets /dev/kfd and /dev/dri, NVIDIA a GPU device request, per --vendor.")
@click.option("--host", "on_host", is_flag=True,
              help="Run the gates on this host (the default).")
@click.option("--vendor", type=click.Choice(["auto", "amd", "nvidia", "cpu"]), default="auto",
              show_default=True,
              help="GPU access for --image: auto reads /dev (kfd: AMD, nvidiactl: NVIDIA).")
@click.option("--python", "python", metavar="PYTHON",
              help="The Python of the environment under test, which runs the import probe "
                   "and the builtin tiny-lm trainer (in --image mode the image's, default "
                   "python3).")
@click.option("--snapshot", "snapshot", metavar="FILE", callback=path_given,
              help="This host's snapshot (pin probe -o FILE) whose hash goes into the "
                   "result; default: probe this host now.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1, max=86_400),
              default=600.0, show_default=True, metavar="SECONDS",
              help="The limit for each import-probe and trainer process.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the result JSON here (with --sign: the signed DSSE envelope).")
@click.option("--sign", "sign_key", metavar="KEY", callback=path_given,
              help="Sign the result with this private key (pin keygen): an in-toto "
                   "statement in a DSSE envelope, attached to --image when it is in a "
                   "registry.")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry URL override for attaching the signed result.")
@click.option("--engine", metavar="URL",
              help="Docker Engine for --image (default: DOCKER_HOST, else the local socket).")
@report_options("Also post the result (the exact bytes -o writes: with --sign the signed "
                "envelope) to this pin service; the id it stores it under goes to stderr.")
@_UNBOUND_OK
@format_option
def run(config: str, gates: tuple[str, ...], lock_file: str | None, target: str | None,
        image: str | None, on_host: bool, vendor: str, python: str | None, snapshot: str | None,
        timeout_s: float, output: str | None, sign_key: str | None,
        registry_url: str | None, engine: str | None, report_to: str | None,
        token_file: str | None, ca_cert: str | None, unbound_ok: bool, fmt: str) -> None:
    """Run the gates of ACCEPT.TOML and record the result with what was tested.

    \b
    import  imports the modules, records the build (torch HIP/CUDA, devices,
            collect_env) and checks a small matmul on the device against a CPU
            reference within the dtype tolerance
    train   a full run, a run stopped at resume-at and resumed in a new process:
            finite loss, loss ratio, bit-exact resume, step-time spread
    serve   pin's load generator against [serve] endpoint: a concurrency sweep,
            SLOs per run, output quality and sustained throughput

    The result records the lock's content hash, the image digest, the host snapshot hash,
    the model's content hash and pin's version, and per gate pass or fail with the reason.
    It also records the stack the gates ran on (GPU, kernel driver, runtime, framework
    build, image digest, model content hash: the probed host, the import gate's torch) and
    every layer the lock pins where that stack differs or could not be checked: such a
    result is UNBOUND, exit 12 naming the differences, unless --unbound-ok (then it is
    kept, still marked unbound, and says so on its first line).
    --python is needed on this host for [import] and the builtin trainer. Exit 0 when
    every gate passes on the lock's stack, 12 naming the failed checks or the differences
    otherwise, 2 for a bad gates file, a
    missing --python or an unreachable endpoint, 5 for a bad lockfile, 8 when the Docker
    engine for --image cannot be reached, 9 when signing fails. With --report-to URL
    (a token with the publish scope) the result is also posted after it is written: a
    report that fails is exit 13 when every gate passed, else only printed (exit 12 stays).
    """
    from pinning.accept.runner import RunRequest, run_gates

    if image and on_host:
        raise UsageError("--image and --host exclude each other: the gates run either "
                         "inside the image or on this host.")
    if sign_key is not None and output is None:
        raise UsageError("--sign makes a signed envelope: say where it goes with -o FILE "
                         "('-': standard output).")
    refuse_stdout_twice(output, fmt)
    key = _signing_key(sign_key) if sign_key is not None else None  # before the gates run
    client = open_service(report_to, token_file, ca_cert) if report_to else None
    request = RunRequest(config=cli_path(config), gates=gates, lock=lock_file,
                         image=image, vendor=vendor, python=python, snapshot=snapshot,
                         engine=engine, timeout_s=timeout_s, progress=_progress,
                         unbound_ok=unbound_ok, target=target)
    result = run_gates(request)
    envelope = _sign(result, key, image, registry_url) if key is not None else None
    _deliver(result, output, fmt, envelope=envelope)
    body = envelope if envelope is not None else json_bytes(result)
    refused = result.binding is not None and bool(result.binding.differences) and (
        not result.binding.allowed_unbound)
    post_artefact(client, lambda c: c.post_acceptance(body), "acceptance result",
                  local_failed=refused or not result.passed)
    _exit_for(result)


def _deliver(result: AcceptanceResult, output: str | None, fmt: str, *,
             envelope: bytes | None = None) -> None:
    """Write ``result`` (or its signed ``envelope``) to ``-o output``, then print it: the
    JSON envelope with ``--format json``, else the tables (not when ``-o -`` took
    standard output).
    """
    if output is not None:
        write_output(output, envelope if envelope is not None else json_bytes(result))
    if fmt == "json":
        emit(result.model_dump(mode="json", by_alias=True))
    elif output != "-":
        from pinning.cli.accept_report import result_text

        click.echo(result_text(result))
        if output is not None:
            click.echo(f"Wrote {printable(output, newlines=False)}"
                       + (" (signed)." if envelope is not None else "."))


def _progress(line: str) -> None:
    """A progress line on standard error (always shown: the gates take minutes)."""
    click.echo(printable(line, newlines=False), err=True)


def _signing_key(key_path: str) -> EllipticCurvePrivateKey:
    """The private key of ``--sign``, loaded (and its passphrase asked) before any gate
    runs, so a missing key or a wrong passphrase costs nothing. Raises ``UsageError`` (exit
    2) without a passphrase, ``SignatureError`` (exit 9) for a key that cannot be loaded.
    """
    from pinning.sign.policy import signing_key

    def ask(confirm: bool) -> str:  # pin keygen's prompt; no import of another command
        return str(click.prompt("Key passphrase", hide_input=True,
                                confirmation_prompt=confirm))

    return signing_key(cli_path(key_path), ask)


def _sign(result: AcceptanceResult, key: EllipticCurvePrivateKey, image: str | None,
          registry_url: str | None) -> bytes:
    """The signed envelope of ``result``; attached to ``image`` when it is a registry
    reference with a manifest digest.
    """
    from pinning.accept.attest import attach_result, sign_result

    name = image.split("@", 1)[0] if image else None
    envelope = sign_result(result, key, image_name=name)
    subject = result.subject
    if image and subject.image_digest_kind == "manifest":
        attach_result(result, image, key, registry_url=registry_url)
        click.echo(printable(f"Attached the signed result to {image}.", newlines=False),
                   err=True)
    return envelope


@accept.command("reference", short_help="Record greedy reference outputs from a server.")
@click.argument("config", metavar="ACCEPT.TOML", callback=path_given)
@click.option("--prompts", "prompts", metavar="FILE", callback=path_given,
              help="A prompt file (JSON lines, {\"prompt\": ...} a line); default: the "
                   "[serve.workload] prompts.")
@click.option("-o", "--output", callback=output_path, required=True, metavar="FILE",
              help="Where to write the reference (JSON lines; '-': standard output).")
@format_option
def reference(config: str, prompts: str | None, output: str, fmt: str) -> None:
    """Record the reference for [serve.quality]: each prompt completed at temperature 0 by
    the [serve] endpoint of ACCEPT.TOML, one at a time. Run it against the stack you trust
    (e.g. the current NVIDIA one), then gate the candidate with reference = FILE.

    Exit 0 when every prompt was answered, 2 for a bad gates or prompt file, an endpoint
    that cannot be reached or a request that fails.
    """
    import json

    from pinning.accept.config import read_config
    from pinning.accept.serve import record_reference

    refuse_stdout_twice(output, fmt, what="reference")
    path = cli_path(config)
    _, cfg = read_config(path)
    if cfg.serve is None:
        raise UsageError(f"Gates file {config}: no [serve] section; the reference comes from "
                         "its endpoint.", hint="Add [serve] (see `pin accept init`).")
    lines = record_reference(cfg.serve, path.parent,
                             prompts_file=cli_path(prompts) if prompts else None,
                             progress=_progress)
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    write_output(output, data)
    if fmt == "json":
        emit({"output": output, "prompts": len(lines)})
    elif output != "-":
        click.echo(f"Wrote {len(lines)} reference output(s) to "
                   f"{printable(output, newlines=False)}.")


@accept.command("show", short_help="Show a result: what was tested, every check.")
@click.argument("result_file", metavar="RESULT", callback=path_given)
@click.option("--key", "pub_path", metavar="PUB", callback=path_given,
              help="Verify a signed result with this public key (exit 9 when it does not).")
@format_option
def show(result_file: str, pub_path: str | None, fmt: str) -> None:
    """Show a result of pin accept run or judge (plain JSON or signed envelope): what was
    tested, each gate and every check with its measured value, limit and reason.

    Exit 0 whatever the result says (the verdict is printed), 2 for a file that is not a
    result, 9 when --key is given and the signature does not verify.
    """
    from pinning.accept.attest import read_result_file
    from pinning.cli.accept_report import is_envelope, result_text

    result, verified = read_result_file(cli_path(result_file),
                                        cli_path(pub_path) if pub_path else None)
    if fmt == "json":
        emit({"result": result.model_dump(mode="json", by_alias=True),
              "signature-verified": verified})
        return
    click.echo(result_text(result))
    if pub_path is not None:
        click.echo("Signature: verified with " + printable(pub_path, newlines=False) + ".")
    elif is_envelope(result_file):
        click.echo("Signature: NOT verified (a signed envelope; give --key PUB to verify it).")


@accept.command("compare", short_help="Two results side by side, metric by metric.")
@click.argument("first", metavar="A", callback=path_given)
@click.argument("second", metavar="B", callback=path_given)
@click.option("--key", "pub_path", metavar="PUB", callback=path_given,
              help="Verify signed results with this public key.")
@format_option
def compare(first: str, second: str, pub_path: str | None, fmt: str) -> None:
    """Two results side by side (e.g. the NVIDIA control and the ROCm candidate): what
    each tested, each metric in both with the delta, and which gates pass where.

    Serving runs are paired by concurrency and rate. Exit 0 (the comparison is printed),
    2 for a file that is not a result, 9 for a bad signature with --key.
    """
    from pinning.accept.attest import read_result_file
    from pinning.accept.compare import compare_results
    from pinning.cli.accept_report import compare_text

    key = cli_path(pub_path) if pub_path else None
    a, _ = read_result_file(cli_path(first), key)
    b, _ = read_result_file(cli_path(second), key)
    table = compare_results(a, b, first, second)
    if fmt == "json":
        emit(table.model_dump(mode="json", by_alias=True))
    else:
        click.echo(compare_text(table))

