"""The SEO page inventory (seo.listPages, seo.getPage): one row per tenant and normalized URL,
kept by events, with an index per order listPages offers.

Revision 0047_seo_pages of 2026-12-07 (issue 41).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0047_seo_pages"
down_revision = "0046_sync_run_checkpoint"

# listPages' orders (seo.models.PAGE_SORT_COLUMNS), each indexed (tenant_id, column, id).
SORTS = (
    "clicks_28d",
    "impressions_28d",
    "position_28d",
    "clicks_change_pct",
    "open_issues",
    "citability_score",
    "url",
)
# Nullable ones: their nulls come last either way, and PostgreSQL's plain index reads only
# ASC NULLS LAST; the other way has an index of its own (SQLite cannot declare that order).
NULLABLE = ("position_28d", "clicks_change_pct", "open_issues", "citability_score")


def upgrade() -> None:
    op.create_table(
        "seo_pages",
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("indexable", sa.Boolean(), nullable=True),
        sa.Column("in_snapshot", sa.Boolean(), nullable=False),
        sa.Column("in_latest_snapshot", sa.Boolean(), nullable=False),
        sa.Column("in_search_console", sa.Boolean(), nullable=False),
        sa.Column("published", sa.Boolean(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=True),
        sa.Column("snapshot_page_id", sa.Uuid(), nullable=True),
        sa.Column("search_console_pages", sa.JSON(), nullable=False),
        sa.Column("clicks_28d", sa.Integer(), nullable=False),
        sa.Column("impressions_28d", sa.Integer(), nullable=False),
        sa.Column("ctr_28d", sa.Float(), nullable=True),
        sa.Column("position_28d", sa.Float(), nullable=True),
        sa.Column("clicks_change_pct", sa.Float(), nullable=True),
        sa.Column("inspection_verdict", sa.String(length=20), nullable=True),
        sa.Column("inspection_id", sa.Uuid(), nullable=True),
        sa.Column("audit_id", sa.Uuid(), nullable=True),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("published_at", UTCDateTime(), nullable=True),
        sa.Column("citability_score", sa.Integer(), nullable=True),
        sa.Column("open_issues", sa.Integer(), nullable=True),
        sa.Column("highest_severity", sa.String(length=10), nullable=True),
        sa.Column("performance_score", sa.Integer(), nullable=True),
        sa.Column("lcp_category", sa.String(length=10), nullable=True),
        sa.Column("ai_citations_28d", sa.Integer(), nullable=True),
        sa.Column("tracked_keywords", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_seo_pages_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seo_pages")),
        sa.UniqueConstraint("tenant_id", "url_hash", name="uq_seo_pages_url_hash"),
    )
    op.create_index(op.f("ix_seo_pages_tenant_id"), "seo_pages", ["tenant_id"])
    for column in SORTS:
        op.create_index(f"ix_seo_pages_{column}", "seo_pages", ["tenant_id", column, "id"])
    if op.get_bind().dialect.name == "postgresql":
        for column in NULLABLE:
            op.execute(
                f"CREATE INDEX ix_seo_pages_{column}_desc ON seo_pages "
                f"(tenant_id, {column} DESC NULLS LAST, id DESC)"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for column in NULLABLE:
            op.execute(f"DROP INDEX ix_seo_pages_{column}_desc")
    for column in SORTS:
        op.drop_index(f"ix_seo_pages_{column}", table_name="seo_pages")
    op.drop_index(op.f("ix_seo_pages_tenant_id"), table_name="seo_pages")
    op.drop_table("seo_pages")
