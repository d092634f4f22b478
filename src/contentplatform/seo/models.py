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
from collections.abc import Mapping
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
# An organization whose audits run weekly: the tick's rows.
AUDIT_SCHEDULED = text("next_audit_at IS NOT NULL")
# An organization whose tracked keywords are checked on a schedule: the rank tick's rows.
RANK_SCHEDULED = text("next_rank_check_at IS NOT NULL")
# An organization whose AI visibility prompts are asked on a schedule: that tick's rows.
AI_VISIBILITY_SCHEDULED = text("next_ai_visibility_at IS NOT NULL")
# An organization whose next month's SEO plan is generated on a day of the month.
PLAN_SCHEDULED = text("next_plan_at IS NOT NULL")
# Fact tables hold millions of rows: an integer key (SQLite's rowid) rather than a UUID.
FactKey = BigInteger().with_variant(Integer(), "sqlite")


class SeoSettings(TenantMixin, Base):
    """The tenant's SEO profile: one row, made with defaults on first read. Each block
    (search_console, rank, ...) is a JSON object merged on update."""

    __tablename__ = "seo_settings"
    __table_args__ = (
        UniqueConstraint("tenant_id", name="uq_seo_settings_tenant_id"),
        Index(
            "ix_seo_settings_next_audit_at",
            "next_audit_at",
            sqlite_where=AUDIT_SCHEDULED,
            postgresql_where=AUDIT_SCHEDULED,
        ),
        Index(
            "ix_seo_settings_next_rank_check_at",
            "next_rank_check_at",
            sqlite_where=RANK_SCHEDULED,
            postgresql_where=RANK_SCHEDULED,
        ),
        Index(
            "ix_seo_settings_next_ai_visibility_at",
            "next_ai_visibility_at",
            sqlite_where=AI_VISIBILITY_SCHEDULED,
            postgresql_where=AI_VISIBILITY_SCHEDULED,
        ),
        Index(
            "ix_seo_settings_next_plan_at",
            "next_plan_at",
            sqlite_where=PLAN_SCHEDULED,
            postgresql_where=PLAN_SCHEDULED,
        ),
    )

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
    # When the weekly audit is next due (audit.trigger `weekly`; none otherwise).
    next_audit_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the scheduled rank check is next due (rank.frequency daily or weekly, at a local
    # hour of the organization's zone; none when `off` or before any keyword was tracked).
    next_rank_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the scheduled AI visibility run is next due (ai_visibility.frequency daily or
    # weekly; none when `off` or before any prompt was tracked).
    next_ai_visibility_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When next month's SEO plan is generated (planning.auto_generate_day, at a local hour of
    # the organization's zone; none when the day is null).
    next_plan_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


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
    # What the run fetched but has not stored yet, kept so that a run resumed after a crash
    # does not ask for it again (the Search Console sync's window totals); cleared when it
    # ends. Never shown.
    checkpoint: Mapped[dict[str, Any] | None] = mapped_column(JSON)
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


class SeoLlmsTxt(RecordMixin, TenantMixin, Base):
    """The llms.txt we generated for the tenant's site (seo.generateLlmsTxt): one per tenant,
    replaced by each generation."""

    __tablename__ = "seo_llms_txt"
    __table_args__ = (UniqueConstraint("tenant_id", name="uq_seo_llms_txt_tenant_id"),)

    snapshot_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("crawl_snapshots.id", ondelete="SET NULL")
    )
    content: Mapped[str] = mapped_column(Text, nullable=False)
    # The generation's options as asked (summary, sections, includeUrls, ...).
    options: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # [{title, links: [{title, url, description}]}]
    sections: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    link_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    generated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


# --- The page inventory (issue 41, SEO part 2) --------------------------------------------------

# listPages' orders: each has an index (tenant_id, column, id), so a first page is a range scan
# of the index whatever the tenant's row count, in either direction for a column never null.
PAGE_SORT_COLUMNS = (
    "clicks_28d",
    "impressions_28d",
    "position_28d",
    "clicks_change_pct",
    "open_issues",
    "citability_score",
    "url",
)
# A nullable one puts its nulls last either way: on PostgreSQL the plain index reads ASC NULLS
# LAST, and migration 0049_seo_pages adds (tenant_id, column DESC NULLS LAST, id DESC) for the
# other way. SQLite cannot declare that order in an index, so the models leave those out.
PAGE_NULLABLE_SORTS = ("position_28d", "clicks_change_pct", "open_issues", "citability_score")
PAGE_DESC_INDEXES = frozenset(f"ix_seo_pages_{column}_desc" for column in PAGE_NULLABLE_SORTS)


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic `include_name` hook: the PostgreSQL-only indexes out of the drift check."""
    return not (type_ == "index" and name in PAGE_DESC_INDEXES)


class SeoPage(RecordMixin, TenantMixin, Base):
    """One page of the tenant's site per normalized URL (website_scan.crawling.urls.normalize:
    lowercase host, no fragment, tracking parameters dropped), joining what each source knows
    of it, kept on the row by events (seo/pages/inventory.py), never computed on read: the
    website scans (title, status, indexability, citability), Search Console (the 28-day
    figures), URL inspections (the newest verdict), our published drafts (draft_id). `id` is
    the page_id the other SEO parts refer to. open_issues/highest_severity (audits) and
    performance_score/lcp_category (PageSpeed) are written by those parts, tracked_keywords at
    the end of each rank check; ai_citations_28d stays null until AI visibility exists."""

    __tablename__ = "seo_pages"
    __table_args__ = (
        UniqueConstraint("tenant_id", "url_hash", name="uq_seo_pages_url_hash"),
        *(
            Index(f"ix_seo_pages_{column}", "tenant_id", column, "id")
            for column in PAGE_SORT_COLUMNS
        ),
    )

    url: Mapped[str] = mapped_column(Text, nullable=False)
    url_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    title: Mapped[str | None] = mapped_column(Text)
    status_code: Mapped[int | None] = mapped_column(Integer)
    indexable: Mapped[bool | None] = mapped_column(Boolean)
    # The sources: seen in a scan (ever), in the newest scan of its site, in Search Console's
    # last 56 stored days, as the URL of one of our published drafts.
    in_snapshot: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    in_latest_snapshot: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    in_search_console: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    published: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The scan page it was last seen as (websiteScan.getPage), for the 360's GEO view.
    snapshot_page_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # The page URLs as Search Console wrote them that normalize to this one (at most 20): what
    # the 360's series and queries read.
    search_console_pages: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    clicks_28d: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    impressions_28d: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    ctr_28d: Mapped[float | None] = mapped_column(Float)
    position_28d: Mapped[float | None] = mapped_column(Float)
    clicks_change_pct: Mapped[float | None] = mapped_column(Float)
    inspection_verdict: Mapped[str | None] = mapped_column(String(20))
    inspection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    # The audit open_issues/highest_severity come from (getPage lists its findings).
    audit_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    citability_score: Mapped[int | None] = mapped_column(Integer)
    # Written by the audits and PageSpeed parts.
    open_issues: Mapped[int | None] = mapped_column(Integer)
    highest_severity: Mapped[str | None] = mapped_column(String(10))
    performance_score: Mapped[int | None] = mapped_column(Integer)
    lcp_category: Mapped[str | None] = mapped_column(String(10))
    # Null until AI visibility exists.
    ai_citations_28d: Mapped[int | None] = mapped_column(Integer)
    # Tracked keywords whose newest check ranks this page (written when a rank check ends).
    tracked_keywords: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


# --- Technical SEO audits (issue 41) --------------------------------------------------------
# An audit evaluates one completed website-scan snapshot with the tenant's check settings
# frozen into it (`checks`, `checks_version`). Its findings are one row per check and URL
# (a URL fixed since the previous audit is kept as a row of change `fixed`, with the evidence
# it had then); its issues one row per check that fails now or failed before, so listing an
# audit's issues never scans its findings.

ACTIVE_AUDIT = text("status IN ('queued', 'running')")


class SeoAuditRun(RecordMixin, TenantMixin, Base):
    """One audit: queued -> running -> completed | failed (`error`)."""

    __tablename__ = "seo_audit_runs"
    __table_args__ = (
        Index("ix_seo_audit_runs_tenant_id_created_at", "tenant_id", "created_at"),
        # createAudit's "same snapshot and checks_version" and the previous audit of a site.
        Index("ix_seo_audit_runs_snapshot", "tenant_id", "snapshot_id", "checks_version"),
        Index("ix_seo_audit_runs_config", "tenant_id", "config_id", "status", "finished_at"),
        # What the reconciler reads: every audit still to finish, across tenants.
        Index(
            "ix_seo_audit_runs_active",
            "created_at",
            sqlite_where=ACTIVE_AUDIT,
            postgresql_where=ACTIVE_AUDIT,
        ),
    )

    # No foreign keys to the scan: an audit outlives its snapshot's retention.
    config_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    trigger: Mapped[str] = mapped_column(String(12), nullable=False)
    checks_version: Mapped[str] = mapped_column(String(16), nullable=False)
    # {check_id: {enabled, severity, threshold, exclude_url_patterns}} as in force then.
    checks: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    pages_analyzed: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    health_score: Mapped[float | None] = mapped_column(Float)
    issue_counts: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False, default=dict)
    category_counts: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False, default=dict)
    not_evaluated: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False, default=dict)
    new_issue_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    fixed_issue_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    previous_audit_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    error: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoAuditIssue(TenantMixin, Base):
    """One check of an audit that fails now or failed in the previous audit."""

    __tablename__ = "seo_audit_issues"
    __table_args__ = (
        UniqueConstraint("audit_id", "check_id", name="uq_seo_audit_issues_check"),
        Index(
            "ix_seo_audit_issues_order", "tenant_id", "audit_id", "severity_rank", "affected_urls"
        ),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    audit_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_audit_runs.id", ondelete="CASCADE"), nullable=False
    )
    check_id: Mapped[str] = mapped_column(String(64), nullable=False)
    category: Mapped[str] = mapped_column(String(20), nullable=False)
    severity: Mapped[str] = mapped_column(String(10), nullable=False)
    severity_rank: Mapped[int] = mapped_column(Integer, nullable=False)
    affected_urls: Mapped[int] = mapped_column(Integer, nullable=False)
    previous_affected_urls: Mapped[int] = mapped_column(Integer, nullable=False)
    change: Mapped[str | None] = mapped_column(String(12))  # new | persisting | fixed | None
    not_evaluated: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    sample_urls: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)


class SeoAuditFinding(TenantMixin, Base):
    """One URL a check of an audit found (or found in the previous audit: change `fixed`)."""

    __tablename__ = "seo_audit_findings"
    __table_args__ = (
        Index("ix_seo_audit_findings_check", "tenant_id", "audit_id", "check_id", "change"),
        # A page's findings (seo.getPage).
        Index("ix_seo_audit_findings_url", "tenant_id", "audit_id", "url_hash"),
    )

    id: Mapped[int] = mapped_column(FactKey, primary_key=True, autoincrement=True)
    audit_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_audit_runs.id", ondelete="CASCADE"), nullable=False
    )
    check_id: Mapped[str] = mapped_column(String(64), nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    url_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    page_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    change: Mapped[str] = mapped_column(String(12), nullable=False)  # new | persisting | fixed
    # The draft published at this URL, if one of ours is (its editing is then offered).
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)


class SeoAuditCheckSetting(RecordMixin, TenantMixin, Base):
    """A tenant's override of one audit check (seo.updateAuditCheck); none is the defaults."""

    __tablename__ = "seo_audit_check_settings"
    __table_args__ = (
        UniqueConstraint("tenant_id", "check_id", name="uq_seo_audit_check_settings_check"),
    )

    check_id: Mapped[str] = mapped_column(String(64), nullable=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    severity: Mapped[str | None] = mapped_column(String(10))
    threshold: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False, default=dict)
    exclude_url_patterns: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    updated_by: Mapped[str | None] = mapped_column(String(255))


