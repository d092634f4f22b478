"""The tables of SEO, part 1 (issue 39): the tenant's SEO profile and competitors; provider
connections, their OAuth states and the sync runs every provider call runs inside; and what
Search Console told us, stored so that reads never call Google.

Search Console's figures are kept as three daily facts per property and search type, because
Google returns only the top rows and drops anonymized queries: the site's totals (no
dimension), each page's totals (page x country x device) and the query rows (query x page x
country x device). The hidden share is the site's totals minus the sum of the query rows. A
day's rows are replaced whole when it is fetched again (fresh rows by final ones).
`position_sum` is position x impressions, so positions add up impression-weighted.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from contentplatform.kit.db import Base, RecordMixin, TenantMixin, UTCDateTime

# A sync run still to finish: the reconciler's and the one-at-a-time rule's rows.
ACTIVE_RUN = text("status IN ('queued', 'running')")
PENDING_INSPECTION = text("status = 'pending'")
# A connection the daily Search Console sync is scheduled for: the tick's rows.
SYNC_SCHEDULED = text("next_sync_at IS NOT NULL")
# Fact tables hold millions of rows: an integer key (SQLite's rowid) rather than a UUID.
FactKey = BigInteger().with_variant(Integer(), "sqlite")


class SeoSettings(TenantMixin, Base):
    """The tenant's SEO profile: one row, made with defaults on first read. Each block
    (search_console, rank, ...) is a JSON object merged on update."""

    __tablename__ = "seo_settings"
    __table_args__ = (UniqueConstraint("tenant_id", name="uq_seo_settings_tenant_id"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    site_url: Mapped[str | None] = mapped_column(String(2048))
    brand_name: Mapped[str | None] = mapped_column(String(100))
    brand_terms: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    country: Mapped[str | None] = mapped_column(String(2))
    language: Mapped[str | None] = mapped_column(String(35))
    location_code: Mapped[int | None] = mapped_column(Integer)
    devices: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    blocks: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_by: Mapped[str | None] = mapped_column(String(255))


class SeoCompetitor(RecordMixin, TenantMixin, Base):
    """A competitor's domain (normalized: lowercase, no scheme, no leading www.), immutable so
    its history stays one series; at most 20 per tenant."""

    __tablename__ = "seo_competitors"
    __table_args__ = (UniqueConstraint("tenant_id", "domain", name="uq_seo_competitors_domain"),)

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    domain: Mapped[str] = mapped_column(String(253), nullable=False)
    aliases: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    track_rank: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    track_ai: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class SeoConnection(RecordMixin, TenantMixin, Base):
    """One provider of one tenant: not_connected (no row) -> pending_authorization ->
    connected <-> needs_reauth, error. Credentials (tokens, keys) are sealed with the key ring
    the publishers use and never leave the service; `credential_hint` is what is shown."""

    __tablename__ = "seo_connections"
    __table_args__ = (
        UniqueConstraint("tenant_id", "provider", name="uq_seo_connections_provider"),
        Index(
            "ix_seo_connections_next_sync_at",
            "next_sync_at",
            sqlite_where=SYNC_SCHEDULED,
            postgresql_where=SYNC_SCHEDULED,
        ),
    )

    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    status: Mapped[str] = mapped_column(String(30), nullable=False)
    account_label: Mapped[str | None] = mapped_column(String(255))
    scopes: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    credentials_sealed: Mapped[str | None] = mapped_column(Text)
    credential_hint: Mapped[str | None] = mapped_column(String(100))
    # When the sealed access token stops working: refreshed before then.
    access_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sync_enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    # Search Console: sites.list as of connect/test, and the property chosen among them.
    available_properties: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, nullable=False, default=list
    )
    property_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="SET NULL")
    )
    last_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Search Console: when the daily sync is due next (a local hour of the tenant's zone), so
    # the scheduler's tick reads only the connections due, whatever their number.
    next_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    connected_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    connected_by: Mapped[str | None] = mapped_column(String(255))


class SeoOAuthState(RecordMixin, TenantMixin, Base):
    """One authorization started by `seo.connect`: single-use, bound to the tenant, the admin
    who started it and its PKCE verifier (sealed), valid for 10 minutes. Only a hash of the
    state is kept, so a leaked table cannot finish anyone's flow."""

    __tablename__ = "seo_oauth_states"
    __table_args__ = (UniqueConstraint("state_hash", name="uq_seo_oauth_states_state_hash"),)

    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    state_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    user_id: Mapped[str] = mapped_column(String(255), nullable=False)
    verifier_sealed: Mapped[str] = mapped_column(Text, nullable=False)
    redirect_uri: Mapped[str] = mapped_column(String(2048), nullable=False)
    read_only: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoProperty(RecordMixin, TenantMixin, Base):
    """A Search Console property (`https://example.com/` or `sc-domain:example.com`) whose data
    we hold: rows are stored per property, so switching property deletes nothing. Up to
    `final_through` the stored days are final; after it, up to `fresh_through`, fresh."""

    __tablename__ = "seo_properties"
    __table_args__ = (UniqueConstraint("tenant_id", "site_url", name="uq_seo_properties_site_url"),)

    site_url: Mapped[str] = mapped_column(String(2048), nullable=False)
    permission_level: Mapped[str | None] = mapped_column(String(40))
    final_through: Mapped[date | None] = mapped_column(Date)
    fresh_through: Mapped[date | None] = mapped_column(Date)
    last_synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoSyncRun(RecordMixin, TenantMixin, Base):
    """Every provider call runs inside one: queued -> running -> succeeded | partial | failed.
    `run_key` (kind:window) is deterministic, so a retried trigger finds the run it made and a
    crash resumes it rather than paying twice."""

    __tablename__ = "seo_sync_runs"
    __table_args__ = (
        Index("ix_seo_sync_runs_tenant_id_created_at", "tenant_id", "created_at"),
        Index("uq_seo_sync_runs_run_key", "tenant_id", "run_key", unique=True),
        Index(
            "ix_seo_sync_runs_active",
            "tenant_id",
            "kind",
            sqlite_where=ACTIVE_RUN,
            postgresql_where=ACTIVE_RUN,
        ),
    )

    kind: Mapped[str] = mapped_column(String(30), nullable=False)
    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    trigger: Mapped[str] = mapped_column(String(20), nullable=False)
    run_key: Mapped[str] = mapped_column(String(200), nullable=False)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    property_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="SET NULL")
    )
    progress_done: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    rows_written: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    credits_reserved: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    credits_used: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoSyncedDay(TenantMixin, Base):
    """A day of one property and search type fetched by a sync run, and whether it was final:
    what a resumed backfill skips, and what a later sync replaces while it is still fresh."""

    __tablename__ = "seo_synced_days"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id", "property_id", "search_type", "day", name="uq_seo_synced_days_day"
        ),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    property_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE"), nullable=False
    )
    search_type: Mapped[str] = mapped_column(String(10), nullable=False)
    day: Mapped[date] = mapped_column(Date, nullable=False)
    is_final: Mapped[bool] = mapped_column(Boolean, nullable=False)
    rows: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    synced_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class _Figures:
    clicks: Mapped[int] = mapped_column(Integer, nullable=False)
    impressions: Mapped[int] = mapped_column(Integer, nullable=False)
    position_sum: Mapped[float] = mapped_column(Float, nullable=False)


