"""Guard commands of the CLI: ``pin guard list`` and ``pin guard show ID``."""

from __future__ import annotations

import json
from typing import Any

import click

from pinning.errors import UsageError

FORMAT = click.Choice(["text", "json"])


@click.group()
def guard() -> None:
    """Rules that catch installs which silently change a validated stack (AITER replacing
    Triton, CUDA torch over ROCm torch, ...) and refuse known-broken combinations.
    """


@guard.command("list")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def guard_list(fmt: str) -> None:
    """Every shipped rule: id, phases, remedy kind and title."""
    from pinning.guards.engine import load_rules

    rules = load_rules()
    if fmt == "json":
        click.echo(json.dumps([r.model_dump(mode="json", by_alias=True, exclude_none=True)
                               for r in rules], indent=2))
        return
    width = max(len(r.id) for r in rules)
    for r in rules:
        click.echo(f"{r.id:<{width}}  {','.join(r.phases):<22} {r.remedy.kind:<10} {r.title}")


@guard.command("show")
@click.argument("rule_id", metavar="ID")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def guard_show(rule_id: str, fmt: str) -> None:
    """One rule in full: why, source and date, conditions, remedy."""
    import difflib

    from pinning.guards.engine import load_rules

    rules = {r.id: r for r in load_rules()}
    rule_id = rule_id.strip().lower()
    rule = rules.get(rule_id)
    if rule is None:
        close = ([r for r in sorted(rules) if rule_id in r][:3] or difflib.get_close_matches(
            rule_id, sorted(rules), n=3)) if rule_id else []
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"No guard rule {rule_id!r}.{hint}", hint="`pin guard list` lists them.")
    if fmt == "json":
        click.echo(rule.model_dump_json(by_alias=True, exclude_none=True, indent=2))
        return
    when = rule.when.model_dump(by_alias=True, exclude_none=True)
    click.echo(f"{rule.id}: {rule.title}\n  why:    {rule.why}\n  source: {rule.source} "
               f"({rule.date})\n  phases: {', '.join(rule.phases)}\n  when:   "
               f"{json.dumps(when)}\n  remedy: {rule.remedy.kind}: {rule.remedy.text}")


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True,
                type=click.Path(exists=True))
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def audit(paths: tuple[str, ...], fmt: str) -> None:
    """Scan Python sources for device strings ROCm builds of PyTorch reject:
    torch.device("rocm") / "hip", .to("hip"), device="rocm:0". ROCm builds keep "cuda".

    Exit 0 when none is found, 10 when some are (guard rule torch-device-rocm). Files that
    cannot be scanned are listed, not fatal.
    """
    from pathlib import Path

    from pinning.audit.device_strings import SOURCE, audit_source, python_files
    from pinning.errors import GuardRefused

    hits: list[Any] = []
    unparsed: list[str] = []
    for root in paths:
        for path in python_files(Path(root), unparsed):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                hits += audit_source(text, str(path))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                unparsed.append(f"{path}: not valid Python; not scanned")
            except OSError as exc:
                unparsed.append(f"{path}: {exc.strerror or exc}; not scanned")
    if fmt == "json":
        click.echo(json.dumps({"hits": [h.__dict__ for h in hits], "unparsed": unparsed,
                               "source": SOURCE}, indent=2))
    else:
        for h in hits:
            click.echo(f"{h.path}:{h.line}:{h.column}: {h.text}: ROCm builds use \"cuda\"")
        for line in unparsed:
            click.echo(line)
        if not hits:
            click.echo("No rocm/hip device strings found.")
    if hits:
        raise GuardRefused(f"{len(hits)} device string(s) ROCm builds of PyTorch reject.",
                           hint=f"Use torch.device(\"cuda\") on ROCm too ({SOURCE}).")


def register(group: click.Group) -> None:
    """Add the guard commands to the ``pin`` group."""
    group.add_command(guard)
    group.add_command(audit)
