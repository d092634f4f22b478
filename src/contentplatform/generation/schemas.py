from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier, MultiLine

RunKind = Literal["blog", "regenerate"]
RunStatus = Literal["queued", "running", "waiting_review", "succeeded", "failed", "cancelled"]
Step = Literal["retrieve", "outline", "write", "optimize", "score", "finalize"]
STEPS: tuple[Step, ...] = ("retrieve", "outline", "write", "optimize", "score", "finalize")
MAX_KEYWORD = 100
# A search phrase. Bounded because the focus keywords are stored in seo_meta and quoted in its
# score breakdown, which must stay within drafts' 20,000-byte seo_meta bound.
Keyword = Annotated[str, Field(max_length=MAX_KEYWORD)]


def _not_blank(value: str) -> str:
    """A topic: trimmed, and not blank."""
    if not value.strip():
        raise ValueError("must not be blank")
    return value.strip()


class BlogInput(Input):
    topic: str = Field(min_length=1, max_length=500)
    keywords: list[Keyword] = Field(
        default_factory=list,
        max_length=20,
        description=f"Up to 20, of at most {MAX_KEYWORD} characters each; the first is the "
        "focus keyword.",
    )
    content_instructions: MultiLine | None = Field(None, max_length=5000)
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=50,
        description="Ground the article in these ready documents only (the primary knowledge "
        "document is always considered too). An empty list is the same as none.",
    )
    idempotency_key: Identifier | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="The same key returns the same draft and run and never reserves twice.",
    )

    _topic_not_blank = field_validator("topic")(_not_blank)

    @field_validator("keywords")
    @classmethod
    def _keywords_trimmed(cls, value: list[str]) -> list[str]:
        return [keyword.strip() for keyword in value if keyword.strip()]

    @field_validator("document_ids")
    @classmethod
    def _empty_is_none(cls, value: list[uuid.UUID] | None) -> list[uuid.UUID] | None:
        return value or None


class RunIdInput(Input):
    id: uuid.UUID


class StreamRunInput(Input):
    id: uuid.UUID
    last_event_id: Identifier | None = Field(
        None,
        alias="Last-Event-ID",
        max_length=100,
        description="The id of the last event seen (`<run id>:<n>`, or `<n>`): the stream "
        "resumes with the events after it. A browser's EventSource sends it when it reconnects; "
        "the query parameter `lastEventId` is read when the header is absent.",
        json_schema_extra={"in": "header"},
    )


class RunError(BaseModel):
    code: str
    message: str
    retryable: bool


class Run(Record):
    id: uuid.UUID
    kind: RunKind
    status: RunStatus
    step: Step | None
    percent: int
    error: RunError | None
    draft_id: uuid.UUID
    job_id: uuid.UUID | None
    instance_id: uuid.UUID | None
    reservation_id: uuid.UUID | None
    credits_committed: int | None
    retry_of: uuid.UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class GeneratingDraft(Draft):
    """The draft, in `generating`, with the run writing it."""

    run: Run


class RunPage(Page[Run]):
    """Runs, newest first."""


class ListRunsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: RunStatus | None = None
    draft_id: uuid.UUID | None = Field(None, description="Only the runs that wrote this draft.")
    job_id: uuid.UUID | None = Field(None, description="Only the runs of this job.")


def _required_key(description: str) -> Any:
    return Field(min_length=1, max_length=255, description=description)


class RetryRunInput(Input):
    id: uuid.UUID
    idempotency_key: Identifier = _required_key(
        "The same key returns the same new run and never holds credits twice."
    )


MAX_SECTIONS = 20
Anchor = Annotated[Identifier, Field(min_length=1, max_length=200)]


