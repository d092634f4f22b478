"""Every query on job instances; the tenant always comes first, but for the scheduler's, which
look across tenants for instances whose date has come."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Owned, claim, cross_tenant, insert_ignoring_conflicts, owned_by

IN_FLIGHT = ("pending", "running")
# A pending instance no run took yet (planned by hand, or its tick crashed before the start).
WAITING = (JobInstance.status == "pending", JobInstance.run_id.is_(None))


get = Owned(JobInstance)


async def instance_at(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, scheduled_date: datetime
) -> JobInstance | None:
    return await owned_by(
        session, JobInstance, tenant_id, job_id=job_id, scheduled_date=scheduled_date
    )


@cross_tenant("the row carries its tenant")
async def add_once(session: AsyncSession, **values: object) -> bool:
    """Insert the instance unless its (job_id, scheduled_date) exists; True when inserted."""
    result = await session.execute(insert_ignoring_conflicts(session, JobInstance, **values))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def at_many(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    occurrences: list[tuple[uuid.UUID, datetime]],
) -> dict[tuple[uuid.UUID, datetime], JobInstance]:
    """The instances of these tenants' jobs there are at these (job_id, scheduled_date), by
    that pair."""
    if not occurrences:
        return {}
    wanted = set(occurrences)
    statement = select(JobInstance).where(
        JobInstance.tenant_id.in_(set(tenant_ids)),
        JobInstance.job_id.in_({job_id for job_id, _ in wanted}),
        JobInstance.scheduled_date.in_({moment for _, moment in wanted}),
    )
    found = {
        (instance.job_id, instance.scheduled_date): instance
        for instance in (await session.execute(statement)).scalars()
    }
    return {pair: instance for pair, instance in found.items() if pair in wanted}


async def add_many(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], instances: list[JobInstance]
) -> None:
    """Insert these transient instances of the tenants in one statement (their column values,
    without the session's unit of work: a scheduler tick inserts thousands)."""
    if not instances:
        return
    columns = [column.key for column in JobInstance.__table__.columns]
    rows = [{key: getattr(instance, key) for key in columns} for instance in instances]
    assert all(row["tenant_id"] in tenant_ids for row in rows), "those tenants' instances only"
    await session.execute(insert(JobInstance), rows)


async def in_flight_of(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], job_ids: list[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of the tenants' jobs with a run queued or running."""
    if not job_ids:
        return set()
    statement = select(JobInstance.job_id).where(
        JobInstance.tenant_id.in_(set(tenant_ids)),
        JobInstance.job_id.in_(job_ids),
        JobInstance.run_id.is_not(None),
        JobInstance.status.in_(IN_FLIGHT),
    )
    return set((await session.execute(statement.distinct())).scalars())


async def in_flight(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> bool:
    """Whether a run of the job is queued or running."""
    statement = select(JobInstance.id).where(
        JobInstance.tenant_id == tenant_id,
        JobInstance.job_id == job_id,
        JobInstance.run_id.is_not(None),
        JobInstance.status.in_(IN_FLIGHT),
    )
    return (await session.execute(statement.limit(1))).first() is not None


async def of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, limit: int
) -> list[JobInstance]:
    statement = (
        select(JobInstance)
        .where(JobInstance.tenant_id == tenant_id, JobInstance.job_id == job_id)
        .order_by(JobInstance.scheduled_date.desc())
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


async def listed(
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


# --- the scheduler: across tenants --------------------------------------------------------------


@cross_tenant("the scheduler's sweep of every tenant's waiting instances")
async def waiting(
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


@cross_tenant("the instance given carries its tenant")
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


async def claim_waiting(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID, now: datetime
) -> JobInstance | None:
    return await claim(
        session,
        JobInstance,
        JobInstance.tenant_id == tenant_id,
        JobInstance.id == instance_id,
        *WAITING,
        JobInstance.scheduled_date <= now,
    )
