"""What credits were used: this month's debits (billing.getQuota), and the debits of a window in
time buckets, grouped (`tally`: one aggregate query, for billing.getUsage in UTC and for
analytics.aiUsage* in the organization's zone); and the operators' platform-wide figures
(admin.*). Reads only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits import buckets, repository, usage_repository
from contentplatform.credits.models import EntryType
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


# --- debits in buckets, grouped (billing.getUsage, analytics.aiUsage*) ----------------------------

Dimension = Literal["kind", "model", "workflow", "job", "user"]


@dataclass
class Tally:
    """What one group's debits in one bucket add up to. `operations` counts commits (a commit
    drawing on several buckets writes several rows; it has one model, kind, workflow, job and
    member, so groups' counts add up); `tokens_by_model` splits the tokens by the model that
    used them, for a price per model."""

    credits: int = 0
    operations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_by_model: dict[str | None, list[int]] = field(default_factory=dict)

    def add(self, row: Any) -> None:
        """Count a row of usage_repository.debit_totals (one model's debits)."""
        tokens = {row.model: [row.input_tokens, row.output_tokens]}
        self.merge(
            Tally(
                credits=row.credits,
                operations=row.operations,
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                tokens_by_model=tokens if row.input_tokens or row.output_tokens else {},
            )
        )

    def merge(self, other: Tally) -> None:
        self.credits += other.credits
        self.operations += other.operations
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        for model, (input_tokens, output_tokens) in other.tokens_by_model.items():
            tokens = self.tokens_by_model.setdefault(model, [0, 0])
            tokens[0] += input_tokens
            tokens[1] += output_tokens


GroupKey = tuple[Any, ...]


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def _group_value(value: Any, dimension: Dimension) -> Any:
    """A debit's value under a dimension (usage_repository.DIMENSIONS), the job's or member's
    id as a UUID (None: not one, or not recorded)."""
    return _uuid_or_none(value) if dimension in ("job", "user") else value


async def tally(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    start: datetime,
    end: datetime,
    spans: Sequence[series.Span],
    group_by: Sequence[Dimension] = (),
    kind: str | None = None,
    model: str | None = None,
) -> list[dict[GroupKey, Tally]]:
    """The tenant's committed debits written in [start, end), added up in SQL, each in the span
    (ascending, contiguous) that holds it and under its group (a tuple of its values under
    `group_by`, () for none): a dict of groups per span, in the spans' order."""
    within = [(max(span.start, start), min(span.end, end)) for span in spans]
    filters = {"kind": kind, "model": model}
    rows = await usage_repository.debit_totals(session, tenant_id, within, group_by, filters)
    found: list[dict[GroupKey, Tally]] = [{} for _ in spans]
    for row in rows:
        # Ids that read as no UUID fall together under None, hence several rows to one key.
        key = tuple(_group_value(row[1 + n], d) for n, d in enumerate(group_by))
        found[row.span].setdefault(key, Tally()).add(row)
    return found


# --- usage (billing.getUsage) -------------------------------------------------------------------

BucketWidth = Literal["1h", "1d", "1mo"]
GroupBy = Literal["kind", "user", "job"]


# billing.getUsage's widths as the time-series kit's spans (UTC).
_GRANULARITY: dict[BucketWidth, series.Granularity] = {"1h": "hour", "1d": "day", "1mo": "month"}


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
    spans = series.spans(start, end, _GRANULARITY[bucket_width])
    tallied = await tally(
        session,
        tenant_id,
        start=start,
        end=end,
        spans=spans,
        group_by=(group_by,) if group_by else (),
        kind=kind,
    )
    buckets: list[UsageBucket] = []
    for span, groups in zip(spans, tallied, strict=True):
        results = [
            UsageResult(
                kind=group[0] if group_by == "kind" else None,
                user_id=group[0] if group_by == "user" else None,
                job_id=group[0] if group_by == "job" else None,
                credits=found.credits,
                operations=found.operations,
                input_tokens=found.input_tokens,
                output_tokens=found.output_tokens,
            )
            for group, found in sorted(
                groups.items(), key=lambda item: str(item[0][0] if item[0] else None)
            )
        ]
        buckets.append(UsageBucket(start_time=span.start, end_time=span.end, results=results))
    return Usage(data=buckets, total=len(buckets))


# --- commits, one line each (analytics.aiUsageEvents and its export) ----------------------------


async def commits_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    filters: dict[str, Any],
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the tenant's commits in [start, end), newest first (see the repository)."""
    return await usage_repository.commits_page(
        session, tenant_id, start, end, filters=filters, limit=limit, offset=offset
    )


async def commits_after(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The tenant's next commits in [start, end), oldest first, after `after` (see the
    repository)."""
    return await usage_repository.commits_after(session, tenant_id, start, end, after, limit)


# --- the operators' views (admin.listTenants, getTenant, usageOverview) -------------------------

PlatformGroup = usage_repository.PlatformGroup


def debited_since_column(
    tenant_id: ColumnElement[uuid.UUID], since: datetime
) -> ColumnElement[Any]:
    """Credits debited since `since` by the tenant whose id is the enclosing query's
    `tenant_id`, as SQL (one statement over many tenants)."""
    return usage_repository.debited_since_column(tenant_id, since)


async def by_kind_since(
    session: AsyncSession, tenant_id: uuid.UUID, since: datetime
) -> list[tuple[str, int, int]]:
    """The tenant's debits since `since` by kind: (kind, credits, operations), by kind's name
    (`other`: of no kind)."""
    return await usage_repository.debits_by_kind(session, tenant_id, since)


async def platform_totals(
    session: AsyncSession, spans: Sequence[tuple[datetime, datetime]], group_by: PlatformGroup
) -> list[tuple[Any, ...]]:
    """Every tenant's debits added up per span ([start, end) pairs), per group (`tenant`: its id
    as the database spells it as text; `kind`; or what a function makes of the debit's tenant
    id, as SQL) and per model, in one statement: (span, group, model, credits, operations,
    input_tokens, output_tokens)."""
    return await usage_repository.platform_totals(session, spans, group_by)


async def active_tenants(session: AsyncSession, start: datetime, end: datetime) -> int:
    """How many tenants consumed anything in [start, end)."""
    return await usage_repository.active_tenants(session, start, end)
