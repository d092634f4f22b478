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
from collections.abc import Collection
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.job_instances import repository, schemas
from contentplatform.job_instances.errors import InstanceNotWaiting, JobInstanceNotFound
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.tenants import service as tenants

# Why an instance was skipped or failed, as its `error` says.
BUSY = "A run of this job was still in flight; one run at a time per job."
JOB_PAUSED = "The job was paused when this occurrence came."
SKIPPED_BY_HAND = "Skipped by hand."
MISSED_FOR_LATER = "Missed while the scheduler was not running; a later instance ran instead."
NOTHING_TO_SELECT = "No approved draft is left to select; approve one, or generate instead."
MAX_LISTED = 1000


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


def run_ended(
    session: AsyncSession,
    instance: JobInstance,
    error: str | None,
    now: datetime,
    *,
    drafts_created: int,
) -> None:
    """The instance's run ended: completed (`error` None) or failed with the reason, and told
    as `job.run_completed` or `job.run_failed` about its job. `drafts_created` is what the run
    wrote (0 when it failed, or took an approved draft instead)."""
    finish(instance, "failed" if error is not None else "completed", error, now)
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
