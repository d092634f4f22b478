"""Automation analytics: how the jobs' runs fared in a period (their inputs and answers)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from contentplatform.analytics.schemas import (
    ComparedPeriodInput,
    Group,
    PeriodInput,
    SeriesPeriodInput,
)
from contentplatform.jobs.schemas import JobStatus
from contentplatform.kit.schemas import MAX_PAGE, Page

SeriesMetric = Literal[
    "instances_total",
    "succeeded",
    "failed",
    "skipped",
    "success_rate",
    "drafts_produced",
    "published",
    "duration_p50_ms",
    "duration_p95_ms",
]
SERIES_METRICS: tuple[SeriesMetric, ...] = get_args(SeriesMetric)
FailureGrouping = Literal["reason", "step_type", "job", "workflow", "publisher_connection"]
PerformanceSort = Literal["runs", "success_rate", "failed", "avg_duration_ms", "published"]

JOB_FILTER = Field(None, description="Only this job's runs (another organization's: 404).")
WORKFLOW_FILTER = Field(
    None, description="Only the runs of jobs naming this workflow now (another's: 404)."
)


class AutomationInput(ComparedPeriodInput):
    job_id: uuid.UUID | None = JOB_FILTER
    workflow_id: uuid.UUID | None = WORKFLOW_FILTER


class AutomationSeriesInput(SeriesPeriodInput):
    job_id: uuid.UUID | None = JOB_FILTER
    workflow_id: uuid.UUID | None = WORKFLOW_FILTER
    metrics: str = Field(
        "succeeded,failed",
        max_length=200,
        description="Comma-separated, of: " + ", ".join(SERIES_METRICS) + ".",
    )

    @field_validator("metrics")
    @classmethod
    def _known(cls, value: str) -> str:
        names = [name.strip() for name in value.split(",") if name.strip()]
        unknown = [name for name in names if name not in SERIES_METRICS]
        if not names or unknown:
            raise ValueError("metrics are a comma-separated list of " + ", ".join(SERIES_METRICS))
        return ",".join(dict.fromkeys(names))

    @property
    def metric_list(self) -> list[str]:
        return self.metrics.split(",")


class FailureInput(PeriodInput):
    group_by: FailureGrouping = "reason"
    job_id: uuid.UUID | None = JOB_FILTER
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class JobPerformanceInput(PeriodInput):
    sort_by: PerformanceSort = "runs"
    sort_order: Literal["asc", "desc"] = "desc"
    status: JobStatus | None = Field(None, description="Only the jobs with this status now.")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class AutomationMetrics(BaseModel):
    """A period's runs. A run is a job instance: it counts in the period it finished in
    (completed, failed or skipped), or, while still in flight, the one it started in; an
    instance planned or queued but not started counts nowhere. `succeeded`: completed;
    `failed`: failed (why: failureBreakdown); `skipped`: never run (missed, busy, paused or
    skipped by hand); `in_flight`: started, not finished; `stalled`: those in flight past the
    generation stall time (neither a success nor a failure). instances_total = succeeded +
    failed + skipped + in_flight. success_rate = succeeded / (succeeded + failed), 0-1, null
    without a finished run. A duration is finished - started of a completed or failed run that
    started, in whole milliseconds; p50/p95 are nearest-rank percentiles (the smallest duration
    with at least 50% / 95% of them at or below it). drafts_produced / published: the jobs'
    drafts made in the period (whatever their status now: a failed run's rejected draft too, as
    jobs.getAnalytics' totalDrafts counts them), and those of them published since."""

    instances_total: int
    succeeded: int
    failed: int
    skipped: int
    in_flight: int
    stalled: int
    success_rate: float | None
    drafts_produced: int
    published: int
    publish_success_rate: float | None = Field(
        description="Of the publish attempts of the jobs' drafts that finished in the period, "
        "the share that succeeded; null without any."
    )
    duration_p50_ms: float | None
    duration_p95_ms: float | None


class ReasonCount(BaseModel):
    reason: str
    count: int


class AutomationOverview(BaseModel):
    metrics: AutomationMetrics
    previous: AutomationMetrics | None = Field(description="The compared period; null: none.")
    top_failure_reasons: list[ReasonCount] = Field(description="At most 5, most frequent first.")
    data_through: datetime


class FailureGroup(BaseModel):
    group: Group
    count: int
    share: float = Field(description="Of the period's failed runs, 0-1 (4 decimals).")
    last_at: datetime = Field(description="When the latest of them failed.")
    sample_error: str | None = Field(description="The latest one's error.")


class FailurePage(Page[FailureGroup]):
    pass


class JobPerformance(BaseModel):
    job_id: uuid.UUID
    name: str
    status: str
    runs: int = Field(description="instances_total of the job's runs in the period.")
    succeeded: int
    failed: int
    success_rate: float | None
    avg_duration_ms: float | None
    drafts: int
    published: int
    avg_seo_score: float | None
    credits_used: int = Field(description="Credits debited for the job's runs in the period.")
    last_run_at: datetime | None = Field(description="The latest run's instant in the period.")


class JobPerformancePage(Page[JobPerformance]):
    pass
