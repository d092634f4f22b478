"""Search Console's shapes: what it reported for a day, as the sync hands it to
`repository.replace_day` (plain frozen values, so the sync, the tests and the bench build them
alike), and queryPerformance's input and answer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page


@dataclass(frozen=True, slots=True)
class Figures:
    """A row's figures as Google gives them: `position` is the impression-weighted average
    position (stored as position x impressions so positions add up)."""

    clicks: int
    impressions: int
    position: float

    @property
    def position_sum(self) -> float:
        return self.position * self.impressions


@dataclass(frozen=True, slots=True)
class PageRow(Figures):
    """A page's totals for the day (dimensions page, country, device)."""

    page: str
    country: str
    device: str


@dataclass(frozen=True, slots=True)
class QueryRow(Figures):
    """A query row for the day (dimensions query, page, country, device)."""

    query: str
    page: str
    country: str
    device: str


# --- queryPerformance ---------------------------------------------------------------------------

Dimension = Literal["date", "query", "page", "country", "device"]
SearchType = Literal["web", "image", "video", "news", "discover"]
Operator = Literal["contains", "equals", "not_contains", "starts_with", "regex", "not_regex"]
Device = Literal["desktop", "mobile", "tablet"]
Brand = Literal["all", "branded", "non_branded"]
Compare = Literal["none", "previous_period", "previous_year"]
SortBy = Literal["clicks", "impressions", "ctr", "position", "date"]
# Search Console keeps 16 months of data; a window reaching further back holds nothing it
# could have given us.
WINDOW_MONTHS = 16
# The longest regular expression a filter takes: RE2 runs in linear time, but a pattern's
# compiled program grows with it.
MAX_PATTERN = 255
FIRST_DAY = date(2000, 1, 1)
# The fewest days on each side of an event its impact is judged on.
MIN_IMPACT_DAYS = 7
LAST_DAY = date(2999, 12, 31)


