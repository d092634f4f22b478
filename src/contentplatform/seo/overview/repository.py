"""The control center's own queries: what tells its cached answer is stale, and the runs in
flight. Every query takes the tenant."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.models import SeoAuditRun, SeoSyncRun

# No sync run or audit lasts longer: the freshness reads look this far back, over the
# (tenant_id, created_at) indexes, so their cost follows the tenant's recent work only.
RECENT = timedelta(days=30)
RUNNING_SHOWN = 20


async def last_endings(
    session: AsyncSession, tenant_id: uuid.UUID
) -> tuple[datetime | None, datetime | None, int]:
    """When the tenant's newest sync run and audit ended, and how many runs are in flight:
    what changes whenever a block of the control center may have."""
    since = utcnow() - RECENT
    synced, active = (
        await session.execute(
            select(
                func.max(SeoSyncRun.finished_at),
                func.count().filter(SeoSyncRun.status.in_(("queued", "running"))),
            ).where(SeoSyncRun.tenant_id == tenant_id, SeoSyncRun.created_at >= since)
        )
    ).one()
    audited = (
        await session.execute(
            select(func.max(SeoAuditRun.finished_at)).where(
                SeoAuditRun.tenant_id == tenant_id, SeoAuditRun.created_at >= since
            )
        )
    ).scalar_one()
    return synced, audited, int(active or 0)


async def running(session: AsyncSession, tenant_id: uuid.UUID) -> list[SeoSyncRun]:
    """The runs queued or running, newest first (at most RUNNING_SHOWN)."""
    statement = (
        select(SeoSyncRun)
        .where(
            SeoSyncRun.tenant_id == tenant_id,
            SeoSyncRun.created_at >= utcnow() - RECENT,
            SeoSyncRun.status.in_(("queued", "running")),
        )
        .order_by(SeoSyncRun.created_at.desc(), SeoSyncRun.id)
        .limit(RUNNING_SHOWN)
    )
    return list((await session.execute(statement)).scalars())
