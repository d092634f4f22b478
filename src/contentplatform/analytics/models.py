"""The tables of analytics: exports (a report written to a file in object storage), and content
analytics' sources (GA4, Plausible, Umami, Search Console) with the daily page rows synced from
them. The platform's own figures are read from the domains that hold them; the providers' traffic
is kept here, since no other domain holds it."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime

# An export still to be written: at most MAX_ACTIVE of them per organization.
ACTIVE_STATUSES = ("queued", "running")
ACTIVE = text("status IN ('queued', 'running')")
# A written file still kept: the sweep expires it once file_expires_at has passed.
KEPT = text("status = 'succeeded'")


class Export(RecordMixin, TenantMixin, Base):
    """One export of a report: queued -> running -> succeeded | failed | cancelled, and a
    succeeded one expired once its file is deleted (file_expires_at)."""

    __tablename__ = "analytics_exports"
    __table_args__ = (
        Index("ix_analytics_exports_tenant_id_created_at", "tenant_id", "created_at"),
        # The same idempotency key names one export of an organization, even under racing
        # creates (NULL keys are all distinct).
        Index(
            "uq_analytics_exports_tenant_id_idempotency_key",
            "tenant_id",
            "idempotency_key",
            unique=True,
        ),
        # The organization's active exports (the 5 allowed) and the reconciler's sweep.
        Index(
            "ix_analytics_exports_active",
            "tenant_id",
            "status",
            sqlite_where=ACTIVE,
            postgresql_where=ACTIVE,
        ),
        # The expiry sweep: kept files by when they go.
        Index(
            "ix_analytics_exports_kept",
            "file_expires_at",
            sqlite_where=KEPT,
            postgresql_where=KEPT,
        ),
    )

    report: Mapped[str] = mapped_column(String(40), nullable=False)
    format: Mapped[str] = mapped_column(String(10), nullable=False)  # csv | jsonl
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    # queued | running | succeeded | failed | cancelled | expired
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    row_count: Mapped[int | None] = mapped_column(Integer)
    bytes: Mapped[int | None] = mapped_column(BigInteger)
    storage_path: Mapped[str | None] = mapped_column(String(1024))
    file_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error_code: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


# A source not disconnected: one per provider and property of an organization.
LIVE_SOURCE = text("status <> 'disconnected'")
# A source whose daily sync is scheduled.
SCHEDULED_SOURCE = text("next_sync_at IS NOT NULL")
PageDayKey = BigInteger().with_variant(Integer(), "sqlite")


class AnalyticsSource(RecordMixin, TenantMixin, Base):
    """A provider of traffic figures: pending_auth -> connected <-> syncing; any -> error |
    disconnected. `sync_*` describe the latest sync (running | succeeded | partial | failed)."""

    __tablename__ = "analytics_sources"
    __table_args__ = (
        Index(
            "uq_analytics_sources_live_property",
            "tenant_id",
            "provider",
            "property",
            unique=True,
            sqlite_where=LIVE_SOURCE,
            postgresql_where=LIVE_SOURCE,
        ),
        Index(
            "ix_analytics_sources_next_sync_at",
            "next_sync_at",
            sqlite_where=SCHEDULED_SOURCE,
            postgresql_where=SCHEDULED_SOURCE,
        ),
    )

    provider: Mapped[str] = mapped_column(String(20), nullable=False)
    property: Mapped[str] = mapped_column(String(255), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    # The API key, or the OAuth grant (GA4), or the webhook's signing secret: sealed.
    credentials_sealed: Mapped[str | None] = mapped_column(Text)
    # Provider options (Umami's base URL) and, while pending_auth, the OAuth state's hash and
    # sealed PKCE verifier.
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    seo_connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    lag_days: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    access_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The provider's last complete day that is stored (all days before it too).
    data_through: Mapped[date | None] = mapped_column(Date)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    sync_status: Mapped[str | None] = mapped_column(String(20))
    sync_from: Mapped[date | None] = mapped_column(Date)
    sync_to: Mapped[date | None] = mapped_column(Date)
    sync_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    missing_days: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    next_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    connected_by: Mapped[str | None] = mapped_column(String(255))
    disconnected_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class AnalyticsPageDay(TenantMixin, Base):
    """A page's figures for a day from one source: `dimension` '' is the page's totals, else the
    page's row for one value of channel | referrer | country | device. `url` is normalized as
    the SEO page inventory normalizes; `draft_id` is the published draft it is a copy of (null:
    a page not ours). A figure the source does not report is null."""

    __tablename__ = "analytics_page_days"
    __table_args__ = (
        Index("ix_analytics_page_days_day", "tenant_id", "dimension", "day"),
        Index("ix_analytics_page_days_draft", "tenant_id", "draft_id", "day"),
        Index("ix_analytics_page_days_source", "source_id", "day"),
    )

    id: Mapped[int] = mapped_column(PageDayKey, primary_key=True, autoincrement=True)
    source_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("analytics_sources.id", ondelete="CASCADE"), nullable=False
    )
    day: Mapped[date] = mapped_column(Date, nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    dimension: Mapped[str] = mapped_column(String(10), nullable=False, default="")
    value: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    views: Mapped[int | None] = mapped_column(Integer)
    visitors: Mapped[int | None] = mapped_column(Integer)
    sessions: Mapped[int | None] = mapped_column(Integer)
    clicks: Mapped[int | None] = mapped_column(Integer)
    impressions: Mapped[int | None] = mapped_column(Integer)
    position_sum: Mapped[float | None] = mapped_column(Float)
