"""Every query on jobs and their instances; the tenant always comes first, but for the
scheduler's, which look across tenants for due work."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.jobs.models import Job, JobInstance
from contentplatform.kit.db import insert_ignoring_conflicts, lock_rows

IN_FLIGHT = ("pending", "running")
# A pending instance no run took yet (planned by hand, or its tick crashed before the start).
WAITING = (JobInstance.status == "pending", JobInstance.run_id.is_(None))


def _live(tenant_id: uuid.UUID) -> Select[Job]:
    return select(Job).where(Job.tenant_id == tenant_id, Job.deleted_at.is_(None))


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, *, for_update: bool = False
) -> Job | None:
    statement = _live(tenant_id).where(Job.id == job_id)
    if for_update:
        await lock_rows(session, Job, Job.tenant_id == tenant_id, Job.id == job_id)
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def listed(
    session: AsyncSession, tenant_id: uuid.UUID, status: str | None, limit: int
) -> list[Job]:
    statement = _live(tenant_id)
    if status is not None:
        statement = statement.where(Job.status == status)
    rows = await session.execute(statement.order_by(Job.created_at.desc(), Job.id).limit(limit))
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
    statement = _live(tenant_id)
    if status is not None:
        statement = statement.where(Job.status == status)
    if search:
        statement = statement.where(func.lower(Job.name).contains(search.lower(), autoescape=True))
    total = await session.scalar(select(func.count()).select_from(statement.subquery()))
    rows = await session.execute(
        statement.order_by(Job.created_at.desc(), Job.id).limit(limit).offset(offset)
    )
    return list(rows.scalars()), int(total or 0)


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    result = await session.execute(
        select(Job.status, func.count())
        .where(Job.tenant_id == tenant_id, Job.deleted_at.is_(None))
        .group_by(Job.status)
    )
    return {status: count for status, count in result.tuples()}


async def many(session: AsyncSession, tenant_id: uuid.UUID, job_ids: list[uuid.UUID]) -> list[Job]:
    return list((await session.execute(_live(tenant_id).where(Job.id.in_(job_ids)))).scalars())


async def scheduled(session: AsyncSession, tenant_id: uuid.UUID) -> list[Job]:
    """Live jobs with a next run or able to have one (not paused, not completed)."""
    statement = _live(tenant_id).where(Job.status.in_(("active", "processing", "error")))
    return list((await session.execute(statement)).scalars())


# --- instances ----------------------------------------------------------------------------------


async def get_instance(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    instance_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> JobInstance | None:
    criteria = (JobInstance.tenant_id == tenant_id, JobInstance.id == instance_id)
    statement = select(JobInstance).where(*criteria)
    if for_update:
        await lock_rows(session, JobInstance, *criteria)
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def instance_at(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, scheduled_date: datetime
) -> JobInstance | None:
    statement = select(JobInstance).where(
        JobInstance.tenant_id == tenant_id,
        JobInstance.job_id == job_id,
        JobInstance.scheduled_date == scheduled_date,
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def add_instance_once(session: AsyncSession, **values: object) -> bool:
    """Insert the instance unless its (job_id, scheduled_date) exists; True when inserted."""
    result = await session.execute(insert_ignoring_conflicts(session, JobInstance, **values))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def in_flight(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> bool:
    """Whether a run of the job is queued or running."""
    statement = select(JobInstance.id).where(
        JobInstance.tenant_id == tenant_id,
        JobInstance.job_id == job_id,
        JobInstance.run_id.is_not(None),
        JobInstance.status.in_(IN_FLIGHT),
    )
    return (await session.execute(statement.limit(1))).first() is not None


async def instances_of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, limit: int
) -> list[JobInstance]:
    statement = (
        select(JobInstance)
        .where(JobInstance.tenant_id == tenant_id, JobInstance.job_id == job_id)
        .order_by(JobInstance.scheduled_date.desc())
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


async def listed_instances(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    start: datetime | None,
    end: datetime | None,
    job_id: uuid.UUID | None,
    status: str | None,
    limit: int,
    offset: int,
) -> list[JobInstance]:
    statement = select(JobInstance).where(JobInstance.tenant_id == tenant_id)
    if start is not None:
        statement = statement.where(JobInstance.scheduled_date >= start)
    if end is not None:
        statement = statement.where(JobInstance.scheduled_date < end)
    if job_id is not None:
        statement = statement.where(JobInstance.job_id == job_id)
    if status is not None:
        statement = statement.where(JobInstance.status == status)
    statement = statement.order_by(JobInstance.scheduled_date, JobInstance.id)
    return list((await session.execute(statement.limit(limit).offset(offset))).scalars())


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


async def due_jobs(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant_id, job_id) of jobs whose next run has come, oldest first."""
    statement = (
        select(Job.tenant_id, Job.id).where(*_due(now)).order_by(Job.next_run_at).limit(limit)
    )
    return [(tenant_id, job_id) for tenant_id, job_id in (await session.execute(statement))]


async def claim_due_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, now: datetime
) -> Job | None:
    """Lock the job if it is still due and no other scheduler holds it."""
    criteria = (
        Job.tenant_id == tenant_id,
        Job.id == job_id,
        *_due(now),
    )
    await lock_rows(session, Job, *criteria)
    statement = select(Job).where(*criteria).with_for_update(skip_locked=True)
    return (await session.execute(statement)).scalar_one_or_none()


async def waiting_instances(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant_id, instance_id) of planned instances whose date has come and no run took."""
    statement = (
        select(JobInstance.tenant_id, JobInstance.id)
        .where(
            *WAITING,
            JobInstance.scheduled_date <= now,
        )
        .order_by(JobInstance.scheduled_date)
        .limit(limit)
    )
    return [
        (tenant_id, instance_id) for tenant_id, instance_id in (await session.execute(statement))
    ]


async def later_waiting(session: AsyncSession, instance: JobInstance, now: datetime) -> bool:
    """Whether a later instance of the same job, planned by hand, is also due by now."""
    statement = select(JobInstance.id).where(
        JobInstance.tenant_id == instance.tenant_id,
        JobInstance.job_id == instance.job_id,
        *WAITING,
        JobInstance.scheduled_date > instance.scheduled_date,
        JobInstance.scheduled_date <= now,
    )
    return (await session.execute(statement.limit(1))).first() is not None


async def claim_waiting_instance(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID, now: datetime
) -> JobInstance | None:
    criteria = (
        JobInstance.tenant_id == tenant_id,
        JobInstance.id == instance_id,
        *WAITING,
        JobInstance.scheduled_date <= now,
    )
    await lock_rows(session, JobInstance, *criteria)
    statement = select(JobInstance).where(*criteria).with_for_update(skip_locked=True)
    return (await session.execute(statement)).scalar_one_or_none()
