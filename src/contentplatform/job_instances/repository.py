"""Every query on job instances; the tenant always comes first, but for the scheduler's, which
look across tenants for instances whose date has come."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.selectable import CTE

from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Owned, claim, cross_tenant, insert_ignoring_conflicts, owned_by
from contentplatform.kit.sql_time import milliseconds_between, plan_for_the_spans, spans_table

IN_FLIGHT = ("pending", "running")
# The statuses of a run that ran to its end: a duration is theirs.
TIMED = ("completed", "failed")
# [start, end) instants, ascending (kit/series' spans).
Spans = Sequence[tuple[datetime, datetime]]
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


async def started_between(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
    job_id: uuid.UUID | None = None,
    status: str | None = None,
) -> list[JobInstance]:
    """One batch of a keyset walk over the tenant's instances that started in [start, end), by
    (started_at, id): those after the key `after` (None: from the first), at most `limit`."""
    # After a key, the index range starts at the key's time, not the period's start: with both
    # bounds SQLite read each batch from the period's start (an export of a million runs slowed
    # down as it went, 17x the time of writing its rows).
    since = start if after is None else max(start, after[0])
    statement = select(JobInstance).where(
        JobInstance.tenant_id == tenant_id,
        JobInstance.started_at >= since,
        JobInstance.started_at < end,
    )
    if job_id is not None:
        statement = statement.where(JobInstance.job_id == job_id)
    if status is not None:
        statement = statement.where(JobInstance.status == status)
    if after is not None:
        # Spelled out rather than a row value: each side binds with its column's type.
        moment, last_id = after
        statement = statement.where(
            or_(
                JobInstance.started_at > moment,
                and_(JobInstance.started_at == moment, JobInstance.id > last_id),
            )
        )
    statement = statement.order_by(JobInstance.started_at, JobInstance.id).limit(limit)
    return list((await session.execute(statement)).scalars())


def _placed_by(
    at: Any, spans: Spans, tenant_id: uuid.UUID, job_ids: Collection[uuid.UUID] | None
) -> tuple[CTE, Any]:
    """The spans as a table, and the join of each to the tenant's instances whose `at` it holds
    (one range of the (tenant_id, at) index per span)."""
    table = spans_table(spans)
    placed = [JobInstance.tenant_id == tenant_id, at >= table.c.start, at < table.c.end]
    if job_ids is not None:
        placed.append(JobInstance.job_id.in_(set(job_ids)))
    return table, and_(*placed)


def _timed() -> ColumnElement[bool]:
    """A run with a duration: it started, and completed or failed."""
    return and_(JobInstance.status.in_(TIMED), JobInstance.started_at.is_not(None))


async def finished_counts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Spans,
    *,
    job_ids: Collection[uuid.UUID] | None,
    by_job: bool,
) -> list[Any]:
    """Per span (`idx`) and, `by_job`, per job (`job_id`): the instances that finished in it,
    counted (`total`, `succeeded`, `failed`), their durations (`timed`, `duration_total` in ms)
    and their first and last finish (`first_at`, `last_at`)."""
    await plan_for_the_spans(session)
    table, placed = _placed_by(JobInstance.finished_at, spans, tenant_id, job_ids)
    duration = case(
        (_timed(), milliseconds_between(JobInstance.finished_at, JobInstance.started_at))
    )
    keys = [table.c.idx, *([JobInstance.job_id] if by_job else [])]
    statement = (
        select(
            *keys,
            func.count().label("total"),
            func.count(case((JobInstance.status == "completed", 1))).label("succeeded"),
            func.count(case((JobInstance.status == "failed", 1))).label("failed"),
            func.count(case((_timed(), 1))).label("timed"),
            func.coalesce(func.sum(duration), 0).label("duration_total"),
            func.min(JobInstance.finished_at).label("first_at"),
            func.max(JobInstance.finished_at).label("last_at"),
        )
        .select_from(table)
        .join(JobInstance, placed)
        .group_by(*keys)
    )
    return list((await session.execute(statement)).all())


async def in_flight_counts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Spans,
    *,
    job_ids: Collection[uuid.UUID] | None,
    by_job: bool,
    stalled_before: datetime,
) -> list[Any]:
    """Per span and, `by_job`, per job: the instances in flight that started in it (`total`),
    those started before `stalled_before` (`stalled`), the first and last start."""
    await plan_for_the_spans(session)
    table, placed = _placed_by(JobInstance.started_at, spans, tenant_id, job_ids)
    keys = [table.c.idx, *([JobInstance.job_id] if by_job else [])]
    statement = (
        select(
            *keys,
            func.count().label("total"),
            func.count(case((JobInstance.started_at < stalled_before, 1))).label("stalled"),
            func.min(JobInstance.started_at).label("first_at"),
            func.max(JobInstance.started_at).label("last_at"),
        )
        .select_from(table)
        .join(JobInstance, and_(placed, JobInstance.finished_at.is_(None)))
        .group_by(*keys)
    )
    return list((await session.execute(statement)).all())


async def duration_at_rank(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    job_ids: Collection[uuid.UUID] | None,
    rank: int,
    count: int,
) -> float | None:
    """The duration (ms) at `rank` (1-based, ascending) among the `count` timed runs that
    finished in [start, end), read from whichever end is nearer: the sort keeps only the rows
    up to it. None if the runs changed since they were counted and there is no such rank."""
    duration = milliseconds_between(JobInstance.finished_at, JobInstance.started_at)
    where = [
        JobInstance.tenant_id == tenant_id,
        JobInstance.finished_at >= start,
        JobInstance.finished_at < end,
        _timed(),
    ]
    if job_ids is not None:
        where.append(JobInstance.job_id.in_(set(job_ids)))
    statement = select(duration).where(*where).limit(1)
    if rank <= count - rank + 1:
        statement = statement.order_by(duration).offset(rank - 1)
    else:
        statement = statement.order_by(duration.desc()).offset(count - rank)
    found = (await session.execute(statement)).scalar()
    return None if found is None else float(found)


async def duration_percentiles(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Spans,
    *,
    job_ids: Collection[uuid.UUID] | None,
    percents: Sequence[int],
) -> list[tuple[int, int, int, float]]:
    """(span idx, rank, count, duration ms) of the durations at the nearest ranks of `percents`
    (whole percents) among each span's timed runs, ranked in the database: the smallest duration
    with at least that share at or below it, rank max(1, ceil(percent x count / 100))."""
    await plan_for_the_spans(session)
    table, placed = _placed_by(JobInstance.finished_at, spans, tenant_id, job_ids)
    duration = milliseconds_between(JobInstance.finished_at, JobInstance.started_at)
    ranked = (
        select(
            table.c.idx,
            duration.label("duration"),
            func.row_number().over(partition_by=table.c.idx, order_by=duration).label("rank"),
            func.count().over(partition_by=table.c.idx).label("n"),
        )
        .select_from(table)
        .join(JobInstance, and_(placed, _timed()))
        .subquery()
    )
    statement = select(ranked.c.idx, ranked.c.rank, ranked.c.n, ranked.c.duration).where(
        or_(*(ranked.c.rank == (percent * ranked.c.n + 99) // 100 for percent in percents))
    )
    return list((await session.execute(statement)).tuples())


async def failure_groups(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    job_ids: Collection[uuid.UUID] | None,
) -> list[Any]:
    """The runs that failed in [start, end) per (job_id, problem, step): their `count`, and the
    last one's `finished_at` and `error`."""
    group = (JobInstance.job_id, JobInstance.problem, JobInstance.step)
    where = [
        JobInstance.tenant_id == tenant_id,
        JobInstance.status == "failed",
        JobInstance.finished_at >= start,
        JobInstance.finished_at < end,
    ]
    if job_ids is not None:
        where.append(JobInstance.job_id.in_(set(job_ids)))
    latest_first = (JobInstance.finished_at.desc(), JobInstance.id.desc())
    ranked = (
        select(
            *group,
            JobInstance.finished_at,
            JobInstance.error,
            func.row_number().over(partition_by=group, order_by=latest_first).label("rank"),
            func.count().over(partition_by=group).label("count"),
        )
        .where(*where)
        .subquery()
    )
    statement = select(
        ranked.c.job_id,
        ranked.c.problem,
        ranked.c.step,
        ranked.c.count,
        ranked.c.finished_at,
        ranked.c.error,
    ).where(ranked.c.rank == 1)
    return list((await session.execute(statement)).all())


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
