"""The tables of website scan: a site's crawl settings and schedule, its runs, the snapshot each
run yields (its pages and broken links) and the site profile inferred from one."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
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

from contentplatform.kit.db import Base, RecordMixin, SoftDeleteMixin, TenantMixin, UTCDateTime

LIVE = text("deleted_at IS NULL")
# A schedule is due-able exactly when it has a next run: disabled and deleted ones have none.
SCHEDULED = text("deleted_at IS NULL AND next_run_at IS NOT NULL")


class CrawlConfig(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """One site's (or section's) crawl settings. A run copies them when it starts, so a change
    applies to the next run only."""

    __tablename__ = "crawl_configs"
    __table_args__ = (
        Index("ix_crawl_configs_tenant_id_created_at", "tenant_id", "created_at"),
        # One live config per start URL in a tenant (websiteScan.createConfig's 409).
        Index(
            "uq_crawl_configs_tenant_id_start_url",
            "tenant_id",
            "start_url",
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        ),
    )

    name: Mapped[str] = mapped_column(String(100), nullable=False)
    # Normalized (lower-case scheme and host, no default port, no fragment, path at least "/").
    start_url: Mapped[str] = mapped_column(String(2048), nullable=False)
    # The start URL's host (IDNA form): the crawl stays on it (and its subdomains when allowed).
    host: Mapped[str] = mapped_column(String(253), nullable=False)
    # Regular expressions matched against a URL's path (exclude wins over include).
    include_patterns: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    exclude_patterns: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    max_pages: Mapped[int] = mapped_column(Integer, nullable=False)
    max_depth: Mapped[int] = mapped_column(Integer, nullable=False)
    respect_robots_txt: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # Per host.
    requests_per_second: Mapped[float] = mapped_column(Float, nullable=False)
    # Requests in flight at once per host.
    concurrency: Mapped[int] = mapped_column(Integer, nullable=False)
    sitemap_mode: Mapped[str] = mapped_column(String(10), nullable=False)  # include|skip|only
    allow_subdomains: Mapped[bool] = mapped_column(Boolean, nullable=False)
    check_external_links: Mapped[bool] = mapped_column(Boolean, nullable=False)
    render_javascript: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # The identity provider's id of whoever created it.
    created_by: Mapped[str | None] = mapped_column(String(255))


class CrawlSchedule(RecordMixin, TenantMixin, SoftDeleteMixin, Base):
    """A config's recurring crawl: a cron read on `timezone`'s wall clock, at most daily.
    `next_run_at` (UTC) is set while it is enabled and its config live, None otherwise."""

    __tablename__ = "crawl_schedules"
    __table_args__ = (
        UniqueConstraint("config_id"),
        # What the scheduler's tick reads: due schedules by next_run_at, across tenants.
        Index(
            "ix_crawl_schedules_due",
            "next_run_at",
            sqlite_where=SCHEDULED,
            postgresql_where=SCHEDULED,
        ),
    )

    config_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_configs.id", ondelete="CASCADE"), nullable=False
    )
    cron_expression: Mapped[str] = mapped_column(String(120), nullable=False)
    timezone: Mapped[str] = mapped_column(String(64), nullable=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # Re-import pages already imported when their content_hash changed (for the crawler).
    auto_import_changed: Mapped[bool] = mapped_column(Boolean, nullable=False)
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The run it started last (kept when that run's rows go: no foreign key).
    last_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)


ACTIVE_STATUSES = ("queued", "running", "cancelling")
TERMINAL_STATUSES = ("completed", "failed", "cancelled")
ACTIVE = text("status IN ('queued', 'running', 'cancelling')")


class CrawlRun(RecordMixin, TenantMixin, Base):
    """One crawl of a config: queued -> running -> completed | failed; cancelling moves queued
    -> cancelled and running -> cancelling -> cancelled. `settings` is the config as it was when
    the run started (with the run's overrides). `frontier` is what is left to fetch, stored with
    each batch of pages, so a crash resumes without fetching a stored page again."""

    __tablename__ = "crawl_runs"
    __table_args__ = (
        Index("ix_crawl_runs_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_crawl_runs_config_id_created_at", "config_id", "created_at"),
        # One active run per config, even under racing starts (websiteScan.startCrawl's 409).
        Index(
            "uq_crawl_runs_config_id_active",
            "config_id",
            unique=True,
            sqlite_where=ACTIVE,
            postgresql_where=ACTIVE,
        ),
        # What the reconciler reads: every active run, across tenants.
        Index("ix_crawl_runs_active", "status", sqlite_where=ACTIVE, postgresql_where=ACTIVE),
        Index("ix_crawl_runs_tenant_id_idempotency_key", "tenant_id", "idempotency_key"),
    )

    config_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_configs.id", ondelete="CASCADE"), nullable=False
    )
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    trigger: Mapped[str] = mapped_column(String(10), nullable=False)  # manual | schedule
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    pages_discovered: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    pages_crawled: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    pages_failed: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    pages_skipped: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    queue_size: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    current_depth: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    truncated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    frontier: Mapped[str | None] = mapped_column(Text)
    snapshot_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    error_code: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    created_by: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class CrawlSnapshot(RecordMixin, TenantMixin, Base):
    """The frozen result of one run: made when the run starts (its pages point at it), listed
    once the run ends (`finished_at`). `partial` when the run was cancelled or failed. Content
    is kept for the latest 20 per config; older ones keep metadata (`content_purged`)."""

    __tablename__ = "crawl_snapshots"
    __table_args__ = (
        UniqueConstraint("crawl_run_id"),
        Index("ix_crawl_snapshots_config_id_created_at", "config_id", "created_at"),
        Index("ix_crawl_snapshots_tenant_id_created_at", "tenant_id", "created_at"),
    )

    config_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_configs.id", ondelete="CASCADE"), nullable=False
    )
    crawl_run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_runs.id", ondelete="CASCADE"), nullable=False
    )
    partial: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    page_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # {"2xx": n, "3xx": n, "4xx": n, "5xx": n, "error": n}
    status_counts: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False, default=dict)
    broken_link_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    total_words: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    content_purged: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The site's files as the crawl found them (crawling/site_files.py): {status, body, error,
    # truncated}; null in a snapshot made before they were kept (its checks: not evaluated),
    # and llms_txt when robots.txt kept us from it.
    robots_txt: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    llms_txt: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # {read: [{url, type, url_count, error}], listed: {url: [sitemap, ...]}}: null when the
    # crawl read no sitemap (sitemap_mode skip) or predates this.
    sitemaps: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class CrawlPage(TenantMixin, Base):
    """One page of a snapshot, one row per normalized URL (`url_hash`, its sha256, keys it:
    URLs are too long for some indexes). What an SEO audit reads, and the main content
    (`content`, markdown; None once purged by retention, or for a page that had none)."""

    __tablename__ = "crawl_pages"
    __table_args__ = (
        UniqueConstraint("snapshot_id", "url_hash"),
        Index("ix_crawl_pages_snapshot_id_url", "snapshot_id", "url"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_snapshots.id", ondelete="CASCADE"), nullable=False
    )
    url: Mapped[str] = mapped_column(Text, nullable=False)
    url_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    final_url: Mapped[str] = mapped_column(Text, nullable=False)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(40))
    error_message: Mapped[str | None] = mapped_column(Text)
    redirect_chain: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    content_type: Mapped[str | None] = mapped_column(String(255))
    language: Mapped[str | None] = mapped_column(String(35))
    title: Mapped[str | None] = mapped_column(Text)
    meta_description: Mapped[str | None] = mapped_column(Text)
    canonical_url: Mapped[str | None] = mapped_column(Text)
    robots_meta: Mapped[str | None] = mapped_column(Text)
    x_robots_tag: Mapped[str | None] = mapped_column(Text)
    noindex: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # [[tag, text], ...] in document order (h1-h6)
    headings: Mapped[list[list[str]]] = mapped_column(JSON, nullable=False, default=list)
    hreflang: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False, default=dict)
    json_ld: Mapped[list[Any]] = mapped_column(JSON, nullable=False, default=list)
    # [{"url", "text", "rel", "internal"}, ...] in document order
    links: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    word_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    content: Mapped[str | None] = mapped_column(Text)
    depth: Mapped[int] = mapped_column(Integer, nullable=False)
    load_ms: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # To the answer's headers (load_ms: to its whole body); null in pages crawled before.
    ttfb_ms: Mapped[int | None] = mapped_column(Integer)
    # crawling/pages.AuditFacts: {images: [{src, alt}], open_graph, twitter, viewport,
    # security_headers, mixed_content}; null when no answer came, and in pages crawled before
    # (their checks: not evaluated).
    audit: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    size_bytes: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    fetched_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # The document it was imported as (websiteScan.importPages), if any.
    document_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)


class CrawlBrokenLink(TenantMixin, Base):
    """One broken link target of a snapshot and where it was linked from."""

    __tablename__ = "crawl_broken_links"
    __table_args__ = (Index("ix_crawl_broken_links_snapshot_id", "snapshot_id", "target_url"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_snapshots.id", ondelete="CASCADE"), nullable=False
    )
    target_url: Mapped[str] = mapped_column(Text, nullable=False)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(40))
    internal: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # [{"source_url", "link_text"}, ...]
    occurrences: Mapped[list[dict[str, str]]] = mapped_column(JSON, nullable=False, default=list)


class SiteProfile(RecordMixin, TenantMixin, Base):
    """What a config's site says about the business (a suggestion only): none -> generating ->
    ready | failed. One per config, replaced by each refresh."""

    __tablename__ = "crawl_site_profiles"
    __table_args__ = (UniqueConstraint("config_id"),)

    config_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("crawl_configs.id", ondelete="CASCADE"), nullable=False
    )
    snapshot_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    status: Mapped[str] = mapped_column(String(12), nullable=False)
    # business, products, audiences, tone, topics, languages, confidence, evidence_page_ids
    profile: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    reservation_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    generated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
