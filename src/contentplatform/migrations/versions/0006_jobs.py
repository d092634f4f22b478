"""Jobs, job instances, and the tenant's scheduling time zone (revision of 2026-11-22)."""

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0006_jobs"
down_revision = "0005_drafts_generation"

SCHEDULED = sa.text("deleted_at IS NULL AND next_run_at IS NOT NULL")
WAITING = sa.text("status = 'pending' AND run_id IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("tenants") as tenants:
        tenants.add_column(
            sa.Column("timezone", sa.String(64), nullable=False, server_default="UTC")
        )

    op.create_table(
        "jobs",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("job_type", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("cron_expression", sa.String(120), nullable=True),
        sa.Column("scheduled_dates", sa.JSON(), nullable=False),
        sa.Column("topics", sa.JSON(), nullable=False),
        sa.Column("topic_source", sa.String(20), nullable=False),
        sa.Column("topic_cursor", sa.Integer(), nullable=False),
        sa.Column("keywords", sa.JSON(), nullable=False),
        sa.Column("content_instructions", sa.Text(), nullable=True),
        sa.Column("document_ids", sa.JSON(), nullable=False),
        sa.Column("auto_publish", sa.Boolean(), nullable=False),
        sa.Column("auto_publish_threshold", sa.Integer(), nullable=True),
        sa.Column("publisher_connection_id", sa.Uuid(), nullable=True),
        sa.Column("seo_action_id", sa.Uuid(), nullable=True),
        sa.Column("next_run_at", UTCDateTime(), nullable=True),
        sa.Column("last_run_at", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("jobs"),
    )
    shapes.index_tenant("jobs")
    op.create_index("ix_jobs_tenant_id_created_at", "jobs", ["tenant_id", "created_at"])
    op.create_index(
        "ix_jobs_due",
        "jobs",
        ["next_run_at"],
        sqlite_where=SCHEDULED,
        postgresql_where=SCHEDULED,
    )

    op.create_table(
        "job_instances",
        *shapes.owned(),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("scheduled_date", UTCDateTime(), nullable=False),
        sa.Column("day_mode", sa.String(20), nullable=False),
        sa.Column("keywords", sa.JSON(), nullable=True),
        sa.Column("content_instructions", sa.Text(), nullable=True),
        sa.Column("images", sa.JSON(), nullable=False),
        sa.Column("document_ids", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("step", sa.String(20), nullable=True),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("topic", sa.String(500), nullable=True),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("job_instances"),
        shapes.references("job_instances", "job_id", "jobs"),
        sa.UniqueConstraint(
            "job_id", "scheduled_date", name="uq_job_instances_job_id_scheduled_date"
        ),
    )
    shapes.index_tenant("job_instances")
    op.create_index(
        "ix_job_instances_tenant_id_scheduled_date",
        "job_instances",
        ["tenant_id", "scheduled_date"],
    )
    op.create_index(
        "ix_job_instances_waiting",
        "job_instances",
        ["scheduled_date"],
        sqlite_where=WAITING,
        postgresql_where=WAITING,
    )


def downgrade() -> None:
    op.drop_table("job_instances")
    op.drop_table("jobs")
    with op.batch_alter_table("tenants") as tenants:
        tenants.drop_column("timezone")
