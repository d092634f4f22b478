"""Automation analytics: the jobs' runs of a period counted, timed and grouped by why they
failed, all in the database (job_instances.service.run_counts and failed_runs: per span, so the
cost follows the period's runs, not the tenant's history). The drafts come from
drafts.job_figures; jobs.analytics.figures (what jobs.getAnalytics reads) is both, per job, and
jobPerformance reads it. How a run counts is job_instances.service.RunCounts' docstring, and
schemas.AutomationMetrics says it to clients."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics import service as analytics
from contentplatform.analytics.automation import schemas
from contentplatform.analytics.schemas import Group, Point, Series
from contentplatform.core.runtime import current
from contentplatform.credits import service as credits
from contentplatform.drafts import service as drafts
from contentplatform.job_instances import service as instances
from contentplatform.jobs import analytics as job_analytics
from contentplatform.jobs import service as jobs
from contentplatform.jobs.models import Job
from contentplatform.kit import series
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import offset_of
from contentplatform.publishers import attempts as publishing
from contentplatform.publishers import service as publishers
from contentplatform.workflows import service as workflows
from contentplatform.workflows.errors import WorkflowNotFound

TOP_REASONS = 5
# A failure that ended before any step of the pipeline began (no credits, no topic).
BEFORE_START = "before_start"


def _stalled_before(now: datetime) -> datetime:
    """Runs in flight since before this have outlasted the generation stall time."""
    return now - timedelta(seconds=current().settings.generation_stall_seconds)


async def _job_filter(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID | None,
    workflow_id: uuid.UUID | None = None,
) -> list[uuid.UUID] | None:
    """The jobs a filter keeps (None: every job); another organization's job or workflow 404."""
    kept: list[uuid.UUID] | None = None
    if job_id is not None:
        kept = [(await jobs.require(session, tenant_id, job_id)).id]
    if workflow_id is not None:
        await workflows.require(session, tenant_id, workflow_id)
        naming = await jobs.naming_workflow(session, tenant_id, workflow_id)
        kept = naming if kept is None else [each for each in kept if each in naming]
    return kept


async def _counted(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    spans: list[tuple[datetime, datetime]],
    now: datetime,
    percents: tuple[int, ...] = (),
) -> list[instances.RunCounts]:
    """The runs of each span, in the spans' order (empty counts where none)."""
    found = await instances.run_counts(
        session,
        tenant_id,
        spans,
        stalled_before=_stalled_before(now),
        job_ids=job_ids,
        percents=percents,
    )
    return [found.get((index, None), instances.RunCounts()) for index in range(len(spans))]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _counts(runs: instances.RunCounts) -> dict[str, int]:
    return {
        "instances_total": runs.total,
        "succeeded": runs.succeeded,
        "failed": runs.failed,
        "skipped": runs.skipped,
        "in_flight": runs.in_flight,
        "stalled": runs.stalled,
    }


async def _metrics(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    start: datetime,
    end: datetime,
    now: datetime,
) -> schemas.AutomationMetrics:
    [runs] = await _counted(session, tenant_id, job_ids, [(start, end)], now, (50, 95))
    made = await drafts.job_figures(session, tenant_id, job_ids=job_ids, start=start, end=end)
    succeeded, finished = await publishing.jobs_outcomes(
        session, tenant_id, job_ids=job_ids, start=start, end=end
    )
    return schemas.AutomationMetrics(
        **_counts(runs),
        success_rate=_rate(runs.succeeded, runs.finished),
        drafts_produced=sum(sum(counts.values()) for counts, _ in made.values()),
        published=sum(counts.get("published", 0) for counts, _ in made.values()),
        publish_success_rate=_rate(succeeded, finished),
        duration_p50_ms=runs.percentiles.get(50),
        duration_p95_ms=runs.percentiles.get(95),
    )


async def overview(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.AutomationInput
) -> schemas.AutomationOverview:
    period = await analytics.period(session, tenant_id, data)
    job_ids = await _job_filter(session, tenant_id, data.job_id, data.workflow_id)
    metrics = await _metrics(session, tenant_id, job_ids, period.start, period.end, period.now)
    previous = None
    if period.previous is not None:
        previous = await _metrics(session, tenant_id, job_ids, *period.previous, period.now)
    reasons: Counter[str] = Counter()
    for row in await instances.failed_runs(
        session, tenant_id, period.start, period.end, job_ids=job_ids
    ):
        reasons[row.problem or "unknown"] += row.count
    return schemas.AutomationOverview(
        metrics=metrics,
        previous=previous,
        top_failure_reasons=[
            schemas.ReasonCount(reason=reason, count=count)
            for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[
                :TOP_REASONS
            ]
        ],
        data_through=period.data_through,
    )


