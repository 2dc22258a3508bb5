"""Guard commands of the CLI: ``pin guard list`` and ``pin guard show ID``."""

from __future__ import annotations

import json

import click

from pinning.cli.envelope import emit
from pinning.cli.options import format_option
from pinning.errors import UsageError

__all__ = ["guard", "guard_list", "guard_show"]


@click.group()
def guard() -> None:
    """Rules that catch installs which silently change a validated stack (AITER replacing
    Triton, CUDA torch over ROCm torch, ...) and refuse known-broken combinations.
    """


@guard.command("list")
@format_option
def guard_list(fmt: str) -> None:
    """Every shipped rule: id, phases, remedy kind and title."""
    from pinning.guards.engine import load_rules

    rules = load_rules()
    if fmt == "json":
        emit([r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rules])
        return
    width = max(len(r.id) for r in rules)
    for r in rules:
        click.echo(f"{r.id:<{width}}  {','.join(r.phases):<22} {r.remedy.kind:<10} {r.title}")


@guard.command("show")
@click.argument("rule_id", metavar="ID")
@format_option
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
        emit(rule.model_dump(mode="json", by_alias=True, exclude_none=True), ascii_only=False)
        return
    when = rule.when.model_dump(by_alias=True, exclude_none=True)
    judged = (f"\n  check:  {rule.check} (coded judgement, pinning/guards/checks.py)"
              if rule.check else "")
    shown_when = f"\n  when:   {json.dumps(when)}" if when or not rule.check else ""
    click.echo(f"{rule.id}: {rule.title}\n  why:    {rule.why}\n  source: {rule.source} "
               f"({rule.date})\n  phases: {', '.join(rule.phases)}{shown_when}{judged}"
               f"\n  remedy: {rule.remedy.kind}: {rule.remedy.text}")
