"""``pin report``: one page for the port-or-stay decision (HTML with inline SVG plots, or
Markdown) from a lockfile, a verify report, a porting audit, acceptance results and a cost
report. Registered on the main group by :func:`register`; the report package (and
matplotlib) is imported inside the command so ``pin --help`` stays fast.
"""

from __future__ import annotations

import click

from pinning.cli.options import cli_path, lock_target_option, output_path, path_given
from pinning.cli.results import write_output
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["report"]


@click.command(short_help="One HTML page for the decision: stack, bill, gates, cost.")
@click.option("--lock", "lock_path", metavar="LOCK", callback=path_given,
              help="The lockfile of the stack (GPU, firmware, driver, runtime, framework, "
                   "image digest).")
@lock_target_option
@click.option("--verify", "verify_path", metavar="VERIFY.json", callback=path_given,
              help="A `pin verify LOCK --format json` report: whether a host matched the lock.")
@click.option("--audit", "audit_path", metavar="AUDIT.json", callback=path_given,
              help="The porting bill (`pin audit --format json -o audit.json`).")
@click.option("--accept", "accept_paths", metavar="RESULT.json", multiple=True,
              callback=path_given,
              help="An acceptance result (pin accept run / judge; plain or signed). "
                   "Repeatable: one per platform, the current one first.")
@click.option("--key", "key_path", metavar="PUB", callback=path_given,
              help="Verify signed acceptance results with this public key (exit 9 when one "
                   "does not verify).")
@click.option("--cost", "cost_path", metavar="COST.json", callback=path_given,
              help="The cost report (`pin cost ... --format json`): cost per million tokens, "
                   "ratio rule, payback, verdict.")
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html",
              show_default=True,
              help="html: one self-contained page (inline CSS and SVG, no script, no URL); "
                   "md: Markdown, plots given as their data tables.")
@click.option("-o", "--output", required=True, callback=output_path, metavar="FILE",
              help="Write the report here ('-': standard output).")
def report(lock_path: str | None, target: str | None, verify_path: str | None,
           audit_path: str | None, accept_paths: tuple[str, ...], key_path: str | None,
           cost_path: str | None, fmt: str, output: str) -> None:
    """Write one page for the decision. It opens with a headline box: the verdict, the
    stack it is for, and every caveat and binding problem; INCONCLUSIVE, with the reason,
    when the inputs disagree (the last result measured on another lock, an audit or cost
    report for another GPU, a port over blocked items never priced or waived). Then the
    stack from the lock and whether a host
    verified, the porting bill's totals and blocked items, each acceptance gate, each
    platform's throughput-latency curve from the serving sweep (SLO lines, chosen
    operating point), cost per million tokens across the sweep, the payback timeline and
    the verdict. Every input is optional; a section without its input says "not given".
    With a multi-target lock (pin lock's pin.lock) --target NAME (needed when it has
    several) is the stack reported: the results must name that target's content hash.

    \b
    Example (the shipped vLLM CPU results):
      pin report --accept tests/data/acceptance/judged-c1.json -o report.html

    Exit 0 when written; 2 for a bad flag, an unreadable or invalid input, or -o naming an
    input; 5 for an invalid lock; 9 for a signature that does not verify with --key.
    """
    from pinning import __version__
    from pinning.cost.report import ReportInputs, render_report
    from pinning.cost.report.inputs import (
        read_accept,
        read_audit,
        read_cost,
        read_lock_input,
        read_verify,
    )

    given = [p for p in (lock_path, verify_path, audit_path, *accept_paths, cost_path)
             if p is not None]
    if given.count("-") > 1:
        raise UsageError("More than one input is '-' (standard input); standard input can be "
                         "read once.")
    if target is not None and lock_path is None:
        raise UsageError(f"--target {target!r} chooses a target of --lock LOCK; give --lock.")
    key = cli_path(key_path) if key_path is not None else None
    inputs = ReportInputs(
        lock=read_lock_input(cli_path(lock_path), target) if lock_path is not None else None,
        verify=read_verify(cli_path(verify_path)) if verify_path is not None else None,
        audit=read_audit(cli_path(audit_path)) if audit_path is not None else None,
        results=tuple(read_accept(cli_path(p), key) for p in accept_paths),
        cost=read_cost(cli_path(cost_path)) if cost_path is not None else None,
    )
    text = render_report(inputs, "html" if fmt == "html" else "md", version=__version__)
    write_output(output, text.encode())
    if output != "-":
        parts = [name for name, path in (("lock", lock_path), ("verify", verify_path),
                                         ("audit", audit_path)) if path is not None]
        parts += [f"{len(accept_paths)} acceptance result(s)"] if accept_paths else []
        parts += ["cost"] if cost_path is not None else []
        click.echo(f"Wrote {printable(output, newlines=False)} ({fmt}; from "
                   f"{', '.join(parts) or 'no input: every section says not given'}).")


