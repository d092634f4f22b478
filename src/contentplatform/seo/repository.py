"""Every query on the SEO profile and competitors, the tenant first (but for the scheduler's,
which looks across organizations for weekly audits due)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from contentplatform.kit.db import (
    Owned,
    cross_tenant,
    insert_ignoring_conflicts,
    lock_rows,
    owned_by,
)
from contentplatform.seo.connections import offline
from contentplatform.seo.models import SeoCompetitor, SeoSettings
from contentplatform.seo.schemas import DEFAULT_DEVICES

competitor = Owned(SeoCompetitor)


async def settings(
    session: AsyncSession, tenant_id: uuid.UUID, *, for_update: bool = False
) -> SeoSettings:
    """The tenant's settings row, made with defaults when it has none. Two first reads at once
    both insert ignoring the other's conflict, then both read the one row."""
    criteria = (SeoSettings.tenant_id == tenant_id,)
    found = None
    if not for_update:
        found = (await session.execute(select(SeoSettings).where(*criteria))).scalar_one_or_none()
    if found is not None:
        return found
    await session.execute(
        insert_ignoring_conflicts(
            session,
            SeoSettings,
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            brand_terms=[],
            devices=list(DEFAULT_DEVICES),
            blocks={},
        )
    )
    statement = select(SeoSettings).where(*criteria)
    if for_update:
        await lock_rows(session, SeoSettings, *criteria)
        statement = statement.with_for_update().execution_options(populate_existing=True)
    return (await session.execute(statement)).scalar_one()


async def stored_settings(session: AsyncSession, tenant_id: uuid.UUID) -> SeoSettings | None:
    """The tenant's settings row as it is, None before the first read made it (for the reads of
    other parts, which must not write)."""
    return await owned_by(session, SeoSettings, tenant_id)


async def selected_property(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    """The site URL of the Search Console property in use: chosen on Google's connection, else
    on the offline one's (connections/offline.py)."""
    chosen = await offline.property_in_use(session, tenant_id)
    return chosen.site_url if chosen is not None else None


async def competitors(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoCompetitor]:
    """Oldest first (at most 20: no page)."""
    statement = (
        select(SeoCompetitor)
        .where(SeoCompetitor.tenant_id == tenant_id)
        .order_by(SeoCompetitor.created_at, SeoCompetitor.id)
    )
    return list((await session.execute(statement)).scalars())


async def competitor_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    statement = select(func.count()).where(SeoCompetitor.tenant_id == tenant_id)
    return int(await session.scalar(statement) or 0)


async def competitor_by_domain(
    session: AsyncSession, tenant_id: uuid.UUID, domain: str
) -> SeoCompetitor | None:
    return await owned_by(session, SeoCompetitor, tenant_id, domain=domain)


@cross_tenant("the scheduler's ticks: every organization whose clock of some work is due")
async def due_by(
    session: AsyncSession, clock: InstrumentedAttribute[datetime | None], now: datetime, limit: int
) -> list[uuid.UUID]:
    """The organizations whose `clock` (a column of SeoSettings with a partial index of its
    set values: next_audit_at, next_rank_check_at, next_ai_visibility_at, next_plan_at) is due
    by `now`, the
    longest due first."""
    statement = (
        select(SeoSettings.tenant_id)
        .where(clock.is_not(None), clock <= now)
        .order_by(clock)
        .limit(limit)
    )
    return list((await session.scalars(statement)).all())
