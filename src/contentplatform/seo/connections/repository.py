"""The queries of SEO connections: the tenant first, always (one marked exception: an OAuth
state is found by its hash, and its tenant then checked by the service)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant
from contentplatform.seo.models import (
    SeoConnection,
    SeoOAuthState,
    SeoPageDay,
    SeoProperty,
    SeoQueryDay,
    SeoSettings,
    SeoSiteDay,
    SeoSitemap,
    SeoSyncedDay,
    SeoSyncRun,
    SeoUrlInspection,
)


async def connections(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoConnection]:
    found = await session.scalars(select(SeoConnection).where(SeoConnection.tenant_id == tenant_id))
    return list(found)


async def connection(
    session: AsyncSession, tenant_id: uuid.UUID, provider: str, *, for_update: bool = False
) -> SeoConnection | None:
    query = select(SeoConnection).where(
        SeoConnection.tenant_id == tenant_id, SeoConnection.provider == provider
    )
    if for_update:
        query = query.with_for_update()
    found: SeoConnection | None = await session.scalar(query)
    return found


async def site_url(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    """settings.site_url: read here, as the root part owns the row (made on its first read)."""
    found: str | None = await session.scalar(
        select(SeoSettings.site_url).where(SeoSettings.tenant_id == tenant_id)
    )
    return found


async def add_state(session: AsyncSession, tenant_id: uuid.UUID, state: SeoOAuthState) -> None:
    state.tenant_id = tenant_id
    session.add(state)
    await session.flush()


@cross_tenant(
    "an OAuth state is found by the hash of its random value; the service then checks it is "
    "the caller's tenant's (another tenant's is 404)"
)
async def state_by_hash(session: AsyncSession, state_hash: str) -> SeoOAuthState | None:
    found: SeoOAuthState | None = await session.scalar(
        select(SeoOAuthState).where(SeoOAuthState.state_hash == state_hash).with_for_update()
    )
    return found


async def delete_expired_states(
    session: AsyncSession, tenant_id: uuid.UUID, before: datetime
) -> None:
    """The tenant's states that can no longer be used: each connect sweeps them."""
    await session.execute(
        delete(SeoOAuthState).where(
            SeoOAuthState.tenant_id == tenant_id, SeoOAuthState.expires_at < before
        )
    )


async def property_by_url(
    session: AsyncSession, tenant_id: uuid.UUID, site_url: str
) -> SeoProperty | None:
    found: SeoProperty | None = await session.scalar(
        select(SeoProperty).where(
            SeoProperty.tenant_id == tenant_id, SeoProperty.site_url == site_url
        )
    )
    return found


async def property_by_id(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID
) -> SeoProperty | None:
    found: SeoProperty | None = await session.scalar(
        select(SeoProperty).where(SeoProperty.tenant_id == tenant_id, SeoProperty.id == property_id)
    )
    return found


async def add_property(
    session: AsyncSession, tenant_id: uuid.UUID, site_url: str, permission_level: str
) -> SeoProperty:
    row = SeoProperty(tenant_id=tenant_id, site_url=site_url, permission_level=permission_level)
    session.add(row)
    await session.flush()
    return row


async def property_ids(session: AsyncSession, tenant_id: uuid.UUID) -> list[uuid.UUID]:
    found = await session.scalars(select(SeoProperty.id).where(SeoProperty.tenant_id == tenant_id))
    return list(found)


async def recent_runs(
    session: AsyncSession, tenant_id: uuid.UUID, provider: str, limit: int = 5
) -> list[SeoSyncRun]:
    found = await session.scalars(
        select(SeoSyncRun)
        .where(SeoSyncRun.tenant_id == tenant_id, SeoSyncRun.provider == provider)
        .order_by(SeoSyncRun.created_at.desc(), SeoSyncRun.id.desc())
        .limit(limit)
    )
    return list(found)


async def inspections_since(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, since: datetime
) -> int:
    count = await session.scalar(
        select(func.count())
        .select_from(SeoUrlInspection)
        .where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.property_id == property_id,
            SeoUrlInspection.created_at >= since,
        )
    )
    return int(count or 0)


async def purge_search_console(
    session: AsyncSession, tenant_id: uuid.UUID, property_ids: list[uuid.UUID]
) -> dict[str, int]:
    """Delete what Search Console told us about these properties: the daily facts, the synced
    days, the sitemaps it listed (robots.txt's stay: they came from the website scan) and the
    URL inspections; the properties stay, with nothing said to be stored. Counts what went."""
    if not property_ids:
        return {"search_rows": 0, "sitemaps": 0, "inspections": 0}
    rows = 0
    for table in (SeoSiteDay, SeoPageDay, SeoQueryDay):
        result = await session.execute(
            delete(table).where(table.tenant_id == tenant_id, table.property_id.in_(property_ids))
        )
        rows += int(getattr(result, "rowcount", 0) or 0)
    await session.execute(
        delete(SeoSyncedDay).where(
            SeoSyncedDay.tenant_id == tenant_id, SeoSyncedDay.property_id.in_(property_ids)
        )
    )
    sitemaps = await session.execute(
        delete(SeoSitemap).where(
            SeoSitemap.tenant_id == tenant_id,
            SeoSitemap.property_id.in_(property_ids),
            SeoSitemap.source == "search_console",
        )
    )
    inspections = await session.execute(
        delete(SeoUrlInspection).where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.property_id.in_(property_ids),
        )
    )
    await session.execute(
        update(SeoProperty)
        .where(SeoProperty.tenant_id == tenant_id, SeoProperty.id.in_(property_ids))
        .values(final_through=None, fresh_through=None, last_synced_at=None)
    )
    return {
        "search_rows": rows,
        "sitemaps": int(getattr(sitemaps, "rowcount", 0) or 0),
        "inspections": int(getattr(inspections, "rowcount", 0) or 0),
    }
