"""Inputs and answers of rank tracking: inputs camelCase on the wire, answers as the catalog
names their fields (snake_case)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, Name
from contentplatform.seo.sync_runs.schemas import SyncRun

MAX_KEYWORDS = 500
MAX_TAGS = 10
MAX_WINDOW_DAYS = 366
Device = Literal["desktop", "mobile"]
Status = Literal["active", "paused"]
Movement = Literal["improved", "declined", "new", "lost", "unchanged"]
Bucket = Literal["top3", "top10", "top20", "top100", "not_ranking"]
SortBy = Literal["position", "change_7d", "search_volume", "estimated_traffic", "keyword"]
Owner = Literal["self", "competitor", "other"]
# Why adding keywords started no first check of them.
CheckSkipped = Literal[
    "not_requested", "nothing_added", "no_provider", "check_running", "insufficient_credits"
]
_SPACES = re.compile(r"\s+")


def utc_today() -> date:
    return datetime.now(UTC).date()


def keyword_of(value: str) -> str:
    """A keyword as tracked: trimmed, inner blanks made one space, lowercased; refused
    (ValueError) when empty, longer than 100 characters or holding markup (`<`, `>`)."""
    found = _SPACES.sub(" ", value).strip().lower()
    if not found:
        raise ValueError("must not be blank")
    if len(found) > 100:
        raise ValueError("must be at most 100 characters")
    if "<" in found or ">" in found:
        raise ValueError("must not contain markup (< or >)")
    return found


def language_of(value: str | None) -> str | None:
    """A language code as DataForSEO takes it (en, en-GB, pt-BR), or ValueError."""
    if value is not None and not re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*", value):
        raise ValueError("must be a language code (en, en-GB, pt-BR)")
    return value


def _http_url(value: str) -> str:
    """An absolute http(s) URL with a host and no credentials."""
    value = value.strip()
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (a port out of range raises here)
    except ValueError:
        raise ValueError("must be an http(s) URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    return value


def _tags(values: list[str] | None) -> list[str] | None:
    """Tags trimmed, none blank, repeats dropped (first spelling kept)."""
    if values is None:
        return None
    seen: dict[str, str] = {}
    for tag in values:
        if not tag.strip():
            raise ValueError("must not hold a blank tag")
        seen.setdefault(tag.strip().casefold(), tag.strip())
    return list(seen.values())


Keyword = Annotated[Identifier, Field(min_length=1, max_length=100), AfterValidator(keyword_of)]
Tag = Annotated[Name, Field(min_length=1, max_length=50)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(_tags)]
HttpUrl = Annotated[Identifier, Field(min_length=1, max_length=2048), AfterValidator(_http_url)]


class DateWindow(Input):
    """startDate..endDate, both included, at most 366 days."""

    start_date: date | None = Field(None, description="YYYY-MM-DD.")
    end_date: date | None = Field(None, description="YYYY-MM-DD, default today (UTC).")

    @model_validator(mode="after")
    def _ordered(self) -> DateWindow:
        if self.start_date is not None:
            end = self.end_date or utc_today()
            if end < self.start_date:
                raise ValueError("endDate must not be before startDate")
            if (end - self.start_date).days > MAX_WINDOW_DAYS:
                raise ValueError(f"the window is at most {MAX_WINDOW_DAYS} days")
        return self

    def dates(self, default_days: int) -> tuple[date, date]:
        """The window's first and last day, defaults applied (today: UTC)."""
        last = self.end_date or utc_today()
        return self.start_date or last - timedelta(days=default_days), last


# --- inputs ---------------------------------------------------------------------------------


class ListTrackedKeywordsInput(Input):
    search: Identifier | None = Field(
        None, min_length=1, max_length=100, description="Keywords containing this text."
    )
    tag: Name | None = Field(None, min_length=1, max_length=50, description="Only this tag.")
    status: Status | None = None
    device: Device | None = None
    location_code: int | None = Field(None, ge=1)
    bucket: Bucket | None = Field(None, description="By current position.")
    movement: Movement | None = Field(None, description="Since the keyword's previous check.")
    sort_by: SortBy = "position"
    sort_order: Literal["asc", "desc"] = "asc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(100, ge=1, le=500)


