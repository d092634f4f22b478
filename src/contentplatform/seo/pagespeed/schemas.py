"""Inputs and answers of PageSpeed: inputs camelCase on the wire, the result as the catalog names
its fields (snake_case)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Identifier
from contentplatform.seo.inspections.schemas import HttpsUrl

MAX_URLS = 20
MAX_RUNS = 5
# Lighthouse's performance score moves by several points from one run to the next on the same
# page (network and CPU variance: Lighthouse's own docs, "Score variability"); the median of
# three is the smallest number of runs that drops one outlier.
DEFAULT_RUNS = 3

Strategy = Literal["mobile", "desktop"]
Category = Literal["performance", "seo", "accessibility", "best-practices"]
CATEGORIES: tuple[Category, ...] = ("performance", "seo", "accessibility", "best-practices")
Scope = Literal["url", "origin", "none"]
OverallCategory = Literal["FAST", "AVERAGE", "SLOW"]


def _distinct(values: list[Category]) -> list[Category]:
    if len(set(values)) != len(values):
        raise ValueError("names a category twice: each once")
    return values


class RunPageSpeedInput(Input):
    urls: Annotated[list[HttpsUrl] | None, Field(min_length=1, max_length=MAX_URLS)] = Field(
        None,
        description="1 to 20 https URLs (at most 2,048 characters each), normalized and "
        "deduplicated. Default: the top `audit.pagespeed_top_pages` pages of the SEO settings "
        "by Search Console clicks in the last 28 days of stored data, else the site's home "
        "page (the SEO profile's site_url).",
    )
    strategy: Literal["mobile", "desktop", "both"] = Field(
        "mobile", description="Lighthouse's device emulation; `both` measures each URL twice."
    )
    categories: Annotated[
        list[Category], Field(min_length=1, max_length=4), AfterValidator(_distinct)
    ] = Field(
        default_factory=lambda: list(CATEGORIES),
        description="Lighthouse categories to score (default all four). Lab metrics come with "
        "`performance`.",
    )
    runs: int = Field(
        DEFAULT_RUNS,
        ge=1,
        le=MAX_RUNS,
        description="Lighthouse runs per URL and strategy, 1 to 5 (default 3). One run is "
        "noise: its performance score varies by several points from run to run, so the "
        "stored figures are the median of the runs, their spread shown beside.",
    )


class ListPageSpeedResultsInput(Input):
    page_id: uuid.UUID | None = Field(None, description="Only results of this page's URL.")
    url: Identifier | None = Field(
        None,
        min_length=1,
        max_length=2048,
        description="Only results of this URL (exact, as normalized when it was measured).",
    )
    strategy: Strategy | None = Field(None, description="Only results of this strategy.")
    latest_only: bool = Field(
        True, description="Only the newest result of each URL and strategy (false: every one)."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class Scores(BaseModel):
    performance: int | None = Field(description="0-100; null when not asked for or not scored.")
    seo: int | None
    accessibility: int | None
    best_practices: int | None


class LabMetrics(BaseModel):
    """Lighthouse's lab measurements (its `numericValue`s)."""

    lcp_ms: int | None = Field(description="Largest Contentful Paint.")
    cls: float | None = Field(description="Cumulative Layout Shift.")
    tbt_ms: int | None = Field(description="Total Blocking Time (lab's stand-in for INP).")
    fcp_ms: int | None = Field(description="First Contentful Paint.")
    speed_index_ms: int | None = Field(description="Speed Index.")


class FieldData(BaseModel):
    """Chrome UX Report data of real visits over 28 days, at the 75th percentile."""

    scope: Scope = Field(
        description="`url`: the URL's own data; `origin`: the site's (too few visits to the "
        "URL); `none`: no field data."
    )
    lcp_ms: int | None
    inp_ms: int | None = Field(description="Interaction to Next Paint.")
    cls: float | None
    overall_category: OverallCategory | None


class FailedAudit(BaseModel):
    id: str = Field(description="Lighthouse's audit id (e.g. `render-blocking-resources`).")
    title: str
    score: float = Field(description="0 to 1; failed means below 0.9.")
    display_value: str | None


class MinMax(BaseModel):
    min: float | None
    max: float | None


class RunFigures(BaseModel):
    """One Lighthouse run's figures."""

    scores: Scores
    lab: LabMetrics
    fetched_at: datetime | None


class Spread(BaseModel):
    """The lowest and highest figure over the runs, per score and lab metric."""

    performance: MinMax
    seo: MinMax
    accessibility: MinMax
    best_practices: MinMax
    lcp_ms: MinMax
    cls: MinMax
    tbt_ms: MinMax
    fcp_ms: MinMax
    speed_index_ms: MinMax


class ResultError(BaseModel):
    code: str = Field(
        description="Lighthouse's error (`FAILED_DOCUMENT_REQUEST`, `ERRORED_DOCUMENT_REQUEST`, "
        "`NO_FCP`, ...), `quota_exceeded` (429), `provider_error` (5xx), `unreachable`, "
        "`invalid_request` or `invalid_response`."
    )
    message: str


class PageSpeedResult(BaseModel):
    id: uuid.UUID
    url: str = Field(description="The URL measured, normalized.")
    page_id: uuid.UUID | None = Field(
        None, description="The page of the site's inventory at this URL, if any."
    )
    strategy: Strategy
    scores: Scores | None = Field(description="Median category scores; null when it failed.")
    lab: LabMetrics | None = Field(description="Median lab metrics; null when it failed.")
    field: FieldData | None = Field(description="Field data (of the last run); null if failed.")
    failed_audits: list[FailedAudit] = Field(
        description="Scored audits below 0.9 in the run whose performance score is the median."
    )
    runs: list[RunFigures] = Field(description="Each Lighthouse run's figures, in order.")
    spread: Spread | None = Field(description="Min and max over the runs; null when failed.")
    lighthouse_version: str | None
    error: ResultError | None = Field(description="Why the measurement failed; null when not.")
    fetched_at: datetime = Field(description="When the last run was answered (or failed).")
    sync_run_id: uuid.UUID | None = Field(description="The sync run (kind `pagespeed`).")


class PageSpeedResultPage(Page[PageSpeedResult]):
    pass
