"""Every query on jobs; the tenant always comes first, but for the scheduler's, which look
across tenants for due work."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Owned, counts_by, cross_tenant, lock_rows, page_of
from contentplatform.tenants.models import Tenant

NEWEST_FIRST = (Job.created_at.desc(), Job.id)
RUNNING_STATUSES = ("active", "processing")


def _live(tenant_id: uuid.UUID, status: str | None = None) -> Select[Job]:
    statement = select(Job).where(Job.tenant_id == tenant_id, Job.deleted_at.is_(None))
    return statement if status is None else statement.where(Job.status == status)


get = Owned(Job)


async def listed(
    session: AsyncSession, tenant_id: uuid.UUID, status: str | None, limit: int
) -> list[Job]:
    rows = await session.execute(_live(tenant_id, status).order_by(*NEWEST_FIRST).limit(limit))
    return list(rows.scalars())


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    status: str | None,
    search: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Job], int]:
    statement = _live(tenant_id, status)
    if search:
        statement = statement.where(func.lower(Job.name).contains(search.lower(), autoescape=True))
    return await page_of(session, statement, *NEWEST_FIRST, limit=limit, offset=offset)


async def running_jobs(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """Live jobs the scheduler runs: neither paused, completed nor stopped by an error."""
    statement = (
        select(func.count())
        .select_from(Job)
        .where(
            Job.tenant_id == tenant_id,
            Job.deleted_at.is_(None),
            Job.status.in_(RUNNING_STATUSES),
        )
    )
    return int(await session.scalar(statement) or 0)


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    return await counts_by(
        session, Job.status, Job.tenant_id == tenant_id, Job.deleted_at.is_(None)
    )


async def many(session: AsyncSession, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]) -> list[Job]:
    return list((await session.execute(_live(tenant_id).where(Job.id.in_(job_ids)))).scalars())


async def every(session: AsyncSession, tenant_id: uuid.UUID, status: str | None) -> list[Job]:
    """The live jobs (of this status), oldest first."""
    statement = _live(tenant_id, status).order_by(Job.created_at, Job.id)
    return list((await session.execute(statement)).scalars())


async def with_ids(
    session: AsyncSession, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]
) -> list[Job]:
    """These jobs, deleted ones too (their runs stay counted)."""
    statement = select(Job).where(Job.tenant_id == tenant_id, Job.id.in_(job_ids))
    return list((await session.execute(statement)).scalars())


async def naming_workflow(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> list[uuid.UUID]:
    """The live jobs (any status) naming the workflow, oldest first."""
    statement = (
        select(Job.id)
        .where(Job.tenant_id == tenant_id, Job.deleted_at.is_(None), Job.workflow_id == workflow_id)
        .order_by(Job.created_at, Job.id)
    )
    return list((await session.execute(statement)).scalars())


async def scheduled(session: AsyncSession, tenant_id: uuid.UUID) -> list[Job]:
    """Live jobs with a next run or able to have one (not paused, not completed)."""
    statement = _live(tenant_id).where(Job.status.in_(("active", "processing", "error")))
    return list((await session.execute(statement)).scalars())


async def instances_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[JobInstance]:
    """Instances of live jobs scheduled in [start, end)."""
    statement = (
        select(JobInstance)
        .join(Job, Job.id == JobInstance.job_id)
        .where(
            JobInstance.tenant_id == tenant_id,
            Job.deleted_at.is_(None),
            JobInstance.scheduled_date >= start,
            JobInstance.scheduled_date < end,
        )
        .order_by(JobInstance.scheduled_date)
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


# --- the scheduler: across tenants --------------------------------------------------------------


def _due(now: datetime) -> tuple[ColumnElement[bool], ...]:
    """A live job whose next run has come."""
    return (Job.deleted_at.is_(None), Job.next_run_at.is_not(None), Job.next_run_at <= now)


@cross_tenant("the scheduler's sweep of every tenant's due jobs")
async def due_jobs(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant_id, job_id) of jobs of active tenants whose next run has come, oldest first (a
    suspended tenant's jobs wait, due, until it is active again)."""
    statement = (
        select(Job.tenant_id, Job.id)
        .join(Tenant, Tenant.id == Job.tenant_id)
        .where(Tenant.status == "active", *_due(now))
        .order_by(Job.next_run_at)
        .limit(limit)
    )
    return [(tenant_id, job_id) for tenant_id, job_id in (await session.execute(statement))]


async def claim_due_jobs(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    job_ids: Collection[uuid.UUID],
    now: datetime,
) -> list[Job]:
    """Lock those of the tenants' jobs still due that no other scheduler holds (SKIP LOCKED)."""
    criteria = (Job.tenant_id.in_(set(tenant_ids)), Job.id.in_(set(job_ids)), *_due(now))
    await lock_rows(session, Job, *criteria)
    statement = select(Job).where(*criteria).with_for_update(skip_locked=True)
    return list((await session.execute(statement)).scalars())