# --- PageSpeed (issue 41) -------------------------------------------------------------------

PENDING_PAGESPEED = text("status = 'pending'")


class SeoPageSpeedResult(RecordMixin, TenantMixin, Base):
    """One URL and strategy measured by seo.runPageSpeed inside a sync run (kind `pagespeed`):
    pending -> completed | failed. While pending, `runs` collects each Lighthouse run as it is
    answered (a resumed run measures only what is missing); completed, the figures are the
    runs' medians and `spread` their min and max. `url` is normalized; `url_hash` (its SHA-256)
    keeps the per-URL index short."""

    __tablename__ = "seo_pagespeed_results"
    __table_args__ = (
        Index("ix_seo_pagespeed_results_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_seo_pagespeed_results_latest", "tenant_id", "url_hash", "strategy", "created_at"),
        Index("ix_seo_pagespeed_results_run", "tenant_id", "sync_run_id"),
        Index(
            "ix_seo_pagespeed_results_pending",
            "created_at",
            sqlite_where=PENDING_PAGESPEED,
            postgresql_where=PENDING_PAGESPEED,
        ),
    )

    sync_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    url_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    strategy: Mapped[str] = mapped_column(String(10), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    # As asked: Lighthouse categories, and how many runs make the result.
    categories: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    runs_wanted: Mapped[int] = mapped_column(Integer, nullable=False)
    scores: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    lab: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    field: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    failed_audits: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    runs: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    spread: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    lighthouse_version: Mapped[str | None] = mapped_column(String(40))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fetched_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


# --- Rank tracking (issue 42, part a) --------------------------------------------------------
# A tracked keyword is one keyword x market (location, language) x device, its current figures
# kept on its row by each check (seo/rank/durable.py), never computed on read. Each check of
# it is one position row (the task's state while the check runs, then the position read) and,
# once it succeeded, one stored SERP (the provider's items, as DataForSEO's advanced model).

RANK_SORT_COLUMNS = ("position", "change_7d", "search_volume", "estimated_traffic", "keyword")
PENDING_RANK = text("status IN ('pending', 'posted')")


class SeoTrackedKeyword(RecordMixin, TenantMixin, Base):
    """One keyword x location x language x device (immutable, so its history stays one
    series). `position` null: not within the checked depth (or not checked yet)."""

    __tablename__ = "seo_tracked_keywords"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id",
            "keyword",
            "location_code",
            "language_code",
            "device",
            name="uq_seo_tracked_keywords_market",
        ),
        *(
            Index(f"ix_seo_tracked_keywords_{column}", "tenant_id", column, "id")
            for column in RANK_SORT_COLUMNS
        ),
    )

    keyword: Mapped[str] = mapped_column(String(100), nullable=False)
    location_code: Mapped[int] = mapped_column(Integer, nullable=False)
    language_code: Mapped[str] = mapped_column(String(35), nullable=False)
    device: Mapped[str] = mapped_column(String(10), nullable=False)
    tags: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    target_url: Mapped[str | None] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(10), nullable=False, default="active")
    # Keyword data (a keyword-data provider's; null until it is fetched).
    search_volume: Mapped[int | None] = mapped_column(Integer)
    keyword_difficulty: Mapped[int | None] = mapped_column(Integer)
    cpc: Mapped[float | None] = mapped_column(Float)
    intent: Mapped[str | None] = mapped_column(String(20))
    # The newest check's reading.
    position: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(Text)
    previous_position: Mapped[int | None] = mapped_column(Integer)
    movement: Mapped[str | None] = mapped_column(String(10))
    change_1d: Mapped[int | None] = mapped_column(Integer)
    change_7d: Mapped[int | None] = mapped_column(Integer)
    change_30d: Mapped[int | None] = mapped_column(Integer)
    best_position: Mapped[int | None] = mapped_column(Integer)
    estimated_traffic: Mapped[float | None] = mapped_column(Float)
    serp_features: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    ai_overview_present: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    ai_overview_cited: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    competitors: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    cannibalization: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, nullable=False, default=list
    )
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoKeywordPosition(RecordMixin, TenantMixin, Base):
    """One keyword in one check (a sync run of kind `rank_check`): pending -> posted (the
    provider's task id kept, so a resumed check never posts it again) -> completed | failed.
    Completed, it is one point of the keyword's history."""

    __tablename__ = "seo_keyword_positions"
    __table_args__ = (
        UniqueConstraint("tenant_id", "sync_run_id", "keyword_id", name="uq_seo_keyword_positions"),
        Index("ix_seo_keyword_positions_history", "tenant_id", "keyword_id", "check_date"),
        Index("ix_seo_keyword_positions_date", "tenant_id", "check_date"),
        Index(
            "ix_seo_keyword_positions_pending",
            "created_at",
            sqlite_where=PENDING_RANK,
            postgresql_where=PENDING_RANK,
        ),
    )

    keyword_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_tracked_keywords.id", ondelete="CASCADE"), nullable=False
    )
    sync_run_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    task_id: Mapped[str | None] = mapped_column(String(64))
    check_date: Mapped[date] = mapped_column(Date, nullable=False)
    checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    position: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(Text)
    serp_features: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    ai_overview_present: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    ai_overview_cited: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # [{competitor_id, position, url, known}]: known false when the check stopped at our
    # domain before reaching the competitor (its position is unknown, not "not ranking").
    competitors: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    cannibalization: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, nullable=False, default=list
    )
    # SERP pages the provider read (what the check commits for it).
    pages: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    cost: Mapped[float | None] = mapped_column(Float)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class SeoSerpSnapshot(RecordMixin, TenantMixin, Base):
    """The results page one succeeded check read for one keyword: DataForSEO's advanced items
    (trimmed to what is shown), owner marked."""

    __tablename__ = "seo_serp_snapshots"
    __table_args__ = (
        UniqueConstraint("tenant_id", "sync_run_id", "keyword_id", name="uq_seo_serp_snapshots"),
        Index("ix_seo_serp_snapshots_keyword", "tenant_id", "keyword_id", "check_date"),
    )

    keyword_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_tracked_keywords.id", ondelete="CASCADE"), nullable=False
    )
    sync_run_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    check_date: Mapped[date] = mapped_column(Date, nullable=False)
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    location_code: Mapped[int] = mapped_column(Integer, nullable=False)
    language_code: Mapped[str] = mapped_column(String(35), nullable=False)
    device: Mapped[str] = mapped_column(String(10), nullable=False)
    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    depth: Mapped[int] = mapped_column(Integer, nullable=False)
    stopped_at_own_domain: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    item_types: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    items: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)


