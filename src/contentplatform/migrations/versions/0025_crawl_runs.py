"""Website scan: crawl runs, their snapshots, pages and broken links, and site profiles
(issue 21)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime
from contentplatform.migrations import shapes

revision = "0025_crawl_runs"
down_revision = "0024_website_scan"

ACTIVE = sa.text("status IN ('queued', 'running', 'cancelling')")


def upgrade() -> None:
    op.create_table(
        "crawl_runs",
        *shapes.owned(),
        sa.Column("config_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("trigger", sa.String(10), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("pages_discovered", sa.Integer(), nullable=False),
        sa.Column("pages_crawled", sa.Integer(), nullable=False),
        sa.Column("pages_failed", sa.Integer(), nullable=False),
        sa.Column("pages_skipped", sa.Integer(), nullable=False),
        sa.Column("queue_size", sa.Integer(), nullable=False),
        sa.Column("current_depth", sa.Integer(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("frontier", sa.Text(), nullable=True),
        sa.Column("snapshot_id", sa.Uuid(), nullable=True),
        sa.Column("error_code", sa.String(40), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(128), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("crawl_runs"),
        shapes.references("crawl_runs", "config_id", "crawl_configs"),
    )
    shapes.index_tenant("crawl_runs")
    op.create_index("ix_crawl_runs_tenant_id_created_at", "crawl_runs", ["tenant_id", "created_at"])
    op.create_index("ix_crawl_runs_config_id_created_at", "crawl_runs", ["config_id", "created_at"])
    op.create_index(
        "uq_crawl_runs_config_id_active",
        "crawl_runs",
        ["config_id"],
        unique=True,
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.create_index(
        "ix_crawl_runs_active",
        "crawl_runs",
        ["status"],
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.create_index(
        "ix_crawl_runs_tenant_id_idempotency_key", "crawl_runs", ["tenant_id", "idempotency_key"]
    )

    op.create_table(
        "crawl_snapshots",
        *shapes.owned(),
        sa.Column("config_id", sa.Uuid(), nullable=False),
        sa.Column("crawl_run_id", sa.Uuid(), nullable=False),
        sa.Column("partial", sa.Boolean(), nullable=False),
        sa.Column("page_count", sa.Integer(), nullable=False),
        sa.Column("status_counts", sa.JSON(), nullable=False),
        sa.Column("broken_link_count", sa.Integer(), nullable=False),
        sa.Column("total_words", sa.BigInteger(), nullable=False),
        sa.Column("content_purged", sa.Boolean(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("crawl_snapshots"),
        shapes.references("crawl_snapshots", "config_id", "crawl_configs"),
        shapes.references("crawl_snapshots", "crawl_run_id", "crawl_runs"),
        sa.UniqueConstraint("crawl_run_id", name=op.f("uq_crawl_snapshots_crawl_run_id")),
    )
    shapes.index_tenant("crawl_snapshots")
    op.create_index(
        "ix_crawl_snapshots_config_id_created_at", "crawl_snapshots", ["config_id", "created_at"]
    )
    op.create_index(
        "ix_crawl_snapshots_tenant_id_created_at", "crawl_snapshots", ["tenant_id", "created_at"]
    )

    op.create_table(
        "crawl_pages",
        *shapes.owned(),
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("url_hash", sa.String(64), nullable=False),
        sa.Column("final_url", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(40), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("redirect_chain", sa.JSON(), nullable=False),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("language", sa.String(35), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("meta_description", sa.Text(), nullable=True),
        sa.Column("canonical_url", sa.Text(), nullable=True),
        sa.Column("robots_meta", sa.Text(), nullable=True),
        sa.Column("x_robots_tag", sa.Text(), nullable=True),
        sa.Column("noindex", sa.Boolean(), nullable=False),
        sa.Column("headings", sa.JSON(), nullable=False),
        sa.Column("hreflang", sa.JSON(), nullable=False),
        sa.Column("json_ld", sa.JSON(), nullable=False),
        sa.Column("links", sa.JSON(), nullable=False),
        sa.Column("word_count", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=True),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("load_ms", sa.Integer(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("fetched_at", UTCDateTime(), nullable=False),
        sa.Column("document_id", sa.Uuid(), nullable=True),
        *shapes.keys("crawl_pages"),
        shapes.references("crawl_pages", "snapshot_id", "crawl_snapshots"),
        sa.UniqueConstraint(
            "snapshot_id", "url_hash", name=op.f("uq_crawl_pages_snapshot_id_url_hash")
        ),
    )
    shapes.index_tenant("crawl_pages")
    op.create_index("ix_crawl_pages_snapshot_id_url", "crawl_pages", ["snapshot_id", "url"])

    op.create_table(
        "crawl_broken_links",
        *shapes.owned(),
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("target_url", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(40), nullable=True),
        sa.Column("internal", sa.Boolean(), nullable=False),
        sa.Column("occurrences", sa.JSON(), nullable=False),
        *shapes.keys("crawl_broken_links"),
        shapes.references("crawl_broken_links", "snapshot_id", "crawl_snapshots"),
    )
    shapes.index_tenant("crawl_broken_links")
    op.create_index(
        "ix_crawl_broken_links_snapshot_id", "crawl_broken_links", ["snapshot_id", "target_url"]
    )

    op.create_table(
        "crawl_site_profiles",
        *shapes.owned(),
        sa.Column("config_id", sa.Uuid(), nullable=False),
        sa.Column("snapshot_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("reservation_id", sa.Uuid(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("generated_at", UTCDateTime(), nullable=True),
        *shapes.timestamps(),
        *shapes.keys("crawl_site_profiles"),
        shapes.references("crawl_site_profiles", "config_id", "crawl_configs"),
        sa.UniqueConstraint("config_id", name=op.f("uq_crawl_site_profiles_config_id")),
    )
    shapes.index_tenant("crawl_site_profiles")


def downgrade() -> None:
    for table in (
        "crawl_site_profiles",
        "crawl_broken_links",
        "crawl_pages",
        "crawl_snapshots",
        "crawl_runs",
    ):
        op.drop_table(table)
