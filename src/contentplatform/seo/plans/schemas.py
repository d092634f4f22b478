"""Inputs (camelCase on the wire) and answers (snake_case, as the catalog names their fields) of
SEO plans."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from contentplatform.jobs.schemas import Job
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, MultiLine, PlainMultiLine, PlainText
from contentplatform.seo.rank.schemas import HttpUrl
from contentplatform.seo.schemas import ContentMixInput, Weekday

MAX_ITEMS = 100
PlanStatus = Literal["generating", "draft", "approved", "completed", "archived", "failed"]
ItemStatus = Literal[
    "proposed",
    "accepted",
    "rejected",
    "scheduled",
    "in_progress",
    "drafted",
    "published",
    "skipped",
    "failed",
]
ITEM_STATUSES: tuple[ItemStatus, ...] = (
    "proposed",
    "accepted",
    "rejected",
    "scheduled",
    "in_progress",
    "drafted",
    "published",
    "skipped",
    "failed",
)
Kind = Literal["new", "refresh", "geo"]
Signal = Literal[
    "search_console", "rank", "ai_visibility", "actions", "keyword_research", "knowledge"
]
SIGNALS: tuple[Signal, ...] = (
    "search_console",
    "rank",
    "ai_visibility",
    "actions",
    "keyword_research",
    "knowledge",
)
ItemSource = Literal[
    "search_console", "rank", "actions", "ai_visibility", "keyword_research", "knowledge", "manual"
]

Month = Annotated[
    str,
    Field(
        pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])$",
        min_length=7,
        max_length=7,
        description="YYYY-MM.",
        examples=["2027-03"],
    ),
]
PlanName = Annotated[PlainText, Field(min_length=1, max_length=100)]
Goals = Annotated[PlainMultiLine, Field(max_length=2000)]
Notes = Annotated[PlainMultiLine, Field(max_length=5000)]
Title = Annotated[PlainText, Field(min_length=1, max_length=200)]
Keyword = Annotated[PlainText, Field(min_length=1, max_length=100)]
Topic = Annotated[PlainText, Field(min_length=1, max_length=200)]
Line = Annotated[PlainText, Field(min_length=1, max_length=300)]
IdempotencyKey = Annotated[
    Identifier, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")
]


def _not_blank(value: str | None, field: str) -> None:
    if value is not None and not value.strip():
        raise ValueError(f"{field} must not be blank (markup is stripped)")


def _distinct(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return list(dict.fromkeys(value.strip() for value in values if value.strip()))


# --- inputs ---------------------------------------------------------------------------------


class ListSeoPlansInput(Input):
    status: PlanStatus | None = Field(
        None, description="Archived plans are listed only when asked for."
    )
    year: int | None = Field(None, ge=2000, le=2100)
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(12, ge=1, le=100)


class CreateSeoPlanInput(Input):
    month: Month
    name: PlanName | None = Field(None, description="Default: 'SEO plan <Month YYYY>'.")
    goals: Goals | None = None
    notes: Notes | None = None

    @model_validator(mode="after")
    def _named(self) -> CreateSeoPlanInput:
        _not_blank(self.name, "name")
        return self


class _Shaping(Input):
    item_count: int | None = Field(
        None, ge=1, le=MAX_ITEMS, description="Default: settings.planning.posts_per_month."
    )
    content_mix: ContentMixInput | None = Field(
        None, description="Percent of new, refresh and geo items; default the settings'."
    )
    signals: list[Signal] | None = Field(
        None, min_length=1, max_length=6, description="Default: every signal."
    )
    focus_topics: list[Topic] | None = Field(None, max_length=20)
    exclude_keywords: list[Keyword] | None = Field(None, max_length=200)
    idempotency_key: IdempotencyKey | None = Field(
        None,
        description="The same key answers the same plan and is charged once (letters, digits, "
        "`.`, `_`, `:`, `-`).",
    )

    _unique = field_validator("focus_topics", "exclude_keywords", "signals")(_distinct)


class GenerateSeoPlanInput(_Shaping):
    month: Month
    name: PlanName | None = None
    document_ids: list[uuid.UUID] | None = Field(
        None, max_length=50, description="Knowledge documents to mine (default: every ready one)."
    )
    publish_weekdays: list[Weekday] | None = Field(
        None, min_length=1, max_length=7, description="Default: settings.planning's."
    )
    blackout_dates: list[date] | None = Field(
        None, max_length=31, description="Days of the month no item is placed on."
    )

    _days = field_validator("publish_weekdays")(_distinct)

    @model_validator(mode="after")
    def _named(self) -> GenerateSeoPlanInput:
        _not_blank(self.name, "name")
        return self


class RegenerateSeoPlanInput(_Shaping):
    id: uuid.UUID
    keep_accepted: bool = True


class SeoPlanIdInput(Input):
    id: uuid.UUID


class UpdateSeoPlanInput(Input):
    id: uuid.UUID
    name: PlanName | None = None
    goals: Goals | None = None
    notes: Notes | None = None
    publisher_connection_id: uuid.UUID | None = Field(
        None, description="A publisher connection of this organization; null clears it."
    )

    @model_validator(mode="after")
    def _named(self) -> UpdateSeoPlanInput:
        _not_blank(self.name, "name")
        return self


class ArchiveSeoPlanInput(Input):
    id: uuid.UUID
    reason: PlainMultiLine | None = Field(None, max_length=500)


class ApproveSeoPlanInput(Input):
    id: uuid.UUID
    mode: Literal["new_job", "existing_job"] = "new_job"
    job_id: uuid.UUID | None = Field(
        None, description="For existing_job (default settings.planning.default_job_id)."
    )
    include_proposed: bool = False
    publisher_connection_id: uuid.UUID | None = None
    auto_publish: bool | None = None
    auto_publish_threshold: float | None = Field(None, ge=0, le=100)


class SeoPlanBriefInput(Input):
    outline: list[Line] = Field(default_factory=list, max_length=30)
    questions: list[Line] = Field(default_factory=list, max_length=20)
    word_count_target: int | None = Field(None, ge=300, le=10000)
    instructions: MultiLine | None = Field(None, max_length=5000)


class AddSeoPlanItemInput(Input):
    id: uuid.UUID
    title: Title
    primary_keyword: Keyword
    secondary_keywords: list[Keyword] = Field(default_factory=list, max_length=10)
    kind: Kind = "new"
    target_date: date
    target_url: HttpUrl | None = Field(None, description="Required for refresh.")
    brief: SeoPlanBriefInput | None = None
    document_ids: list[uuid.UUID] = Field(default_factory=list, max_length=50)
    seo_action_id: uuid.UUID | None = None
    ai_prompt_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _checked(self) -> AddSeoPlanItemInput:
        _not_blank(self.title, "title")
        _not_blank(self.primary_keyword, "primaryKeyword")
        if self.kind == "refresh" and self.target_url is None:
            raise ValueError("a refresh item needs targetUrl")
        return self


class UpdateSeoPlanItemInput(Input):
    id: uuid.UUID
    item_id: uuid.UUID
    title: Title | None = None
    primary_keyword: Keyword | None = None
    secondary_keywords: list[Keyword] | None = Field(None, max_length=10)
    kind: Kind | None = None
    target_date: date | None = None
    target_url: HttpUrl | None = Field(None, description="null clears it.")
    brief: SeoPlanBriefInput | None = None
    document_ids: list[uuid.UUID] | None = Field(None, max_length=50)
    status: Literal["proposed", "accepted", "rejected"] | None = None
    locked: bool | None = None
    position: int | None = Field(None, ge=0, le=1000)

    @model_validator(mode="after")
    def _checked(self) -> UpdateSeoPlanItemInput:
        _not_blank(self.title, "title")
        _not_blank(self.primary_keyword, "primaryKeyword")
        return self


class SeoPlanItemIdInput(Input):
    id: uuid.UUID
    item_id: uuid.UUID


class SeoPlanCalendarInput(Input):
    start_date: date
    end_date: date
    status: ItemStatus | None = None


class SeoPlanPerformanceInput(Input):
    id: uuid.UUID
    end_date: date | None = Field(None, description="Default: today in the organization's zone.")


# --- answers --------------------------------------------------------------------------------


class SeoPlanCounts(BaseModel):
    proposed: int = 0
    accepted: int = 0
    rejected: int = 0
    scheduled: int = 0
    in_progress: int = 0
    drafted: int = 0
    published: int = 0
    skipped: int = 0
    failed: int = 0


class SeoPlanGeneration(BaseModel):
    status: Literal["none", "running", "succeeded", "failed"] = "none"
    step: str | None = None
    percent: int = 0
    provider: str | None = None
    model: str | None = None
    error: str | None = None


class SeoPlan(BaseModel):
    id: uuid.UUID
    month: str
    name: str
    status: PlanStatus
    goals: str | None
    notes: str | None
    item_count: int
    counts: SeoPlanCounts
    signals_used: list[str]
    generation: SeoPlanGeneration
    job_id: uuid.UUID | None
    publisher_connection_id: uuid.UUID | None
    created_by: str | None
    approved_by: str | None
    approved_at: datetime | None
    completed_at: datetime | None
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime


class SeoPlanBrief(BaseModel):
    outline: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    word_count_target: int | None = None
    instructions: str | None = None


class SeoPlanForecast(BaseModel):
    target_position: int | None = None
    ctr: float | None = None
    search_volume: int | None = None
    clicks: float | None = Field(
        None, description="Monthly clicks: search volume x CTR at the target position."
    )


class SeoPlanItem(Record):
    id: uuid.UUID
    plan_id: uuid.UUID
    title: str
    primary_keyword: str
    secondary_keywords: list[str]
    kind: Kind
    intent: str | None
    target_date: date
    target_url: str | None
    page_id: uuid.UUID | None
    search_volume: int | None
    keyword_difficulty: int | None
    cpc: float | None
    opportunity_score: float | None
    source: ItemSource
    rationale: str | None
    evidence: dict[str, Any]
    brief: SeoPlanBrief
    forecast: SeoPlanForecast
    document_ids: list[str]
    seo_action_id: uuid.UUID | None
    ai_prompt_id: uuid.UUID | None
    cluster: str | None
    locked: bool
    status: ItemStatus
    job_instance_id: uuid.UUID | None
    draft_id: uuid.UUID | None
    published_url: str | None
    position: int
    created_at: datetime
    updated_at: datetime


class SeoPlanDetail(SeoPlan):
    items: list[SeoPlanItem]


class SeoPlanPage(Page[SeoPlan]):
    pass


class SeoPlanApproved(BaseModel):
    plan: SeoPlan
    job: Job
    instances_created: int


class SeoPlanCalendarEntry(BaseModel):
    date: date
    plan_id: uuid.UUID
    month: str
    item_id: uuid.UUID
    title: str
    primary_keyword: str
    kind: Kind
    item_status: ItemStatus
    job_id: uuid.UUID | None
    instance_id: uuid.UUID | None
    draft_id: uuid.UUID | None
    published_url: str | None


class SeoPlanWindow(BaseModel):
    start: date
    end: date


class SeoPlanMilestone(BaseModel):
    days: int = Field(description="30, 60 or 90 days after publishing.")
    end: date
    reached: bool = Field(description="Whether the window's end is on or before endDate.")
    clicks: int
    impressions: int
    position: float | None
    forecast_clicks: float | None = Field(
        None, description="The item's monthly forecast over the same number of days."
    )


class SeoPlanPerformanceTotals(BaseModel):
    items: int
    published: int
    skipped: int
    failed: int
    clicks: int
    impressions: int
    avg_position: float | None
    ai_citations: int
    forecast_clicks: float
    milestones: list[SeoPlanMilestone]


class SeoPlanItemPerformance(BaseModel):
    item_id: uuid.UUID
    title: str
    primary_keyword: str
    status: ItemStatus
    published_url: str | None
    published_at: datetime | None
    clicks: int
    impressions: int
    ctr: float | None
    position: float | None
    rank_position: int | None
    ai_mentions: int
    ai_citations: int
    forecast: SeoPlanForecast
    milestones: list[SeoPlanMilestone]


class SeoPlanPerformance(BaseModel):
    plan_id: uuid.UUID
    month: str
    window: SeoPlanWindow
    totals: SeoPlanPerformanceTotals
    items: list[SeoPlanItemPerformance]
