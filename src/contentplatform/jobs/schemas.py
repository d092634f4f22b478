from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, MultiLine, Name

JobType = Literal["one_off", "recurring", "scheduled"]
JobStatus = Literal["active", "paused", "processing", "error", "completed"]
STATUSES: tuple[JobStatus, ...] = ("active", "paused", "processing", "error", "completed")
TopicSource = Literal["manual", "knowledge", "seo_plan"]

Topic = Annotated[str, Field(min_length=1, max_length=500)]
Keyword = Annotated[str, Field(min_length=1, max_length=100)]


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value.strip() if value is not None else None


# --- inputs -----------------------------------------------------------------------------------


class JobFields(Input):
    """What a job says: shared by CreateJobInput and jobs.update."""

    cron_expression: str | None = Field(
        None,
        max_length=120,
        description="5-field cron (minute hour day-of-month month day-of-week), read in the "
        "organization's time zone; required for recurring jobs.",
    )
    scheduled_dates: list[datetime] | None = Field(
        None, max_length=366, description="Required for scheduled jobs; at most 366."
    )
    topics: list[Topic] | None = Field(None, max_length=100)
    topic_source: TopicSource | None = None
    keywords: list[Keyword] | None = Field(None, max_length=20)
    content_instructions: MultiLine | None = Field(None, max_length=5000)
    document_ids: list[uuid.UUID] | None = Field(None, max_length=50)
    auto_publish: bool | None = None
    auto_publish_threshold: int | None = Field(None, ge=0, le=100)
    publisher_connection_id: uuid.UUID | None = None
    seo_action_id: uuid.UUID | None = None
    workflow_id: uuid.UUID | None = Field(
        None,
        description="The workflow the job's runs follow (its published version when a run "
        "starts); null: the organization's default workflow, else the built-in one.",
    )
    workflow_version: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Pin the job to this version of its workflow (it must exist): its runs keep "
        "following it whatever is published later. Null: the version live when a run starts.",
    )


class CreateJobInput(JobFields):
    # Fields that go together: a recurring job, its cron and its topics.
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Weekly gardening notes",
                    "jobType": "recurring",
                    "cronExpression": "0 9 * * MON",
                    "topicSource": "manual",
                    "topics": ["Watering in a dry summer", "Mulch that keeps water in"],
                    "keywords": ["drought-tolerant plants"],
                }
            ]
        }
    )

    name: Name = Field(min_length=1, max_length=100)
    job_type: JobType = "one_off"
    status: Literal["active", "paused"] = "active"

    _name = field_validator("name")(_not_blank)


class UpdateJobInput(JobFields):
    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)

    _name = field_validator("name")(_not_blank)


class ListJobsInput(Input):
    status: JobStatus | None = None
    limit: int = Field(100, ge=1, le=500)


class PageJobsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    search: str | None = Field(None, max_length=255, description="Matches the name.")
    status: JobStatus | None = None


class JobIdInput(Input):
    id: uuid.UUID


class CloneJobInput(Input):
    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)

    _name = field_validator("name")(_not_blank)


class UpdateTimezoneInput(Input):
    timezone: Identifier = Field(min_length=1, max_length=64, description="An IANA zone name.")


# --- outputs ----------------------------------------------------------------------------------


class Job(Record):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    job_type: JobType
    status: JobStatus
    cron_expression: str | None
    scheduled_dates: list[datetime]
    topics: list[str]
    topic_source: TopicSource
    keywords: list[str]
    content_instructions: str | None
    document_ids: list[uuid.UUID]
    auto_publish: bool
    auto_publish_threshold: int | None
    publisher_connection_id: uuid.UUID | None
    seo_action_id: uuid.UUID | None
    workflow_id: uuid.UUID | None = Field(
        description="The workflow its runs follow; null: the organization's default."
    )
    workflow_version: int | None = Field(
        description="The version its runs follow; null: the workflow's live version."
    )
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime


class JobPage(Page[Job]):
    pass


class JobStats(BaseModel):
    total: int
    active: int
    paused: int
    processing: int
    error: int
    completed: int


class SchedulingConfig(BaseModel):
    timezone: str


class JobAnalytics(BaseModel):
    totalDrafts: int
    approvedDrafts: int = Field(description="Drafts approved, including those since published.")
    publishedDrafts: int
    avgSeoScore: float = Field(description="Mean SEO score of the scored drafts; 0 without any.")
    publishSuccessRate: float = Field(
        description="Successful publish attempts / all attempts, 0-1; 0 without any."
    )


class RunHistoryInput(Input):
    id: uuid.UUID
    limit: int = Field(10, ge=1, le=100)


MAX_CALENDAR_DAYS = 366
MAX_CALENDAR_ENTRIES = 5000


class CalendarInput(Input):
    start_date: datetime = Field(description="Window start (inclusive).")
    end_date: datetime = Field(
        description=f"Window end (exclusive); at most {MAX_CALENDAR_DAYS} days after startDate."
    )


class CalendarEntry(BaseModel):
    """One occurrence: planned from the schedule (instance_id null) or an existing instance."""

    job_id: uuid.UUID
    job_name: str
    date: datetime
    instance_id: uuid.UUID | None
    status: str = Field(description="`planned`, or the instance's status.")
    draft_id: uuid.UUID | None


BulkAction = Literal["pause", "resume", "trigger", "delete"]


class BulkJobsInput(Input):
    action: BulkAction
    job_ids: list[uuid.UUID] = Field(min_length=1, max_length=50)


class BulkResult(BaseModel):
    id: uuid.UUID
    ok: bool
    error: str | None = Field(description="Why this id was not changed (a problem code).")


class BulkOutcome(BaseModel):
    success: bool = Field(description="True when every id was changed.")
    affected: int
    results: list[BulkResult]
