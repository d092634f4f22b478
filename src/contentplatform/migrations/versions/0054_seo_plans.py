"""SEO plans (seoPlans.*): a month's plan and its items. At most one live plan (not archived,
not deleted) per tenant and month (a partial unique index); a generate's idempotencyKey is
unique per tenant. jobs.topic_source is a String(20) already (0006_jobs), so `seo_plan` needs
no change of the jobs table.

Revision 0054_seo_plans of 2026-12-07 (issue 44).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0054_seo_plans"
down_revision = "0053_job_run_durations"

LIVE_PLAN = sa.text("status <> 'archived' AND deleted_at IS NULL")


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"],
        ["tenants.id"],
        name=op.f(f"fk_{table}_tenant_id_tenants"),
        ondelete="CASCADE",
    )


def _record() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
    ]


PLAN_SCHEDULED = sa.text("next_plan_at IS NOT NULL")


def upgrade() -> None:
    # When next month's plan is generated (settings.planning.auto_generate_day).
    with op.batch_alter_table("seo_settings") as batch_op:
        batch_op.add_column(sa.Column("next_plan_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            "ix_seo_settings_next_plan_at",
            ["next_plan_at"],
            sqlite_where=PLAN_SCHEDULED,
            postgresql_where=PLAN_SCHEDULED,
        )
    op.create_table(
        "seo_plans",
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("goals", sa.Text(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("signals_used", sa.JSON(), nullable=False),
        sa.Column("generation", sa.JSON(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("generation_round", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("credits_used", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("publisher_connection_id", sa.Uuid(), nullable=True),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("approved_by", sa.String(length=255), nullable=True),
        sa.Column("approved_at", UTCDateTime(), nullable=True),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("archived_at", UTCDateTime(), nullable=True),
        sa.Column("archive_reason", sa.String(length=500), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *_record(),
        _tenant_fk("seo_plans"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_plans")),
        sa.UniqueConstraint("tenant_id", "idempotency_key", name="uq_seo_plans_idempotency_key"),
    )
    op.create_index(op.f("ix_seo_plans_tenant_id"), "seo_plans", ["tenant_id"])
    op.create_index(
        "uq_seo_plans_live_month",
        "seo_plans",
        ["tenant_id", "month"],
        unique=True,
        sqlite_where=LIVE_PLAN,
        postgresql_where=LIVE_PLAN,
    )
    op.create_index("ix_seo_plans_tenant_month", "seo_plans", ["tenant_id", "month"])
    op.create_index("ix_seo_plans_status", "seo_plans", ["status"])

    op.create_table(
        "seo_plan_items",
        sa.Column("plan_id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("primary_keyword", sa.String(length=100), nullable=False),
        sa.Column("secondary_keywords", sa.JSON(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("intent", sa.String(length=20), nullable=True),
        sa.Column("target_date", sa.Date(), nullable=False),
        sa.Column("target_url", sa.String(length=2048), nullable=True),
        sa.Column("page_id", sa.Uuid(), nullable=True),
        sa.Column("search_volume", sa.Integer(), nullable=True),
        sa.Column("keyword_difficulty", sa.Integer(), nullable=True),
        sa.Column("cpc", sa.Float(), nullable=True),
        sa.Column("opportunity_score", sa.Float(), nullable=True),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("brief", sa.JSON(), nullable=False),
        sa.Column("forecast", sa.JSON(), nullable=False),
        sa.Column("document_ids", sa.JSON(), nullable=False),
        sa.Column("seo_action_id", sa.Uuid(), nullable=True),
        sa.Column("ai_prompt_id", sa.Uuid(), nullable=True),
        sa.Column("cluster", sa.String(length=100), nullable=True),
        sa.Column("locked", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("job_instance_id", sa.Uuid(), nullable=True),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("published_url", sa.Text(), nullable=True),
        sa.Column("published_at", UTCDateTime(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        *_record(),
        _tenant_fk("seo_plan_items"),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["seo_plans.id"],
            name=op.f("fk_seo_plan_items_plan_id_seo_plans"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_plan_items")),
    )
    op.create_index(op.f("ix_seo_plan_items_tenant_id"), "seo_plan_items", ["tenant_id"])
    op.create_index(
        "ix_seo_plan_items_plan",
        "seo_plan_items",
        ["tenant_id", "plan_id", "target_date", "position"],
    )
    op.create_index("ix_seo_plan_items_date", "seo_plan_items", ["tenant_id", "target_date"])
    op.create_index(
        "ix_seo_plan_items_instance", "seo_plan_items", ["tenant_id", "job_instance_id"]
    )


def downgrade() -> None:
    op.drop_table("seo_plan_items")
    op.drop_table("seo_plans")
    with op.batch_alter_table("seo_settings") as batch_op:
        batch_op.drop_index("ix_seo_settings_next_plan_at")
        batch_op.drop_column("next_plan_at")
