"""AI usage: the credit ledger's debits read as model usage (see schemas.USAGE).

Every figure comes from credits/usage.py's `tally`, the one query and bucketing loop that
billing.getUsage answers from too (in UTC there, in the organization's zone here), so credits
here are the ledger's debits. Costs are priced per model by prices.py, for admins only.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics import service as analytics
from contentplatform.analytics.ai_usage import prices
from contentplatform.analytics.ai_usage.errors import CostForAdmins
from contentplatform.analytics.ai_usage.schemas import (
    AiUsageBreakdown,
    AiUsageBreakdownInput,
    AiUsageEvents,
    AiUsageEventsInput,
    AiUsageOverview,
    AiUsageOverviewInput,
    AiUsageSeries,
    AiUsageSeriesInput,
    BreakdownRow,
    Dimension,
    KindUsage,
    SeriesBucket,
    SeriesResult,
    UsageEvent,
    UsageMetric,
    UsageMetrics,
    UsageValues,
)
from contentplatform.analytics.schemas import Group
from contentplatform.auth.context import Role, TenantAccess
from contentplatform.credits import service as credits
from contentplatform.credits import usage as credit_usage
from contentplatform.jobs import analytics as job_analytics
from contentplatform.kit import series
from contentplatform.kit.schemas import offset_of
from contentplatform.tenants import service as tenants
from contentplatform.workflows import service as workflows

# A bucket lists at most this many groups; the rest are folded into one, 'other'.
MAX_GROUPS = 50
OTHER = "other"

_KIND_LABELS = {
    "documents.ingest": "Document ingests",
    "generation.blog": "Article generation",
    "chat.message": "Chat answers",
    "website_scan.profile": "Site profiles",
    "seo.checkRankings": "Rank checks",
    "seo.researchKeywords": "Keyword research",
    "seo.runAiVisibility": "AI visibility runs",
    "seoPlans.generate": "SEO plans",
}
_NONE_LABELS: dict[Dimension, str] = {
    "kind": "No kind",
    "model": "No model",
    "workflow": "No workflow",
    "job": "No job",
    "user": "No member (system or API key)",
}
_RESULT_FIELDS: dict[Dimension, str] = {
    "kind": "kind",
    "model": "model",
    "workflow": "workflow_id",
    "job": "job_id",
    "user": "user_id",
}


def is_admin(tenant: TenantAccess) -> bool:
    return tenant.role.includes(Role.admin)


def values_of(found: credit_usage.Tally, admin: bool) -> UsageValues:
    return UsageValues(
        input_tokens=found.input_tokens,
        output_tokens=found.output_tokens,
        total_tokens=found.input_tokens + found.output_tokens,
        requests=found.operations,
        credits=found.credits,
        cost_usd=prices.cost(found.tokens_by_model) if admin else None,
    )


def _total(groups: Iterable[credit_usage.Tally]) -> credit_usage.Tally:
    total = credit_usage.Tally()
    for found in groups:
        total.merge(found)
    return total


async def _period_tally(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    window: tuple[datetime, datetime],
    group_by: tuple[Dimension, ...],
) -> dict[credit_usage.GroupKey, credit_usage.Tally]:
    """The window's usage as one bucket, by group."""
    start, end = window
    [groups] = await credit_usage.tally(
        session,
        tenant_id,
        start=start,
        end=end,
        spans=[series.Span(start, end)],
        group_by=group_by,
    )
    return groups


# --- analytics.aiUsageOverview ------------------------------------------------------------------


