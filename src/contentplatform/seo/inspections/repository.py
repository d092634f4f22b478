"""Every query on sitemaps and URL inspections, the tenant first (but for the reconciler's,
which looks across tenants for inspections still pending)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from contentplatform.kit.db import Owned, counts_by, cross_tenant, page_of
from contentplatform.seo.connections import offline
from contentplatform.seo.models import (
    SeoProperty,
    SeoSettings,
    SeoSitemap,
    SeoUrlInspection,
)

get_sitemap = Owned(SeoSitemap)
get_inspection = Owned(SeoUrlInspection)


async def selected_property(session: AsyncSession, tenant_id: uuid.UUID) -> uuid.UUID | None:
    """The Search Console property the tenant's connection has selected, if any (read here so
    that a list needs no token: reads never call Google)."""
    chosen = await offline.property_in_use(session, tenant_id)
    return chosen.id if chosen is not None else None


async def property_site_url(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID
) -> str | None:
    statement = select(SeoProperty.site_url).where(
        SeoProperty.tenant_id == tenant_id, SeoProperty.id == property_id
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def settings_language(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    statement = select(SeoSettings.language).where(SeoSettings.tenant_id == tenant_id)
    return (await session.execute(statement)).scalar_one_or_none()


# --- sitemaps ---------------------------------------------------------------------------------


async def sitemaps_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    property_id: uuid.UUID | None,
    source: str | None,
    limit: int,
    offset: int,
) -> tuple[list[SeoSitemap], int]:
    """Search Console's sitemaps of the selected property (none without one) and robots.txt's,
    by URL."""
    shown = [SeoSitemap.source == "robots_txt"]
    if property_id is not None:
        shown.append(
            and_(SeoSitemap.source == "search_console", SeoSitemap.property_id == property_id)
        )
    statement = select(SeoSitemap).where(SeoSitemap.tenant_id == tenant_id, or_(*shown))
    if source is not None:
        statement = statement.where(SeoSitemap.source == source)
    return await page_of(
        session, statement, SeoSitemap.url, SeoSitemap.source, limit=limit, offset=offset
    )


async def sitemap_by_url(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, source: str, url: str
) -> SeoSitemap | None:
    statement = select(SeoSitemap).where(
        SeoSitemap.tenant_id == tenant_id,
        SeoSitemap.property_id == property_id,
        SeoSitemap.source == source,
        SeoSitemap.url == url,
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def property_sitemaps(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, source: str
) -> list[SeoSitemap]:
    statement = select(SeoSitemap).where(
        SeoSitemap.tenant_id == tenant_id,
        SeoSitemap.property_id == property_id,
        SeoSitemap.source == source,
    )
    return list((await session.execute(statement)).scalars())


async def delete_sitemaps(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Collection[uuid.UUID]
) -> None:
    if ids:
        await session.execute(
            delete(SeoSitemap).where(SeoSitemap.tenant_id == tenant_id, SeoSitemap.id.in_(ids))
        )


async def robots_sitemaps(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoSitemap]:
    statement = select(SeoSitemap).where(
        SeoSitemap.tenant_id == tenant_id, SeoSitemap.source == "robots_txt"
    )
    return list((await session.execute(statement)).scalars())


# --- inspections ------------------------------------------------------------------------------


async def asked_since(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, since: datetime
) -> int:
    """Inspections of the property asked for since `since` (the quota's day), whatever became
    of them."""
    statement = select(func.count()).where(
        SeoUrlInspection.tenant_id == tenant_id,
        SeoUrlInspection.property_id == property_id,
        SeoUrlInspection.created_at >= since,
    )
    return int(await session.scalar(statement) or 0)


async def recent_by_url(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    urls: Collection[str],
    since: datetime,
) -> dict[str, SeoUrlInspection]:
    """The newest pending or completed inspection of each of `urls` made since `since`."""
    statement = (
        select(SeoUrlInspection)
        .where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.property_id == property_id,
            SeoUrlInspection.url.in_(list(urls)),
            SeoUrlInspection.created_at >= since,
            SeoUrlInspection.status.in_(("pending", "completed")),
        )
        .order_by(SeoUrlInspection.created_at)
    )
    found: dict[str, SeoUrlInspection] = {}
    for row in (await session.execute(statement)).scalars():
        found[row.url] = row  # the newest last
    return found


async def inspections_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    verdict: str | None,
    status: str | None,
    search: str | None,
    latest_only: bool,
    limit: int,
    offset: int,
) -> tuple[list[SeoUrlInspection], int]:
    """Newest first; with `latest_only` only each URL's newest inspection (then filtered)."""
    statement = select(SeoUrlInspection).where(SeoUrlInspection.tenant_id == tenant_id)
    if latest_only:
        newer = aliased(SeoUrlInspection)
        statement = statement.where(
            ~exists().where(
                newer.tenant_id == tenant_id,
                newer.url == SeoUrlInspection.url,
                or_(
                    newer.created_at > SeoUrlInspection.created_at,
                    and_(
                        newer.created_at == SeoUrlInspection.created_at,
                        newer.id > SeoUrlInspection.id,
                    ),
                ),
            )
        )
    if verdict is not None:
        statement = statement.where(SeoUrlInspection.verdict == verdict)
    if status is not None:
        statement = statement.where(SeoUrlInspection.status == status)
    if search is not None:
        # The same on both databases: SQLite's LIKE ignores ASCII case, PostgreSQL's does not.
        statement = statement.where(
            func.lower(SeoUrlInspection.url).contains(search.lower(), autoescape=True)
        )
    return await page_of(
        session,
        statement,
        SeoUrlInspection.created_at.desc(),
        SeoUrlInspection.id,
        limit=limit,
        offset=offset,
    )


async def previous_completed(
    session: AsyncSession, tenant_id: uuid.UUID, inspection: SeoUrlInspection
) -> SeoUrlInspection | None:
    """The newest completed inspection of the same URL made before this one."""
    statement = (
        select(SeoUrlInspection)
        .where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.url == inspection.url,
            SeoUrlInspection.status == "completed",
            SeoUrlInspection.created_at < inspection.created_at,
            SeoUrlInspection.id != inspection.id,
        )
        .order_by(SeoUrlInspection.created_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def next_pending(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> SeoUrlInspection | None:
    """The run's next inspection to make, in the order they were asked for."""
    statement = (
        select(SeoUrlInspection)
        .where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.run_id == run_id,
            SeoUrlInspection.status == "pending",
        )
        .order_by(SeoUrlInspection.created_at, SeoUrlInspection.url)
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def pending_of_run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> list[SeoUrlInspection]:
    statement = select(SeoUrlInspection).where(
        SeoUrlInspection.tenant_id == tenant_id,
        SeoUrlInspection.run_id == run_id,
        SeoUrlInspection.status == "pending",
    )
    return list((await session.execute(statement)).scalars())


async def run_counts(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> dict[str, int]:
    """How many of the run's inspections are in each status."""
    return await counts_by(
        session,
        SeoUrlInspection.status,
        SeoUrlInspection.tenant_id == tenant_id,
        SeoUrlInspection.run_id == run_id,
    )


async def run_failures(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    """The run's failed inspections as a sync run's error names its items: {url, code}."""
    statement = (
        select(SeoUrlInspection.url, SeoUrlInspection.error)
        .where(
            SeoUrlInspection.tenant_id == tenant_id,
            SeoUrlInspection.run_id == run_id,
            SeoUrlInspection.status == "failed",
        )
        .order_by(SeoUrlInspection.url)
        .limit(limit)
    )
    return [
        {"url": url, "code": (error or {}).get("code")}
        for url, error in (await session.execute(statement)).tuples()
    ]


@cross_tenant("the reconciler's sweep of every tenant's runs with inspections still pending")
async def pending_runs(session: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(tenant, run, its oldest pending inspection's created_at) of every run with one."""
    statement = (
        select(
            SeoUrlInspection.tenant_id,
            SeoUrlInspection.run_id,
            func.min(SeoUrlInspection.created_at),
        )
        .where(SeoUrlInspection.status == "pending", SeoUrlInspection.run_id.is_not(None))
        .group_by(SeoUrlInspection.tenant_id, SeoUrlInspection.run_id)
    )
    return [
        (tenant_id, run_id, oldest)
        for tenant_id, run_id, oldest in (await session.execute(statement)).tuples()
        if run_id is not None
    ]
