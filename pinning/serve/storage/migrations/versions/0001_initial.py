"""Initial schema of pin serve's store: locks, hosts (with their latest report), group lock
assignments, host reports, acceptance results, audits, cost verdicts and tokens (see
``pinning.serve.storage.models``).

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

HASH = sa.String(length=71)
WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create every table and index of the initial schema, in this order."""
    _locks_and_hosts()
    _reports()
    _artefacts()
    _tokens()


def _locks_and_hosts() -> None:
    """``locks``, ``hosts`` (with their indexes) and ``group_locks``."""
    op.create_table(
        "locks",
        sa.Column("content_hash", HASH, nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("content_hash", name=op.f("pk_locks")),
    )
    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("group", sa.String(length=253), nullable=True),
        sa.Column("assigned_lock", HASH, nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("last_report_id", sa.Integer(), nullable=True),
        sa.Column("last_result", sa.String(length=8), nullable=True),
        sa.Column("last_lock", HASH, nullable=True),
        sa.Column("last_reason", sa.Text(), nullable=True),
        sa.Column("last_reasons", sa.JSON(), nullable=True),
        sa.Column("last_gpu", sa.String(length=128), nullable=True),
        sa.Column("last_seen", WHEN, nullable=True),
        sa.ForeignKeyConstraint(["assigned_lock"], ["locks.content_hash"],
                                name=op.f("fk_hosts_assigned_lock_locks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hosts")),
        sa.UniqueConstraint("name", name=op.f("uq_hosts_name")),
    )
    for name, column in (("group_name", "group"), ("last_result_name", "last_result"),
                         ("last_lock_name", "last_lock"), ("last_gpu_name", "last_gpu")):
        op.create_index(f"ix_hosts_{name}", "hosts", [column, "name"])
    op.create_table(
        "group_locks",
        sa.Column("group", sa.String(length=253), nullable=False),
        sa.Column("lock_hash", HASH, nullable=False),
        sa.Column("assigned_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["lock_hash"], ["locks.content_hash"],
                                name=op.f("fk_group_locks_lock_hash_locks")),
        sa.PrimaryKeyConstraint("group", name=op.f("pk_group_locks")),
    )


def _reports() -> None:
    """``host_reports`` and its indexes."""
    op.create_table(
        "host_reports",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("lock_hash", HASH, nullable=False),
        sa.Column("snapshot_hash", HASH, nullable=True),
        sa.Column("result", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("gpu", sa.String(length=128), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.Column("received_at", WHEN, nullable=False),
        sa.CheckConstraint("result IN ('match', 'drift', 'unknown')",
                           name=op.f("ck_host_reports_result")),
        sa.ForeignKeyConstraint(["host_id"], ["hosts.id"],
                                name=op.f("fk_host_reports_host_id_hosts")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_reports")),
    )
    op.create_index("ix_host_reports_host_latest", "host_reports", ["host_id", "id"])
    op.create_index(op.f("ix_host_reports_lock_hash"), "host_reports", ["lock_hash"])


def _artefacts() -> None:
    """``acceptance_results``, ``audits`` and ``cost_verdicts``, each indexed by lock."""
    op.create_table(
        "acceptance_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("lock_hash", HASH, nullable=False),
        sa.Column("image_digest", HASH, nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("signature_verified", sa.Boolean(), nullable=False),
        sa.Column("received_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_acceptance_results")),
    )
    op.create_index(op.f("ix_acceptance_results_lock_hash"), "acceptance_results",
                    ["lock_hash"])
    op.create_table(
        "audits",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("lock_hash", HASH, nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("totals", sa.JSON(), nullable=False),
        sa.Column("received_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audits")),
    )
    op.create_index(op.f("ix_audits_lock_hash"), "audits", ["lock_hash"])
    op.create_table(
        "cost_verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("lock_hash", HASH, nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("received_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cost_verdicts")),
    )
    op.create_index(op.f("ix_cost_verdicts_lock_hash"), "cost_verdicts", ["lock_hash"])


def _tokens() -> None:
    """``tokens``."""
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=8), nullable=False),
        sa.Column("host", sa.String(length=253), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("revoked_at", WHEN, nullable=True),
        sa.CheckConstraint("scope IN ('report', 'publish', 'admin')",
                           name=op.f("ck_tokens_scope")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("secret_sha256", name=op.f("uq_tokens_secret_sha256")),
    )


def downgrade() -> None:
    """Drop every table of the initial schema (their indexes go with them)."""
    for table in ("tokens", "cost_verdicts", "audits", "acceptance_results", "host_reports",
                  "hosts", "group_locks", "locks"):
        op.drop_table(table)
