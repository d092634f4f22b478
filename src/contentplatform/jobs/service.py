"""The rules of jobs: what a schedule must say, and the moves between statuses. Never commits.

Schedules are read in the organization's time zone (`jobs.schedulingConfig`); `next_run_at` is
kept in UTC for active jobs and recomputed whenever the schedule, the status or the zone changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import service as billing
from contentplatform.documents import service as documents
from contentplatform.events import service as events
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.schemas import JobInstance
from contentplatform.jobs import repository, schedule, schemas
from contentplatform.jobs.errors import (
    BadSchedule,
    IllegalJobTransition,
    JobNotFound,
    UnknownTimezone,
)
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import window_of
from contentplatform.publishers import service as publishers
from contentplatform.tenants import service as tenants
from contentplatform.workflows import service as workflows
from contentplatform.workflows.errors import WorkflowVersionNotFound

require = Required(repository.get, JobNotFound)


def spec_of(job: Job) -> schedule.ScheduleSpec:
    return schedule.ScheduleSpec(
        job_type=job.job_type,  # type: ignore[arg-type]
        cron_expression=job.cron_expression,
        scheduled_dates=tuple(datetime.fromisoformat(d) for d in job.scheduled_dates),
    )


def plan_next_run(job: Job, timezone: str, now: datetime) -> None:
    """next_run_at from now for a scheduled job (active, processing or error: a failed run does
    not stop the schedule); none for a paused or completed one. Dates with none left (a date
    list, or a one-off's date) complete the job once no run is in flight; a one-off without a
    date stays active, to be triggered."""
    if job.status in ("paused", "completed"):
        job.next_run_at = None
        return
    job.next_run_at = schedule.next_run(spec_of(job), timezone, now)
    dated = job.job_type != "recurring" and bool(job.scheduled_dates)
    if job.next_run_at is None and dated and job.status != "processing":
        job.status = "completed"


# --- reading ----------------------------------------------------------------------------------


async def list_jobs(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListJobsInput
) -> list[schemas.Job]:
    rows = await repository.listed(session, tenant_id, data.status, data.limit)
    return [schemas.Job.model_validate(row) for row in rows]


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.PageJobsInput
) -> schemas.JobPage:
    rows, total = await repository.page(
        session, tenant_id, status=data.status, search=data.search, **window_of(data)
    )
    return schemas.JobPage(data=rows, total=total, page=data.page, limit=data.limit)


async def stats(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.JobStats:
    counts = await repository.count_by_status(session, tenant_id)
    return schemas.JobStats(
        total=sum(counts.values()), **{status: counts.get(status, 0) for status in schemas.STATUSES}
    )


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    created_by: str,
    data: schemas.CreateJobInput,
    *,
    seo_plan: bool = False,
) -> schemas.Job:
    """A new job. `seo_plan`: made by seoPlans.approve, its topic_source `seo_plan` (which
    jobs.create refuses from a client): each of its instances carries its own topic."""
    timezone = await tenants.timezone_of(session, tenant_id)
    if data.status == "active":
        await _room_for_a_running_job(session, tenant_id)
    job = Job(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        job_type=data.job_type,
        status=data.status,
        scheduled_dates=[],
        topics=[],
        topic_source="manual",
        topic_cursor=0,
        keywords=[],
        document_ids=[],
        auto_publish=False,
        created_by=created_by,
    )
    await _apply(session, job, data, timezone)
    if seo_plan:
        job.topic_source = "seo_plan"
    _check_schedule(job)
    plan_next_run(job, timezone, utcnow())
    session.add(job)
    await session.flush()
    return schemas.Job.model_validate(job)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateJobInput
) -> schemas.Job:
    job = await require(session, tenant_id, data.id, for_update=True)
    timezone = await tenants.timezone_of(session, tenant_id)
    if data.name is not None:
        job.name = data.name
    before = (job.cron_expression, list(job.scheduled_dates))
    await _apply(session, job, data, timezone)
    _check_schedule(job)
    if (job.cron_expression, job.scheduled_dates) != before:
        if job.status == "completed":
            await _room_for_a_running_job(session, tenant_id)
            job.status = "active"  # new dates or a new schedule: there is something to run
        plan_next_run(job, timezone, utcnow())
    job.updated_at = utcnow()
    return schemas.Job.model_validate(job)


async def running_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """Jobs the plan's `active_jobs` limit counts: active or running now."""
    return await repository.running_jobs(session, tenant_id)


async def _room_for_a_running_job(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    # One count per tenant at a time, so two creates cannot both take the last place.
    await tenants.lock_tenant(session, tenant_id)
    await billing.check_limit(
        session, tenant_id, "active_jobs", used=lambda: running_count(session, tenant_id)
    )


async def _apply(session: AsyncSession, job: Job, data: schemas.JobFields, timezone: str) -> None:
    """Copy the fields `data` sets onto `job`, each checked."""
    given = data.model_fields_set
    if "cron_expression" in given:
        job.cron_expression = _cron(data.cron_expression)
    if "scheduled_dates" in given:
        job.scheduled_dates = _dates(data.scheduled_dates or [], timezone)
    if "topics" in given:
        job.topics = [topic.strip() for topic in data.topics or [] if topic.strip()]
    if "topic_source" in given and data.topic_source is not None:
        if data.topic_source == "seo_plan":
            raise BadSchedule(
                "topicSource seo_plan is set by seoPlans.approve only: approve an SEO plan.",
                errors=[FieldError("topicSource", "seo_plan is set by seoPlans.approve only")],
            )
        job.topic_source = data.topic_source
    if "keywords" in given:
        job.keywords = [k.strip() for k in data.keywords or [] if k.strip()]
    if "content_instructions" in given:
        job.content_instructions = data.content_instructions
    if "document_ids" in given:
        job.document_ids = await checked_documents(session, job.tenant_id, data.document_ids or [])
    if "auto_publish" in given and data.auto_publish is not None:
        job.auto_publish = data.auto_publish
    if "auto_publish_threshold" in given:
        job.auto_publish_threshold = data.auto_publish_threshold
    if "publisher_connection_id" in given:
        if data.publisher_connection_id is not None:
            await publishers.require(session, job.tenant_id, data.publisher_connection_id)
        job.publisher_connection_id = data.publisher_connection_id
    if "seo_action_id" in given:
        job.seo_action_id = data.seo_action_id
    if "workflow_id" in given:
        if data.workflow_id is not None:
            await workflows.require_published(session, job.tenant_id, data.workflow_id)
        job.workflow_id = data.workflow_id
        if "workflow_version" not in given:
            job.workflow_version = None  # another workflow: its live version
    if "workflow_version" in given:
        if data.workflow_version is not None:
            if job.workflow_id is None:
                message = "workflowVersion pins a version of the job's workflow: name one."
                raise BadSchedule(message, errors=[FieldError("workflowVersion", message)])
            try:
                await workflows.definition_at(
                    session, job.tenant_id, job.workflow_id, data.workflow_version
                )
            except WorkflowVersionNotFound as missing:
                field = FieldError("workflowVersion", "no such version")
                raise BadSchedule(missing.detail, errors=[field]) from None
        job.workflow_version = data.workflow_version


async def checked_documents(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[uuid.UUID]
) -> list[str]:
    """The ids as stored, each once, after checking each is a ready document of the tenant."""
    ids = list(dict.fromkeys(document_ids))
    await documents.check_usable_for_generation(session, tenant_id, ids)
    return [str(i) for i in ids]


def _cron(expression: str | None) -> str | None:
    if expression is None:
        return None
    try:
        return schedule.validate_cron(expression)
    except schedule.InvalidSchedule as error:
        raise BadSchedule(str(error), errors=[FieldError("cronExpression", str(error))]) from None


def _dates(dates: list[datetime], timezone: str) -> list[str]:
    """UTC ISO strings, sorted and unique; a date without an offset is read in the zone."""
    return [d.isoformat() for d in sorted({tenants.in_zone(d, timezone) for d in dates})]


def _check_schedule(job: Job) -> None:
    """What each job type needs, and nothing it cannot use."""

    def refuse(field: str, message: str) -> BadSchedule:
        return BadSchedule(message, errors=[FieldError(field, message)])

    if job.job_type == "recurring":
        if not job.cron_expression:
            raise refuse("cronExpression", "A recurring job needs a cronExpression.")
        if job.scheduled_dates:
            raise refuse("scheduledDates", "A recurring job runs by its cronExpression only.")
    else:
        if job.cron_expression:
            raise refuse("cronExpression", "Only recurring jobs take a cronExpression.")
        if job.job_type == "scheduled" and not job.scheduled_dates:
            raise refuse("scheduledDates", "A scheduled job needs at least one date.")
        if job.job_type == "one_off" and len(job.scheduled_dates) > 1:
            raise refuse("scheduledDates", "A one-off job runs at most once: give one date.")
    if job.topic_source == "manual" and not job.topics:
        raise refuse("topics", "A job with topicSource manual needs at least one topic.")


async def delete(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> None:
    job = await require(session, tenant_id, job_id, for_update=True)
    job.deleted_at = utcnow()
    job.next_run_at = None


async def clone(
    session: AsyncSession, tenant_id: uuid.UUID, created_by: str, data: schemas.CloneJobInput
) -> schemas.Job:
    """A paused copy of the job's settings, with no history."""
    source = await require(session, tenant_id, data.id)
    copy = Job(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name or _copy_name(source.name),
        job_type=source.job_type,
        status="paused",
        cron_expression=source.cron_expression,
        scheduled_dates=list(source.scheduled_dates),
        topics=list(source.topics),
        topic_source=source.topic_source,
        topic_cursor=0,
        keywords=list(source.keywords),
        content_instructions=source.content_instructions,
        document_ids=list(source.document_ids),
        auto_publish=source.auto_publish,
        auto_publish_threshold=source.auto_publish_threshold,
        publisher_connection_id=source.publisher_connection_id,
        seo_action_id=source.seo_action_id,
        workflow_id=source.workflow_id,
        workflow_version=source.workflow_version,
        created_by=created_by,
    )
    session.add(copy)
    await session.flush()
    return schemas.Job.model_validate(copy)


def _copy_name(name: str) -> str:
    suffix = " (copy)"
    return name[: 100 - len(suffix)] + suffix


async def pause(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> schemas.Job:
    """Stop scheduling; a run in flight finishes."""
    job = await require(session, tenant_id, job_id, for_update=True)
    if job.status not in ("active", "processing", "error"):
        raise IllegalJobTransition(f"The job is {job.status}; it cannot be paused.")
    job.status = "paused"
    job.next_run_at = None
    job.updated_at = utcnow()
    return schemas.Job.model_validate(job)


async def resume(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> schemas.Job:
    """Schedule again from now: occurrences missed while paused are not run."""
    job = await require(session, tenant_id, job_id, for_update=True)
    if job.status not in ("paused", "error"):
        raise IllegalJobTransition(f"The job is {job.status}; it cannot be resumed.")
    await _room_for_a_running_job(session, tenant_id)
    in_flight = await instances.in_flight(session, tenant_id, job.id)
    job.status = "processing" if in_flight else "active"
    job.last_error = None
    plan_next_run(job, await tenants.timezone_of(session, tenant_id), utcnow())
    job.updated_at = utcnow()
    return schemas.Job.model_validate(job)


# --- the organization's time zone -------------------------------------------------------------


async def scheduling_config(
    session: AsyncSession, tenant_id: uuid.UUID
) -> schemas.SchedulingConfig:
    return schemas.SchedulingConfig(timezone=await tenants.timezone_of(session, tenant_id))


async def update_timezone(
    session: AsyncSession, tenant_id: uuid.UUID, name: str
) -> schemas.SchedulingConfig:
    """Set the zone and recompute next_run_at of every active job in it."""
    try:
        timezone = schedule.validate_timezone(name)
    except schedule.InvalidSchedule as error:
        raise UnknownTimezone(str(error), errors=[FieldError("timezone", str(error))]) from None
    await tenants.lock_tenant(session, tenant_id)
    before = await tenants.timezone_of(session, tenant_id)
    await tenants.set_timezone(session, tenant_id, timezone)
    if timezone != before:  # the organization's setting: audited as the others are
        events.emit(
            session,
            tenant_id,
            "settings.updated",
            resource_type="settings",
            resource_id=tenant_id,
            payload={"fields": ["timezone"]},
            changes={"timezone": {"from": before, "to": timezone}},
        )
    now = utcnow()
    for job in await repository.scheduled(session, tenant_id):
        plan_next_run(job, timezone, now)
    return schemas.SchedulingConfig(timezone=timezone)


# --- what a run does to its job (flows/job_runs.py starts and follows runs) --------------------


def run_started(job: Job, now: datetime) -> None:
    """A run of the job started: it is processing, unless paused or completed (a trigger)."""
    job.last_run_at = now
    if job.status in ("active", "error"):
        job.status = "processing"


def settle(job: Job, *, failure: str | None) -> None:
    """A run of the job ended: back to active (or completed when nothing is left to run), or
    error with the reason. A paused job stays paused; a deleted one is left alone."""
    if job.deleted_at is not None:
        return
    job.last_error = failure
    job.updated_at = utcnow()
    if job.status in ("paused", "completed"):
        return
    if failure is not None:
        job.status = "error"
    elif job.next_run_at is None and job.job_type != "recurring":
        job.status = "completed"
    else:
        job.status = "active"


async def find(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, *, for_update: bool = False
) -> Job | None:
    """The job, or None when it was deleted (a run may outlive its job)."""
    return await repository.get(session, tenant_id, job_id, for_update=for_update)


async def naming_workflow(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> list[uuid.UUID]:
    """The jobs that are not deleted (whatever their status: a paused or completed job may run
    again) naming the workflow."""
    return await repository.naming_workflow(session, tenant_id, workflow_id)


async def publisher_of(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> uuid.UUID | None:
    """The publisher connection a job's drafts go to (None: the job is gone or has none)."""
    job = await repository.get(session, tenant_id, job_id)
    return job.publisher_connection_id if job is not None else None


async def list_instances(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> list[JobInstance]:
    job = await require(session, tenant_id, job_id)
    return await instances.of_job(session, tenant_id, job.id)


# --- the scheduler: due jobs across tenants -----------------------------------------------------


async def due(
    session: AsyncSession, now: datetime, limit: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(tenant_id, job_id) of jobs whose next run has come, oldest first."""
    return await repository.due_jobs(session, now, limit)


async def claim_due(
    session: AsyncSession, job_ids: Mapping[uuid.UUID, Sequence[uuid.UUID]], now: datetime
) -> list[Job]:
    """Lock those of the jobs (by tenant) still due that no other scheduler holds, in the order
    of `job_ids`."""
    wanted = [job_id for ids in job_ids.values() for job_id in ids]
    claimed = {
        job.id: job for job in await repository.claim_due_jobs(session, job_ids.keys(), wanted, now)
    }
    return [claimed[job_id] for job_id in wanted if job_id in claimed]