class AddTrackedKeywordsInput(Input):
    keywords: Annotated[list[Keyword], Field(min_length=1, max_length=MAX_KEYWORDS)] = Field(
        description="1 to 500 keywords of 1 to 100 characters: trimmed, lowercased, de-duplicated."
    )
    location_code: int | None = Field(
        None, ge=1, description="Default: the SEO settings' location_code (else 2840, US)."
    )
    language_code: Identifier | None = Field(
        None,
        min_length=2,
        max_length=35,
        description="Default: the SEO settings' language (else en).",
    )
    devices: Annotated[list[Device], Field(min_length=1, max_length=2)] | None = Field(
        None, description="Default: the SEO settings' devices."
    )
    tags: Tags | None = None
    target_url: HttpUrl | None = Field(None, description="The page meant to rank.")
    check_now: bool = Field(
        True,
        description="Queue the first check of the keywords added (default true; false: they "
        "wait for the next scheduled or manual check).",
    )

    @field_validator("devices")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))

    _language = field_validator("language_code")(language_of)


class KeywordIdInput(Input):
    id: uuid.UUID


class UpdateTrackedKeywordInput(Input):
    id: uuid.UUID
    tags: Tags | None = None
    target_url: HttpUrl | None = Field(None, description="null clears it.")
    status: Status | None = None


class RankHistoryInput(DateWindow):
    id: uuid.UUID
    include_competitors: bool = True


class KeywordSerpInput(Input):
    id: uuid.UUID
    date: dt.date | None = Field(None, description="Default: the latest check.")
    depth: int = Field(100, ge=10, le=100, description="10, 20, 50 or 100 (default 100).")

    @field_validator("depth")
    @classmethod
    def _depth(cls, value: int) -> int:
        if value not in (10, 20, 50, 100):
            raise ValueError("must be 10, 20, 50 or 100")
        return value


class CheckRankingsInput(Input):
    keyword_ids: Annotated[list[uuid.UUID], Field(min_length=1, max_length=MAX_KEYWORDS)] | None = (
        Field(None, description="Default: every active tracked keyword.")
    )
    idempotency_key: Identifier | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="The credits are held under it; the same key answers the same check.",
    )
    preview: bool = Field(False, description="Price the check without running it.")


class RankOverviewInput(DateWindow):
    tag: Name | None = Field(None, min_length=1, max_length=50)
    device: Device | None = None
    location_code: int | None = Field(None, ge=1)


# --- answers --------------------------------------------------------------------------------


class AiOverview(BaseModel):
    present: bool
    cited: bool = Field(description="One of the AI Overview's references is our domain.")


class CompetitorPosition(BaseModel):
    competitor_id: uuid.UUID
    position: int | None = Field(description="null: not within the depth read, or unknown.")
    url: str | None
    known: bool = Field(
        description="false when the check stopped at our domain's page before the "
        "competitor showed: its position is unknown, not 'not ranking'."
    )


class CompetingUrl(BaseModel):
    url: str
    position: int


class TrackedKeyword(Record):
    id: uuid.UUID
    keyword: str
    location_code: int
    language_code: str
    device: Device
    tags: list[str]
    target_url: str | None
    status: Status
    search_volume: int | None
    keyword_difficulty: int | None
    cpc: float | None
    intent: str | None
    position: int | None = Field(description="Organic position; null: not within the depth read.")
    url: str | None = Field(description="Our ranking URL; differing from target_url flags it.")
    previous_position: int | None = Field(description="At the check before the newest.")
    movement: Movement | None = Field(description="Since the check before; null: never checked.")
    change_1d: int | None = Field(description="Positions gained since a check 1+ day older.")
    change_7d: int | None
    change_30d: int | None
    best_position: int | None
    estimated_traffic: float | None = Field(description="search_volume x CTR(position).")
    serp_features: list[str]
    ai_overview: AiOverview
    competitors: list[CompetitorPosition]
    cannibalization: list[CompetingUrl] = Field(
        description="Two or more of our URLs on the same SERP (they compete for the keyword); "
        "empty otherwise."
    )
    last_checked_at: datetime | None
    created_at: datetime


