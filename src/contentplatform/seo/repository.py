"""Every query on the SEO profile and competitors, the tenant first."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, insert_ignoring_conflicts, lock_rows, owned_by
from contentplatform.seo.models import SeoCompetitor, SeoConnection, SeoProperty, SeoSettings
from contentplatform.seo.schemas import DEFAULT_DEVICES

SEARCH_CONSOLE = "google_search_console"

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
    """The site URL of the Search Console property the tenant's connection has selected."""
    statement = (
        select(SeoProperty.site_url)
        .join(SeoConnection, SeoConnection.property_id == SeoProperty.id)
        .where(
            SeoConnection.tenant_id == tenant_id,
            SeoConnection.provider == SEARCH_CONSOLE,
            SeoProperty.tenant_id == tenant_id,
        )
    )
    return (await session.execute(statement)).scalar_one_or_none()


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
