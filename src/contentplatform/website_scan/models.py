"""The tables of website scan's configurations: one site's crawl settings, and its schedule.

Runs, snapshots and pages come with the crawler, in tables of their own.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
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
    # The run it started last (the runs' table comes with the crawler: no foreign key yet).
    last_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