class SeoKeywordResearch(RecordMixin, TenantMixin, Base):
    """One keyword-research answer of the keyword provider (seo.researchKeywords), kept 30 days
    per market (location, language) and request (`request_hash`: mode, normalized seeds, limit)
    so that asking again is free. `ideas` are the provider's, de-duplicated, before the
    request's filters and without our positions (both applied on read)."""

    __tablename__ = "seo_keyword_research"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id",
            "location_code",
            "language_code",
            "request_hash",
            name="uq_seo_keyword_research_request",
        ),
    )

    location_code: Mapped[int] = mapped_column(Integer, nullable=False)
    language_code: Mapped[str] = mapped_column(String(35), nullable=False)
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    mode: Mapped[str] = mapped_column(String(10), nullable=False)
    seeds: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    limit: Mapped[int] = mapped_column(Integer, nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False)
    ideas: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    credits_used: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    fetched_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


# --- SEO actions (issue 42, part c) ----------------------------------------------------------
# The SEO to-do list: tasks made by rules from the signals above (audits, Search Console
# insights, URL inspections, rank checks, GEO) or by hand. A generated one is keyed by its
# fingerprint (a hash of type and subject), unique per tenant, so regenerating finds it again
# rather than making a second, and a dismissed one stays dismissed.


class SeoAction(RecordMixin, TenantMixin, Base):
    """One task: open <-> in_progress -> done -> verified (by the system, when the signal is
    gone); open | in_progress -> dismissed -> open; a regression reopens a verified one.
    `priority_rank` orders `priority` (critical 3 .. low 0)."""

    __tablename__ = "seo_actions"
    __table_args__ = (
        UniqueConstraint("tenant_id", "fingerprint", name="uq_seo_actions_fingerprint"),
        # The list's filters, each with the default order (priority, impact) behind it.
        Index(
            "ix_seo_actions_status", "tenant_id", "status", "priority_rank", "impact_score", "id"
        ),
        Index("ix_seo_actions_type", "tenant_id", "type", "status"),
        Index("ix_seo_actions_source", "tenant_id", "source", "status"),
        Index("ix_seo_actions_assignee", "tenant_id", "assignee_id"),
        # A published draft finds its action through its job or its job instance.
        Index("ix_seo_actions_job", "tenant_id", "job_id"),
        Index("ix_seo_actions_job_instance", "tenant_id", "job_instance_id"),
    )

    type: Mapped[str] = mapped_column(String(40), nullable=False)
    source: Mapped[str] = mapped_column(String(20), nullable=False)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str | None] = mapped_column(Text)
    priority: Mapped[str] = mapped_column(String(10), nullable=False)
    priority_rank: Mapped[int] = mapped_column(Integer, nullable=False)
    impact_score: Mapped[int] = mapped_column(Integer, nullable=False)
    effort: Mapped[str] = mapped_column(String(10), nullable=False)
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    target_urls: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    page_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    keywords: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # The numbers that made it (and `subject`, what its fingerprint is of).
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    fingerprint: Mapped[str] = mapped_column(String(64), nullable=False)
    assignee_id: Mapped[str | None] = mapped_column(String(255))
    due_date: Mapped[date | None] = mapped_column(Date)
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    job_instance_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    audit_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    check_id: Mapped[str | None] = mapped_column(String(64))
    dismissed_reason: Mapped[str | None] = mapped_column(String(500))
    # {checked_at, result, detail}: what the last generation found of a done or verified one.
    verification: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    verified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoActionHistory(TenantMixin, Base):
    """One move of an action (or a job made for it): when, by whom (a user id, or `system`),
    from and to which status, and why."""

    __tablename__ = "seo_action_history"
    __table_args__ = (Index("ix_seo_action_history_action", "tenant_id", "action_id", "at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    action_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_actions.id", ondelete="CASCADE"), nullable=False
    )
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    actor: Mapped[str] = mapped_column(String(255), nullable=False)
    from_status: Mapped[str | None] = mapped_column(String(12))
    to_status: Mapped[str] = mapped_column(String(12), nullable=False)
    note: Mapped[str | None] = mapped_column(Text)


