"""Every query on job instances; the tenant always comes first, but for the scheduler's, which
look across tenants for instances whose date has come."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    String,
    Uuid,
    and_,
    case,
    column,
    func,
    insert,
    or_,
    select,
    tuple_,
    values,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.selectable import CTE

from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import (
    Owned,
    UTCDateTime,
    claim,
    cross_tenant,
    insert_ignoring_conflicts,
    owned_by,
)
from contentplatform.kit.sql_time import plan_for_the_spans, spans_table

IN_FLIGHT = ("pending", "running")
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
    """A run with a duration: it started, and completed or failed (models.run_duration_ms)."""
    return JobInstance.duration_ms.is_not(None)


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
    duration = JobInstance.duration_ms
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


def _bucket() -> ColumnElement[Any]:
    """A duration's bucket, in the order of the durations: its first three digits after the
    count of the others (0-999 ms each their own; 1,000-9,999 by tens as 1100-1999; 10,000-
    99,999 by hundreds as 2100-2999; ...): at most 1% wide, integer arithmetic only, so the same
    on SQLite (without its optional math functions) and PostgreSQL."""
    duration = JobInstance.duration_ms
    return case(
        *(
            (duration < 10 ** (digits + 3), 1000 * digits + duration // 10**digits)
            for digits in range(15)
        ),
        else_=1000 * 15 + duration // 10**15,
    )


async def duration_buckets(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Spans,
    *,
    job_ids: Collection[uuid.UUID] | None,
) -> list[tuple[int, int, int]]:
    """(span idx, bucket, count) of each span's timed runs, by `_bucket` of their duration: a
    grouping, which costs what a count does, where ranking every duration sorted them all."""
    await plan_for_the_spans(session)
    table, placed = _placed_by(JobInstance.finished_at, spans, tenant_id, job_ids)
    bucket = _bucket().label("bucket")
    statement = (
        select(table.c.idx, bucket, func.count())
        .select_from(table)
        .join(JobInstance, and_(placed, _timed()))
        .group_by(table.c.idx, bucket)
    )
    return list((await session.execute(statement)).tuples())


async def durations_at(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: Spans,
    wanted: Collection[tuple[int, int, int]],
    *,
    job_ids: Collection[uuid.UUID] | None,
) -> list[tuple[int, int, int, float]]:
    """(span idx, bucket, rank, duration ms) for each wanted (span idx, bucket, rank): the
    duration ranked `rank` (1-based, ascending) among the span's timed runs in that bucket. Only
    the wanted buckets' runs are sorted; a rank the runs no longer reach (they changed since
    they were counted) is missing."""
    if not wanted:
        return []
    await plan_for_the_spans(session)
    table, placed = _placed_by(JobInstance.finished_at, spans, tenant_id, job_ids)
    targets = (
        values(
            column("idx", Integer),
            column("bucket", BigInteger),
            column("rank", BigInteger),
            name="targets",
        )
        .data(sorted(set(wanted)))
        .cte("targets")
    )
    duration = JobInstance.duration_ms
    bucket = _bucket()
    buckets = select(targets.c.idx, targets.c.bucket).distinct()
    ranked = (
        select(
            table.c.idx,
            bucket.label("bucket"),
            duration.label("duration"),
            func.row_number()
            .over(partition_by=(table.c.idx, bucket), order_by=duration)
            .label("rank"),
        )
        .select_from(table)
        .join(JobInstance, and_(placed, _timed()))
        .where(tuple_(table.c.idx, bucket).in_(buckets))
        .subquery()
    )
    statement = select(ranked.c.idx, ranked.c.bucket, ranked.c.rank, ranked.c.duration).join(
        targets,
        and_(
            targets.c.idx == ranked.c.idx,
            targets.c.bucket == ranked.c.bucket,
            targets.c.rank == ranked.c.rank,
        ),
    )
    return [
        (idx, bucket, rank, float(found))
        for idx, bucket, rank, found in (await session.execute(statement)).tuples()
    ]


@dataclass(frozen=True)
class FailureGroup:
    job_id: uuid.UUID
    problem: str | None
    step: str | None
    count: int
    finished_at: datetime
    error: str | None


async def failure_groups(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    job_ids: Collection[uuid.UUID] | None,
) -> list[FailureGroup]:
    """The runs that failed in [start, end) per (job_id, problem, step): their `count`, and the
    last one's `finished_at` and `error` (of two that ended at once, the greater id's). Grouped
    first, then only each group's last run read for its error: ranking every failed run with
    its error text took five times as long over a year of runs."""
    group = (JobInstance.job_id, JobInstance.problem, JobInstance.step)
    where = [
        JobInstance.tenant_id == tenant_id,
        JobInstance.status == "failed",
        JobInstance.finished_at >= start,
        JobInstance.finished_at < end,
    ]
    if job_ids is not None:
        where.append(JobInstance.job_id.in_(set(job_ids)))
    grouped = (
        await session.execute(
            select(*group, func.count(), func.max(JobInstance.finished_at))
            .where(*where)
            .group_by(*group)
        )
    ).all()
    if not grouped:
        return []
    latest = (
        values(
            column("job_id", Uuid),
            column("problem", String),
            column("step", String),
            column("finished_at", UTCDateTime()),
            name="latest",
        )
        .data([(job_id, problem, step, at) for job_id, problem, step, _, at in grouped])
        .cte("latest")
    )
    last_runs = await session.execute(
        select(*group, JobInstance.id, JobInstance.error)
        .join(
            latest,
            and_(
                JobInstance.tenant_id == tenant_id,
                JobInstance.finished_at == latest.c.finished_at,
                JobInstance.status == "failed",
                JobInstance.job_id == latest.c.job_id,
                JobInstance.problem.is_not_distinct_from(latest.c.problem),
                JobInstance.step.is_not_distinct_from(latest.c.step),
            ),
        )
        .order_by(JobInstance.id)
    )
    errors = {(job_id, problem, step): error for job_id, problem, step, _, error in last_runs}
    found = []
    for job_id, problem, step, count, at in grouped:
        assert at is not None  # a group's last run ended
        found.append(
            FailureGroup(job_id, problem, step, count, at, errors.get((job_id, problem, step)))
        )
    return found


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
