"""The shipped guard rules, by id."""

from __future__ import annotations

from pinning.guards.engine import load_rules
from pinning.guards.models import Rule

RULES: dict[str, Rule] = {r.id: r for r in load_rules()}
