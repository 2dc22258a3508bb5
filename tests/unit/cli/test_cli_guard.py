"""pin guard list / show, and a guard's remedy recorded by pin resolve."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import pin
from tests.support.guards import RULES


def test_guard_cli_list_and_show() -> None:
    r = pin("guard", "list")
    assert r.returncode == 0 and all(rule_id in r.stdout for rule_id in RULES)
    s = pin("guard", "show", "AITER-replaces-triton")
    assert s.returncode == 0 and "ROCm/aiter" in s.stdout
    bad = pin("guard", "show", "nope")
    assert bad.returncode == 2 and "No guard rule" in bad.stderr


def test_resolve_records_the_set_env_remedy(tmp_path: Path) -> None:
    out = tmp_path / "fa.lock"
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "--framework",
            "flash-attention", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "Guard aiter-replaces-triton" in r.stderr
    text = out.read_text()
    assert 'AITER_USE_SYSTEM_TRITON = "1"' in text and "ROCm/aiter" in text
