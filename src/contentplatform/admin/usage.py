"""admin.usageOverview: the platform's consumption per bucket (UTC days or months), grouped by
tenant, kind or plan, with what the model tokens cost us from the same price table as the
AI-usage analytics (analytics/ai_usage/prices.py). One grouped query for the buckets (the
debits of every tenant added up in SQL by credits, a tenant's plan read by billing's SQL in the
same statement), one count of the tenants that consumed anything."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin import schemas
from contentplatform.analytics.ai_usage import prices
from contentplatform.billing import service as billing
from contentplatform.core.runtime import Runtime
from contentplatform.credits import usage as credit_usage
from contentplatform.kit import series
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, FieldError

MAX_DAYS = 366


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(message, errors=[FieldError(path=field, message=message)])


def _group(group_by: str, now: datetime, billing_configured: bool) -> credit_usage.PlatformGroup:
    """What the debits are grouped by: their tenant, their kind, or their tenant's current
    plan's key (billing's, `free` when none applies), as SQL of the debit's tenant id."""
    if group_by == "tenant":
        return "tenant"
    if group_by == "kind":
        return "kind"

    def plan(tenant_id: ColumnElement[uuid.UUID]) -> ColumnElement[Any]:
        return billing.plan_key_column(tenant_id, now=now, billing_configured=billing_configured)

    return plan


async def usage_overview(
    session: AsyncSession, runtime: Runtime, data: schemas.UsageOverviewInput
) -> schemas.PlatformUsage:
    now = utcnow()
    start, end = data.start_date, data.end_date or now
    if start.tzinfo is None or end.tzinfo is None:
        raise _bad("startDate", "startDate and endDate carry an offset (e.g. Z).")
    if end <= start:
        raise _bad("endDate", "endDate comes after startDate.")
    if end - start > timedelta(days=MAX_DAYS):
        raise _bad("endDate", f"At most {MAX_DAYS} days from startDate to endDate.")
    spans = series.spans(start, end, "day" if data.bucket_width == "1d" else "month")
    # The first and last buckets are cut to the period asked for.
    bounds = [(max(span.start, start), min(span.end, end)) for span in spans]
    rows = await credit_usage.platform_totals(
        session, bounds, _group(data.group_by, now, runtime.settings.billing_configured)
    )
    # span -> group -> [credits, operations, input, output, {model: [input, output]}]
    found: dict[int, dict[str | None, list[int]]] = defaultdict(dict)
    tokens: dict[tuple[int, str | None], dict[str | None, list[int]]] = defaultdict(dict)
    for span, group, model, credits, operations, input_tokens, output_tokens in rows:
        # A tenant's id as text is the database's spelling (SQLite's has no dashes).
        key = None if group is None else str(group)
        if key is not None and data.group_by == "tenant":
            key = str(uuid.UUID(key))
        sums = found[span].setdefault(key, [0, 0, 0, 0])
        for n, value in enumerate((credits, operations, input_tokens, output_tokens)):
            sums[n] += int(value or 0)
        by_model = tokens[(span, key)].setdefault(model, [0, 0])
        by_model[0] += int(input_tokens or 0)
        by_model[1] += int(output_tokens or 0)
    buckets = []
    total_credits = total_operations = 0
    total_cost = 0.0
    for index, (begins, ends) in enumerate(bounds):
        results = [
            schemas.PlatformUsageResult(
                group=group,
                credits=sums[0],
                operations=sums[1],
                input_tokens=sums[2],
                output_tokens=sums[3],
                provider_cost_usd=prices.cost(tokens[(index, group)]),
            )
            for group, sums in found.get(index, {}).items()
        ]
        total_credits += sum(result.credits for result in results)
        total_operations += sum(result.operations for result in results)
        total_cost += sum(result.provider_cost_usd for result in results)
        results.sort(key=lambda result: (-result.credits, result.group or ""))
        buckets.append(
            schemas.PlatformUsageBucket(
                start_time=begins, end_time=ends, results=results[: data.limit]
            )
        )
    return schemas.PlatformUsage(
        data=buckets,
        total=len(buckets),
        totals=schemas.PlatformUsageTotals(
            credits=total_credits,
            operations=total_operations,
            provider_cost_usd=round(total_cost, 6),
            active_tenants=await credit_usage.active_tenants(session, start, end),
        ),
    )
