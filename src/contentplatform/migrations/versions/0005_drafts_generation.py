"""Drafts, their revisions, and generation runs (revision of 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0005_drafts_generation"
down_revision = "0004_search"


def upgrade() -> None:
    op.create_table(
        "drafts",
        *shapes.owned(),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_text", sa.Text(), nullable=False),
        sa.Column("excerpt", sa.Text(), nullable=True),
        sa.Column("seo_meta", sa.JSON(), nullable=False),
        sa.Column("seo_score", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("assignee_id", sa.String(255), nullable=True),
        sa.Column("rejection_reason", sa.Text(), nullable=True),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("approved_at", UTCDateTime(), nullable=True),
        sa.Column("published_at", UTCDateTime(), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("drafts"),
    )
    shapes.index_tenant("drafts")
    op.create_index("ix_drafts_tenant_id_created_at", "drafts", ["tenant_id", "created_at"])
    op.create_index("ix_drafts_tenant_id_status", "drafts", ["tenant_id", "status"])
    op.create_index("ix_drafts_tenant_id_job_id", "drafts", ["tenant_id", "job_id"])

    op.create_table(
        "draft_revisions",
        *shapes.owned(),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("excerpt", sa.Text(), nullable=True),
        sa.Column("seo_meta", sa.JSON(), nullable=False),
        sa.Column("seo_score", sa.Integer(), nullable=True),
        sa.Column("author_type", sa.String(10), nullable=False),
        sa.Column("author_id", sa.String(255), nullable=True),
        sa.Column("change_summary", sa.String(500), nullable=False),
        sa.Column("fields_changed", sa.JSON(), nullable=False),
        sa.Column("provenance", sa.JSON(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("draft_revisions"),
        shapes.references("draft_revisions", "draft_id", "drafts"),
        sa.UniqueConstraint("draft_id", "version", name="uq_draft_revisions_draft_id_version"),
    )
    shapes.index_tenant("draft_revisions")

    op.create_table(
        "generation_runs",
        *shapes.owned(),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("step", sa.String(20), nullable=True),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("draft_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("instance_id", sa.Uuid(), nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("credits_committed", sa.Integer(), nullable=True),
        sa.Column("retry_of", sa.Uuid(), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("generation_runs"),
        shapes.references("generation_runs", "draft_id", "drafts"),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_generation_runs_tenant_id_idempotency_key"
        ),
    )
    shapes.index_tenant("generation_runs")
    op.create_index(op.f("ix_generation_runs_draft_id"), "generation_runs", ["draft_id"])
    op.create_index(
        "ix_generation_runs_tenant_id_created_at", "generation_runs", ["tenant_id", "created_at"]
    )
    op.create_index("ix_generation_runs_status", "generation_runs", ["status"])


def downgrade() -> None:
    op.drop_table("generation_runs")
    op.drop_table("draft_revisions")
    op.drop_table("drafts")