class SeoSiteDay(_Figures, TenantMixin, Base):
    """The property's totals for a day and search type, anonymized queries included."""

    __tablename__ = "seo_site_days"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id", "property_id", "search_type", "day", name="uq_seo_site_days_day"
        ),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    property_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE"), nullable=False
    )
    search_type: Mapped[str] = mapped_column(String(10), nullable=False)
    day: Mapped[date] = mapped_column(Date, nullable=False)


class SeoPageDay(_Figures, TenantMixin, Base):
    """A page's totals for a day, search type, country and device (no query dimension, so
    anonymized queries are counted)."""

    __tablename__ = "seo_page_days"
    __table_args__ = (
        Index("ix_seo_page_days_day", "tenant_id", "property_id", "search_type", "day"),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    property_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE"), nullable=False
    )
    search_type: Mapped[str] = mapped_column(String(10), nullable=False)
    day: Mapped[date] = mapped_column(Date, nullable=False)
    page: Mapped[str] = mapped_column(String(2048), nullable=False)
    country: Mapped[str] = mapped_column(String(3), nullable=False)
    device: Mapped[str] = mapped_column(String(10), nullable=False)


class SeoQueryDay(_Figures, TenantMixin, Base):
    """A query's row for a day, search type, page, country and device, as Search Console
    returned it (only its top rows; anonymized queries never appear)."""

    __tablename__ = "seo_query_days"
    __table_args__ = (
        Index("ix_seo_query_days_day", "tenant_id", "property_id", "search_type", "day"),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    property_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE"), nullable=False
    )
    search_type: Mapped[str] = mapped_column(String(10), nullable=False)
    day: Mapped[date] = mapped_column(Date, nullable=False)
    query: Mapped[str] = mapped_column(String(512), nullable=False)
    page: Mapped[str] = mapped_column(String(2048), nullable=False)
    country: Mapped[str] = mapped_column(String(3), nullable=False)
    device: Mapped[str] = mapped_column(String(10), nullable=False)


