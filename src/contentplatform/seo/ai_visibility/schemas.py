"""Inputs and answers of AI visibility: inputs camelCase on the wire, answers as the catalog
names their fields (snake_case)."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, model_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Name, PlainText
from contentplatform.seo.rank.schemas import DateWindow
from contentplatform.seo.schemas import _countries

Engine = Literal["chatgpt", "perplexity", "gemini", "claude", "google_ai_overview"]
ENGINES: tuple[str, ...] = Engine.__args__  # type: ignore[attr-defined]
Status = Literal["active", "paused"]
Intent = Literal["informational", "commercial", "transactional", "navigational"]
SuggestSource = Literal["search_console", "tracked_keywords", "knowledge", "competitors"]
Owner = Literal["self", "competitor", "third_party"]
MAX_PROMPTS = 100
MAX_TAGS = 10
_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
_SPACES = re.compile(r"\s+")


def prompt_text(value: str) -> str:
    """A prompt as tracked: inner blanks made one space, trimmed; 3 to 500 characters."""
    found = _SPACES.sub(" ", value).strip()
    if len(found) < 3:
        raise ValueError("must be at least 3 characters")
    return found


def text_key(value: str) -> str:
    """What two prompts are compared on: casefolded, blanks made one space."""
    return _SPACES.sub(" ", value).strip().casefold()


def _country(value: str | None) -> str | None:
    if value is None:
        return None
    if value.upper() not in _countries():
        raise ValueError("must be an ISO 3166-1 alpha-2 country code (US, GB, DE)")
    return value.upper()


def _language(value: str | None) -> str | None:
    if value is not None and not _LANGUAGE_TAG.match(value):
        raise ValueError("must be a BCP 47 language tag (en, en-GB, pt-BR)")
    return value


def _tags(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    seen: dict[str, str] = {}
    for tag in values:
        if not tag.strip():
            raise ValueError("must not hold a blank tag")
        seen.setdefault(tag.strip().casefold(), tag.strip())
    return list(seen.values())


def _engines(values: list[Engine] | None) -> list[Engine] | None:
    if values is not None and len(set(values)) != len(values):
        raise ValueError("must not repeat an engine")
    return values


PromptText = Annotated[PlainText, Field(min_length=3, max_length=500), AfterValidator(prompt_text)]
Topic = Annotated[Name, Field(min_length=1, max_length=100)]
Tag = Annotated[Name, Field(min_length=1, max_length=50)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(_tags)]
Engines = Annotated[list[Engine], Field(min_length=1, max_length=5), AfterValidator(_engines)]
Country = Annotated[str, Field(min_length=2, max_length=2), AfterValidator(_country)]
Language = Annotated[str, Field(min_length=2, max_length=35), AfterValidator(_language)]
IdempotencyKey = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9._:-]+$")]


# --- inputs -------------------------------------------------------------------------------------


class ListAiPromptsInput(Input):
    search: Name | None = Field(
        None, min_length=1, max_length=255, description="Prompts containing this text."
    )
    tag: Tag | None = Field(None, description="Only prompts with this tag.")
    topic: Topic | None = Field(None, description="Only prompts of this topic.")
    status: Status | None = None
    engine: Engine | None = Field(None, description="Only prompts asked of this engine.")
    mentioned: bool | None = Field(
        None, description="Whether the brand was mentioned in the prompt's latest run."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class NewAiPrompt(Input):
    text: PromptText = Field(description="3 to 500 characters, no markup.")
    topic: Topic | None = None
    tags: Tags = Field(default_factory=list)
    intent: Intent | None = None


class CreateAiPromptsInput(Input):
    prompts: list[NewAiPrompt] = Field(min_length=1, max_length=MAX_PROMPTS)
    country: Country | None = Field(
        None, description="ISO 3166-1 alpha-2. Default: the SEO settings' country."
    )
    language: Language | None = Field(
        None, description="BCP 47. Default: the SEO settings' language."
    )
    engines: Engines | None = Field(
        None,
        description="Default: the SEO settings' ai_visibility.engines (chatgpt when none).",
    )


class AiPromptIdInput(Input):
    id: uuid.UUID


class AiAnswerIdInput(Input):
    id: uuid.UUID


class UpdateAiPromptInput(Input):
    id: uuid.UUID
    topic: Topic | None = None
    tags: Tags | None = None
    status: Status | None = None
    engines: Engines | None = None


class SuggestAiPromptsInput(Input):
    sources: list[SuggestSource] | None = Field(
        None, min_length=1, max_length=4, description="Default: all four."
    )
    topic: Topic | None = Field(None, description="The topic the suggestions are given.")
    count: int = Field(20, ge=1, le=50)
    language: Language | None = None
    idempotency_key: IdempotencyKey | None = None


class RunAiVisibilityInput(Input):
    prompt_ids: list[uuid.UUID] | None = Field(
        None, min_length=1, max_length=500, description="Default: every active prompt."
    )
    engines: Engines | None = Field(None, description="Default: each prompt's engines.")
    samples: int | None = Field(
        None, ge=1, le=5, description="Default: settings ai_visibility.samples_per_prompt."
    )
    idempotency_key: IdempotencyKey | None = None


class AiOverviewInput(DateWindow):
    engine: Engine | None = None
    tag: Tag | None = None
    topic: Topic | None = None
    country: Country | None = None


class ListAiAnswersInput(Input):
    prompt_id: uuid.UUID | None = None
    engine: Engine | None = None
    run_id: uuid.UUID | None = None
    mentioned: bool | None = Field(None, description="Whether the brand is mentioned.")
    competitor_id: uuid.UUID | None = Field(
        None,
        description="Answers mentioning this competitor (with mentioned=false: the gap "
        "answers, the competitor named and we not).",
    )
    cited: bool | None = Field(None, description="Whether our domain is cited.")
    start_date: date | None = None
    end_date: date | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)

    @model_validator(mode="after")
    def _ordered(self) -> ListAiAnswersInput:
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValueError("endDate must not be before startDate")
        return self


class ListAiSourcesInput(DateWindow):
    engine: Engine | None = None
    owner: Literal["all", "self", "competitor", "third_party"] = "all"
    group_by: Literal["domain", "url"] = "domain"
    prompt_id: uuid.UUID | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


# --- answers ------------------------------------------------------------------------------------


class AiVisibilityMetric(BaseModel):
    """A metric with its sample: `value` null and `insufficient_data` true below the minimum
    sample (see the guide)."""

    value: float | None
    n: int = Field(description="The sample the value is over (answers, mentions or citations).")
    low: float | None = Field(description="The 95% interval's lower end.")
    high: float | None = Field(description="The 95% interval's upper end.")
    insufficient_data: bool


class AiPromptLatest(BaseModel):
    run_id: uuid.UUID
    run_at: datetime
    answers: int
    visibility: AiVisibilityMetric
    position: float | None = Field(description="Mean position of the brand where mentioned.")
    sentiment: float | None = Field(description="0-100, lexicon (offline).")
    cited: bool
    competitors_mentioned: list[str]


class AiPrompt(BaseModel):
    id: uuid.UUID
    text: str
    topic: str | None
    tags: list[str]
    intent: Intent | None
    country: str | None
    language: str | None
    engines: list[Engine]
    status: Status
    source: Literal["manual", "suggested"]
    latest: AiPromptLatest | None
    created_at: datetime
    updated_at: datetime


class AiPromptPage(Page[AiPrompt]):
    pass


class SkippedAiPrompt(BaseModel):
    text: str
    reason: Literal["duplicate", "plan_limit"]


class CreatedAiPrompts(BaseModel):
    created: list[AiPrompt]
    skipped: list[SkippedAiPrompt]


class SuggestedAiPrompt(BaseModel):
    text: str
    topic: str | None
    intent: Intent
    source: SuggestSource
    evidence: str = Field(description="What it was made from.")


class SuggestedAiPrompts(BaseModel):
    data: list[SuggestedAiPrompt]
    total: int
    method: str = Field(description="How they were written (`templates (offline, no model)`).")


class AiAnswerMention(BaseModel):
    brand: Literal["self", "competitor", "other"]
    competitor_id: uuid.UUID | None
    name: str
    position: int
    sentiment: float | None


class AiAnswerMentionDetail(AiAnswerMention):
    offsets: list[list[int]] = Field(description="[start, end) character offsets in `text`.")
    excerpt: str


class AiAnswerCitation(BaseModel):
    url: str
    domain: str | None
    title: str | None
    position: int
    owner: Owner


class AiAnswer(BaseModel):
    id: uuid.UUID
    prompt_id: uuid.UUID
    prompt_text: str
    engine: Engine
    provider: str
    model: str | None
    country: str | None
    run_id: uuid.UUID
    sample: int
    answered_at: datetime | None
    excerpt: str
    brand_mentioned: bool
    brand_position: int | None
    sentiment: float | None
    sentiment_method: str
    mentions: list[AiAnswerMention]
    citations: list[AiAnswerCitation]


class AiAnswerDetail(AiAnswer):
    text: str
    mentions: list[AiAnswerMentionDetail]  # type: ignore[assignment]
    search_queries: list[str]
    changes: AiAnswerChange | None = Field(
        description="What changed since the same prompt's answer from the same engine in the "
        "run before (its first sample), null when there is none."
    )


class AiAnswerChange(BaseModel):
    previous_answer_id: uuid.UUID
    previous_run_id: uuid.UUID
    brands_added: list[str]
    brands_dropped: list[str]
    domains_added: list[str]
    domains_dropped: list[str]
    diff: str = Field(description="A unified diff of the two texts, line by line (cut at 20,000).")
    visibility: AiVisibilityDelta = Field(
        description="The engine's visibility for the prompt in this run against the run before "
        "(all samples of each): whether the brand's presence really changed."
    )


class AiAnswerPage(Page[AiAnswer]):
    pass


class AiEngineFigures(BaseModel):
    engine: Engine
    answers: int
    visibility: AiVisibilityMetric
    share_of_voice: AiVisibilityMetric
    avg_position: AiVisibilityMetric
    sentiment: AiVisibilityMetric
    citation_share: AiVisibilityMetric


class AiCompetitorFigures(BaseModel):
    competitor_id: uuid.UUID
    name: str
    visibility: AiVisibilityMetric
    share_of_voice: AiVisibilityMetric
    avg_position: AiVisibilityMetric
    sentiment: AiVisibilityMetric


class AiTrendPoint(BaseModel):
    date: date
    visibility: AiVisibilityMetric
    share_of_voice: AiVisibilityMetric
    citation_share: AiVisibilityMetric


class AiVisibilityDelta(BaseModel):
    """A share's change in points against the preceding window, with Newcombe's 95% interval
    for the difference of two proportions; `real` when the interval leaves out 0 (the change
    is more than sampling noise). Null with `insufficient_data` when either side's sample is
    below the minimum."""

    value: float | None
    low: float | None
    high: float | None
    real: bool | None
    insufficient_data: bool


class AiVisibilityChange(BaseModel):
    visibility: AiVisibilityDelta
    share_of_voice: AiVisibilityDelta
    citation_share: AiVisibilityDelta


class AiGaps(BaseModel):
    prompts_competitor_only: int
    prompts_not_cited: int


class AiVisibilityOverview(BaseModel):
    start_date: date
    end_date: date
    visibility: AiVisibilityMetric
    share_of_voice: AiVisibilityMetric
    avg_position: AiVisibilityMetric
    sentiment: AiVisibilityMetric
    citation_share: AiVisibilityMetric
    answers: int
    prompts: int
    min_sample: int
    change: AiVisibilityChange
    by_engine: list[AiEngineFigures]
    competitors: list[AiCompetitorFigures]
    trend: list[AiTrendPoint]
    gaps: AiGaps


class AiSource(BaseModel):
    domain: str | None
    url: str | None
    owner: Owner
    competitor_id: uuid.UUID | None
    category: Literal["owned", "competitor", "editorial", "ugc", "reference", "other"]
    citations: int
    citation_share: float = Field(description="% of all citations in the window.")
    prompts: int
    engines: dict[str, int]
    change_pct: float | None = Field(
        description="Change of its citations against the preceding window of equal length, "
        "in %; null when it had none then."
    )


class AiSourcePage(Page[AiSource]):
    pass


AiAnswerDetail.model_rebuild()
