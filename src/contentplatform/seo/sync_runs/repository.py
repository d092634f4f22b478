"""Every query on the sync runs, the tenant first."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, insert_ignoring_conflicts, owned_by, page_of, utcnow
from contentplatform.seo.models import SeoSyncRun
from contentplatform.seo.sync_runs.schemas import ACTIVE

get = Owned(SeoSyncRun)


async def insert_new(session: AsyncSession, tenant_id: uuid.UUID, **values: Any) -> bool:
    """Insert the run unless the tenant has one with its run_key (the unique index decides,
    so a concurrent second insert does nothing): whether it was inserted."""
    result = await session.execute(
        insert_ignoring_conflicts(session, SeoSyncRun, tenant_id=tenant_id, **values)
    )
    return bool(getattr(result, "rowcount", 0))


async def by_run_key(session: AsyncSession, tenant_id: uuid.UUID, run_key: str) -> SeoSyncRun:
    found = await owned_by(session, SeoSyncRun, tenant_id, run_key=run_key)
    if found is None:  # inserted or found a moment ago, in this transaction
        raise LookupError(run_key)
    return found


async def active(session: AsyncSession, tenant_id: uuid.UUID, kind: str) -> SeoSyncRun | None:
    """The newest run of the kind still queued or running."""
    statement = (
        select(SeoSyncRun)
        .where(
            SeoSyncRun.tenant_id == tenant_id,
            SeoSyncRun.kind == kind,
            SeoSyncRun.status.in_(ACTIVE),
        )
        .order_by(SeoSyncRun.created_at.desc(), SeoSyncRun.id)
        .limit(1)
    )
    return (await session.execute(statement)).scalars().first()


async def add_progress(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    *,
    done: int,
    total: int | None,
    rows: int,
) -> int:
    """One UPDATE (rows added in the database, so concurrent steps never lose a count): how
    many runs it changed (0: no such run)."""
    values: dict[str, Any] = {
        "progress_done": done,
        "rows_written": SeoSyncRun.rows_written + rows,
    }
    if total is not None:
        values["progress_total"] = total
    result = await session.execute(
        update(SeoSyncRun)
        .where(SeoSyncRun.tenant_id == tenant_id, SeoSyncRun.id == run_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0))


async def fail_queued(
    session: AsyncSession, tenant_id: uuid.UUID, provider: str, error: dict[str, Any]
) -> int:
    """The provider's queued runs ended failed with `error`: how many."""
    now = utcnow()
    result = await session.execute(
        update(SeoSyncRun)
        .where(
            SeoSyncRun.tenant_id == tenant_id,
            SeoSyncRun.provider == provider,
            SeoSyncRun.status == "queued",
        )
        .values(status="failed", error=error, finished_at=now, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0))


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str | None,
    provider: str | None,
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[SeoSyncRun], int]:
    """Newest first."""
    statement = select(SeoSyncRun).where(SeoSyncRun.tenant_id == tenant_id)
    if kind is not None:
        statement = statement.where(SeoSyncRun.kind == kind)
    if provider is not None:
        statement = statement.where(SeoSyncRun.provider == provider)
    if status is not None:
        statement = statement.where(SeoSyncRun.status == status)
    return await page_of(
        session,
        statement,
        SeoSyncRun.created_at.desc(),
        SeoSyncRun.id.desc(),
        limit=limit,
        offset=offset,
    )
