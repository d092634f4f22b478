"""Inputs and answers of website scan's crawl-run operations: inputs camelCase on the wire, the
run (CrawlRun) as the catalog names its fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier
from contentplatform.website_scan.schemas import RunStatus, SettingsChange, SitemapMode


class CrawlOverrides(SettingsChange):
    """Settings for this run only, over the config's (the config does not change)."""


class StartCrawlInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "configId": "5f0c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f",
                    "overrides": {"maxPages": 50},
                    "idempotencyKey": "crawl-2026-11-28-blog",
                }
            ]
        }
    )

    config_id: uuid.UUID
    overrides: CrawlOverrides | None = None
    idempotency_key: Identifier | None = Field(
        None,
        min_length=8,
        max_length=128,
        description="The same key within 24 hours returns the run it started, starting nothing.",
    )


class ListCrawlsInput(Input):
    config_id: uuid.UUID | None = None
    status: Literal[
        "all", "queued", "running", "cancelling", "completed", "failed", "cancelled"
    ] = "all"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class CrawlIdInput(Input):
    id: uuid.UUID


class CrawlProgress(BaseModel):
    pages_discovered: int = Field(description="URLs found so far (queued, fetched or stored).")
    pages_crawled: int = Field(description="Pages fetched and stored in the snapshot.")
    pages_failed: int = Field(description="Stored pages that answered >= 400 or failed.")
    pages_skipped: int = Field(description="URLs robots.txt disallowed (known once it ends).")
    queue_size: int
    percent: float = Field(description="crawled / (crawled + queued), capped by maxPages; 0-100.")
    current_depth: int
    eta_seconds: int | None = Field(description="From the pace so far; null before it is known.")


class CrawlError(BaseModel):
    code: str
    message: str


class CrawlSettingsRecord(BaseModel):
    start_url: str
    include_patterns: list[str]
    exclude_patterns: list[str]
    max_pages: int
    max_depth: int
    respect_robots_txt: bool
    requests_per_second: float
    concurrency: int
    sitemap_mode: SitemapMode
    allow_subdomains: bool
    check_external_links: bool
    user_agent: str


class CrawlRun(Record):
    id: uuid.UUID
    config_id: uuid.UUID
    status: RunStatus
    trigger: Literal["manual", "schedule"]
    settings: CrawlSettingsRecord = Field(description="What this run crawls with (fixed).")
    progress: CrawlProgress
    truncated: bool = Field(description="maxPages was reached: URLs were left uncrawled.")
    snapshot_id: uuid.UUID | None = Field(description="Set once the run ends.")
    error: CrawlError | None
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CrawlRunPage(Page[CrawlRun]):
    pass