# --- AI visibility (issue 45, SEO part 4) ----------------------------------------------------
# The prompts tracked across AI answer engines, and every answer a run got for one (prompt x
# engine x sample), kept as evidence with what was read from it locally: mentions with their
# character offsets, citations reduced to registrable domains, sentiment per mention sentence.
PENDING_AI_ANSWER = text("status = 'pending'")


class SeoAiPrompt(RecordMixin, TenantMixin, Base):
    """A tracked prompt: active <-> paused; deleted (soft: `deleted_at` set) leaves its answers
    stored but out of every metric. `text` is immutable so its series stays comparable;
    `text_key` (casefolded, blanks made one space) is what duplicates are compared on, with the
    market (country, language). `latest` is the newest run's reading of it."""

    __tablename__ = "seo_ai_prompts"
    __table_args__ = (
        Index("ix_seo_ai_prompts_key", "tenant_id", "text_key"),
        Index("ix_seo_ai_prompts_status", "tenant_id", "status", "created_at"),
    )

    text: Mapped[str] = mapped_column(String(500), nullable=False)
    text_key: Mapped[str] = mapped_column(String(500), nullable=False)
    topic: Mapped[str | None] = mapped_column(String(100))
    tags: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    intent: Mapped[str | None] = mapped_column(String(20))
    country: Mapped[str | None] = mapped_column(String(2))
    language: Mapped[str | None] = mapped_column(String(35))
    engines: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    status: Mapped[str] = mapped_column(String(10), nullable=False, default="active")
    source: Mapped[str] = mapped_column(String(10), nullable=False, default="manual")
    # {run_id, run_at, visibility, position, sentiment, cited, competitors_mentioned}
    latest: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Whether the newest run's answers mentioned the brand (the list's `mentioned` filter).
    latest_mentioned: Mapped[bool | None] = mapped_column(Boolean)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoAiAnswer(RecordMixin, TenantMixin, Base):
    """One sample of one prompt asked of one engine in one run (a sync run of kind
    `ai_visibility`): pending -> answered | failed. Keyed by (run, prompt, engine, sample), and
    each stored in its own transaction, so a resumed run never asks again for a sample it has.
    Answered, it holds the raw text and what extraction read from it."""

    __tablename__ = "seo_ai_answers"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id", "sync_run_id", "prompt_id", "engine", "sample", name="uq_seo_ai_answers"
        ),
        Index("ix_seo_ai_answers_prompt", "tenant_id", "prompt_id", "engine", "answered_at"),
        Index("ix_seo_ai_answers_day", "tenant_id", "answer_date"),
        Index(
            "ix_seo_ai_answers_pending",
            "created_at",
            sqlite_where=PENDING_AI_ANSWER,
            postgresql_where=PENDING_AI_ANSWER,
        ),
    )

    sync_run_id: Mapped[uuid.UUID] = mapped_column(Uuid, nullable=False)
    prompt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_ai_prompts.id", ondelete="CASCADE"), nullable=False
    )
    engine: Mapped[str] = mapped_column(String(20), nullable=False)
    sample: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)
    provider: Mapped[str] = mapped_column(String(40), nullable=False)
    model: Mapped[str | None] = mapped_column(String(100))
    country: Mapped[str | None] = mapped_column(String(2))
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    answer_date: Mapped[date | None] = mapped_column(Date)
    text: Mapped[str | None] = mapped_column(Text)
    # [{brand, competitor_id, name, position, sentiment, offsets:[[start, end]], excerpt}]
    mentions: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    # [{url, domain, title, position, owner, competitor_id}]
    citations: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    search_queries: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    brand_mentioned: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    brand_position: Mapped[int | None] = mapped_column(Integer)
    sentiment: Mapped[float | None] = mapped_column(Float)
    # Who scored the sentiment: the language model (named) or the lexicon (seo/ai_visibility/
    # sentiment.py), and the model's tokens for it, which the run's commit records.
    sentiment_method: Mapped[str | None] = mapped_column(String(150))
    sentiment_input_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    sentiment_output_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    cited: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)


