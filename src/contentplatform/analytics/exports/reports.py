"""The reports an export writes, by name: the model of its filters, its columns, and an async
generator of its rows in batches (each batch read in a transaction of its own, so an export of
a million rows holds one batch in memory and no transaction open for long).

- `automation_runs`: one row per job instance that started in the period, by start (a keyset
  walk over job_instances.started_between).
- `automation_failures`: the same walk over the runs that failed, with the reason code
  (job_instances' `problem`) analytics.failureBreakdown groups them by.
- `ai_usage`: one row per UTC day and kind of use, from credits' usage buckets (the debits
  billing.getUsage reads); days with nothing used have no row.
- `ai_usage_events`: one row per line item (analytics.aiUsageEvents' fields), oldest first,
  from ai_usage.service.event_rows; `cost_usd` is left empty, as a member's aiUsageEvents has
  it null (the cost is for admins, in the aiUsage operations).

Content analytics' reports join the registry and the `report` enum with their sources.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from contentplatform.analytics.ai_usage import service as usage_analytics
from contentplatform.analytics.exports import schemas
from contentplatform.credits import usage as credit_usage
from contentplatform.job_instances import service as job_instances
from contentplatform.kit.db import Database

# Rows read (and written) at a time.
BATCH_ROWS = 1000

Row = Sequence[Any]
Batches = AsyncIterator[list[Row]]


@dataclass(frozen=True)
class Scope:
    """What one export reads: the tenant's rows in [start, end) passing the report's filters."""

    tenant_id: uuid.UUID
    start: datetime
    end: datetime
    filters: Any


@dataclass(frozen=True)
class Report:
    name: str
    filters: type[BaseModel]
    columns: tuple[str, ...]
    rows: Callable[[Database, Scope], Batches]


def _duration_ms(started: datetime | None, finished: datetime | None) -> int | None:
    if started is None or finished is None:
        return None
    return int((finished - started).total_seconds() * 1000)


async def automation_runs(db: Database, scope: Scope) -> Batches:
    filters: schemas.AutomationRunsFilters = scope.filters
    async for rows in _runs(db, scope, filters.job_id, filters.status, with_problem=False):
        yield rows


async def automation_failures(db: Database, scope: Scope) -> Batches:
    filters: schemas.AutomationFailuresFilters = scope.filters
    async for rows in _runs(db, scope, filters.job_id, "failed", with_problem=True):
        yield rows


async def _runs(
    db: Database,
    scope: Scope,
    job_id: uuid.UUID | None,
    status: str | None,
    *,
    with_problem: bool,
) -> Batches:
    after: tuple[datetime, uuid.UUID] | None = None
    while True:
        async with db.unit_of_work() as session:
            batch = await job_instances.started_between(
                session,
                scope.tenant_id,
                scope.start,
                scope.end,
                after=after,
                limit=BATCH_ROWS,
                job_id=job_id,
                status=status,
            )
            rows: list[Row] = [
                (
                    run.id,
                    run.job_id,
                    run.status,
                    *((run.problem or "unknown",) if with_problem else ()),
                    run.step,
                    run.started_at,
                    run.finished_at,
                    _duration_ms(run.started_at, run.finished_at),
                    run.error,
                )
                for run in batch
            ]
        if rows:
            yield rows
        if len(batch) < BATCH_ROWS:
            return
        last = batch[-1]
        assert last.started_at is not None  # the query selects started runs only
        after = (last.started_at, last.id)


async def ai_usage(db: Database, scope: Scope) -> Batches:
    filters: schemas.AiUsageFilters = scope.filters
    async with db.unit_of_work() as session:
        found = await credit_usage.usage(
            session,
            scope.tenant_id,
            start=scope.start,
            end=scope.end,
            bucket_width="1d",
            group_by="kind",
            kind=filters.kind,
        )
    # At most 367 days times the kinds of use: small, however much was used.
    rows: list[Row] = [
        (
            bucket.start_time,
            bucket.end_time,
            result.kind,
            result.credits,
            result.operations,
            result.input_tokens,
            result.output_tokens,
        )
        for bucket in found.data
        for result in bucket.results
    ]
    for at in range(0, len(rows), BATCH_ROWS):
        yield rows[at : at + BATCH_ROWS]


async def ai_usage_events(db: Database, scope: Scope) -> Batches:
    filters: schemas.AiUsageFilters = scope.filters
    async with db.unit_of_work() as session:
        batch: list[Row] = []
        events = usage_analytics.event_rows(
            session, scope.tenant_id, scope.start, scope.end, priced=False
        )
        async for event in events:
            if filters.kind is not None and event["kind"] != filters.kind:
                continue
            batch.append(tuple(event.get(column) for column in EVENT_COLUMNS))
            if len(batch) == BATCH_ROWS:
                yield batch
                batch = []
        if batch:
            yield batch


RUN_COLUMNS = (
    *("id", "job_id", "status", "step", "started_at", "finished_at", "duration_ms", "error"),
)
EVENT_COLUMNS = (
    *("id", "at", "kind", "model", "workflow_id", "workflow_run_id", "job_instance_id"),
    *("user_id", "input_tokens", "output_tokens", "credits", "cost_usd", "reservation_id"),
)

REPORTS: dict[str, Report] = {
    report.name: report
    for report in (
        Report(
            name="automation_runs",
            filters=schemas.AutomationRunsFilters,
            columns=RUN_COLUMNS,
            rows=automation_runs,
        ),
        Report(
            name="automation_failures",
            filters=schemas.AutomationFailuresFilters,
            columns=(*RUN_COLUMNS[:3], "reason", *RUN_COLUMNS[3:]),
            rows=automation_failures,
        ),
        Report(
            name="ai_usage",
            filters=schemas.AiUsageFilters,
            columns=(
                "bucket_start",
                "bucket_end",
                "kind",
                "credits",
                "operations",
                "input_tokens",
                "output_tokens",
            ),
            rows=ai_usage,
        ),
        Report(
            name="ai_usage_events",
            filters=schemas.AiUsageFilters,
            columns=EVENT_COLUMNS,
            rows=ai_usage_events,
        ),
    )
}
