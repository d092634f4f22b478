"""The page inventory's inputs and answers: SeoPage (a row of seo.listPages) and its 360 view."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier
from contentplatform.seo.geo.schemas import GeoPage
from contentplatform.seo.inspections.schemas import UrlInspection, Verdict
from contentplatform.seo.pagespeed.schemas import PageSpeedResult

Severity = Literal["error", "warning", "notice"]
Source = Literal["all", "snapshot", "search_console", "published"]
SortBy = Literal[
    "clicks", "impressions", "position", "clicks_change", "issues", "citability", "url"
]
Period = Literal["28d", "90d", "16m"]


class ListPagesInput(Input):
    search: Identifier | None = Field(
        None, min_length=1, max_length=255, description="URL or title contains (any case)."
    )
    source: Source = Field(
        "all",
        description="`snapshot`: seen in a website scan; `search_console`: in Search Console's "
        "last 56 stored days; `published`: the URL of one of our published drafts.",
    )
    indexable: bool | None = None
    has_issues: bool | None = Field(None, description="Has open audit issues.")
    severity: Severity | None = Field(None, description="Its highest open issue's severity.")
    verdict: Verdict | None = Field(None, description="Its newest URL inspection's verdict.")
    sort_by: SortBy = "clicks"
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class GetPageInput(Input):
    id: uuid.UUID
    period: Period = Field("28d", description="The series' and top queries' span.")


class _PageFields(Record):
    id: uuid.UUID = Field(description="The page_id the other SEO parts refer to.")
    url: str = Field(description="Normalized: lowercase host, no fragment, no tracking params.")
    title: str | None
    status_code: int | None
    indexable: bool | None = Field(
        description="A 200 HTML page, no noindex, its own canonical, at its newest scan; null "
        "when never scanned."
    )
    in_latest_snapshot: bool = Field(description="Found by the newest scan of its site.")
    clicks_28d: int = Field(description="Web search clicks in the last 28 stored days.")
    impressions_28d: int
    ctr_28d: float | None = Field(description="0 to 1; null without impressions.")
    position_28d: float | None = Field(description="Impression-weighted; null without any.")
    clicks_change_pct: float | None = Field(
        description="Clicks against the 28 days before; null when there were none then."
    )
    open_issues: int | None = Field(description="Open audit issues; null before any audit.")
    highest_severity: Severity | None
    inspection_verdict: Verdict | None = Field(description="The newest URL inspection's.")
    performance_score: int | None = Field(description="PageSpeed (mobile), 0-100.")
    lcp_category: str | None = Field(description="FAST, AVERAGE or SLOW (field data).")
    citability_score: int | None = Field(
        description="0-100 at the newest scan (seo.listGeoPages' rubric); null when not an "
        "indexable page of a scan."
    )
    ai_citations_28d: int | None = Field(
        description="Null until AI visibility tracks answers (a later part)."
    )
    draft_id: uuid.UUID | None = Field(description="Our published draft at this URL.")
    published_at: datetime | None
    last_seen_at: datetime | None = Field(description="When a scan last found it.")


class SeoPage(_PageFields):
    tracked_keywords: int = Field(
        description="Tracked keywords whose newest check ranks this page (as of the newest "
        "rank check's end)."
    )


class SeoPagePage(Page[SeoPage]):
    pass


class SeriesPoint(BaseModel):
    date: date
    clicks: int
    impressions: int
    position: float | None


class TopQuery(BaseModel):
    query: str
    clicks: int
    impressions: int
    ctr: float | None
    position: float | None


class PageIssue(BaseModel):
    check_id: str
    severity: Severity
    category: str
    evidence: dict[str, object]


class PageSpeedPair(BaseModel):
    mobile: PageSpeedResult | None = Field(description="Null until PageSpeed has run for it.")
    desktop: PageSpeedResult | None


class AiCitation(BaseModel):
    engine: str
    prompt_id: uuid.UUID
    answer_id: uuid.UUID
    answered_at: datetime


class KeywordMarket(BaseModel):
    location_code: int
    language_code: str


class PageKeyword(BaseModel):
    """A tracked keyword whose newest check ranks this page."""

    id: uuid.UUID = Field(description="The tracked keyword (seo.listTrackedKeywords).")
    keyword: str
    position: int | None
    device: Literal["desktop", "mobile"]
    market: KeywordMarket


class SeoPageDetail(_PageFields):
    series: list[SeriesPoint] = Field(description="Daily web search figures of the period.")
    top_queries: list[TopQuery] = Field(
        description="At most 20, most clicks first: the queries Search Console returned with "
        "this page (its top rows only; anonymized queries never appear)."
    )
    issues: list[PageIssue] = Field(description="Its open audit issues.")
    latest_inspection: UrlInspection | None
    pagespeed: PageSpeedPair
    tracked_keywords: list[PageKeyword] = Field(
        description="The tracked keywords whose newest check found this page as our ranking "
        "URL, best position first."
    )
    ai_citations: list[AiCitation] = Field(description="Empty until AI visibility exists.")
    geo: GeoPage | None = Field(
        description="Its citability in the newest complete scan; null when not an indexable "
        "page of it."
    )
    actions: list[dict[str, object]] = Field(description="Empty until SEO actions exist.")
