"""Content analytics' inputs and answers: the sources, and the reads of what published drafts
earned."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from contentplatform.analytics.schemas import (
    ComparedPeriodInput,
    Granularity,
    Group,
    Metric,
    PeriodInput,
    SeriesPeriodInput,
)
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page
from contentplatform.kit.text import Identifier

Provider = Literal["search_console", "ga4", "plausible", "umami"]
SourceStatus = Literal["pending_auth", "connected", "syncing", "error", "disconnected"]
SyncStatus = Literal["running", "succeeded", "partial", "failed"]
ContentMetric = Literal[
    "views",
    "visitors",
    "clicks",
    "impressions",
    "ctr",
    "avg_position",
    "seo_score_avg",
    "published_count",
]
CONTENT_METRICS: tuple[ContentMetric, ...] = get_args(ContentMetric)
TopMetric = Literal[
    "views", "visitors", "clicks", "impressions", "ctr", "avg_position", "seo_score_avg"
]
Grouping = Literal[
    "source", "channel", "referrer", "country", "device", "publisher_connection", "job"
]
Channel = Literal["ai_assistant", "search", "social", "email", "referral", "direct"]


# --- sources ------------------------------------------------------------------------------------


class AnalyticsSource(BaseModel):
    """A provider the organization's traffic is read from. Its secrets never show."""

    id: uuid.UUID
    provider: Provider
    property: str = Field(
        description="The Search Console site URL, GA4 property id, Plausible site_id or Umami "
        "website id."
    )
    status: SourceStatus
    metrics: list[str] = Field(description="The metrics this provider reports.")
    lag_days: int = Field(description="How many days after a day its figures are complete.")
    last_synced_at: datetime | None
    data_through: date | None = Field(
        description="The provider's last complete day stored (every day before it too); null "
        "before the first sync."
    )
    sync_status: SyncStatus | None = Field(
        description="How the latest sync ended (`partial`: some days were refused, "
        "`missing_days` names them)."
    )
    sync_from: date | None
    sync_to: date | None
    missing_days: list[date]
    error: dict[str, str] | None = Field(description="{code, message} while in error.")
    created_at: datetime


class AnalyticsSourceList(Listing[AnalyticsSource]):
    pass


class AnalyticsCredentials(Input):
    """Plausible: `apiKey`. Umami: `baseUrl` and `apiKey` or `username` and `password`. GA4's
    second call: `code` and `state` from Google's redirect."""

    api_key: Identifier | None = Field(None, min_length=1, max_length=500)
    username: Identifier | None = Field(None, min_length=1, max_length=255)
    password: Identifier | None = Field(None, min_length=1, max_length=255)
    base_url: Identifier | None = Field(None, min_length=8, max_length=500)
    code: Identifier | None = Field(None, min_length=1, max_length=2000)
    state: Identifier | None = Field(None, min_length=8, max_length=200)


class ContentConnectSourceInput(Input):
    provider: Provider = Field(
        description="`search_console` reads SEO's Search Console facts (no second sync); `ga4`, "
        "`plausible` and `umami` sync daily. The catalog's `webhook` is not offered (no "
        "contract)."
    )
    property: Identifier = Field(
        min_length=1,
        max_length=255,
        description="Search Console: the SEO connection's selected site URL; GA4: the numeric "
        "property id; Plausible: the site_id (its domain); Umami: the website id.",
    )
    credentials: AnalyticsCredentials | None = None
    seo_connection_id: uuid.UUID | None = Field(
        None, description="search_console: the SEO connection it reuses (optional)."
    )
    site_url: Identifier | None = Field(
        None,
        min_length=8,
        max_length=500,
        description="Umami: the site's URL its paths are on (https://example.com).",
    )
    redirect_uri: Identifier | None = Field(
        None,
        max_length=2000,
        description="GA4: where Google sends the admin back (one of SEO_OAUTH_REDIRECT_URIS).",
    )


class ContentConnectedSource(BaseModel):
    source: AnalyticsSource
    authorize_url: str | None = Field(
        description="GA4: where the admin consents; then connectSource again with "
        "credentials {code, state}. Null for the others."
    )


class ContentDisconnectSourceInput(Input):
    id: uuid.UUID
    purge_data: bool = Field(False, description="Delete the figures synced from it too.")


class ContentSyncSourceInput(Input):
    id: uuid.UUID
    days: int = Field(28, ge=1, le=480, description="The days to sync, ending yesterday.")


class ContentSyncStarted(BaseModel):
    source_id: uuid.UUID
    status: Literal["syncing"]
    from_: date = Field(alias="from")
    to: date

    model_config = {"populate_by_name": True}


# --- reads --------------------------------------------------------------------------------------


class _Filters(BaseModel):
    job_id: uuid.UUID | None = Field(None, description="Only the drafts of this job.")
    publisher_connection_id: uuid.UUID | None = Field(
        None, description="Only the copies published on this publisher connection (target)."
    )
    workflow_id: uuid.UUID | None = Field(
        None, description="Only the drafts of jobs naming this workflow."
    )
    source: uuid.UUID | None = Field(None, description="Only this analytics source's figures.")


