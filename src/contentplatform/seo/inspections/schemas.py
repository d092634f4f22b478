"""Inputs and answers of sitemaps and URL inspections: inputs camelCase on the wire, the
records (Sitemap, UrlInspection) as the catalog names their fields (snake_case)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier

MAX_URLS = 100
# BCP 47 as far as Google's languageCode needs it ("en", "en-US", "zh-Hant-TW").
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*")

SitemapSource = Literal["search_console", "robots_txt"]
InspectionStatus = Literal["pending", "completed", "failed"]
Verdict = Literal["PASS", "PARTIAL", "FAIL", "NEUTRAL"]


def _https_url(value: str) -> str:
    """An absolute https URL with a host and no credentials (what Google inspects and reads
    sitemaps from); kept as given but for surrounding blanks."""
    value = value.strip()
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (a port out of range raises here)
    except ValueError:
        raise ValueError("must be an https URL") from None
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise ValueError("must be an https URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    return value


HttpsUrl = Annotated[Identifier, Field(min_length=1, max_length=2048), AfterValidator(_https_url)]


def _unique(urls: list[str]) -> list[str]:
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            raise ValueError(f"lists {url} twice: each URL once")
        seen.add(url)
    return urls


def _language(value: str | None) -> str | None:
    if value is not None and not _LANGUAGE_TAG.fullmatch(value):
        raise ValueError("must be a BCP 47 language tag (en, en-US, pt-BR)")
    return value


class ListSitemapsInput(Input):
    source: Literal["all", "search_console", "robots_txt"] = Field(
        "all",
        description="`search_console`: known to Search Console; `robots_txt`: declared "
        "in the site's robots.txt.",
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class SubmitSitemapInput(Input):
    url: HttpsUrl = Field(
        description="The sitemap's https URL, within the selected Search Console property."
    )


class SitemapIdInput(Input):
    id: uuid.UUID


class InspectUrlsInput(Input):
    urls: Annotated[
        list[HttpsUrl], Field(min_length=1, max_length=MAX_URLS), AfterValidator(_unique)
    ] = Field(description="1 to 100 distinct https URLs within the selected property.")
    language_code: Annotated[Identifier | None, AfterValidator(_language)] = Field(
        None,
        max_length=35,
        description="BCP 47 language of the issue messages; default: the SEO settings' "
        "language, else Google's default (en-US).",
    )
    force: bool = Field(
        False,
        description="Inspect again a URL inspected within the last 24 hours (it is otherwise "
        "returned as it is).",
    )


class ListUrlInspectionsInput(Input):
    verdict: Verdict | None = Field(None, description="Only inspections with this verdict.")
    status: InspectionStatus | None = Field(None, description="Only inspections in this status.")
    search: Identifier | None = Field(
        None, min_length=1, max_length=255, description="Only URLs containing this text."
    )
    latest_only: bool = Field(
        True, description="Only the newest inspection of each URL (false: every inspection)."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class UrlInspectionIdInput(Input):
    id: uuid.UUID


class SitemapContent(BaseModel):
    type: str = Field(description="web, image, video, news, mobile, androidApp, pattern, ...")
    submitted: int | None = Field(description="URLs of this type the sitemap lists.")


class SitemapSnapshot(BaseModel):
    """The sitemap cross-checked against the newest complete website-scan snapshot of the
    property's site. Every figure is null while no such snapshot read the sitemap (no scan
    yet, one made before scans kept their sitemaps, or a sitemap the scan did not reach)."""

    snapshot_id: uuid.UUID | None = Field(None, description="The snapshot compared with.")
    urls: int | None = Field(
        description="URLs of the site the sitemap lists (through its children for an index), "
        "as far as the scan read them (at most its page limit)."
    )
    non_200: int | None = Field(description="Of them, crawled with a status other than 200.")
    non_indexable: int | None = Field(
        description="Of them, crawled as noindex or canonicalized elsewhere."
    )
    not_listed_indexable_pages: int | None = Field(
        description="Indexable pages of the crawl that no sitemap lists."
    )


NO_SNAPSHOT = SitemapSnapshot(
    snapshot_id=None, urls=None, non_200=None, non_indexable=None, not_listed_indexable_pages=None
)


class Sitemap(Record):
    id: uuid.UUID
    url: str
    source: SitemapSource
    is_index: bool = Field(description="A sitemap index (it lists other sitemaps).")
    is_pending: bool = Field(description="Google has not processed it yet (just submitted).")
    last_submitted: datetime | None
    last_downloaded: datetime | None = Field(description="When Google last read it.")
    errors: int = Field(description="Errors Google found in it.")
    warnings: int = Field(description="Warnings Google found in it.")
    contents: list[SitemapContent] = Field(
        description="What it lists by type (Google's deprecated `indexed` counts are not shown)."
    )
    snapshot: SitemapSnapshot = Field(
        default_factory=NO_SNAPSHOT.model_copy,
        description="The cross-check against the latest website-scan crawl.",
    )
    synced_at: datetime | None = Field(description="When we last read it from its source.")


class SitemapPage(Page[Sitemap]):
    pass


class RichResultIssue(BaseModel):
    message: str
    severity: str = Field(description="WARNING or ERROR.")


class RichResultItem(BaseModel):
    type: str = Field(description="The rich result type (Breadcrumbs, FAQ, Product, ...).")
    issues: list[RichResultIssue]


class RichResults(BaseModel):
    verdict: str | None
    items: list[RichResultItem]


class InspectionError(BaseModel):
    code: str = Field(
        description="Google's reason (`forbidden`, `invalid`, `quotaExceeded`, ...), "
        "`grant_revoked`, `not_connected`, `unreachable` or `stalled`."
    )
    message: str


class UrlInspection(Record):
    id: uuid.UUID
    url: str
    page_id: uuid.UUID | None = Field(
        None, description="Reserved for the page of our own content at this URL; null for now."
    )
    status: InspectionStatus
    verdict: Verdict | None
    coverage_state: str | None
    indexing_state: str | None
    robots_txt_state: str | None
    page_fetch_state: str | None
    google_canonical: str | None
    user_canonical: str | None
    crawled_as: str | None = Field(description="DESKTOP or MOBILE.")
    last_crawl_time: datetime | None
    sitemaps: list[str]
    referring_urls: list[str]
    rich_results: RichResults | None
    inspection_result_link: str | None = Field(
        description="The inspection in Search Console's own interface."
    )
    error: InspectionError | None
    requested_by: str | None
    created_at: datetime
    completed_at: datetime | None


class UrlInspectionPage(Page[UrlInspection]):
    pass


class PreviousInspection(BaseModel):
    verdict: Verdict | None
    coverage_state: str | None
    google_canonical: str | None
    completed_at: datetime | None


class UrlInspectionDetail(UrlInspection):
    previous: PreviousInspection | None = Field(
        description="The completed inspection of the same URL before this one, if any."
    )


class InspectionQuota(BaseModel):
    used_today: int = Field(description="Inspections asked for today (Pacific time).")
    limit_per_day: int
    remaining: int


class InspectUrlsAnswer(BaseModel):
    data: list[UrlInspection] = Field(
        description="One per URL asked for, in the order asked: a new pending inspection, or "
        "the one made within the last 24 hours."
    )
    total: int
    quota: InspectionQuota
