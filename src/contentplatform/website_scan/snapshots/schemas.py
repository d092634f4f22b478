"""Inputs and answers of website scan's snapshot reads (snapshots, their pages, a page's content,
diffs, broken links): inputs camelCase on the wire, the records as the catalog names their fields
(snake_case); the page content answer's `content_error` included."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record

StatusClass = Literal["all", "2xx", "3xx", "4xx", "5xx", "error"]
PageSort = Literal["url", "word_count", "status_code", "depth"]
ContentFormat = Literal["markdown", "text", "html"]
Change = Literal["added", "removed", "changed"]
# What a diff compares of a page present in both snapshots, in the order `fields_changed` lists.
ChangedField = Literal[
    "content", "title", "meta_description", "canonical", "status_code", "headings"
]

# Links of each kind a page's detail shows; the broken-link report has every broken one.
MAX_PAGE_LINKS = 500
# Where a broken link was found, shown per target at most; `occurrence_count` has them all.
MAX_OCCURRENCES = 500
# The most of a page's content one answer carries (UTF-8 bytes).
CONTENT_LIMIT_BYTES = 250_000


# --- inputs -----------------------------------------------------------------------------------


class ListSnapshotsInput(Input):
    config_id: uuid.UUID | None = Field(None, description="Only this configuration's snapshots.")
    include_partial: bool = Field(
        True, description="false: leave out the snapshots of cancelled or failed runs."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class SnapshotIdInput(Input):
    id: uuid.UUID


class ListCrawledPagesInput(Input):
    id: uuid.UUID = Field(description="The snapshot.")
    search: str | None = Field(
        None, max_length=255, description="Matches the URL or the title (any case)."
    )
    status_class: StatusClass = Field(
        "all", description="`error`: the page could not be fetched (no HTTP status)."
    )
    imported: bool | None = Field(
        None, description="true: pages imported as documents; false: the others."
    )
    min_words: int | None = Field(None, ge=0, description="Pages with at least this many words.")
    sort_by: PageSort = "url"
    sort_order: Literal["asc", "desc"] = "asc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class CrawledPageIdInput(Input):
    id: uuid.UUID


class CrawledPageContentInput(Input):
    id: uuid.UUID
    format: ContentFormat = Field(
        "markdown",
        description="`markdown` as extracted; `text` without markup; `html` rendered from the "
        "markdown and sanitized.",
    )


class DiffSnapshotsInput(Input):
    id: uuid.UUID = Field(description="The snapshot to compare (the newer one, usually).")
    base_snapshot_id: uuid.UUID | None = Field(
        None,
        description="What it is compared with; default: the previous finished, non-partial "
        "snapshot of the same configuration.",
    )
    change: Literal["all", "added", "removed", "changed"] = "all"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class BrokenLinksInput(Input):
    id: uuid.UUID = Field(description="The snapshot.")
    scope: Literal["all", "internal", "external"] = "all"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


# --- snapshots --------------------------------------------------------------------------------


class SnapshotStatusCounts(BaseModel):
    """Pages by status class; `error`: fetched with no HTTP status (DNS, TLS, timeout, ...)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    status_2xx: int = Field(alias="2xx")
    status_3xx: int = Field(alias="3xx")
    status_4xx: int = Field(alias="4xx")
    status_5xx: int = Field(alias="5xx")
    error: int


class Snapshot(Record):
    id: uuid.UUID
    config_id: uuid.UUID
    crawl_run_id: uuid.UUID
    partial: bool = Field(description="The run was cancelled or failed: some pages are missing.")
    page_count: int
    status_counts: SnapshotStatusCounts
    broken_link_count: int
    total_words: int
    content_purged: bool = Field(
        description="Retention removed the pages' content (only the latest 20 snapshots of a "
        "configuration keep it); their metadata remains."
    )
    created_at: datetime


class SnapshotDetail(Snapshot):
    previous_snapshot_id: uuid.UUID | None = Field(
        description="The finished, non-partial snapshot of the same configuration before this "
        "one (the default diff base); null when there is none."
    )


class SnapshotPage(Page[Snapshot]):
    pass


# --- pages ------------------------------------------------------------------------------------


class CrawledPageSummary(Record):
    id: uuid.UUID
    url: str
    status_code: int | None
    title: str | None
    meta_description: str | None
    canonical_url: str | None
    word_count: int
    depth: int
    content_hash: str | None
    document_id: uuid.UUID | None = Field(description="The document it was imported as.")


class CrawledPageSummaryPage(Page[CrawledPageSummary]):
    pass


class CrawledPageHeadings(BaseModel):
    """The page's headings by level, each list in document order."""

    h1: list[str]
    h2: list[str]
    h3: list[str]
    h4: list[str]
    h5: list[str]
    h6: list[str]


class CrawledPageLink(BaseModel):
    url: str
    text: str
    status_code: int | None = Field(
        description="Internal: the status the target answered in this crawl (null when it was "
        "not crawled or failed). External: the status of a broken one, else null."
    )