class TrackedKeywordPage(Page[TrackedKeyword]):
    pass


class SkippedKeyword(BaseModel):
    keyword: str
    device: Device
    reason: Literal["duplicate", "plan_limit"]


class AddedKeywords(BaseModel):
    created: list[TrackedKeyword]
    skipped: list[SkippedKeyword]
    check: SyncRun | None = Field(
        description="The first check of the keywords added (a rank_check sync run to poll), "
        "null when none started (see check_skipped)."
    )
    check_skipped: CheckSkipped | None = Field(
        description="Why no first check started: not_requested (checkNow false), "
        "nothing_added, no_provider (no SERP provider connected), check_running (the "
        "organization's check already running: the next check reads them), "
        "insufficient_credits; null when one started."
    )


class HistoryPoint(BaseModel):
    date: dt.date
    position: int | None
    url: str | None
    serp_features: list[str]
    ai_overview_cited: bool


class CompetitorPoint(BaseModel):
    date: dt.date
    position: int | None
    url: str | None
    known: bool


class CompetitorSeries(BaseModel):
    competitor_id: uuid.UUID
    name: str
    series: list[CompetitorPoint]


class RankHistory(BaseModel):
    keyword: TrackedKeyword
    series: list[HistoryPoint]
    competitors: list[CompetitorSeries]


class SerpReference(BaseModel):
    url: str | None
    domain: str | None
    owner: Owner


class SerpItem(BaseModel):
    type: str
    rank_group: int | None
    rank_absolute: int | None
    title: str | None
    url: str | None
    domain: str | None
    owner: Owner
    competitor_id: uuid.UUID | None
    references: list[SerpReference]


class SerpSnapshot(BaseModel):
    keyword_id: uuid.UUID
    checked_at: datetime
    location_code: int
    language_code: str
    device: Device
    provider: str
    depth: int = Field(description="Results the check read.")
    stopped_at_own_domain: bool
    item_types: list[str]
    items: list[SerpItem]
    cannibalization: list[CompetingUrl]


class RankCheckPreview(BaseModel):
    """What a check would cost, nothing held."""

    preview: bool = Field(description="Always true: nothing was checked or held.")
    keywords: int = Field(description="Distinct keywords (keyword x market).")
    devices: int = Field(description="Distinct devices among them.")
    tasks: int = Field(description="SERP tasks: tracked keywords (keyword x market x device).")
    pages: int = Field(description="SERP pages per task: depth / 10.")
    credits: int = Field(description="tasks x pages: what the check would hold.")
    mode: Literal["live", "task"]
    available: int = Field(description="Credits available now.")
    sufficient: bool


class Distribution(BaseModel):
    top3: int
    top4_10: int
    top11_20: int
    top21_100: int
    not_ranking: int


class MovementCounts(BaseModel):
    improved: int
    declined: int
    new: int
    lost: int
    unchanged: int


class FeatureCount(BaseModel):
    type: str
    keywords: int
    owned: int = Field(description="Keywords whose feature is ours (our URL or citation).")


class AiOverviewCounts(BaseModel):
    keywords_with: int
    cited: int


class TrendPoint(BaseModel):
    date: dt.date
    visibility: float | None
    avg_position: float | None
    estimated_traffic: float


class CompetitorFigures(BaseModel):
    competitor_id: uuid.UUID
    name: str
    visibility: float | None
    avg_position: float | None
    estimated_traffic: float


class RankOverview(BaseModel):
    visibility: float | None = Field(description="0-100; null when no keyword has a volume.")
    visibility_change: float | None
    estimated_traffic: float
    avg_position: float | None = Field(description="Not ranking counted as 100.")
    distribution: Distribution
    movement: MovementCounts
    serp_features: list[FeatureCount]
    ai_overview: AiOverviewCounts
    trend: list[TrendPoint]
    competitors: list[CompetitorFigures]
