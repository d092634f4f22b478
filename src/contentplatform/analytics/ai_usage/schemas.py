"""AI usage analytics: the model calls the metered operations paid for, read from the credit
ledger's debits (their inputs and answers)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from contentplatform.analytics.schemas import (
    ComparedPeriodInput,
    Granularity,
    Group,
    Metric,
    PeriodInput,
    SeriesPeriodInput,
)
from contentplatform.kit.schemas import MAX_PAGE, Page

# The kinds the ledger records: credits.KINDS (a test holds them equal).
UsageKind = Literal[
    "documents.ingest",
    "generation.blog",
    "chat.message",
    "website_scan.profile",
    "seo.checkRankings",
    "seo.researchKeywords",
    "seo.runAiVisibility",
    "seoPlans.generate",
]
Dimension = Literal["kind", "model", "workflow", "job", "user"]
DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)
UsageMetric = Literal[
    "input_tokens", "output_tokens", "total_tokens", "requests", "credits", "cost_usd"
]
METRICS: tuple[UsageMetric, ...] = get_args(UsageMetric)

KIND_FILTER = Field(None, description="Only this kind's usage.")
MODEL_FILTER = Field(
    None, min_length=1, max_length=100, description="Only the usage of this model (exact name)."
)


def _names(value: str, known: tuple[str, ...], what: str, most: int, least: int) -> str:
    names = list(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
    if any(name not in known for name in names) or not least <= len(names) <= most:
        raise ValueError(
            f"{what} is a comma-separated list of {least} to {most} of " + ", ".join(known)
        )
    return ",".join(names)


class AiUsageOverviewInput(ComparedPeriodInput):
    pass


class AiUsageSeriesInput(SeriesPeriodInput):
    metrics: str = Field(
        "total_tokens,credits",
        max_length=200,
        description="Comma-separated, of: " + ", ".join(METRICS) + ".",
    )
    group_by: str | None = Field(
        None,
        max_length=100,
        description="Comma-separated, 0 to 2 of: " + ", ".join(DIMENSIONS) + ". At most 50 "
        "groups per bucket (the most credits first); the rest are one result whose grouped "
        "fields read 'other'.",
    )
    kind: UsageKind | None = KIND_FILTER
    model: str | None = MODEL_FILTER

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: str) -> str:
        return _names(value, METRICS, "metrics", len(METRICS), 1)

    @field_validator("group_by")
    @classmethod
    def _group_by(cls, value: str | None) -> str | None:
        return _names(value, DIMENSIONS, "groupBy", 2, 0) or None if value is not None else None

    @property
    def metric_list(self) -> list[UsageMetric]:
        return [name for name in METRICS if name in self.metrics.split(",")]

    @property
    def dimensions(self) -> list[Dimension]:
        asked = self.group_by.split(",") if self.group_by else []
        return [name for name in DIMENSIONS if name in asked]


class AiUsageBreakdownInput(PeriodInput):
    group_by: Dimension = Field(description="What a row is: " + ", ".join(DIMENSIONS) + ".")
    sort_by: UsageMetric = Field("credits", description="cost_usd: admins only (else 403).")
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class AiUsageEventsInput(PeriodInput):
    kind: UsageKind | None = KIND_FILTER
    model: str | None = MODEL_FILTER
    workflow_run_id: uuid.UUID | None = Field(None, description="Only this generation run's.")
    job_instance_id: uuid.UUID | None = Field(None, description="Only this job instance's.")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class UsageMetrics(BaseModel):
    input_tokens: Metric[float]
    output_tokens: Metric[float]
    total_tokens: Metric[float]
    requests: Metric[float]
    credits: Metric[float]
    cost_usd: Metric[float] = Field(description="value and previous null unless an admin asks.")


class KindUsage(BaseModel):
    kind: UsageKind
    credits: int
    total_tokens: int


class AiUsageOverview(BaseModel):
    date_from: date
    date_to: date
    metrics: UsageMetrics
    by_kind: list[KindUsage] = Field(description="Every kind, in the ledger's order.")
    credits_balance: int = Field(description="Credits available now (billing.getBalance).")
    data_through: datetime
    price_table_version: str


class UsageValues(BaseModel):
    """What usage adds up to. Usage is the credit ledger's debits: each commit of a metered
    operation (an article's generation run, a chat answer, a site profile, a document's ingest)
    is one request, with the credits it charged, the model tokens it used and the model that
    used them (a commit whose calls used several models names them all, joined by '+'; ingests
    and holds a client committed use no model: null). A request counts on the day
    (organization's time zone) it was committed; credits add up to billing.getUsage's for the
    same window. cost_usd is the tokens times the price table's per-model price
    (`price_table_version`), for admins only (null for other roles); a model not in the table
    counts 0."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    requests: int
    credits: int
    cost_usd: float | None = Field(description="Null unless an admin asks.")


class SeriesResult(BaseModel):
    """One group's usage in a bucket: the grouped fields say which (null: not grouped by it, or
    none, such as a request no member made; 'other': the groups past the 50th)."""

    kind: str | None = None
    model: str | None = None
    workflow_id: str | None = None
    job_id: str | None = None
    user_id: str | None = None
    values: dict[str, float | int | None]


class SeriesBucket(BaseModel):
    start: datetime
    end: datetime
    results: list[SeriesResult]


class AiUsageSeries(BaseModel):
    granularity: Granularity
    date_from: date
    date_to: date
    data_through: datetime
    price_table_version: str
    data: list[SeriesBucket]


class BreakdownRow(BaseModel):
    group: Group
    values: UsageValues


class AiUsageBreakdown(Page[BreakdownRow]):
    price_table_version: str


class UsageEvent(BaseModel):
    """One commit of a metered operation. operation_id and step_key are always null (a debit
    settles a whole run, not a step, and does not record the operation that asked for it);
    workflow_run_id and job_instance_id are a generation run's (null for other kinds, and for
    debits before 0034); user_id the member whose action it was (null: system, API key)."""

    id: uuid.UUID = Field(description="The commit: its credit reservation, else its ledger row.")
    at: datetime
    kind: str | None
    model: str | None
    operation_id: str | None
    workflow_id: uuid.UUID | None
    workflow_run_id: uuid.UUID | None
    step_key: str | None
    job_instance_id: uuid.UUID | None
    user_id: str | None
    resource_type: str | None
    resource_id: str | None
    input_tokens: int
    output_tokens: int
    credits: int
    cost_usd: float | None
    reservation_id: uuid.UUID | None


class AiUsageEvents(Page[UsageEvent]):
    price_table_version: str
