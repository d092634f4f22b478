"""Job instances: one occurrence of a job, and where its run is. Never commits.

An instance is `pending` until its run begins, `running` while the pipeline writes (its `step`
and `percent` follow the run), then `completed` (its draft is in review) or `failed` (with the
reason); `skipped` when it was not run (missed during downtime, a run of its job still in
flight, skipped by hand, or its job paused). A `select_existing` instance takes an approved
draft instead of generating one. Starting and following runs is flows/job_runs.py. A run that
ends is told as `job.run_completed` or `job.run_failed` (`run_ended`); a skip tells nothing.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.job_instances import repository, schemas
from contentplatform.job_instances.errors import InstanceNotWaiting, JobInstanceNotFound
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    NotFound,
    PaymentRequired,
    PlatformError,
)
from contentplatform.kit.schemas import window_of
from contentplatform.tenants import service as tenants

# Why an instance was skipped or failed, as its `error` says.
BUSY = "A run of this job was still in flight; one run at a time per job."
JOB_PAUSED = "The job was paused when this occurrence came."
SKIPPED_BY_HAND = "Skipped by hand."
MISSED_FOR_LATER = "Missed while the scheduler was not running; a later instance ran instead."
NOTHING_TO_SELECT = "No approved draft is left to select; approve one, or generate instead."
MAX_LISTED = 1000

# Why an instance failed, as its `problem` records it (analytics.failureBreakdown's reasons):
# the model or pipeline failed (generation_error), the model did not answer in time or the run
# outlasted generation_stall_seconds (provider_timeout), no credits to hold or the hold expired
# (insufficient_credits), the job or instance could not run as set (no topic, nothing to select,
# a document gone: validation_error), a person rejected it at a review gate or let the gate time
# out (review_rejected), the run was cancelled (cancelled), anything else (unknown).
PROBLEMS = (
    "generation_error",
    "provider_timeout",
    "insufficient_credits",
    "validation_error",
    "review_rejected",
    "publisher_auth",
    "publisher_rejected",
    "cancelled",
    "unknown",
)
# A generation run's error code (generation/pipeline/errors.py) as a problem.
_RUN_PROBLEMS = {
    "CANCELLED": "cancelled",
    "PROVIDER_UNAVAILABLE": "provider_timeout",
    "STALLED": "provider_timeout",
    "PROVIDER_ERROR": "generation_error",
    "MODEL_OUTPUT_INVALID": "generation_error",
    "UNSUPPORTED_CLAIMS": "generation_error",
    "NO_SOURCES": "generation_error",
    "INTERNAL_ERROR": "generation_error",
    "CREDITS_EXPIRED": "insufficient_credits",
    "REJECTED_AT_REVIEW": "review_rejected",
    "REVIEW_TIMED_OUT": "review_rejected",
}


require = Required(repository.get, JobInstanceNotFound)


async def find(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID
) -> JobInstance | None:
    return await repository.get(session, tenant_id, instance_id)


def new_instance(
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    scheduled_date: datetime,
    *,
    status: str = "pending",
    error: str | None = None,
) -> dict[str, object]:
    """The column values of an instance of job `job_id` at `scheduled_date`."""
    now = utcnow()
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "job_id": job_id,
        "scheduled_date": scheduled_date,
        "day_mode": "generate",
        "images": [],
        "status": status,
        "percent": 0,
        "attempts": 0,
        "error": error,
        "created_at": now,
        "updated_at": now,
        "finished_at": now if status == "skipped" else None,
    }


async def plan_once(session: AsyncSession, values: dict[str, object]) -> bool:
    """Insert the instance unless its job already has one at that date; True when inserted."""
    return await repository.add_once(session, **values)


async def at(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, scheduled_date: datetime
) -> JobInstance | None:
    """The job's instance at `scheduled_date`, if there is one."""
    return await repository.instance_at(session, tenant_id, job_id, scheduled_date)


async def at_many(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    occurrences: list[tuple[uuid.UUID, datetime]],
) -> dict[tuple[uuid.UUID, datetime], JobInstance]:
    """The instances there are at these (job_id, scheduled_date) of these tenants' jobs, by
    that pair."""
    return await repository.at_many(session, tenant_ids, occurrences)


async def add(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], instances: list[JobInstance]
) -> None:
    """Insert new instances of these tenants' jobs (made from new_instance's values, never added
    to the session: they are not used after this), in one statement. The caller holds the
    tenants' locks and found none at their dates (`at_many`); should one be there all the
    same, the unique (job_id, scheduled_date) fails the transaction."""
    await repository.add_many(session, tenant_ids, instances)


