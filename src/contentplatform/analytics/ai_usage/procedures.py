"""Declarations only."""

from __future__ import annotations

from contentplatform.analytics.ai_usage import schemas, service
from contentplatform.analytics.ai_usage.errors import CostForAdmins
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter

router = ProcedureRouter("analytics", tag="Analytics")


@router.get("aiUsageOverview", "/v1/analytics/ai-usage/overview", access=Access.member)
async def ai_usage_overview(
    ctx: Context, data: schemas.AiUsageOverviewInput
) -> schemas.AiUsageOverview:
    """AI usage totals for a period.

    Tokens in and out, requests (commits of metered operations), credits (the ledger's debits:
    they add up to billing.getUsage's) and cost_usd (admins only, else null; priced by the
    per-model table named by `price_table_version`) for the period, read in the organization's
    time zone, beside the compared period; credits and tokens by kind; the credits available
    now."""
    return await service.overview(ctx.session, ctx.tenant, data)


@router.get("aiUsageTimeseries", "/v1/analytics/ai-usage/timeseries", access=Access.member)
async def ai_usage_timeseries(
    ctx: Context, data: schemas.AiUsageSeriesInput
) -> schemas.AiUsageSeries:
    """AI usage in time buckets, optionally grouped (OpenAI-style buckets).

    billing.getUsage's buckets, in days, ISO weeks or months of the organization's time zone,
    grouped by up to two of kind, model, workflow, job, user. Ungrouped, each bucket has one
    result (zeros where nothing was used); grouped, a bucket lists the groups that used
    something, at most 50 (the most credits first), the rest as one 'other'."""
    return await service.timeseries(ctx.session, ctx.tenant, data)


@router.get(
    "aiUsageBreakdown",
    "/v1/analytics/ai-usage/breakdown",
    access=Access.member,
    errors=[CostForAdmins],
)
async def ai_usage_breakdown(
    ctx: Context, data: schemas.AiUsageBreakdownInput
) -> schemas.AiUsageBreakdown:
    """AI usage grouped by a dimension for the period.

    One row per kind, model, workflow, job or member, sorted by a metric (ties by key, in the
    same order), paged; sorting by cost_usd is for admins (403). No step_type: a debit settles
    a whole run, so usage is not known per step."""
    return await service.breakdown(ctx.session, ctx.tenant, data)


@router.get("aiUsageEvents", "/v1/analytics/ai-usage/events", access=Access.member)
async def ai_usage_events(ctx: Context, data: schemas.AiUsageEventsInput) -> schemas.AiUsageEvents:
    """Line items of AI usage (audit).

    One per commit of a metered operation, newest first, filtered by kind, model, generation
    run or job instance. operation_id and step_key are null (a debit settles a whole run and
    does not record the operation that asked for it); workflow_id, workflow_run_id and
    job_instance_id are a generation run's, null for other kinds and for usage recorded before
    models were; cost_usd is for admins only."""
    return await service.events(ctx.session, ctx.tenant, data)