def months_before(day: date, months: int) -> date:
    """The same day `months` calendar months earlier (the month's last day when it has none)."""
    month_index = day.year * 12 + day.month - 1 - months
    year, month = divmod(month_index, 12)
    month += 1
    last = (date(year + month // 12, month % 12 + 1, 1) - date.resolution).day
    return date(year, month, min(day.day, last))


class QueryPerformanceInput(Input):
    start_date: date = Field(ge=FIRST_DAY, le=LAST_DAY, description="First day (inclusive).")
    end_date: date = Field(
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="Last day (inclusive), not before startDate; the window spans at most 16 "
        "months.",
    )
    dimensions: list[Dimension] = Field(
        default_factory=list,
        max_length=3,
        description="Group by up to 3 of these, each once (`?dimensions=query&dimensions=page`). "
        "None: one row of totals.",
    )
    search_type: SearchType = "web"
    query_filter: str | None = Field(None, min_length=1, max_length=MAX_PATTERN)
    query_operator: Operator = "contains"
    page_filter: str | None = Field(None, min_length=1, max_length=2048)
    page_operator: Operator = "contains"
    country: str | None = Field(
        None,
        pattern="^[a-zA-Z]{3}$",
        description="ISO 3166-1 alpha-3, as Search Console reports it (`usa`); any case.",
    )
    device: Device | None = None
    brand: Brand = Field(
        "all",
        description="`branded`: queries holding one of the brand name or terms of "
        "seo.getSettings (case-insensitive); `non_branded`: the others.",
    )
    compare: Compare = "none"
    sort_by: SortBy = "clicks"
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(100, ge=1, le=1000)
    event_date: date | None = Field(
        None,
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="The day a page changed (a content event's `date`): adds `impact`, the "
        "pageFilter's clicks in the days before it against the days after it, beside the rest "
        "of the site's. Needs pageFilter.",
    )
    event_days: int = Field(
        28,
        ge=MIN_IMPACT_DAYS,
        le=90,
        description="Days on each side of eventDate (the day itself is in neither); fewer "
        "when fewer are stored after it.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.end_date < self.start_date:
            raise ValueError("endDate is before startDate.")
        if self.event_date is not None and self.page_filter is None:
            raise ValueError("eventDate needs pageFilter: the page whose change is measured.")
        if self.start_date < months_before(self.end_date, WINDOW_MONTHS):
            raise ValueError("The window spans more than 16 months.")
        if len(set(self.dimensions)) != len(self.dimensions):
            raise ValueError("A dimension is named twice.")
        if self.sort_by == "date" and "date" not in self.dimensions:
            raise ValueError("sortBy date needs the date dimension.")
        for name, value, operator in (
            ("queryFilter", self.query_filter, self.query_operator),
            ("pageFilter", self.page_filter, self.page_operator),
        ):
            if value is not None and operator.endswith("regex") and len(value) > MAX_PATTERN:
                raise ValueError(
                    f"{name}: a regular expression is at most {MAX_PATTERN} characters."
                )
        return self


class Metrics(BaseModel):
    clicks: int
    impressions: int
    ctr: float = Field(description="clicks / impressions (0 without impressions).")
    position: float | None = Field(
        description="Average position, impression-weighted (null without impressions)."
    )


class Change(BaseModel):
    clicks_pct: float | None = Field(description="Change in %, null when the previous was 0.")
    impressions_pct: float | None = Field(description="Change in %, null when the previous was 0.")
    ctr_pts: float = Field(description="Change of the CTR in percentage points.")
    position: float | None = Field(
        description="Current minus previous position (negative: moved up); null when either "
        "had no impressions."
    )


# The keys' `date` field would shadow the type inside the class.
Day = date


class PerformanceKeys(BaseModel):
    date: Day | None = None
    query: str | None = None
    page: str | None = None
    country: str | None = None
    device: str | None = None


class PerformanceRow(Metrics):
    keys: PerformanceKeys = Field(description="The row's value of each dimension asked for.")
    previous: Metrics | None = Field(
        None, description="The same keys in the compared period (zeros when absent there)."
    )
    change: Change | None = None


class Hidden(BaseModel):
    clicks: int
    impressions: int
    clicks_share: float = Field(description="Hidden clicks / the scope's clicks (0 to 1).")
    impressions_share: float = Field(description="Hidden impressions / the scope's impressions.")


class DataState(BaseModel):
    final_through: date | None = Field(description="Stored days up to this one are final.")
    fresh_through: date | None = Field(
        description="The latest day stored; days after final_through are fresh (replaced when "
        "final)."
    )


ContentEventKind = Literal["published", "updated", "page_changed"]


class ContentEvent(BaseModel):
    date: Day = Field(
        description="The day it happened, in Search Console's days (Pacific Time), so it lines "
        "up with the series' date keys."
    )
    at: datetime
    kind: ContentEventKind = Field(
        description="`published`: a draft first put on a publishing target here; `updated`: "
        "a later publish of it to the same target; `page_changed`: a website scan found the "
        "page changed against the scan before it."
    )
    page: str = Field(description="The page's URL.")
    draft_id: uuid.UUID | None = Field(description="The draft published (published, updated).")
    title: str | None = Field(description="The draft's title (published, updated).")
    snapshot_id: uuid.UUID | None = Field(
        description="The website scan's snapshot that saw the change (page_changed)."
    )
    fields_changed: list[str] = Field(
        description="What changed (page_changed): content, title, meta_description, "
        "canonical, status_code, headings."
    )


class ImpactSide(BaseModel):
    before: Metrics
    after: Metrics
    change: Change


class Window(BaseModel):
    start: Day
    end: Day


Verdict = Literal["improved", "declined", "no_clear_change", "insufficient_data"]


class EventImpact(BaseModel):
    event_date: Day
    days: int = Field(description="Days on each side (the event's day is in neither).")
    before: Window | None = Field(description="Null when no day is stored after the event.")
    after: Window | None
    page: ImpactSide = Field(description="The rows of the filters (pageFilter's page).")
    rest_of_site: ImpactSide = Field(
        description="The site's totals minus the page's: the trend the page is held against."
    )
    expected_clicks: float | None = Field(
        description="The page's clicks before, moved as the rest of the site moved: what it "
        "would have earned after without the change. Null when the page had none before."
    )
    lift_pct: float | None = Field(
        description="The page's clicks after against expected_clicks, in %. Null when "
        "nothing was expected."
    )
    verdict: Verdict = Field(
        description="`improved`/`declined`: lift of at least +10% / -10%; `no_clear_change` "
        "between; `insufficient_data`: under 7 days after the event, or fewer than 20 clicks "
        "on the page in both windows together."
    )


class PerformanceReport(Page[PerformanceRow]):
    source: Literal["site", "page", "query"] = Field(
        description="The stored fact read: the site's totals, page totals (page x country x "
        "device) or query rows."
    )
    totals: Metrics = Field(description="Every row of the filtered window, from `source`.")
    previous_totals: Metrics | None = None
    hidden: Hidden | None = Field(
        description="When query rows are read: what the query rows do not show (anonymized "
        "and unreturned queries) in the scope of the page, country and device filters: that "
        "scope's totals minus its query rows, never negative. Null otherwise."
    )
    data_state: DataState
    last_synced_at: datetime | None = Field(description="Null before the first sync.")
    events: list[ContentEvent] | None = Field(
        None,
        description="With the date dimension: our content events in the window on the "
        "property's site (and the pageFilter's pages), newest first, at most 200. Null "
        "otherwise.",
    )
    events_truncated: bool = Field(
        False, description="More events happened in the window than `events` holds."
    )
    impact: EventImpact | None = Field(
        None, description="With eventDate: did the page's change work? Null otherwise."
    )
