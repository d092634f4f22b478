"""Every query on analytics exports, the tenant first (but for the reconciler's and the expiry
sweep's, which look across tenants)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics.models import ACTIVE_STATUSES, Export
from contentplatform.kit.db import Owned, cross_tenant, owned_by, page_of

get = Owned(Export)


async def by_idempotency_key(
    session: AsyncSession, tenant_id: uuid.UUID, key: str
) -> Export | None:
    return await owned_by(session, Export, tenant_id, idempotency_key=key)


async def active_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).where(
        Export.tenant_id == tenant_id, Export.status.in_(ACTIVE_STATUSES)
    )
    return int(await session.scalar(statement) or 0)


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    status: str | None,
    created_by: str | None,
    now: datetime,
    limit: int,
    offset: int,
) -> tuple[list[Export], int]:
    """Newest first. A succeeded export whose file is past its expiry counts as expired (the
    sweep may not have come yet)."""
    statement = select(Export).where(Export.tenant_id == tenant_id)
    if created_by is not None:
        statement = statement.where(Export.created_by == created_by)
    if status == "succeeded":
        statement = statement.where(Export.status == "succeeded", Export.file_expires_at > now)
    elif status == "expired":
        statement = statement.where(
            or_(
                Export.status == "expired",
                and_(Export.status == "succeeded", Export.file_expires_at <= now),
            )
        )
    elif status is not None:
        statement = statement.where(Export.status == status)
    return await page_of(
        session, statement, Export.created_at.desc(), Export.id, limit=limit, offset=offset
    )


@cross_tenant("the reconciler's sweep of every tenant's unfinished exports")
async def unfinished(session: AsyncSession) -> list[Export]:
    statement = select(Export).where(Export.status.in_(ACTIVE_STATUSES))
    return list((await session.execute(statement)).scalars())


@cross_tenant("the expiry sweep of every tenant's files past their retention")
async def due_to_expire(session: AsyncSession, now: datetime, limit: int) -> list[Export]:
    statement = (
        select(Export)
        .where(Export.status == "succeeded", Export.file_expires_at <= now)
        .order_by(Export.file_expires_at)
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())
