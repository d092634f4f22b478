from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.schemas import Input, Record
from contentplatform.kit.text import Identifier, MultiLine

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


class RunError(BaseModel):
    code: str
    message: str
    retryable: bool


class Run(Record):
    id: uuid.UUID
    kind: Literal["blog"]
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
