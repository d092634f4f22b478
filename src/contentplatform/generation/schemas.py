from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier, MultiLine

RunKind = Literal["blog", "regenerate"]
RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
Step = Literal["retrieve", "outline", "write", "optimize", "score", "finalize"]
STEPS: tuple[Step, ...] = ("retrieve", "outline", "write", "optimize", "score", "finalize")
MAX_KEYWORD = 100
# A search phrase. Bounded because the focus keywords are stored in seo_meta and quoted in its
# score breakdown, which must stay within drafts' 20,000-byte seo_meta bound.
Keyword = Annotated[str, Field(max_length=MAX_KEYWORD)]


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

    @field_validator("topic")
    @classmethod
    def _topic_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

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
