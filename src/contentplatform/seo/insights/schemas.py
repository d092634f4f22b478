"""listSearchInsights' input and answer."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page

InsightType = Literal["striking_distance", "low_ctr", "decaying_page", "cannibalization"]


class ListSearchInsightsInput(Input):
    type: InsightType
    period: Literal["28d", "90d"] = Field(
        "28d", description="The days read: the last 28 or 90 final days stored."
    )
    min_impressions: int = Field(
        100,
        ge=0,
        le=1_000_000,
        description="Leave out rows (a query on a page; a query for cannibalization) with "
        "fewer impressions in the period.",
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class CompetingPage(BaseModel):
    page_id: uuid.UUID | None = Field(description="Null: pages are not yet linked to content.")
    url: str
    impressions_share: float = Field(description="Its share of the query's impressions (0-1).")
    position: float | None
    top_days: int = Field(description="Days it was the query's best-placed page.")


class SearchInsight(BaseModel):
    type: InsightType
    query: str | None = Field(description="Null for decaying_page (a page, all its queries).")
    page_id: uuid.UUID | None = Field(description="Null: pages are not yet linked to content.")
    page_url: str = Field(description="The page (cannibalization: the one with most impressions).")
    clicks: int
    impressions: int
    ctr: float
    expected_ctr: float | None = Field(
        description="The CTR the tenant's curve expects at this position (low_ctr, "
        "striking_distance: at position 3)."
    )
    position: float | None
    previous_clicks: int | None = Field(description="decaying_page: the previous period's.")
    year_ago_clicks: int | None = Field(
        description="decaying_page: the same days a year before, when stored."
    )
    change_pct: float | None = Field(description="decaying_page: clicks' change in %.")
    competing_pages: list[CompetingPage] = Field(
        description="cannibalization: our pages sharing the query; empty otherwise."
    )
    opportunity_clicks: int = Field(
        description="Clicks a fix could win (decaying_page: the clicks lost); the list's order."
    )
    action_id: uuid.UUID | None = Field(
        description="The SEO action made from this insight: null until SEO actions exist."
    )
    explanation: str = Field(description="Why it is listed, with its numbers.")


class CurvePoint(BaseModel):
    position: int
    ctr: float


class CtrCurve(BaseModel):
    source: Literal["own", "default"] = Field(
        description="`own`: fitted on the tenant's query rows of the last 90 days (monotone: "
        "never higher at a worse position); `default` until those hold 1,000 clicks."
    )
    clicks: int = Field(description="Clicks the fit had.")
    points: list[CurvePoint] = Field(description="The expected CTR at each whole position.")


class InsightPage(Page[SearchInsight]):
    period_start: date | None = Field(description="Null before any final day is stored.")
    period_end: date | None
    ctr_curve: CtrCurve
    computed_at: datetime
