"""What credits were used: this month's debits (billing.getQuota) and the debits of a window in
time buckets (billing.getUsage). Reads only."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits import buckets, repository
from contentplatform.credits.models import ActorType, EntryType
from contentplatform.credits.schemas import Usage, UsageBucket, UsageResult
from contentplatform.kit import series
from contentplatform.kit.db import utcnow


@dataclass(frozen=True)
class MonthUsage:
    """Credits debited in the current calendar month (UTC), [start, end)."""

    start: datetime
    end: datetime
    used: int


async def month_usage(
    session: AsyncSession, tenant_id: uuid.UUID, *, now: datetime | None = None
) -> MonthUsage:
    """This calendar month's debits, for billing.getQuota's `credits` item. Reads only."""
    start, end = buckets.month_bounds(buckets.period_of(now or utcnow()))
    used = -await repository.ledger_sum(session, tenant_id, [EntryType.debit], start, end)
    return MonthUsage(start=start, end=end, used=used)


# --- usage (billing.getUsage) -------------------------------------------------------------------

BucketWidth = Literal["1h", "1d", "1mo"]
GroupBy = Literal["kind", "user", "job"]


# billing.getUsage's widths as the time-series kit's spans (UTC).
_GRANULARITY: dict[BucketWidth, series.Granularity] = {"1h": "hour", "1d": "day", "1mo": "month"}


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


async def usage(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    start: datetime,
    end: datetime,
    bucket_width: BucketWidth,
    group_by: GroupBy | None,
    kind: str | None,
) -> Usage:
    """Committed debits in [start, end) in time buckets aligned to UTC hours, days or months
    (every bucket of the window, empty ones too), one result per group. `operations` counts
    commits (a commit spanning buckets is one); tokens are the model tokens the metered
    operations recorded on their debits (0 for ingests and client-committed holds)."""
    rows = await repository.debits(session, tenant_id, start, end, kind)
    granularity = _GRANULARITY[bucket_width]
    credits: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    operations: defaultdict[tuple[datetime, Any], set[uuid.UUID]] = defaultdict(set)
    input_tokens: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    output_tokens: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    for row in rows:
        if group_by == "kind":
            group: Any = row.kind
        elif group_by == "user":
            is_user = row.actor_type == ActorType.user.value
            group = _uuid_or_none(row.actor_id) if is_user else None
        elif group_by == "job":
            group = _uuid_or_none(row.resource_id) if row.resource_type == "job" else None
        else:
            group = None
        slot = (series.floor(row.created_at, granularity), group)
        credits[slot] -= row.amount
        operations[slot].add(row.reservation_id or row.id)
        input_tokens[slot] += row.input_tokens or 0
        output_tokens[slot] += row.output_tokens or 0
    buckets: list[UsageBucket] = []
    for span in series.spans(start, end, granularity):
        results = [
            UsageResult(
                kind=group if group_by == "kind" else None,
                user_id=group if group_by == "user" else None,
                job_id=group if group_by == "job" else None,
                credits=amount,
                operations=len(operations[slot_start, group]),
                input_tokens=input_tokens[slot_start, group],
                output_tokens=output_tokens[slot_start, group],
            )
            for (slot_start, group), amount in sorted(
                credits.items(), key=lambda item: str(item[0][1])
            )
            if slot_start == span.start
        ]
        buckets.append(UsageBucket(start_time=span.start, end_time=span.end, results=results))
    return Usage(data=buckets, total=len(buckets))
