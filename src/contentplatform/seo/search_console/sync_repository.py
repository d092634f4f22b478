"""The queries of the Search Console sync (sync.py, durable.py): which days a run may skip, the
connections its daily schedule is due for, and the runs its reconcile source watches. The
day's facts themselves are written by repository.replace_day.

A tenant reaches Search Console through Google's connection or, in the local environment, the
offline provider's (connections/offline.py): the daily schedule is kept on one of the two rows,
the one in use, and a sync is noted on the row of the provider that ran it."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant
from contentplatform.seo.connections import offline
from contentplatform.seo.models import SeoConnection, SeoProperty, SeoSyncedDay, SeoSyncRun

PROVIDER = "google_search_console"
# The providers a Search Console sync may run through: Google's, and the offline one's made-up
# data.
PROVIDERS = (PROVIDER, offline.OFFLINE)
KIND = "search_console"


async def synced_days(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    search_type: str,
    first: date,
    last: date,
) -> dict[date, tuple[bool, uuid.UUID | None]]:
    """The days of the window already stored: day -> (is_final, the run that stored it)."""
    statement = select(SeoSyncedDay.day, SeoSyncedDay.is_final, SeoSyncedDay.run_id).where(
        SeoSyncedDay.tenant_id == tenant_id,
        SeoSyncedDay.property_id == property_id,
        SeoSyncedDay.search_type == search_type,
        SeoSyncedDay.day >= first,
        SeoSyncedDay.day <= last,
    )
    return {day: (is_final, run_id) for day, is_final, run_id in await session.execute(statement)}


async def final_through(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID
) -> date | None:
    """The last day stored final for the property (None before its first sync)."""
    statement = select(SeoProperty.final_through).where(
        SeoProperty.tenant_id == tenant_id, SeoProperty.id == property_id
    )
    found: date | None = (await session.execute(statement)).scalar_one_or_none()
    return found


async def connections(
    session: AsyncSession, tenant_id: uuid.UUID, *, for_update: bool = False
) -> list[SeoConnection]:
    """The tenant's Search Console connection rows (Google's, the offline one's), by provider:
    every caller locks them in the same order."""
    statement = (
        select(SeoConnection)
        .where(SeoConnection.tenant_id == tenant_id, SeoConnection.provider.in_(PROVIDERS))
        .order_by(SeoConnection.provider)
    )
    if for_update:
        statement = statement.with_for_update()
    return list((await session.execute(statement)).scalars())


async def note_sync(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    provider: str,
    *,
    at: datetime,
    error: dict[str, Any] | None,
) -> None:
    """The last sync and its error (None when it succeeded), as listConnections shows them, on
    the connection of `provider`: the one the run went through (its own provider)."""
    await session.execute(
        update(SeoConnection)
        .where(SeoConnection.tenant_id == tenant_id, SeoConnection.provider == provider)
        .values(last_sync_at=at, last_error=error)
    )


async def schedule_next(
    session: AsyncSession, tenant_id: uuid.UUID, connection_id: uuid.UUID, next_sync_at: datetime
) -> None:
    """The daily sync's next turn on the connection `connection_id`, and none on the tenant's
    other Search Console connection: a tenant never has two daily syncs."""
    await session.execute(
        update(SeoConnection)
        .where(
            SeoConnection.tenant_id == tenant_id,
            SeoConnection.provider.in_(PROVIDERS),
            SeoConnection.id != connection_id,
        )
        .values(next_sync_at=None)
    )
    await session.execute(
        update(SeoConnection)
        .where(SeoConnection.tenant_id == tenant_id, SeoConnection.id == connection_id)
        .values(next_sync_at=next_sync_at)
    )


@cross_tenant("the scheduler's tick: every tenant's Search Console connection due by now")
async def due_connections(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant, connection) of the connections whose daily sync is due, the longest due first
    (the partial index on next_sync_at reads only them)."""
    statement = (
        select(SeoConnection.tenant_id, SeoConnection.id)
        .where(
            SeoConnection.next_sync_at.is_not(None),
            SeoConnection.next_sync_at <= now,
            SeoConnection.provider.in_(PROVIDERS),
        )
        .order_by(SeoConnection.next_sync_at)
        .limit(limit)
    )
    return [
        (tenant_id, connection_id) for tenant_id, connection_id in await session.execute(statement)
    ]


@cross_tenant("the reconcile source: every tenant's Search Console runs not yet ended")
async def unfinished_runs(session: AsyncSession) -> list[SeoSyncRun]:
    """Queued and running Search Console runs of every tenant."""
    statement = select(SeoSyncRun).where(
        SeoSyncRun.status.in_(("queued", "running")), SeoSyncRun.kind == KIND
    )
    return list((await session.execute(statement)).scalars())


async def run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, *, for_update: bool = False
) -> SeoSyncRun | None:
    statement = select(SeoSyncRun).where(SeoSyncRun.tenant_id == tenant_id, SeoSyncRun.id == run_id)
    if for_update:
        statement = statement.with_for_update()
    found: SeoSyncRun | None = (await session.execute(statement)).scalar_one_or_none()
    return found
