"""Content analytics (issue 43): the analytics sources an organization connects (GA4, Plausible,
Umami, Search Console) and the daily page rows synced from them.

Revision 0056_analytics_content of 2026-12-07 (issue 43, content analytics).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from contentplatform.kit.db import UTCDateTime

revision = "0056_analytics_content"
down_revision = "0055_seo_ai_visibility"

LIVE_SOURCE = sa.text("status <> 'disconnected'")
SCHEDULED_SOURCE = sa.text("next_sync_at IS NOT NULL")
PageDayKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "analytics_sources",
        sa.Column("provider", sa.String(length=20), nullable=False),
        sa.Column("property", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("credentials_sealed", sa.Text(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("seo_connection_id", sa.Uuid(), nullable=True),
        sa.Column("lag_days", sa.Integer(), nullable=False),
        sa.Column("access_expires_at", UTCDateTime(), nullable=True),
        sa.Column("last_synced_at", UTCDateTime(), nullable=True),
        sa.Column("data_through", sa.Date(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("sync_status", sa.String(length=20), nullable=True),
        sa.Column("sync_from", sa.Date(), nullable=True),
        sa.Column("sync_to", sa.Date(), nullable=True),
        sa.Column("sync_started_at", UTCDateTime(), nullable=True),
        sa.Column("missing_days", sa.JSON(), nullable=False),
        sa.Column("next_sync_at", UTCDateTime(), nullable=True),
        sa.Column("connected_by", sa.String(length=255), nullable=True),
        sa.Column("disconnected_at", UTCDateTime(), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_analytics_sources_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analytics_sources")),
    )
    op.create_index(op.f("ix_analytics_sources_tenant_id"), "analytics_sources", ["tenant_id"])
    op.create_index(
        "uq_analytics_sources_live_property",
        "analytics_sources",
        ["tenant_id", "provider", "property"],
        unique=True,
        sqlite_where=LIVE_SOURCE,
        postgresql_where=LIVE_SOURCE,
    )
    op.create_index(
        "ix_analytics_sources_next_sync_at",
        "analytics_sources",
        ["next_sync_at"],
        sqlite_where=SCHEDULED_SOURCE,
        postgresql_where=SCHEDULED_SOURCE,
    )
    op.create_table(
        "analytics_page_days",
        sa.Column("id", PageDayKey, autoincrement=True, nullable=False),
        sa.Column("source_id", sa.Uuid(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("draft_id", sa.Uuid(), nullable=True),
        sa.Column("dimension", sa.String(length=10), nullable=False),
        sa.Column("value", sa.String(length=255), nullable=False),
        sa.Column("views", sa.Integer(), nullable=True),
        sa.Column("visitors", sa.Integer(), nullable=True),
        sa.Column("sessions", sa.Integer(), nullable=True),
        sa.Column("clicks", sa.Integer(), nullable=True),
        sa.Column("impressions", sa.Integer(), nullable=True),
        sa.Column("position_sum", sa.Float(), nullable=True),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["analytics_sources.id"],
            name=op.f("fk_analytics_page_days_source_id_analytics_sources"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_analytics_page_days_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analytics_page_days")),
    )
    op.create_index(op.f("ix_analytics_page_days_tenant_id"), "analytics_page_days", ["tenant_id"])
    op.create_index(
        "ix_analytics_page_days_day", "analytics_page_days", ["tenant_id", "dimension", "day"]
    )
    op.create_index(
        "ix_analytics_page_days_draft", "analytics_page_days", ["tenant_id", "draft_id", "day"]
    )
    op.create_index("ix_analytics_page_days_source", "analytics_page_days", ["source_id", "day"])


def downgrade() -> None:
    op.drop_table("analytics_page_days")
    op.drop_table("analytics_sources")
