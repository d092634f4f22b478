"""Every query of watches and notifications: the tenant first, then the user (their identity
provider's subject). The retention's delete alone spans tenants."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant, insert_ignoring_conflicts, page_of, plain
from contentplatform.notifications.models import Notification, Watch

TENANT = "tenant"

# --- watches ----------------------------------------------------------------------------------


def _own(tenant_id: uuid.UUID, subject: str) -> list[ColumnElement[bool]]:
    return [Watch.tenant_id == tenant_id, Watch.subject == subject]


async def watch(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    resource_type: str,
    resource_id: uuid.UUID,
) -> Watch | None:
    """The user's watch of the resource, muted or not."""
    result = await session.execute(
        select(Watch)
        .where(
            *_own(tenant_id, subject),
            Watch.resource_type == resource_type,
            Watch.resource_id == resource_id,
        )
        .execution_options(populate_existing=True)
    )
    return result.scalar_one_or_none()


async def watch_by_id(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, watch_id: uuid.UUID
) -> Watch | None:
    """The user's live (not muted) watch of that id."""
    result = await session.execute(
        select(Watch).where(
            *_own(tenant_id, subject), Watch.id == watch_id, Watch.muted_at.is_(None)
        )
    )
    return result.scalar_one_or_none()


async def live_watches(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    *,
    resource_type: str | None,
    resource_id: uuid.UUID | None,
) -> list[Watch]:
    """The user's watches but a muted tenant watch: the tenant watch first, then oldest first."""
    criteria = [*_own(tenant_id, subject), Watch.muted_at.is_(None)]
    if resource_type is not None:
        criteria.append(Watch.resource_type == resource_type)
    if resource_id is not None:
        criteria += [Watch.resource_type != TENANT, Watch.resource_id == resource_id]
    result = await session.execute(
        select(Watch)
        .where(*criteria)
        .order_by(case((Watch.resource_type == TENANT, 0), else_=1), Watch.created_at, Watch.id)
    )
    return list(result.scalars())


async def count_resource_watches(session: AsyncSession, tenant_id: uuid.UUID, subject: str) -> int:
    """How many resources the user watches (the tenant watch aside)."""
    result = await session.scalar(
        select(func.count())
        .select_from(Watch)
        .where(*_own(tenant_id, subject), Watch.resource_type != TENANT)
    )
    return int(result or 0)


@cross_tenant("the row carries its tenant")
async def add_watch(session: AsyncSession, **values: Any) -> None:
    """Insert a watch unless the user already has one of that resource (muted or not)."""
    await session.execute(insert_ignoring_conflicts(session, Watch, **values))


@cross_tenant("the watch given carries its tenant")
async def delete_watch(session: AsyncSession, found: Watch) -> None:
    await session.delete(found)


async def watches_of(
    session: AsyncSession, tenant_id: uuid.UUID, resource_ids: Collection[uuid.UUID]
) -> list[Watch]:
    """The tenant's tenant watches (every member's) and its watches on these resources."""
    criteria = Watch.resource_type == TENANT
    if resource_ids:
        criteria = criteria | (
            (Watch.resource_type != TENANT) & Watch.resource_id.in_(list(resource_ids))
        )
    result = await session.execute(select(Watch).where(Watch.tenant_id == tenant_id, criteria))
    return list(result.scalars())


# --- notifications ----------------------------------------------------------------------------


def _mine(tenant_id: uuid.UUID, subject: str, since: datetime) -> list[ColumnElement[bool]]:
    return [
        Notification.tenant_id == tenant_id,
        Notification.subject == subject,
        Notification.created_at >= since,
    ]


# Rows per INSERT: far within every database's limit of bound values (14 a row).
INSERT_CHUNK = 500


@cross_tenant("the rows carry their tenants")
async def add_notifications(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert them all, leaving out any (event, user) already told."""
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = list(rows[start : start + INSERT_CHUNK])
        await session.execute(insert(Notification).values(chunk).on_conflict_do_nothing())


async def notifications_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    *,
    since: datetime,
    unread_only: bool,
    category: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    """Newest first."""
    criteria = _mine(tenant_id, subject, since)
    if unread_only:
        criteria.append(Notification.read_at.is_(None))
    if category is not None:
        criteria.append(Notification.category == category)
    return await page_of(
        session,
        plain(select(Notification).where(*criteria)),
        Notification.created_at.desc(),
        Notification.id.desc(),
        limit=limit,
        offset=offset,
    )


async def unread_count(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, since: datetime
) -> int:
    result = await session.scalar(
        select(func.count())
        .select_from(Notification)
        .where(*_mine(tenant_id, subject, since), Notification.read_at.is_(None))
    )
    return int(result or 0)


async def mark_read(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    at: datetime,
    *,
    ids: Collection[uuid.UUID] | None = None,
    before: datetime | None = None,
) -> int:
    """Mark the user's unread notifications read (those of `ids`, those that happened at or
    before `before`, or all); how many changed. Others' ids match nothing."""
    criteria = [
        Notification.tenant_id == tenant_id,
        Notification.subject == subject,
        Notification.read_at.is_(None),
    ]
    if ids is not None:
        criteria.append(Notification.id.in_(list(ids)))
    if before is not None:
        criteria.append(Notification.created_at <= before)
    result = await session.execute(
        update(Notification)
        .where(*criteria)
        .values(read_at=at)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


@cross_tenant("retention, over every tenant's notifications")
async def forget_older_than(session: AsyncSession, moment: datetime) -> int:
    """Delete every tenant's notifications that happened before `moment`. Looked for first with
    a read of the index: on SQLite a delete takes the one write turn even when nothing goes."""
    old = Notification.created_at < moment
    if await session.scalar(select(Notification.id).where(old).limit(1)) is None:
        return 0
    result = await session.execute(delete(Notification).where(old))
    return int(getattr(result, "rowcount", 0) or 0)


async def about(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    subject: str,
    types: Collection[str],
    resource_ids: Collection[uuid.UUID],
    since: datetime,
) -> list[Notification]:
    """The subject's notifications of these event types about these resources, oldest first."""
    if not types or not resource_ids:
        return []
    result = await session.execute(
        select(Notification)
        .where(
            *_mine(tenant_id, subject, since),
            Notification.type.in_(types),
            Notification.resource_id.in_(resource_ids),
        )
        .order_by(Notification.created_at, Notification.id)
    )
    return list(result.scalars())
