"""Declarations only: automation analytics (how the jobs' runs fared in a period)."""

from __future__ import annotations

from contentplatform.analytics.automation import schemas, service
from contentplatform.analytics.schemas import Series
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.jobs.errors import JobNotFound
from contentplatform.workflows.errors import WorkflowNotFound

router = ProcedureRouter("analytics", tag="Analytics")


@router.get(
    "automationOverview",
    "/v1/analytics/automation/overview",
    access=Access.member,
    errors=[JobNotFound, WorkflowNotFound],
)
async def automation_overview(
    ctx: Context, data: schemas.AutomationInput
) -> schemas.AutomationOverview:
    """Jobs and instances success rate, throughput and durations.

    The period's runs counted by outcome, their success rate and p50/p95 durations, the drafts
    they made and how publishing them went, beside the compared period, and the most frequent
    failure reasons."""
    return await service.overview(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "automationTimeseries",
    "/v1/analytics/automation/timeseries",
    access=Access.member,
    errors=[JobNotFound, WorkflowNotFound],
)
async def automation_timeseries(ctx: Context, data: schemas.AutomationSeriesInput) -> Series:
    """Automation metrics over time.

    The overview's figures per day, ISO week or month of the organization's time zone: counts
    are 0 in a bucket once the jobs existed, null before; success_rate and durations are null
    in a bucket without a finished run. Day buckets cover at most 400 days."""
    return await service.timeseries(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "failureBreakdown",
    "/v1/analytics/automation/failures",
    access=Access.member,
    errors=[JobNotFound],
)
async def failure_breakdown(ctx: Context, data: schemas.FailureInput) -> schemas.FailurePage:
    """Failures grouped by reason or origin.

    The period's failed runs by reason (generation_error, provider_timeout,
    insufficient_credits, validation_error, review_rejected, cancelled, unknown), by the
    pipeline step they failed at (`before_start`: they failed before any step), by job, by the
    job's workflow (key null: the default) or by its publisher connection (null: none); each
    with its share of the failures, when the latest failed and its error. Most frequent
    first."""
    return await service.failures(ctx.session, ctx.tenant.tenant_id, data)


@router.get("jobPerformance", "/v1/analytics/automation/jobs", access=Access.member)
async def job_performance(
    ctx: Context, data: schemas.JobPerformanceInput
) -> schemas.JobPerformancePage:
    """Per-job automation table.

    Every job (not deleted; of `status` when given) with its runs in the period counted as the
    overview counts them, its mean run time, the drafts its runs made in the period (published
    since, mean SEO score: the figures jobs.getAnalytics reads over all time), the credits
    debited for it, and its latest run. Sorted by `sortBy` (nulls last), ties oldest job
    first."""
    return await service.job_performance(ctx.session, ctx.tenant.tenant_id, data)