async def success_rate(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> float | None:
    """Of the runs that finished in [start, end) (completed or failed; skipped ones never ran),
    the share that succeeded, 0-1 to 4 decimals; None without a finished run. The same figure as
    automationOverview's success_rate."""
    [runs] = await _counted(session, tenant_id, None, [(start, end)], utcnow())
    return _rate(runs.succeeded, runs.finished)


# --- the series ---------------------------------------------------------------------------------


async def timeseries(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.AutomationSeriesInput
) -> Series:
    """Each bucket's figures as the overview counts them (a run in the bucket it finished, or
    started, in). Counts are 0 in a bucket once the source existed (from the first job's
    creation, or the first run's instant if earlier), null before; success_rate and the
    durations are null in a bucket without a finished run."""
    period = await analytics.period(session, tenant_id, data)
    job_ids = await _job_filter(session, tenant_id, data.job_id, data.workflow_id)
    spans = period.spans()
    wanted = data.metric_list
    timed = "duration_p50_ms" in wanted or "duration_p95_ms" in wanted
    bounds = [(span.start, span.end) for span in spans]
    counted = await _counted(
        session, tenant_id, job_ids, bounds, period.now, (50, 95) if timed else ()
    )
    slots = series.Slots(spans)
    made: list[tuple[datetime, str]] = []
    if "drafts_produced" in wanted or "published" in wanted:
        made = await drafts.job_drafts_made(
            session, tenant_id, job_ids=job_ids, start=period.start, end=period.end
        )
    drafts_made: Counter[int] = Counter()
    published: Counter[int] = Counter()
    for created_at, status in made:
        index = slots.index(created_at)
        if index is not None:
            drafts_made[index] += 1
            published[index] += status == "published"
    since = await _source_since(session, tenant_id, job_ids, counted)
    points = []
    for index, (span, runs) in enumerate(zip(spans, counted, strict=True)):
        existed = since is not None and since < span.end
        every: dict[str, float | int | None] = {
            **_counts(runs),
            "success_rate": _rate(runs.succeeded, runs.finished),
            "drafts_produced": drafts_made[index],
            "published": published[index],
            "duration_p50_ms": runs.percentiles.get(50),
            "duration_p95_ms": runs.percentiles.get(95),
        }
        values = {name: every[name] if existed else None for name in wanted}
        points.append(Point(start=span.start, end=span.end, values=values))
    return Series(
        granularity=period.granularity,
        date_from=period.dates.first,
        date_to=period.dates.last,
        data_through=period.data_through,
        data=points,
    )


async def _source_since(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_ids: list[uuid.UUID] | None,
    counted: list[instances.RunCounts],
) -> datetime | None:
    """Since when the jobs' runs could exist: the first creation among the jobs filtered
    (deleted ones too) or, unfiltered, the live jobs, or a run's instant in the period if
    earlier; None when there is neither."""
    kept = await _jobs_created(session, tenant_id, job_ids)
    moments = [*kept, *(runs.first_at for runs in counted if runs.first_at is not None)]
    return min(moments) if moments else None


async def _jobs_created(
    session: AsyncSession, tenant_id: uuid.UUID, job_ids: list[uuid.UUID] | None
) -> list[datetime]:
    if job_ids is None:
        return [job.created_at for job in await job_analytics.every(session, tenant_id, None)]
    return [job.created_at for job in await job_analytics.with_ids(session, tenant_id, job_ids)]


# --- failures -----------------------------------------------------------------------------------


@dataclass
class _Failures:
    count: int = 0
    last_at: datetime | None = None
    error: str | None = None


async def failures(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.FailureInput
) -> schemas.FailurePage:
    """The period's failed runs grouped; groups by count (most first), then key."""
    period = await analytics.period(session, tenant_id, data)
    job_ids = await _job_filter(session, tenant_id, data.job_id)
    # Counted in the database per (job, problem, step), the few rows that makes grouped here.
    rows = await instances.failed_runs(
        session, tenant_id, period.start, period.end, job_ids=job_ids
    )
    named = {
        job.id: job
        for job in await job_analytics.with_ids(session, tenant_id, list({r.job_id for r in rows}))
    }
    groups: dict[str | None, _Failures] = {}
    for row in rows:
        job = named.get(row.job_id)
        if data.group_by == "reason":
            key: str | None = row.problem or "unknown"
        elif data.group_by == "step_type":
            key = row.step or BEFORE_START
        elif data.group_by == "job":
            key = str(row.job_id)
        elif data.group_by == "workflow":
            key = str(job.workflow_id) if job and job.workflow_id else None
        else:
            key = str(job.publisher_connection_id) if job and job.publisher_connection_id else None
        group = groups.setdefault(key, _Failures())
        group.count += row.count
        if group.last_at is None or row.finished_at >= group.last_at:
            group.last_at, group.error = row.finished_at, row.error
    failed = sum(group.count for group in groups.values())
    ordered = sorted(groups.items(), key=lambda item: (-item[1].count, item[0] or ""))
    window = ordered[offset_of(data.page, data.limit) :][: data.limit]
    page = []
    for key, group in window:
        assert group.last_at is not None
        label = await _label(session, tenant_id, data.group_by, key, named)
        page.append(
            schemas.FailureGroup(
                group=Group(key=key, label=label),
                count=group.count,
                share=round(group.count / failed, 4),
                last_at=group.last_at,
                sample_error=group.error,
            )
        )
    return schemas.FailurePage(data=page, total=len(ordered), page=data.page, limit=data.limit)


REASON_LABELS = {
    "generation_error": "Generation failed",
    "provider_timeout": "Model unavailable or timed out",
    "insufficient_credits": "Not enough credits",
    "validation_error": "Job could not run as set",
    "review_rejected": "Rejected at review",
    "publisher_auth": "Publisher refused our credentials",
    "publisher_rejected": "Publisher rejected the article",
    "cancelled": "Cancelled",
    "unknown": "Unknown",
}


async def _label(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    group_by: schemas.FailureGrouping,
    key: str | None,
    named: dict[uuid.UUID, Job],
) -> str:
    if group_by == "reason":
        return REASON_LABELS.get(key or "unknown", key or "unknown")
    if group_by == "step_type":
        return "Before the run started" if key == BEFORE_START else str(key)
    if group_by == "job":
        job = named.get(uuid.UUID(str(key)))
        return job.name if job is not None else "Deleted job"
    if key is None:
        return "Default workflow" if group_by == "workflow" else "No publisher connection"
    if group_by == "workflow":
        try:
            return (await workflows.require(session, tenant_id, uuid.UUID(key))).name
        except WorkflowNotFound:
            return "Deleted workflow"
    connection = await publishers.find(session, tenant_id, uuid.UUID(key))
    return connection.name if connection is not None else "Deleted connection"


# --- per job ------------------------------------------------------------------------------------


async def job_performance(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.JobPerformanceInput
) -> schemas.JobPerformancePage:
    """Every live job (of the status asked) with its period's figures, sorted (ties: oldest job
    first), paged."""
    period = await analytics.period(session, tenant_id, data)
    kept = await job_analytics.every(session, tenant_id, data.status)
    ids = [job.id for job in kept]
    found = await job_analytics.figures(
        session,
        tenant_id,
        job_ids=ids,
        period=(period.start, period.end, _stalled_before(period.now)),
    )
    spent = await credits.debited_by_resource(session, tenant_id, "job", period.start, period.end)
    rows = []
    for job in kept:
        each = found[job.id]
        runs = each.runs
        rows.append(
            schemas.JobPerformance(
                job_id=job.id,
                name=job.name,
                status=job.status,
                runs=runs.total,
                succeeded=runs.succeeded,
                failed=runs.failed,
                success_rate=_rate(runs.succeeded, runs.finished),
                avg_duration_ms=(
                    round(runs.duration_total_ms / runs.timed, 1) if runs.timed else None
                ),
                drafts=sum(each.drafts.values()),
                published=each.drafts.get("published", 0),
                avg_seo_score=(
                    round(each.mean_seo_score, 2) if each.mean_seo_score is not None else None
                ),
                credits_used=spent.get(str(job.id), 0),
                last_run_at=runs.last_at,
            )
        )
    rows = _sorted(rows, data.sort_by, descending=data.sort_order == "desc")
    window = rows[offset_of(data.page, data.limit) :][: data.limit]
    return schemas.JobPerformancePage(
        data=window, total=len(rows), page=data.page, limit=data.limit
    )


def _sorted(
    rows: list[schemas.JobPerformance], by: schemas.PerformanceSort, *, descending: bool
) -> list[schemas.JobPerformance]:
    """By the figure asked for, nulls last either way; ties keep the jobs' order (oldest
    first)."""
    known = [row for row in rows if getattr(row, by) is not None]
    unknown = [row for row in rows if getattr(row, by) is None]
    known.sort(key=lambda row: getattr(row, by), reverse=descending)
    return known + unknown