async def in_flight_of(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], job_ids: list[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of these tenants' jobs with a run queued or running."""
    return await repository.in_flight_of(session, tenant_ids, job_ids)


async def in_flight(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> bool:
    """Whether a run of the job is queued or running."""
    return await repository.in_flight(session, tenant_id, job_id)


# --- states -------------------------------------------------------------------------------------


def is_waiting(instance: JobInstance) -> bool:
    """Pending, and no run took it yet."""
    return instance.status == "pending" and instance.run_id is None


def state_of(instance: JobInstance) -> str:
    """Its status as a person reads it: a pending instance whose run is queued is `queued`."""
    return (
        "queued" if instance.status == "pending" and not is_waiting(instance) else instance.status
    )


def check_waiting(instance: JobInstance, what: str) -> None:
    """Only a pending instance that no run took can be changed, skipped or run."""
    if not is_waiting(instance):
        raise InstanceNotWaiting(
            f"The instance is {state_of(instance)}; only a pending one can be {what}."
        )


def skip(instance: JobInstance, reason: str) -> None:
    finish(instance, "skipped", reason, utcnow())


def finish(instance: JobInstance, status: str, error: str | None, now: datetime) -> None:
    instance.status = status
    instance.error = error
    instance.finished_at = now
    instance.updated_at = now


def problem_of_run(code: str | None) -> str:
    """The problem a generation run's error code stands for (`unknown` for a code not known)."""
    return _RUN_PROBLEMS.get(code or "", "unknown")


def problem_of_error(error: PlatformError) -> str:
    """The problem of what kept a run from starting: no credits (402), the job or instance not
    runnable as set (a 400, 404 or 409: no topic, a document gone), else unknown."""
    if isinstance(error, PaymentRequired):
        return "insufficient_credits"
    if isinstance(error, BadRequest | NotFound | Conflict):
        return "validation_error"
    return "unknown"


def run_ended(
    session: AsyncSession,
    instance: JobInstance,
    error: str | None,
    now: datetime,
    *,
    drafts_created: int,
    problem: str | None = None,
) -> None:
    """The instance's run ended: completed (`error` None) or failed with the reason and its
    `problem` (one of PROBLEMS; `unknown` when not given), and told as `job.run_completed` or
    `job.run_failed` about its job. `drafts_created` is what the run wrote (0 when it failed,
    or took an approved draft instead)."""
    finish(instance, "failed" if error is not None else "completed", error, now)
    instance.problem = (problem or "unknown") if error is not None else None
    events.emit(
        session,
        instance.tenant_id,
        "job.run_failed" if error is not None else "job.run_completed",
        resource_id=instance.job_id,
        payload={
            "job_id": instance.job_id,
            "instance_id": instance.id,
            "draft_id": instance.draft_id,
            "drafts_created": drafts_created,
            "error": error,
        },
    )


def clean_keywords(keywords: list[str] | None) -> list[str] | None:
    if keywords is None:
        return None
    return [keyword.strip() for keyword in keywords if keyword.strip()]


# --- runs, as analytics reads them --------------------------------------------------------------


@dataclass
class RunCounts:
    """Instances counted as automation analytics reads them.

    An instance is in a span by when it finished (completed, failed, skipped), else, while in
    flight (running, or queued after it started), by when it started; one never started and not
    finished (planned, or queued) is in no span. `succeeded` ones completed; `skipped` ones
    never ran (no run that succeeded or failed); one in flight that started before the stall
    time is `stalled` too (neither a success nor a failure). A completed or failed run that
    started is `timed`: its duration is finished - started, in whole milliseconds;
    `percentiles` holds the nearest-rank ones asked for (percent -> ms). `first_at`/`last_at`:
    the earliest and latest instants that placed one."""

    total: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    in_flight: int = 0
    stalled: int = 0
    timed: int = 0
    duration_total_ms: float = 0.0
    first_at: datetime | None = None
    last_at: datetime | None = None
    percentiles: dict[int, float] = field(default_factory=dict)

    @property
    def finished(self) -> int:
        """Runs that succeeded or failed: what a success rate is a share of."""
        return self.succeeded + self.failed

    def _seen(self, first_at: datetime, last_at: datetime) -> None:
        self.first_at = first_at if self.first_at is None else min(self.first_at, first_at)
        self.last_at = last_at if self.last_at is None else max(self.last_at, last_at)


# Runs counted per (span index, job id), the job None unless counted per job.
CountKey = tuple[int, uuid.UUID | None]


async def run_counts(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: repository.Spans,
    *,
    stalled_before: datetime,
    job_ids: Collection[uuid.UUID] | None = None,
    by_job: bool = False,
    percents: Sequence[int] = (),
) -> dict[CountKey, RunCounts]:
    """The runs (of these jobs, or every job) each [start, end) span holds, counted in the
    database (RunCounts says how); a span (and job) without a run has no entry. `percents`:
    the duration percentiles to rank too (whole percents; never per job)."""
    found: dict[CountKey, RunCounts] = {}

    def counts(row: Any) -> RunCounts:
        key = (row.idx, row.job_id if by_job else None)
        return found.setdefault(key, RunCounts())

    for row in await repository.finished_counts(
        session, tenant_id, spans, job_ids=job_ids, by_job=by_job
    ):
        each = counts(row)
        each.total += row.total
        each.succeeded, each.failed = row.succeeded, row.failed
        each.skipped = row.total - row.succeeded - row.failed
        each.timed, each.duration_total_ms = row.timed, float(row.duration_total)
        each._seen(row.first_at, row.last_at)
    for row in await repository.in_flight_counts(
        session, tenant_id, spans, job_ids=job_ids, by_job=by_job, stalled_before=stalled_before
    ):
        each = counts(row)
        each.total += row.total
        each.in_flight, each.stalled = row.total, row.stalled
        each._seen(row.first_at, row.last_at)
    if percents and not by_job:
        await _rank_durations(session, tenant_id, spans, job_ids, percents, found)
    return found


def nearest_rank(percent: int, count: int) -> int:
    """The nearest rank (1-based) of a whole percent among `count` values: ceil(p x n / 100)."""
    return max(1, (percent * count + 99) // 100)


async def _rank_durations(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    spans: repository.Spans,
    job_ids: Collection[uuid.UUID] | None,
    percents: Sequence[int],
    found: dict[CountKey, RunCounts],
) -> None:
    """Each span's duration percentiles, exact, in two passes of about a count's cost: the runs
    counted per duration bucket, which says in which bucket each wanted rank falls and where in
    it; then only those buckets' runs sorted. Ranking every duration (a window function over the
    period, or a sort limited to the nearer end) took 20-40 times a count over a year of runs."""
    per_span: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for index, bucket, count in await repository.duration_buckets(
        session, tenant_id, spans, job_ids=job_ids
    ):
        per_span[index].append((bucket, count))
    wanted: dict[tuple[int, int], tuple[int, int, int]] = {}
    for index, buckets in per_span.items():
        buckets.sort()
        timed = sum(count for _, count in buckets)
        for percent in percents:
            rank, below = nearest_rank(percent, timed), 0
            for bucket, count in buckets:
                if below + count >= rank:
                    wanted[(index, percent)] = (index, bucket, rank - below)
                    break
                below += count
    durations = {
        (index, bucket, rank): duration
        for index, bucket, rank, duration in await repository.durations_at(
            session, tenant_id, spans, wanted.values(), job_ids=job_ids
        )
    }
    for (index, percent), target in wanted.items():
        runs = found.get((index, None))
        if runs is not None and target in durations:
            runs.percentiles[percent] = durations[target]


async def failed_runs(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    job_ids: Collection[uuid.UUID] | None = None,
) -> list[repository.FailureGroup]:
    """The runs that failed in [start, end) counted per (job_id, problem, step), each row with
    its `count` and the last one's `finished_at` and `error`."""
    return await repository.failure_groups(session, tenant_id, start, end, job_ids=job_ids)


# --- by hand ------------------------------------------------------------------------------------


async def skip_by_hand(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID
) -> schemas.JobInstance:
    instance = await require(session, tenant_id, instance_id, for_update=True)
    check_waiting(instance, "skipped")
    skip(instance, SKIPPED_BY_HAND)
    return schemas.JobInstance.model_validate(instance)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateInstanceInput
) -> schemas.JobInstance:
    instance = await require(session, tenant_id, data.id, for_update=True)
    check_waiting(instance, "changed")
    given = data.model_fields_set
    if "keywords" in given:
        instance.keywords = clean_keywords(data.keywords)
    if "content_instructions" in given:
        instance.content_instructions = data.content_instructions
    if "day_mode" in given and data.day_mode is not None:
        instance.day_mode = data.day_mode
    instance.updated_at = utcnow()
    return schemas.JobInstance.model_validate(instance)


# --- reading ------------------------------------------------------------------------------------


async def list_instances(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListInstancesInput
) -> list[schemas.JobInstance]:
    """A window date without an offset is read in the organization's zone."""
    timezone = await tenants.timezone_of(session, tenant_id)
    start, end = (
        None if value is None else tenants.in_zone(value, timezone)
        for value in (data.start_date, data.end_date)
    )
    rows = await repository.listed(
        session,
        tenant_id,
        start=start,
        end=end,
        job_id=data.job_id,
        status=data.status,
        **window_of(data),
    )
    return [schemas.JobInstance.model_validate(row) for row in rows]


async def of_job(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> list[schemas.JobInstance]:
    """The job's instances, latest scheduled first (at most MAX_LISTED)."""
    rows = await repository.of_job(session, tenant_id, job_id, MAX_LISTED)
    return [schemas.JobInstance.model_validate(row) for row in rows]


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
    """The instances that started in [start, end) (of one job, in one status), by (started_at,
    id), `limit` at a time after the key `after` (the last one's (started_at, id)): an export
    streams them batch by batch."""
    return await repository.started_between(
        session, tenant_id, start, end, after=after, limit=limit, job_id=job_id, status=status
    )


# --- the scheduler: instances planned ahead whose date has come ---------------------------------


async def waiting_due(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant_id, instance_id) of planned instances whose date has come and no run took."""
    return await repository.waiting(session, now, limit)


async def claim_waiting(
    session: AsyncSession, tenant_id: uuid.UUID, instance_id: uuid.UUID, now: datetime
) -> JobInstance | None:
    """Lock the instance if it still waits and no other scheduler holds it."""
    return await repository.claim_waiting(session, tenant_id, instance_id, now)


async def later_waiting(session: AsyncSession, instance: JobInstance, now: datetime) -> bool:
    """Whether a later instance of the same job, planned by hand, is also due by now."""
    return await repository.later_waiting(session, instance, now)