class CrawledPageLinks(BaseModel):
    internal: list[CrawledPageLink] = Field(description=f"At most {MAX_PAGE_LINKS}.")
    external: list[CrawledPageLink] = Field(description=f"At most {MAX_PAGE_LINKS}.")
    internal_truncated: bool = Field(description="The page has more internal links than shown.")
    external_truncated: bool = Field(description="The page has more external links than shown.")


class PageImage(BaseModel):
    src: str
    alt: str | None = Field(description="Null: no alt attribute; empty: marked decorative.")


class PageAuditFacts(BaseModel):
    images: list[PageImage] = Field(
        description="In document order, at most 500.",
        examples=[[{"src": "https://blog.example.com/watering-can.jpg", "alt": "A watering can"}]],
    )
    open_graph: dict[str, str] = Field(description="`og:*` meta tags (property -> content).")
    twitter: dict[str, str] = Field(description="`twitter:*` meta tags (name -> content).")
    viewport: str | None = Field(description="The viewport meta tag's content.")
    security_headers: dict[str, str] = Field(
        description="Which of Strict-Transport-Security, Content-Security-Policy, "
        "X-Content-Type-Options, X-Frame-Options, Referrer-Policy and Permissions-Policy the "
        "answer carried (lowercase names)."
    )
    mixed_content: list[str] = Field(
        description="Sub-resources (images, scripts, stylesheets, frames, media) an https page "
        "loads over http, at most 100."
    )


class CrawledPage(Record):
    id: uuid.UUID
    snapshot_id: uuid.UUID
    url: str = Field(description="Normalized: what the page is known by in diffs and links.")
    final_url: str
    status_code: int | None
    redirect_chain: list[str]
    content_type: str | None
    language: str | None
    title: str | None
    meta_description: str | None
    canonical_url: str | None
    robots_meta: str | None
    x_robots_tag: str | None
    noindex: bool
    hreflang: dict[str, str]
    json_ld: list[Any]
    headings: CrawledPageHeadings
    links: CrawledPageLinks
    word_count: int
    content_hash: str | None = Field(description="sha256 of the normalized main text.")
    depth: int
    load_ms: int
    ttfb_ms: int | None = Field(
        description="To the answer's headers (load_ms: to its whole body); null when no "
        "answer came, or in a page crawled before it was recorded."
    )
    audit: PageAuditFacts | None = Field(
        description="What the audits read beyond the above; null when no answer came, or in a "
        "page crawled before it was recorded (its checks are then not evaluated)."
    )
    sitemaps: list[str] | None = Field(
        description="The sitemaps of the scan that list the page (the file, and the index it "
        "came through); null when the scan read no sitemap or predates it."
    )
    size_bytes: int
    fetched_at: datetime
    error: str | None = Field(description="Why it could not be fetched (no HTTP status).")
    document_id: uuid.UUID | None


class CrawledPageContent(BaseModel):
    id: uuid.UUID
    url: str
    format: ContentFormat
    content: str = Field(description=f"At most {CONTENT_LIMIT_BYTES} bytes (UTF-8).")
    truncated: bool
    content_error: str | None = Field(
        description="Why there is no content (the page failed, was not HTML or had no main "
        "text); null when there is."
    )


# --- diffs ------------------------------------------------------------------------------------


class SnapshotDiffEntry(BaseModel):
    url: str
    change: Change
    fields_changed: list[ChangedField] = Field(description="Empty unless `change` is changed.")
    base_page_id: uuid.UUID | None = Field(description="Null when added.")
    page_id: uuid.UUID | None = Field(description="Null when removed.")


class SnapshotDiffSummary(BaseModel):
    added: int
    removed: int
    changed: int
    unchanged: int


class SnapshotDiff(Page[SnapshotDiffEntry]):
    """The pages that differ, by URL; `summary` counts every page, whatever `change` keeps."""

    base_snapshot_id: uuid.UUID | None = Field(
        description="Null when the snapshot has no base: every page is added."
    )
    snapshot_id: uuid.UUID
    summary: SnapshotDiffSummary


# --- broken links -----------------------------------------------------------------------------


class BrokenLinkOccurrence(BaseModel):
    page_id: uuid.UUID | None = Field(description="The linking page in this snapshot.")
    source_url: str
    link_text: str


class BrokenLink(BaseModel):
    target_url: str
    status_code: int | None
    error: str | None = Field(description="dns, tls, timeout, redirect loop, ...: no status.")
    internal: bool
    occurrence_count: int = Field(description="Links to it found in the snapshot.")
    occurrences: list[BrokenLinkOccurrence] = Field(
        description=f"Where it is linked from, the first {MAX_OCCURRENCES}."
    )


class BrokenLinkSummary(BaseModel):
    internal: int
    external: int
    pages_affected: int = Field(description="Pages with at least one broken link.")


class BrokenLinkReport(Page[BrokenLink]):
    """Broken targets by URL; `summary` counts the whole snapshot, whatever `scope` keeps."""

    summary: BrokenLinkSummary
