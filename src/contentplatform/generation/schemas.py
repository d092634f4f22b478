from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.procedures import Input

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
Step = Literal["retrieve", "outline", "write", "optimize", "score", "finalize"]
STEPS: tuple[Step, ...] = ("retrieve", "outline", "write", "optimize", "score", "finalize")


class BlogInput(Input):
    topic: str = Field(min_length=1, max_length=500)
    keywords: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Up to 20; the first is the focus keyword.",
    )
    content_instructions: str | None = Field(None, max_length=5000)
    document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=50,
        description="Ground the article in these ready documents only (the primary knowledge "
        "document is always considered too).",
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="The same key returns the same draft and run and never reserves twice.",
    )


class RunIdInput(Input):
    id: uuid.UUID


class RunError(BaseModel):
    code: str
    message: str
    retryable: bool


class Run(BaseModel):
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