def _metrics(value: str) -> str:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONTENT_METRICS]
    if not names or unknown:
        raise ValueError("metrics are a comma-separated list of " + ", ".join(CONTENT_METRICS))
    return ",".join(dict.fromkeys(names))


class ContentOverviewInput(ComparedPeriodInput, _Filters):
    pass


class ContentTimeseriesInput(SeriesPeriodInput, _Filters):
    metrics: str = Field(
        "views,clicks",
        max_length=200,
        description="Comma-separated, of: " + ", ".join(CONTENT_METRICS),
    )
    draft_id: uuid.UUID | None = Field(None, description="Only this draft.")

    @field_validator("metrics")
    @classmethod
    def _known(cls, value: str) -> str:
        return _metrics(value)

    @property
    def metric_list(self) -> list[str]:
        return self.metrics.split(",")


class ContentBreakdownInput(PeriodInput, _Filters):
    group_by: Grouping = Field(
        description="source (analytics source), channel (ai_assistant, search, social, email, "
        "referral, direct), referrer (the referring source), country, device, "
        "publisher_connection (the target) or job."
    )
    metrics: str = Field(
        "views,clicks",
        max_length=200,
        description="Comma-separated, of: " + ", ".join(CONTENT_METRICS),
    )
    sort_by: ContentMetric | None = Field(None, description="Default: the first metric.")
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)

    @field_validator("metrics")
    @classmethod
    def _known(cls, value: str) -> str:
        return _metrics(value)

    @property
    def metric_list(self) -> list[str]:
        return self.metrics.split(",")


class ContentTopInput(PeriodInput, _Filters):
    metric: TopMetric = "views"
    direction: Literal["top", "bottom"] = "top"
    limit: int = Field(10, ge=1, le=50)
    min_days_published: int = Field(
        7, ge=0, le=365, description="`bottom` leaves out posts published fewer days ago."
    )


class ContentDraftPerformanceInput(SeriesPeriodInput):
    id: uuid.UUID


class ContentScoreTrendInput(SeriesPeriodInput, _Filters):
    pass


Values = dict[str, float | int | None]


class ContentOverview(BaseModel):
    date_from: date
    date_to: date
    data_through: date | None = Field(
        description="The last complete day of the sources read (the earliest of them); null "
        "when none has synced."
    )
    metrics: dict[str, Metric[float]]


class ContentPoint(BaseModel):
    start: datetime
    end: datetime
    values: Values


class ContentSeries(BaseModel):
    granularity: Granularity
    date_from: date
    date_to: date
    data_through: date | None
    data: list[ContentPoint]


class ContentBreakdownRow(BaseModel):
    group: Group
    values: Values


class ContentBreakdownPage(Page[ContentBreakdownRow]):
    pass


class ContentTopRow(BaseModel):
    draft_id: uuid.UUID
    title: str
    url: str | None
    published_at: datetime | None
    value: float | None
    change_pct: float | None = Field(description="Against the period as long just before.")
    seo_score: int | None
    credits_spent: int = Field(description="Credits debited for the draft (its generation).")


class ContentTopPage(Page[ContentTopRow]):
    pass


class ContentPublication(BaseModel):
    publisher_connection_id: uuid.UUID
    url: str
    published_at: datetime | None


class ContentSourceTotals(BaseModel):
    source_id: uuid.UUID
    provider: Provider
    totals: Values = Field(
        description="Null figures: the source does not report them, or is "
        "in error or not synced yet."
    )


class ContentScorePoint(BaseModel):
    at: datetime
    score: int
    reason: Literal["generated", "optimized", "edited", "rescored"]


class ContentQueryRow(BaseModel):
    query: str
    clicks: int
    impressions: int
    position: float | None


class ContentCost(BaseModel):
    """What the draft cost beside what it earned over the period."""

    credits_spent: int = Field(description="Credits debited for the draft, all time.")
    views_per_credit: float | None = Field(description="Null: no credits, or views unknown.")
    clicks_per_credit: float | None = Field(description="Null: no credits, or clicks unknown.")


class ContentDraftPerformance(BaseModel):
    draft_id: uuid.UUID
    title: str
    status: str
    published: list[ContentPublication]
    totals: Values
    by_source: list[ContentSourceTotals]
    timeseries: list[ContentPoint]
    seo_score_history: list[ContentScorePoint]
    top_queries: list[ContentQueryRow]
    cost: ContentCost
    data_through: date | None


class ContentScoreBucket(BaseModel):
    start: datetime
    end: datetime
    avg: float | None
    p50: float | None
    count: int


class ContentScoreRange(BaseModel):
    range: Literal["0-49", "50-69", "70-84", "85-100"]
    count: int


class ContentScoreTrend(BaseModel):
    data: list[ContentScoreBucket]
    distribution: list[ContentScoreRange]
    date_from: date
    date_to: date
