"""Every query on PageSpeed results, the tenant first (but for the reconciler's, which looks
across tenants for runs with measurements still pending)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from contentplatform.kit.db import Owned, counts_by, cross_tenant, page_of
from contentplatform.seo.models import SeoPage, SeoPageDay, SeoPageSpeedResult
from contentplatform.website_scan.crawling.urls import url_hash

get = Owned(SeoPageSpeedResult)
SETTLED = ("completed", "failed")
# Search Console's "last 28 days", counted back from the newest day stored.
CLICK_WINDOW_DAYS = 28


async def url_of_page(
    session: AsyncSession, tenant_id: uuid.UUID, page_id: uuid.UUID
) -> str | None:
    """The normalized URL of the tenant's page `page_id` in the page inventory, None when
    there is no such page."""
    statement = select(SeoPage.url).where(SeoPage.tenant_id == tenant_id, SeoPage.id == page_id)
    return await session.scalar(statement)


async def page_ids(
    session: AsyncSession, tenant_id: uuid.UUID, urls: Sequence[str]
) -> dict[str, uuid.UUID]:
    """The tenant's page id (the page inventory's) of each of `urls` (normalized) it holds."""
    by_hash = {url_hash(url): url for url in urls}
    if not by_hash:
        return {}
    statement = select(SeoPage.url_hash, SeoPage.id).where(
        SeoPage.tenant_id == tenant_id, SeoPage.url_hash.in_(list(by_hash))
    )
    return {by_hash[key]: page_id for key, page_id in await session.execute(statement)}


async def top_pages(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, limit: int
) -> list[str]:
    """The property's `limit` pages with the most web-search clicks over the 28 days ending
    on the newest day stored (ties by URL); pages without a click are left out."""
    newest = await session.scalar(
        select(func.max(SeoPageDay.day)).where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
        )
    )
    if newest is None or limit <= 0:
        return []
    clicks = func.sum(SeoPageDay.clicks)
    statement = (
        select(SeoPageDay.page, clicks)
        .where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
            SeoPageDay.day > newest - timedelta(days=CLICK_WINDOW_DAYS),
        )
        .group_by(SeoPageDay.page)
        .having(clicks > 0)
        .order_by(clicks.desc(), SeoPageDay.page)
        .limit(limit)
    )
    return [page for page, _ in (await session.execute(statement)).tuples()]


# --- the durable work -------------------------------------------------------------------------


async def next_pending(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> SeoPageSpeedResult | None:
    """The run's next measurement to make, in the order they were asked for."""
    statement = (
        select(SeoPageSpeedResult)
        .where(
            SeoPageSpeedResult.tenant_id == tenant_id,
            SeoPageSpeedResult.sync_run_id == run_id,
            SeoPageSpeedResult.status == "pending",
        )
        .order_by(
            SeoPageSpeedResult.created_at, SeoPageSpeedResult.url_hash, SeoPageSpeedResult.strategy
        )
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def pending_of_run(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> list[SeoPageSpeedResult]:
    statement = select(SeoPageSpeedResult).where(
        SeoPageSpeedResult.tenant_id == tenant_id,
        SeoPageSpeedResult.sync_run_id == run_id,
        SeoPageSpeedResult.status == "pending",
    )
    return list((await session.execute(statement)).scalars())


async def run_counts(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID
) -> dict[str, int]:
    """How many of the run's measurements are in each status."""
    return await counts_by(
        session,
        SeoPageSpeedResult.status,
        SeoPageSpeedResult.tenant_id == tenant_id,
        SeoPageSpeedResult.sync_run_id == run_id,
    )


async def run_failures(
    session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID, limit: int
) -> list[dict[str, Any]]:
    """The run's failed measurements as a sync run's error names its items."""
    statement = (
        select(SeoPageSpeedResult.url, SeoPageSpeedResult.strategy, SeoPageSpeedResult.error)
        .where(
            SeoPageSpeedResult.tenant_id == tenant_id,
            SeoPageSpeedResult.sync_run_id == run_id,
            SeoPageSpeedResult.status == "failed",
        )
        .order_by(SeoPageSpeedResult.url, SeoPageSpeedResult.strategy)
        .limit(limit)
    )
    return [
        {"url": url, "strategy": strategy, "code": (error or {}).get("code")}
        for url, strategy, error in (await session.execute(statement)).tuples()
    ]


@cross_tenant("the reconciler's sweep of every tenant's runs with measurements still pending")
async def pending_runs(session: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(tenant, run, the last time one of its pending measurements moved) of every run with
    one: a run measures for a long while (up to 20 URLs x 2 strategies x 5 runs), so what
    tells a stalled one is how long nothing moved."""
    statement = (
        select(
            SeoPageSpeedResult.tenant_id,
            SeoPageSpeedResult.sync_run_id,
            func.max(SeoPageSpeedResult.updated_at),
        )
        .where(SeoPageSpeedResult.status == "pending", SeoPageSpeedResult.sync_run_id.is_not(None))
        .group_by(SeoPageSpeedResult.tenant_id, SeoPageSpeedResult.sync_run_id)
    )
    return [
        (tenant_id, run_id, moved)
        for tenant_id, run_id, moved in (await session.execute(statement)).tuples()
        if run_id is not None
    ]


# --- reads ------------------------------------------------------------------------------------


def _newest_of_its_kind(statement: Any, tenant_id: uuid.UUID, statuses: Sequence[str]) -> Any:
    """Only the newest row (of `statuses`) of each URL and strategy."""
    newer = aliased(SeoPageSpeedResult)
    return statement.where(
        ~exists().where(
            newer.tenant_id == tenant_id,
            newer.url_hash == SeoPageSpeedResult.url_hash,
            newer.strategy == SeoPageSpeedResult.strategy,
            newer.status.in_(statuses),
            or_(
                newer.created_at > SeoPageSpeedResult.created_at,
                and_(
                    newer.created_at == SeoPageSpeedResult.created_at,
                    newer.id > SeoPageSpeedResult.id,
                ),
            ),
        )
    )


async def results_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    url: str | None,
    strategy: str | None,
    latest_only: bool,
    limit: int,
    offset: int,
) -> tuple[list[SeoPageSpeedResult], int]:
    """Settled results, newest first; with `latest_only` each URL and strategy's newest."""
    statement = select(SeoPageSpeedResult).where(
        SeoPageSpeedResult.tenant_id == tenant_id, SeoPageSpeedResult.status.in_(SETTLED)
    )
    if url is not None:
        statement = statement.where(
            SeoPageSpeedResult.url_hash == url_hash(url), SeoPageSpeedResult.url == url
        )
    if strategy is not None:
        statement = statement.where(SeoPageSpeedResult.strategy == strategy)
    if latest_only:
        statement = _newest_of_its_kind(statement, tenant_id, SETTLED)
    return await page_of(
        session,
        statement,
        SeoPageSpeedResult.created_at.desc(),
        SeoPageSpeedResult.id.desc(),
        limit=limit,
        offset=offset,
    )


async def latest_completed(
    session: AsyncSession, tenant_id: uuid.UUID, urls: Sequence[str]
) -> list[SeoPageSpeedResult]:
    """The newest completed result of each of `urls` and each strategy."""
    if not urls:
        return []
    hashes = sorted({url_hash(url) for url in urls})
    statement = select(SeoPageSpeedResult).where(
        SeoPageSpeedResult.tenant_id == tenant_id,
        SeoPageSpeedResult.status == "completed",
        SeoPageSpeedResult.url_hash.in_(hashes),
    )
    statement = _newest_of_its_kind(statement, tenant_id, ("completed",))
    return list((await session.execute(statement)).scalars())


async def urls_of_run(session: AsyncSession, tenant_id: uuid.UUID, run_id: uuid.UUID) -> list[str]:
    """The URLs a run measured (or tried to)."""
    statement = (
        select(SeoPageSpeedResult.url)
        .where(SeoPageSpeedResult.tenant_id == tenant_id, SeoPageSpeedResult.sync_run_id == run_id)
        .distinct()
    )
    return list((await session.scalars(statement)).all())
