"""``pin matrix update``: fetch today's vendor data, show what changes, store it as the
user's copy (registered on the ``pin matrix`` group in :mod:`pinning.cli.matrix`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option, parse_date
from pinning.errors import PinError, UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.matrix.fetch import Fetched
    from pinning.matrix.load import Matrix
    from pinning.matrix.update import Plan

__all__ = ["matrix_update"]


@click.command("update")
@click.option("--from", "mirror", metavar="URL|DIR",
              help="Read from a mirror laid out as raw.githubusercontent.com "
                   "(<base>/<owner>/<repo>/<ref>/<path>) instead of GitHub.")
@click.option("--rocm-ref", default="develop", show_default=True, metavar="REF",
              help="Branch, tag or commit of ROCm/ROCm to read.")
@click.option("--pytorch-ref", default="main", show_default=True, metavar="REF",
              help="Branch, tag or commit of pytorch/pytorch to read.")
@click.option("--published", metavar="DATE",
              help="Date of AMD's copy (default: the commit date GitHub gives; required "
                   "with --from).")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 6 when the vendor publishes rows pin does not hold.")
@click.option("--dry-run", is_flag=True, help="Show the changes; write nothing.")
@click.option("--offline", is_flag=True,
              help="Never use the network: only --from DIR is read.")
@click.option("--reset", is_flag=True,
              help="Remove the user's copy: the shipped data is in effect again.")
@click.option("--lock", "locks", multiple=True, metavar="FILE",
              help="Say whether this lock would resolve differently (pin lock check).")
@format_option
@click.pass_context
def matrix_update(ctx: click.Context, mirror: str | None, rocm_ref: str, pytorch_ref: str,
                  published: str | None, check: bool, dry_run: bool, offline: bool,
                  reset: bool, locks: tuple[str, ...], fmt: str) -> None:
    """Fetch the vendor files pin's data comes from (AMD's historical CSV, matrix page and
    release notes from ROCm/ROCm at a ref; PyTorch's RELEASE.md), import them with the
    `pin matrix import-*` importers, show the rows added, changed and removed, then store
    them in the user's data folder ($XDG_DATA_HOME/pin/matrix, with update.json: URL,
    commit or ETag, date fetched, sha256 of each file read).

    The stored copy replaces only the shipped file of its own name: the newest published
    row of each release wins, --as-of still sees every copy, a site overlay (--matrix)
    keeps priority and `pin matrix list` shows the files in effect. NVIDIA's tables are
    hand-maintained and not fetched. Progress goes to stderr. Exit 0; 6 with --check when
    the vendor publishes something pin does not hold; 3 when a source cannot be fetched
    or imported (nothing is written); 2 for a refused URL or a missing --published.
    """
    from pinning.cli.progress import log_lines
    from pinning.matrix.userdata import remove_copy

    log = log_lines(fmt) or (lambda _line: None)
    if reset:
        gone = remove_copy()
        _out(fmt, {"reset": gone}, "Removed the user's copy of the matrix; the shipped data "
             "is in effect." if gone else "No user copy of the matrix; nothing to remove.")
        return
    plan = _plan(mirror, rocm_ref, pytorch_ref, parse_date("--published", published),
                 offline, log)
    lock_rows = [row for p in locks for row in _lock_rows(p, plan)]
    written = None
    if not (check or dry_run):
        from pinning.matrix.update import write_plan

        written = str(write_plan(plan))
        log(f"wrote {', '.join(plan.files)} and update.json into {written}")
    _render(plan, lock_rows, written, fmt)
    if check and plan.changes:
        ctx.exit(6)


def _plan(mirror: str | None, rocm_ref: str, pytorch_ref: str, published: dt.date | None,
          offline: bool, log: Any) -> Plan:
    """Fetch and import every source, compare with the matrix in effect."""
    import re

    from pinning.matrix.fetch import RAW, SOURCES, check_url, fetch_source, resolve_ref
    from pinning.matrix.load import load_matrix
    from pinning.matrix.update import plan_update
    from pinning.matrix.userdata import user_folder

    if offline and (mirror is None or "://" in mirror):
        raise UsageError("--offline reads only a mirror folder: pass --from DIR.")
    if mirror is not None and "://" in mirror:
        check_url(mirror)
    if mirror is not None and published is None:
        raise UsageError("--from: a mirror does not say when AMD's copy was published; pass "
                         "--published YYYY-MM-DD (the date of the copy).")
    refs = {"ROCm/ROCm": rocm_ref, "pytorch/pytorch": pytorch_ref}
    commits: dict[str, str | None] = {
        repo: ref if re.fullmatch(r"[0-9a-f]{40}", ref) else None for repo, ref in refs.items()}
    if mirror is None:
        for repo, ref in refs.items():
            sha, when = resolve_ref(repo, ref, log=log)
            commits[repo], refs[repo] = sha, sha
            if repo == "ROCm/ROCm" and published is None:
                published = when
    assert published is not None
    fetched: list[Fetched] = [
        fetch_source(src, refs[src.repo], base=mirror or RAW, commit=commits[src.repo],
                     log=log) for src in SOURCES]
    folder = user_folder() or Path(".")
    before = load_matrix()
    log(f"import and compare with the matrix in effect ({len(before.files)} files)")
    return plan_update(fetched, before, published=published, today=dt.date.today(),
                       folder=folder)


def _lock_rows(path: str, plan: Plan) -> list[dict[str, Any]]:
    """Whether the lock at ``path`` resolves differently with the new copy: `pin lock
    check` against the matrix in effect and against the one with the copy; a row per
    target of a multi-target lock (with its ``target`` name).
    """
    from pinning.lockfile.io import read_locks
    from pinning.matrix.load import load_matrix
    from pinning.matrix.update import with_copy
    from pinning.resolve.upgrade import recorded_overlays

    _, multi, locks = read_locks(Path(path))
    rows = []
    for name, old in locks.items():
        before = load_matrix(recorded_overlays(old, Path(path)))
        after = with_copy(before, [lf for lf, _ in plan.files.values()])
        was, now = _check(old, before), _check(old, after)
        rows.append({"lock": path, **({"target": name} if multi else {}),
                     "differs": was != now, "before": was, "after": now})
    return rows


def _check(old: Any, m: Matrix) -> list[str]:
    """The stack changes `pin lock check` would print against ``m``, one line each (or the
    refusal, ``refused (exit N): ...``).
    """
    from pinning.resolve.upgrade import request_constraints, upgrade

    recorded = [s.path for s in old.matrix.sources if s.overlay and s.path]
    try:
        up = upgrade(old, m, request_constraints(old, m), overlays=recorded)
    except PinError as err:
        return [f"refused (exit {err.exit_code}): {err.message.splitlines()[0]}"]
    return [f"{c.path}: {c.old} -> {c.new}" for c in up.stack_changes]


def _out(fmt: str, doc: dict[str, Any], text: str) -> None:
    """Emit ``doc`` as JSON or print ``text``."""
    if fmt == "json":
        emit(doc)
    else:
        click.echo(printable(text, newlines=False))


def _render(plan: Plan, lock_rows: list[dict[str, Any]], written: str | None,
            fmt: str) -> None:
    """Print the changes, the lock verdicts and what was written (or emit them as JSON)."""
    if fmt == "json":
        emit({"changes": [c.as_json() for c in plan.changes], "notes": plan.notes,
              "locks": lock_rows, "written": written,
              "manifest": plan.manifest.model_dump(mode="json", by_alias=True)})
        return
    for note in plan.notes:
        click.echo(printable(f"note: {note}", newlines=False), err=True)
    if not plan.changes:
        click.echo("No change: pin holds every row the vendor files state.")
    for c in plan.changes:
        click.echo(printable(f"{c.change:<8} {c.kind} {c.key}", newlines=False))
        for d in c.details:
            click.echo(printable(f"    {d}", newlines=False))
    for row in lock_rows:
        verdict = "resolves differently" if row["differs"] else "resolves the same"
        lock = f"{row['lock']} [targets.{row['target']}]" if "target" in row else row["lock"]
        click.echo(printable(f"{lock}: {verdict} with the new data", newlines=False))
        for line in row["after"] if row["differs"] else []:
            click.echo(printable(f"    {line}", newlines=False))
    if written:
        click.echo(printable(f"Wrote the user's copy: {written} "
                             f"({', '.join(plan.files)})", newlines=False))