# --- SEO plans (issue 44) --------------------------------------------------------------------
# A month's content plan made from the signals above (seo/plans/): its items, each a topic with
# a target date, approved into one job whose instances write them. At most one live plan (not
# archived, not deleted) per tenant and month, kept by a partial unique index.

LIVE_PLAN = text("status <> 'archived' AND deleted_at IS NULL")


class SeoPlan(RecordMixin, TenantMixin, Base):
    """generating -> draft | failed; draft -> approved -> completed; draft | failed ->
    generating (regenerate); any but generating -> archived. Soft-deleted (`deleted_at`)."""

    __tablename__ = "seo_plans"
    __table_args__ = (
        Index(
            "uq_seo_plans_live_month",
            "tenant_id",
            "month",
            unique=True,
            sqlite_where=LIVE_PLAN,
            postgresql_where=LIVE_PLAN,
        ),
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_seo_plans_idempotency_key"),
        Index("ix_seo_plans_tenant_month", "tenant_id", "month"),
        Index("ix_seo_plans_status", "status"),
    )

    month: Mapped[str] = mapped_column(String(7), nullable=False)  # YYYY-MM
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    goals: Mapped[str | None] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
    signals_used: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # {status, step, percent, provider, model, error}
    generation: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # What the last generate or regenerate asked for (the workflow reads it).
    params: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # Which generation this is (the workflow's id carries it: a regenerate is a new one).
    generation_round: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    credits_used: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    publisher_connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    created_by: Mapped[str | None] = mapped_column(String(255))
    approved_by: Mapped[str | None] = mapped_column(String(255))
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    archive_reason: Mapped[str | None] = mapped_column(String(500))
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SeoPlanItem(RecordMixin, TenantMixin, Base):
    """One topic of a plan: proposed -> accepted | rejected; accepted -> scheduled (a job
    instance) -> in_progress -> drafted -> published; scheduled -> skipped | failed."""

    __tablename__ = "seo_plan_items"
    __table_args__ = (
        Index("ix_seo_plan_items_plan", "tenant_id", "plan_id", "target_date", "position"),
        Index("ix_seo_plan_items_date", "tenant_id", "target_date"),
        Index("ix_seo_plan_items_instance", "tenant_id", "job_instance_id"),
    )

    plan_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("seo_plans.id", ondelete="CASCADE"), nullable=False
    )
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    primary_keyword: Mapped[str] = mapped_column(String(100), nullable=False)
    secondary_keywords: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    kind: Mapped[str] = mapped_column(String(10), nullable=False)  # new | refresh | geo
    intent: Mapped[str | None] = mapped_column(String(20))
    target_date: Mapped[date] = mapped_column(Date, nullable=False)
    target_url: Mapped[str | None] = mapped_column(String(2048))
    page_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    search_volume: Mapped[int | None] = mapped_column(Integer)
    keyword_difficulty: Mapped[int | None] = mapped_column(Integer)
    cpc: Mapped[float | None] = mapped_column(Float)
    opportunity_score: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(20), nullable=False)
    rationale: Mapped[str | None] = mapped_column(Text)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # {outline[], questions[], word_count_target, instructions}
    brief: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # {target_position, ctr, clicks, search_volume}: volume x CTR at the target position.
    forecast: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    document_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    seo_action_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    ai_prompt_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    cluster: Mapped[str | None] = mapped_column(String(100))
    locked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    job_instance_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    draft_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    published_url: Mapped[str | None] = mapped_column(Text)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
