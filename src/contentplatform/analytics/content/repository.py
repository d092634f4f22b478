"""Content analytics' queries: the sources, and the daily page rows synced from them, summed in
the database (per span, per group) so a read's cost follows its period, not the history."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.models import AnalyticsPageDay, AnalyticsSource
from contentplatform.kit.db import cross_tenant

BATCH = 1000
FIGURES = ("views", "visitors", "sessions", "clicks", "impressions", "position_sum")


async def sources(session: AsyncSession, tenant_id: uuid.UUID) -> list[AnalyticsSource]:
    statement = (
        select(AnalyticsSource)
        .where(AnalyticsSource.tenant_id == tenant_id)
        .order_by(AnalyticsSource.created_at, AnalyticsSource.id)
    )
    return list((await session.execute(statement)).scalars().all())


async def source(
    session: AsyncSession, tenant_id: uuid.UUID, source_id: uuid.UUID, *, for_update: bool = False
) -> AnalyticsSource | None:
    statement = select(AnalyticsSource).where(
        AnalyticsSource.tenant_id == tenant_id, AnalyticsSource.id == source_id
    )
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalars().first()


async def live_source(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    provider: str,
    prop: str,
    *,
    for_update: bool = False,
) -> AnalyticsSource | None:
    statement = select(AnalyticsSource).where(
        AnalyticsSource.tenant_id == tenant_id,
        AnalyticsSource.provider == provider,
        AnalyticsSource.property == prop,
        AnalyticsSource.status != "disconnected",
    )
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalars().first()


async def add_source(session: AsyncSession, tenant_id: uuid.UUID, row: AnalyticsSource) -> None:
    assert row.tenant_id == tenant_id
    session.add(row)
    await session.flush()


@cross_tenant("the scheduler's tick over every tenant's sources whose daily sync is due")
async def due_sources(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant, source) of the sources whose daily sync is due, across organizations."""
    statement = (
        select(AnalyticsSource.tenant_id, AnalyticsSource.id)
        .where(AnalyticsSource.next_sync_at.is_not(None), AnalyticsSource.next_sync_at <= now)
        .order_by(AnalyticsSource.next_sync_at)
        .limit(limit)
    )
    return [(tenant, source_id) for tenant, source_id in (await session.execute(statement)).all()]


@cross_tenant("the reconciler's sweep of every tenant's running syncs")
async def running_syncs(session: AsyncSession) -> list[AnalyticsSource]:
    """The sources whose sync is running, across organizations (the reconciler's)."""
    statement = select(AnalyticsSource).where(AnalyticsSource.sync_status == "running")
    return list((await session.execute(statement)).scalars().all())


async def replace_days(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    source_id: uuid.UUID,
    days: Sequence[date],
    rows: Sequence[dict[str, Any]],
) -> None:
    """The source's rows of `days` replaced by `rows` (each a dict of AnalyticsPageDay's
    columns but the tenant's and the source's)."""
    if days:
        await session.execute(
            delete(AnalyticsPageDay).where(
                AnalyticsPageDay.tenant_id == tenant_id,
                AnalyticsPageDay.source_id == source_id,
                AnalyticsPageDay.day.in_(list(days)),
            )
        )
    for start in range(0, len(rows), BATCH):
        await session.execute(
            insert(AnalyticsPageDay),
            [
                {**row, "tenant_id": tenant_id, "source_id": source_id}
                for row in rows[start : start + BATCH]
            ],
        )


async def match_urls(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    source_id: uuid.UUID,
    drafts_of: dict[str, uuid.UUID],
) -> None:
    """The source's rows of these URLs not yet tied to their draft are tied to it (a draft
    published after its page's figures were stored)."""
    by_draft: dict[uuid.UUID, list[str]] = {}
    for url, draft_id in drafts_of.items():
        by_draft.setdefault(draft_id, []).append(url)
    for draft_id, urls in by_draft.items():
        await session.execute(
            update(AnalyticsPageDay)
            .where(
                AnalyticsPageDay.tenant_id == tenant_id,
                AnalyticsPageDay.source_id == source_id,
                AnalyticsPageDay.url.in_(urls),
                AnalyticsPageDay.draft_id.is_(None),
            )
            .values(draft_id=draft_id)
        )


async def purge(session: AsyncSession, tenant_id: uuid.UUID, source_id: uuid.UUID) -> None:
    await session.execute(
        delete(AnalyticsPageDay).where(
            AnalyticsPageDay.tenant_id == tenant_id, AnalyticsPageDay.source_id == source_id
        )
    )


def _sums() -> list[Any]:
    return [func.sum(getattr(AnalyticsPageDay, name)).label(name) for name in FIGURES]


def _scope(
    tenant_id: uuid.UUID,
    source_ids: Sequence[uuid.UUID],
    first: date,
    last: date,
    draft_ids: Sequence[uuid.UUID] | None,
    dimension: str,
    urls: Sequence[str] | None = None,
) -> list[ColumnElement[bool]]:
    criteria = [
        AnalyticsPageDay.tenant_id == tenant_id,
        AnalyticsPageDay.dimension == dimension,
        AnalyticsPageDay.day >= first,
        AnalyticsPageDay.day <= last,
        AnalyticsPageDay.source_id.in_(list(source_ids)),
    ]
    if draft_ids is None:
        criteria.append(AnalyticsPageDay.draft_id.is_not(None))
    else:
        criteria.append(AnalyticsPageDay.draft_id.in_(list(draft_ids)))
    if urls is not None:
        criteria.append(AnalyticsPageDay.url.in_(list(urls)))
    return criteria


async def sums_by(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    source_ids: Sequence[uuid.UUID],
    first: date,
    last: date,
    *,
    draft_ids: Sequence[uuid.UUID] | None = None,
    dimension: str = "",
    by: Sequence[str] = (),
    urls: Sequence[str] | None = None,
) -> list[tuple[Any, ...]]:
    """The sums of the figures (FIGURES' order, after the `by` keys) of our drafts' rows in
    [first, last] (of `draft_ids`, and of `urls`, when given), grouped by `by` (columns:
    source_id, draft_id, day, url, value)."""
    if not source_ids:
        return []
    keys = [getattr(AnalyticsPageDay, name) for name in by]
    statement = select(*keys, *_sums()).where(
        *_scope(tenant_id, source_ids, first, last, draft_ids, dimension, urls)
    )
    if keys:
        statement = statement.group_by(*keys)
    return [tuple(row) for row in (await session.execute(statement)).all()]


async def bare_sum(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """sum(views) of every row of the organization (the bench's bare aggregate)."""
    statement = select(func.sum(AnalyticsPageDay.views)).where(
        AnalyticsPageDay.tenant_id == tenant_id
    )
    return int((await session.execute(statement)).scalar() or 0)
