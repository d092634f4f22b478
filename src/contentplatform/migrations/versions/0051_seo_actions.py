"""SEO actions (seo.*Action*, seo.generateActions, seo.createJobFromAction, seo.bulkActions):
the actions, unique per tenant and fingerprint, and each one's history of moves. jobs already
has its `seo_action_id` (0006_jobs); the actions' settings block (`actions.auto_generate`)
needs no data migration: settings blocks are read over their defaults.

Revision 0051_seo_actions of 2026-12-10 (issue 42, part c).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0051_seo_actions"
down_revision = "0050_seo_rank"


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"],
        ["tenants.id"],
        name=op.f(f"fk_{table}_tenant_id_tenants"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "seo_actions",
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("priority", sa.String(length=10), nullable=False),
        sa.Column("priority_rank", sa.Integer(), nullable=False),
        sa.Column("impact_score", sa.Integer(), nullable=False),
        sa.Column("effort", sa.String(length=10), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("target_urls", sa.JSON(), nullable=False),
        sa.Column("page_ids", sa.JSON(), nullable=False),
        sa.Column("keywords", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("assignee_id", sa.String(length=255), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("job_instance_id", sa.Uuid(), nullable=True),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("audit_id", sa.Uuid(), nullable=True),
        sa.Column("check_id", sa.String(length=64), nullable=True),
        sa.Column("dismissed_reason", sa.String(length=500), nullable=True),
        sa.Column("verification", sa.JSON(), nullable=True),
        sa.Column("done_at", UTCDateTime(), nullable=True),
        sa.Column("verified_at", UTCDateTime(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        _tenant_fk("seo_actions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_actions")),
        sa.UniqueConstraint("tenant_id", "fingerprint", name="uq_seo_actions_fingerprint"),
    )
    op.create_index(op.f("ix_seo_actions_tenant_id"), "seo_actions", ["tenant_id"])
    op.create_index(
        "ix_seo_actions_status",
        "seo_actions",
        ["tenant_id", "status", "priority_rank", "impact_score", "id"],
    )
    op.create_index("ix_seo_actions_type", "seo_actions", ["tenant_id", "type", "status"])
    op.create_index("ix_seo_actions_source", "seo_actions", ["tenant_id", "source", "status"])
    op.create_index("ix_seo_actions_assignee", "seo_actions", ["tenant_id", "assignee_id"])
    op.create_index("ix_seo_actions_job", "seo_actions", ["tenant_id", "job_id"])
    op.create_index("ix_seo_actions_job_instance", "seo_actions", ["tenant_id", "job_instance_id"])

    op.create_table(
        "seo_action_history",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("action_id", sa.Uuid(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("actor", sa.String(length=255), nullable=False),
        sa.Column("from_status", sa.String(length=12), nullable=True),
        sa.Column("to_status", sa.String(length=12), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        _tenant_fk("seo_action_history"),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["seo_actions.id"],
            name=op.f("fk_seo_action_history_action_id_seo_actions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_action_history")),
    )
    op.create_index(op.f("ix_seo_action_history_tenant_id"), "seo_action_history", ["tenant_id"])
    op.create_index(
        "ix_seo_action_history_action",
        "seo_action_history",
        ["tenant_id", "action_id", "at"],
    )


def downgrade() -> None:
    op.drop_table("seo_action_history")
    op.drop_table("seo_actions")