class SeoSitemap(RecordMixin, TenantMixin, Base):
    """A sitemap known to Search Console (sitemaps.list) or declared in robots.txt (the latest
    website-scan snapshot)."""

    __tablename__ = "seo_sitemaps"
    __table_args__ = (
        UniqueConstraint("tenant_id", "property_id", "source", "url", name="uq_seo_sitemaps_url"),
    )

    property_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE")
    )
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False)  # search_console | robots_txt
    is_index: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    is_pending: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    last_submitted: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_downloaded: Mapped[datetime | None] = mapped_column(UTCDateTime)
    errors: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    warnings: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    contents: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoUrlInspection(RecordMixin, TenantMixin, Base):
    """One URL Inspection API call: pending -> completed | failed. Its fields mirror
    IndexStatusInspectionResult and RichResultsResult."""

    __tablename__ = "seo_url_inspections"
    __table_args__ = (
        Index("ix_seo_url_inspections_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_seo_url_inspections_url", "tenant_id", "url", "created_at"),
        # The property's quota: inspections asked for since the day's reset.
        Index("ix_seo_url_inspections_quota", "tenant_id", "property_id", "created_at"),
        Index(
            "ix_seo_url_inspections_pending",
            "created_at",
            sqlite_where=PENDING_INSPECTION,
            postgresql_where=PENDING_INSPECTION,
        ),
    )

    property_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("seo_properties.id", ondelete="CASCADE")
    )
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    language_code: Mapped[str | None] = mapped_column(String(35))
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    verdict: Mapped[str | None] = mapped_column(String(20))
    coverage_state: Mapped[str | None] = mapped_column(String(255))
    indexing_state: Mapped[str | None] = mapped_column(String(60))
    robots_txt_state: Mapped[str | None] = mapped_column(String(60))
    page_fetch_state: Mapped[str | None] = mapped_column(String(60))
    google_canonical: Mapped[str | None] = mapped_column(String(2048))
    user_canonical: Mapped[str | None] = mapped_column(String(2048))
    crawled_as: Mapped[str | None] = mapped_column(String(20))
    last_crawl_time: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sitemaps: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    referring_urls: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    rich_results: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    inspection_result_link: Mapped[str | None] = mapped_column(String(2048))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    requested_by: Mapped[str | None] = mapped_column(String(255))
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