class RegenerateDraftInput(Input):
    id: uuid.UUID = Field(description="The draft.")
    content_instructions: MultiLine | None = Field(
        None,
        max_length=5000,
        description="What to do differently; absent: the instructions it was written with.",
    )
    sections: list[Anchor] | None = Field(
        None,
        min_length=1,
        max_length=MAX_SECTIONS,
        description="The anchors (`id` of the `<h2>`) of the sections to rewrite; the rest is "
        "kept as it is. Absent: the whole article.",
    )
    keep_title: bool = Field(
        True, description="Keep the title (a whole article only: sections keep it always)."
    )
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=50,
        description="Ground it in these ready documents only (the primary knowledge document "
        "is always considered too); absent: the documents it was written from.",
    )
    idempotency_key: Identifier = _required_key(
        "The same key returns the same run and never holds credits twice."
    )

    @field_validator("sections")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        return list(dict.fromkeys(value)) if value is not None else None

    @field_validator("document_ids")
    @classmethod
    def _empty_is_none(cls, value: list[uuid.UUID] | None) -> list[uuid.UUID] | None:
        return value or None


# --- the run's event stream (generation.streamRun) -------------------------------------------


def _seq() -> Any:
    return Field(description="The event's number in its stream (the event's id: `<run_id>:<seq>`).")


class ProgressEvent(BaseModel):
    """The run moved: it started, began a step, or ended (then the terminal event follows)."""

    run_id: uuid.UUID
    status: RunStatus
    step: Step | None
    percent: int
    created_at: datetime
    seq: int = _seq()


class RunFinishedEvent(BaseModel):
    """The run ended without an error: its draft written (succeeded) or it was cancelled."""

    run_id: uuid.UUID
    status: Literal["succeeded", "cancelled"]
    draft_id: uuid.UUID
    seo_score: int | None
    credits_charged: int | None
    created_at: datetime
    seq: int = _seq()


class RunErrorEvent(BaseModel):
    """The run failed: the error's code, what happened and whether trying again may help."""

    run_id: uuid.UUID
    code: str
    detail: str
    retryable: bool
    created_at: datetime
    seq: int = _seq()


# --- topic suggestions (generation.suggestTopics) --------------------------------------------


class SuggestTopicsInput(Input):
    count: int = Field(10, ge=1, le=50)
    seed_keywords: list[Keyword] = Field(
        default_factory=list,
        max_length=20,
        description=f"Up to 20, of at most {MAX_KEYWORD} characters each: topics near them "
        "rank higher.",
    )
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=50,
        description="Draw from these ready documents only; absent: the organization's ready "
        "documents (the 100 newest).",
    )
    exclude_covered: bool = Field(
        True,
        description="Leave out topics an existing draft or job already covers; false lists "
        "them too, with the draft covering each.",
    )

    @field_validator("seed_keywords")
    @classmethod
    def _keywords_trimmed(cls, value: list[str]) -> list[str]:
        return [keyword.strip() for keyword in value if keyword.strip()]

    @field_validator("document_ids")
    @classmethod
    def _empty_is_none(cls, value: list[uuid.UUID] | None) -> list[uuid.UUID] | None:
        return value or None


class SourceDocument(BaseModel):
    document_id: uuid.UUID
    chunk_ids: list[uuid.UUID]


class TopicSuggestion(BaseModel):
    topic: str
    keywords: list[str]
    pillar: str | None = Field(
        description="The content strategy pillar it serves (none while the organization has "
        "no strategy)."
    )
    rationale: str
    source_documents: list[SourceDocument]
    covered_by_draft_id: uuid.UUID | None


class TopicList(Listing[TopicSuggestion]):
    """Topic suggestions, best first."""


# --- workflow runs (workflows.testRun, listRuns, getRun, cancelRun) --------------------------

WorkflowRunTrigger = Literal["api", "test", "job_instance"]
StepStatus = Literal["pending", "running", "waiting", "succeeded", "failed", "skipped", "cancelled"]
StepKey = Annotated[Identifier, Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_-]+$")]


class RunTokens(BaseModel):
    input: int
    output: int
    total: int


