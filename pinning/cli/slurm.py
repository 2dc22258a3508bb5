"""Placeholder: filled in by the slurm commands (issue 17)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add this module's commands to ``group`` (none yet)."""
