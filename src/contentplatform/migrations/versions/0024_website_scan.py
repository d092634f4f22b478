"""Website scan: crawl configurations and their schedules (issue 21)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0024_website_scan"
down_revision = "0023_notifications"

LIVE = sa.text("deleted_at IS NULL")
SCHEDULED = sa.text("deleted_at IS NULL AND next_run_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "crawl_configs",
        *shapes.owned(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("start_url", sa.String(2048), nullable=False),
        sa.Column("host", sa.String(253), nullable=False),
        sa.Column("include_patterns", sa.JSON(), nullable=False),
        sa.Column("exclude_patterns", sa.JSON(), nullable=False),
        sa.Column("max_pages", sa.Integer(), nullable=False),
        sa.Column("max_depth", sa.Integer(), nullable=False),
        sa.Column("respect_robots_txt", sa.Boolean(), nullable=False),
        sa.Column("requests_per_second", sa.Float(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("sitemap_mode", sa.String(10), nullable=False),
        sa.Column("allow_subdomains", sa.Boolean(), nullable=False),
        sa.Column("check_external_links", sa.Boolean(), nullable=False),
        sa.Column("render_javascript", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=True),
        *shapes.timestamps(),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.keys("crawl_configs"),
    )
    shapes.index_tenant("crawl_configs")
    op.create_index(
        "ix_crawl_configs_tenant_id_created_at", "crawl_configs", ["tenant_id", "created_at"]
    )
    op.create_index(
        "uq_crawl_configs_tenant_id_start_url",
        "crawl_configs",
        ["tenant_id", "start_url"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )

    op.create_table(
        "crawl_schedules",
        *shapes.owned(),
        sa.Column("config_id", sa.Uuid(), nullable=False),
        sa.Column("cron_expression", sa.String(120), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("auto_import_changed", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", UTCDateTime(), nullable=True),
        sa.Column("last_run_at", UTCDateTime(), nullable=True),
        sa.Column("last_run_id", sa.Uuid(), nullable=True),
        *shapes.timestamps(),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *shapes.keys("crawl_schedules"),
        shapes.references("crawl_schedules", "config_id", "crawl_configs"),
        sa.UniqueConstraint("config_id", name=op.f("uq_crawl_schedules_config_id")),
    )
    shapes.index_tenant("crawl_schedules")
    op.create_index(
        "ix_crawl_schedules_due",
        "crawl_schedules",
        ["next_run_at"],
        sqlite_where=SCHEDULED,
        postgresql_where=SCHEDULED,
    )


def downgrade() -> None:
    op.drop_table("crawl_schedules")
    op.drop_table("crawl_configs")