class StepTokens(BaseModel):
    input: int
    output: int


class StepError(BaseModel):
    code: str | None
    message: str | None


class WorkflowRunStepSummary(BaseModel):
    key: str
    type: str = Field(description="A step type, or `score` / `finalize` (every run ends so).")
    name: str
    status: StepStatus
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    model: str | None = Field(description="The model its calls used; null when it made none.")
    tokens: StepTokens
    credits: int = Field(description="What its model calls price at (1 per started 1,000).")
    error: StepError | None


class WorkflowRunStep(WorkflowRunStepSummary):
    output_summary: str | None = Field(description="What the step did, in a line.")


class WorkflowRunError(BaseModel):
    code: str
    step_key: str | None
    message: str


class WorkflowRunResult(BaseModel):
    title: str
    excerpt: str | None
    seo_score: int


class WorkflowRunBase(BaseModel):
    id: uuid.UUID
    workflow_id: uuid.UUID | None = Field(description="Null: the built-in definition.")
    workflow_version: int | Literal["working"] | None = Field(
        description="The version followed; `working` for a test of the working definition; "
        "null for the built-in definition."
    )
    workflow_name: str
    trigger: WorkflowRunTrigger = Field(
        description="`test` (workflows.testRun), `job_instance` (a job's run) or `api` "
        "(generation.blog)."
    )
    job_instance_id: uuid.UUID | None
    draft_id: uuid.UUID | None = Field(
        description="The draft it writes; null for a test run that keeps none."
    )
    topic: str
    status: RunStatus
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    waiting_until: datetime | None = Field(
        description="At a review gate: when the wait ends (the run then fails)."
    )
    tokens: RunTokens
    credits_used: int | None = Field(description="Committed when the run ended.")
    error: WorkflowRunError | None
    result: WorkflowRunResult | None


class WorkflowRun(WorkflowRunBase):
    """A run of a workflow definition: its status and each step's, with timing, tokens, model
    and credits. Follow it live with `generation.streamRun` (the same id)."""

    steps: list[WorkflowRunStep]


class WorkflowRunSummary(WorkflowRunBase):
    steps: list[WorkflowRunStepSummary]


class WorkflowRunPage(Page[WorkflowRunSummary]):
    """Runs, newest first."""


class TestRunInput(Input):
    id: uuid.UUID = Field(description="The workflow.")
    topic: str = Field(min_length=3, max_length=300)
    keywords: list[Keyword] = Field(default_factory=list, max_length=20)
    document_ids: list[uuid.UUID] | None = Field(None, max_length=20)
    version: int | Literal["working"] = Field(
        "working",
        description="A published version's number, or `working` (the working definition, "
        "which must validate).",
    )
    stop_after_step: StepKey | None = Field(
        None, description="Stop after this step (its key); the steps after it are skipped."
    )
    create_draft: bool = Field(
        False,
        description="Keep the draft it writes (in review). Without it the run keeps only its "
        "result, and review gates are skipped.",
    )
    idempotency_key: Identifier | None = Field(None, min_length=8, max_length=128)

    _topic_not_blank = field_validator("topic")(_not_blank)

    @field_validator("version")
    @classmethod
    def _version_positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= 1_000_000:
            raise ValueError("must be between 1 and 1000000, or 'working'")
        return value


class ListWorkflowRunsInput(Input):
    workflow_id: uuid.UUID | None = None
    job_instance_id: uuid.UUID | None = None
    trigger: Literal["all", "api", "test", "job_instance"] = "all"
    status: Literal[
        "all", "queued", "running", "waiting_review", "succeeded", "failed", "cancelled"
    ] = "all"
    date_from: date | None = Field(
        None,
        description="Created on or after this day (the organization's time zone); "
        "default: 29 days before today.",
    )
    date_to: date | None = Field(
        None, description="Created on or before this day (inclusive); default: today."
    )
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
