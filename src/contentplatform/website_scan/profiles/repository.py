"""The queries of site profiles; the tenant always comes first (the reconciler's cross-tenant
read says so in its name)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, cross_tenant
from contentplatform.website_scan.models import CrawlPage, CrawlSnapshot, SiteProfile

get_profile = Owned(SiteProfile)


async def profile_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID, *, for_update: bool = False
) -> SiteProfile | None:
    """The config's site profile, if it was ever refreshed."""
    statement = select(SiteProfile).where(
        SiteProfile.tenant_id == tenant_id, SiteProfile.config_id == config_id
    )
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def latest_complete_snapshot(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> CrawlSnapshot | None:
    """The config's newest finished, non-partial snapshot."""
    statement = (
        select(CrawlSnapshot)
        .where(
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlSnapshot.config_id == config_id,
            CrawlSnapshot.finished_at.is_not(None),
            CrawlSnapshot.partial.is_(False),
        )
        .order_by(CrawlSnapshot.finished_at.desc(), CrawlSnapshot.created_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def sample_pages(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID, limit: int
) -> list[CrawlPage]:
    """The snapshot's pages a profile is read from: those that answered 2xx, nearest the start
    first, then the wordiest."""
    statement = (
        select(CrawlPage)
        .where(
            CrawlPage.tenant_id == tenant_id,
            CrawlPage.snapshot_id == snapshot_id,
            CrawlPage.error.is_(None),
            CrawlPage.status_code >= 200,
            CrawlPage.status_code < 300,
        )
        .order_by(CrawlPage.depth, CrawlPage.word_count.desc(), CrawlPage.url)
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def generating_profiles(session: AsyncSession) -> list[SiteProfile]:
    """Every tenant's profiles being generated: what the reconciler checks."""
    statement = select(SiteProfile).where(SiteProfile.status == "generating")
    return list((await session.execute(statement)).scalars())
