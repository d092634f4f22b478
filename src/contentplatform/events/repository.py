"""Every query of the outbox, tenant first (the dispatcher's claim alone spans tenants: it
fans every tenant's events out, each to that tenant's own listeners)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events.models import Event
from contentplatform.kit.db import cross_tenant, page_of, utcnow


@cross_tenant("the dispatcher's sweep of every tenant's outbox")
async def undispatched_ids(session: AsyncSession, limit: int) -> list[uuid.UUID]:
    """The oldest events not yet taken, without claiming them."""
    oldest = (
        select(Event.id)
        .where(Event.dispatched_at.is_(None))
        .order_by(Event.created_at)
        .limit(limit)
    )
    return list((await session.execute(oldest)).scalars())


@cross_tenant("the dispatcher's sweep of every tenant's outbox")
async def claim_undispatched(
    session: AsyncSession, limit: int, only: uuid.UUID | None = None
) -> list[Event]:
    """Up to `limit` events no listener has taken yet, oldest first, stamped dispatched in this
    transaction: if it rolls back they are taken again, if it commits never again. Rows another
    process is claiming are skipped (PostgreSQL); SQLite has one writer at a time anyway.

    Looked for first with a read of the partial index: on SQLite the claim is a write, and an
    idle poll must not take the one write turn from requests."""
    waiting = await session.scalar(select(Event.id).where(Event.dispatched_at.is_(None)).limit(1))
    if waiting is None:
        return []
    oldest = (
        select(Event.id)
        .where(Event.dispatched_at.is_(None), *([Event.id == only] if only else []))
        .order_by(Event.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    claimed = (
        update(Event)
        .where(Event.id.in_(oldest.scalar_subquery()))
        .values(dispatched_at=utcnow())
        .returning(Event)
        .execution_options(synchronize_session=False)
    )
    events = list((await session.execute(claimed)).scalars())
    events.sort(key=lambda event: (event.created_at, str(event.id)))
    return events


async def list_events(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    scopes: Sequence[str],
    resource_type: str | None,
    resource_id: uuid.UUID | None,
    actor_id: str | None,
    action: str | None,
    start: datetime | None,
    end: datetime | None,
    limit: int,
    offset: int,
    types: Sequence[str] | None = None,
) -> tuple[list[Event], int]:
    criteria: list[Any] = [Event.tenant_id == tenant_id, Event.scope.in_(scopes)]
    if types is not None:
        criteria.append(Event.type.in_(types))
    if resource_type is not None:
        criteria.append(Event.resource_type == resource_type)
    if resource_id is not None:
        criteria.append(Event.resource_id == resource_id)
    if actor_id is not None:
        criteria.append(Event.actor_id == actor_id)
    if action is not None:
        criteria.append(Event.type == action)
    if start is not None:
        criteria.append(Event.created_at >= start)
    if end is not None:
        criteria.append(Event.created_at < end)
    return await page_of(
        session,
        select(Event).where(*criteria),
        Event.created_at.desc(),
        Event.id.desc(),
        limit=limit,
        offset=offset,
    )


@cross_tenant("retention, over every tenant's events")
async def delete_older_than(session: AsyncSession, moment: datetime) -> int:
    result = await session.execute(
        delete(Event).where(Event.created_at < moment, Event.dispatched_at.is_not(None))
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
