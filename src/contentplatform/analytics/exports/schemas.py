"""Inputs and answers of analytics exports: inputs camelCase on the wire, the export
(ExportJob) as the catalog names its fields (snake_case); and each report's filters."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page
from contentplatform.kit.text import Identifier, JsonObject

# The reports an export can write (exports/reports.py says what each holds).
ReportName = Literal["automation_runs", "automation_failures", "ai_usage", "ai_usage_events"]
ExportFormat = Literal["csv", "jsonl"]
ExportStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "expired"]
# The days an export may name: far around any record, and far from the calendar's ends (where a
# day's next midnight no longer exists).
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(2999, 12, 31)


class AutomationRunsFilters(Input):
    """The filters of the `automation_runs` report."""

    job_id: uuid.UUID | None = Field(None, description="Only this job's runs.")
    status: Literal["pending", "running", "completed", "failed", "skipped"] | None = Field(
        None, description="Only runs in this status."
    )


class AutomationFailuresFilters(Input):
    """The filters of the `automation_failures` report."""

    job_id: uuid.UUID | None = Field(None, description="Only this job's failed runs.")


class AiUsageFilters(Input):
    """The filters of the `ai_usage` report."""

    kind: Identifier | None = Field(
        None, max_length=64, description="Only this kind of use (e.g. `generation.article`)."
    )


class CreateExportInput(Input):
    report: ReportName = Field(
        description="`automation_runs`: one row per job run that started in the period (id, "
        "job_id, status, step, started_at, finished_at, duration_ms, error). `ai_usage`: one row "
        "per UTC day and kind of use with credits, operations and model tokens (bucket_start, "
        "bucket_end, kind, credits, operations, input_tokens, output_tokens). "
        "`automation_failures`: the runs that failed, as automation_runs with `reason` (the "
        "code analytics.failureBreakdown groups by) after status. `ai_usage_events`: one row "
        "per line item of analytics.aiUsageEvents (id, at, kind, model, workflow_id, "
        "workflow_run_id, job_instance_id, user_id, input_tokens, output_tokens, credits, "
        "cost_usd (empty: costs are for admins, in the aiUsage operations), reservation_id)."
    )
    format: ExportFormat = Field(
        "csv",
        description="`csv` (RFC 4180, a header row; text cells starting with = + - @, a tab or "
        "a carriage return get a leading single quote against formula injection) or `jsonl` "
        "(one JSON object per line).",
    )
    date_from: date = Field(
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="First day (inclusive), in the organization's time zone.",
    )
    date_to: date = Field(
        ge=FIRST_DAY,
        le=LAST_DAY,
        description="Last day (inclusive); at most 366 days after dateFrom.",
    )
    filters: JsonObject | None = Field(
        None,
        description="The report's filters: automation_runs {jobId, status}; "
        "automation_failures {jobId}; ai_usage and ai_usage_events {kind}.",
    )
    idempotency_key: Identifier | None = Field(
        None,
        min_length=8,
        max_length=128,
        description="The same key returns the export it created, creating nothing.",
    )


class ExportIdInput(Input):
    id: uuid.UUID


class ListExportsInput(Input):
    status: Literal["all", "queued", "running", "succeeded", "failed", "cancelled", "expired"] = (
        "all"
    )
    mine: bool = Field(False, description="Only the exports the caller created.")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class ExportError(BaseModel):
    code: str = Field(description="`too_many_rows`, `export_failed` or `stalled`.")
    message: str


class ExportJob(BaseModel):
    id: uuid.UUID
    report: ReportName
    format: ExportFormat
    params: dict[str, Any] = Field(
        description="What it exports: date_from, date_to, the time_zone they were read in, and "
        "the report's filters."
    )
    status: ExportStatus
    row_count: int | None = Field(description="Rows written (set once it succeeded).")
    bytes: int | None = Field(description="The file's size (set once it succeeded).")
    download_url: str | None = Field(
        description="A signed URL of the file, valid 1 hour (never past file_expires_at), made "
        "afresh by each getExport; null unless succeeded, and in lists."
    )
    file_expires_at: datetime | None = Field(
        description="When the file is deleted (7 days after it was written): the export then "
        "is `expired` and its download answers 410."
    )
    error: ExportError | None
    created_by: str | None
    created_at: datetime
    finished_at: datetime | None


class ExportPage(Page[ExportJob]):
    pass


class DeletedExport(BaseModel):
    success: bool
    status: Literal["cancelled", "deleted"] = Field(
        description="`cancelled`: it was queued or running and stopped (the record stays); "
        "`deleted`: the record and its file are gone."
    )