async def overview(
    session: AsyncSession, tenant: TenantAccess, data: AiUsageOverviewInput
) -> AiUsageOverview:
    tenant_id = tenant.tenant_id
    period = await analytics.period(session, tenant_id, data)
    admin = is_admin(tenant)
    by_kind = await _period_tally(session, tenant_id, (period.start, period.end), ("kind",))
    now = values_of(_total(by_kind.values()), admin)
    before: UsageValues | None = None
    if period.previous is not None:
        earlier = await _period_tally(session, tenant_id, period.previous, ())
        before = values_of(_total(earlier.values()), admin)
    compared = before is not None

    def metric(name: UsageMetric) -> Any:
        previous = getattr(before, name) if before is not None else None
        return analytics.metric(getattr(now, name), previous, compared)

    kinds = []
    for kind in credits.KINDS:
        found = by_kind.get((kind,), credit_usage.Tally())
        kinds.append(
            KindUsage(
                kind=kind,
                credits=found.credits,
                total_tokens=found.input_tokens + found.output_tokens,
            )
        )
    balance = await credits.balance(session, tenant_id)
    return AiUsageOverview(
        date_from=period.dates.first,
        date_to=period.dates.last,
        metrics=UsageMetrics(
            input_tokens=metric("input_tokens"),
            output_tokens=metric("output_tokens"),
            total_tokens=metric("total_tokens"),
            requests=metric("requests"),
            credits=metric("credits"),
            cost_usd=metric("cost_usd"),
        ),
        by_kind=kinds,
        credits_balance=balance.available,
        data_through=period.data_through,
        price_table_version=prices.VERSION,
    )


# --- analytics.aiUsageTimeseries ----------------------------------------------------------------


def _folded(
    groups: dict[credit_usage.GroupKey, credit_usage.Tally],
) -> list[tuple[credit_usage.GroupKey | None, credit_usage.Tally]]:
    """The groups, most credits first (then by key), the 50th on folded into one (key None)."""
    ordered = sorted(groups.items(), key=lambda item: (-item[1].credits, str(item[0])))
    kept: list[tuple[credit_usage.GroupKey | None, credit_usage.Tally]] = list(ordered[:MAX_GROUPS])
    if len(ordered) > MAX_GROUPS:
        kept.append((None, _total(found for _, found in ordered[MAX_GROUPS:])))
    return kept


