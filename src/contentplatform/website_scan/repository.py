"""Every query on crawl configurations and their schedules (and each configuration's last run);
the tenant always comes first (the scheduler's cross-tenant read says so in its name)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Select, delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, cross_tenant, page_of
from contentplatform.website_scan.models import (
    CrawlConfig,
    CrawlRun,
    CrawlSchedule,
)

NEWEST_FIRST = (CrawlConfig.created_at.desc(), CrawlConfig.id)

get_config = Owned(CrawlConfig)

IDEMPOTENCY_WINDOW = timedelta(hours=24)


def _live(tenant_id: uuid.UUID) -> Select[CrawlConfig]:
    return select(CrawlConfig).where(
        CrawlConfig.tenant_id == tenant_id, CrawlConfig.deleted_at.is_(None)
    )


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    scheduled: bool | None,
    limit: int,
    offset: int,
) -> tuple[list[CrawlConfig], int]:
    statement = _live(tenant_id)
    if search:
        needle = search.lower()
        statement = statement.where(
            or_(
                func.lower(CrawlConfig.name).contains(needle, autoescape=True),
                func.lower(CrawlConfig.start_url).contains(needle, autoescape=True),
            )
        )
    if scheduled is not None:
        enabled = exists().where(
            CrawlSchedule.tenant_id == tenant_id,
            CrawlSchedule.config_id == CrawlConfig.id,
            CrawlSchedule.deleted_at.is_(None),
            CrawlSchedule.enabled.is_(True),
        )
        statement = statement.where(enabled if scheduled else ~enabled)
    return await page_of(session, statement, *NEWEST_FIRST, limit=limit, offset=offset)


async def config_at(
    session: AsyncSession, tenant_id: uuid.UUID, start_url: str
) -> CrawlConfig | None:
    """The tenant's live config starting at `start_url` (normalized), if any."""
    statement = _live(tenant_id).where(CrawlConfig.start_url == start_url)
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def schedule_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> CrawlSchedule | None:
    """The config's live schedule, if any."""
    statement = select(CrawlSchedule).where(
        CrawlSchedule.tenant_id == tenant_id,
        CrawlSchedule.config_id == config_id,
        CrawlSchedule.deleted_at.is_(None),
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def schedules_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CrawlSchedule]:
    """The live schedules of these configs, by config id."""
    if not config_ids:
        return {}
    statement = select(CrawlSchedule).where(
        CrawlSchedule.tenant_id == tenant_id,
        CrawlSchedule.config_id.in_(config_ids),
        CrawlSchedule.deleted_at.is_(None),
    )
    return {row.config_id: row for row in (await session.execute(statement)).scalars()}


async def remove_schedule(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> bool:
    """Delete the config's live schedule; False when it had none."""
    result = await session.execute(
        delete(CrawlSchedule)
        .where(
            CrawlSchedule.tenant_id == tenant_id,
            CrawlSchedule.config_id == config_id,
            CrawlSchedule.deleted_at.is_(None),
        )
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


async def last_runs(
    session: AsyncSession, tenant_id: uuid.UUID, config_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CrawlRun]:
    """The newest run of each of these configs, by config id."""
    if not config_ids:
        return {}
    newest = (
        select(CrawlRun.config_id, func.max(CrawlRun.created_at).label("created_at"))
        .where(CrawlRun.tenant_id == tenant_id, CrawlRun.config_id.in_(config_ids))
        .group_by(CrawlRun.config_id)
        .subquery()
    )
    statement = select(CrawlRun).join(
        newest,
        (CrawlRun.config_id == newest.c.config_id) & (CrawlRun.created_at == newest.c.created_at),
    )
    return {run.config_id: run for run in (await session.execute(statement)).scalars()}


@cross_tenant("the scheduler's sweep of every tenant's due schedules")
async def due_schedules(session: AsyncSession, now: datetime, limit: int) -> list[CrawlSchedule]:
    """Every tenant's schedules due by `now`, oldest first, locked (others skip them)."""
    statement = (
        select(CrawlSchedule)
        .where(
            CrawlSchedule.deleted_at.is_(None),
            CrawlSchedule.next_run_at.is_not(None),
            CrawlSchedule.next_run_at <= now,
        )
        .order_by(CrawlSchedule.next_run_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(statement)).scalars())
