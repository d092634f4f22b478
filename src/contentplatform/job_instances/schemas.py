from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Record
from contentplatform.kit.text import Identifier, MultiLine

Keyword = Annotated[str, Field(min_length=1, max_length=100)]

DayMode = Literal["generate", "select_existing"]
InstanceStatus = Literal["pending", "running", "completed", "failed", "skipped"]
Image = Annotated[Identifier, Field(min_length=1, max_length=2000)]


class ListInstancesInput(Input):
    start_date: datetime | None = Field(None, description="scheduledDate on or after.")
    end_date: datetime | None = Field(None, description="scheduledDate before.")
    job_id: uuid.UUID | None = None
    status: InstanceStatus | None = None
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)


class CreateInstanceInput(Input):
    job_id: uuid.UUID
    scheduled_date: datetime = Field(
        description="When it runs; without an offset it is read in the organization's time zone."
    )
    day_mode: DayMode = "generate"
    keywords: list[Keyword] | None = Field(None, max_length=20)
    content_instructions: MultiLine | None = Field(None, max_length=5000)
    images: list[Image] = Field(default_factory=list, max_length=20)
    document_ids: list[uuid.UUID] | None = Field(None, max_length=50)


class UpdateInstanceInput(Input):
    id: uuid.UUID
    keywords: list[Keyword] | None = Field(None, max_length=20)
    content_instructions: MultiLine | None = Field(None, max_length=5000)
    day_mode: DayMode | None = None


class InstanceIdInput(Input):
    id: uuid.UUID


class JobInstance(Record):
    id: uuid.UUID
    tenant_id: uuid.UUID
    job_id: uuid.UUID
    scheduled_date: datetime
    day_mode: DayMode
    keywords: list[str] | None = Field(description="Overrides the job's keywords when set.")
    content_instructions: str | None
    images: list[str]
    document_ids: list[uuid.UUID] | None
    status: InstanceStatus
    step: str | None
    percent: int
    topic: str | None
    draft_id: uuid.UUID | None
    run_id: uuid.UUID | None
    error: str | None = Field(description="Why it failed or was skipped.")
    attempts: int
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class InstanceProgress(Record):
    status: InstanceStatus
    step: str | None
    percent: int