async def timeseries(
    session: AsyncSession, tenant: TenantAccess, data: AiUsageSeriesInput
) -> AiUsageSeries:
    """billing.getUsage's buckets (the same tally), in the organization's zone, grouped by up to
    two dimensions."""
    period = await analytics.period(session, tenant.tenant_id, data)
    admin = is_admin(tenant)
    dimensions = tuple(data.dimensions)
    spans = period.spans()
    tallied = await credit_usage.tally(
        session,
        tenant.tenant_id,
        start=period.start,
        end=period.end,
        spans=spans,
        group_by=dimensions,
        kind=data.kind,
        model=data.model,
    )
    buckets = []
    for span, groups in zip(spans, tallied, strict=True):
        if not dimensions and not groups:
            groups = {(): credit_usage.Tally()}  # ungrouped: a zero, since the ledger was there
        results = []
        for key, found in _folded(groups):
            values = values_of(found, admin)
            fields = {
                _RESULT_FIELDS[dimension]: OTHER if key is None else _text(key[index])
                for index, dimension in enumerate(dimensions)
            }
            results.append(
                SeriesResult(
                    **fields,
                    values={name: getattr(values, name) for name in data.metric_list},
                )
            )
        buckets.append(SeriesBucket(start=span.start, end=span.end, results=results))
    return AiUsageSeries(
        granularity=period.granularity,
        date_from=period.dates.first,
        date_to=period.dates.last,
        data_through=period.data_through,
        price_table_version=prices.VERSION,
        data=buckets,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# --- analytics.aiUsageBreakdown -----------------------------------------------------------------


def _group(dimension: Dimension, value: Any) -> Group:
    """The row's group, labelled by its key (a job's, workflow's or member's name comes later:
    `_named`, for the page shown only)."""
    if value is None:
        return Group(key=None, label=_NONE_LABELS[dimension])
    key = str(value)
    label = _KIND_LABELS.get(key, key) if dimension == "kind" else key
    return Group(key=key, label=label)


_GONE_LABELS: dict[Dimension, str] = {
    "workflow": "Deleted workflow",
    "job": "Deleted job",
    "user": "Unknown member",
}


async def _named(
    session: AsyncSession, tenant_id: uuid.UUID, dimension: Dimension, rows: list[BreakdownRow]
) -> None:
    """Label the page's jobs, workflows and members by their names (one query for the page)."""
    if dimension not in _GONE_LABELS:
        return
    ids = {uuid.UUID(row.group.key) for row in rows if row.group.key is not None}
    if dimension == "job":
        jobs = await job_analytics.with_ids(session, tenant_id, list(ids))
        named = {job.id: job.name for job in jobs}
    elif dimension == "workflow":
        named = await workflows.names(session, tenant_id, ids)
    else:
        named = await tenants.member_names(session, tenant_id, ids)
    for row in rows:
        if row.group.key is not None:
            row.group.label = named.get(uuid.UUID(row.group.key), _GONE_LABELS[dimension])


async def breakdown(
    session: AsyncSession, tenant: TenantAccess, data: AiUsageBreakdownInput
) -> AiUsageBreakdown:
    admin = is_admin(tenant)
    if data.sort_by == "cost_usd" and not admin:
        raise CostForAdmins("Sorting by cost_usd is for admins: the cost is theirs to see.")
    period = await analytics.period(session, tenant.tenant_id, data)
    groups = await _period_tally(
        session, tenant.tenant_id, (period.start, period.end), (data.group_by,)
    )
    rows = [
        BreakdownRow(group=_group(data.group_by, key[0]), values=values_of(found, admin))
        for key, found in groups.items()
    ]
    descending = data.sort_order == "desc"
    # The key breaks ties, in the same direction, so a page is always the same rows.
    rows.sort(
        key=lambda row: (getattr(row.values, data.sort_by) or 0, row.group.key or ""),
        reverse=descending,
    )
    start = offset_of(data.page, data.limit)
    page = rows[start : start + data.limit]
    await _named(session, tenant.tenant_id, data.group_by, page)
    return AiUsageBreakdown(
        data=page,
        total=len(rows),
        page=data.page,
        limit=data.limit,
        price_table_version=prices.VERSION,
    )


# --- analytics.aiUsageEvents --------------------------------------------------------------------


def event_of(row: dict[str, Any], admin: bool) -> UsageEvent:
    """A commit (credits/usage.py's row) as a line item; `admin`: priced."""
    tokens = [int(row["input_tokens"] or 0), int(row["output_tokens"] or 0)]
    is_user = row["actor_type"] == "user"
    return UsageEvent(
        id=row["id"],
        at=row["created_at"],
        kind=row["kind"],
        model=row["model"],
        operation_id=None,
        workflow_id=row["workflow_id"],
        workflow_run_id=row["workflow_run_id"],
        step_key=None,
        job_instance_id=row["job_instance_id"],
        user_id=row["actor_id"] if is_user else None,
        resource_type=row["resource_type"],
        resource_id=row["resource_id"],
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        credits=int(row["credits"] or 0),
        cost_usd=prices.cost({row["model"]: tokens}) if admin else None,
        reservation_id=row["reservation_id"],
    )


async def events(
    session: AsyncSession, tenant: TenantAccess, data: AiUsageEventsInput
) -> AiUsageEvents:
    period = await analytics.period(session, tenant.tenant_id, data)
    rows, total = await credit_usage.commits_page(
        session,
        tenant.tenant_id,
        period.start,
        period.end,
        filters={
            "kind": data.kind,
            "model": data.model,
            "workflow_run_id": data.workflow_run_id,
            "job_instance_id": data.job_instance_id,
        },
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    admin = is_admin(tenant)
    return AiUsageEvents(
        data=[event_of(row, admin) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
        price_table_version=prices.VERSION,
    )


async def event_rows(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    batch: int = 5000,
    priced: bool = True,
) -> AsyncIterator[dict[str, Any]]:
    """The tenant's line items committed in [start, end), OLDEST first, one dict each
    (aiUsageEvents' fields, JSON-ready; `priced` False: cost_usd null), read by keyset pages of
    `batch` so that no more than a batch is held at once."""
    after: tuple[datetime, uuid.UUID] | None = None
    while True:
        rows = await credit_usage.commits_after(session, tenant_id, start, end, after, batch)
        if not rows:
            return
        for row in rows:
            yield event_of(row, priced).model_dump(mode="json")
        after = (rows[-1]["created_at"], rows[-1]["id"])
