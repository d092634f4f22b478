"""The rules of jobs: what a schedule must say, and the moves between statuses. Never commits.

Schedules are read in the organization's time zone (`jobs.schedulingConfig`); `next_run_at` is
kept in UTC for active jobs and recomputed whenever the schedule, the status or the zone changes.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.drafts.schemas import Draft
from contentplatform.jobs import instances, repository, schedule, schemas
from contentplatform.jobs.models import Job, JobInstance
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, Conflict, FieldError, NotFound, PlatformError
from contentplatform.publishers import service as publishers
from contentplatform.tenants import repository as tenants


def to_schema(job: Job) -> schemas.Job:
    return schemas.Job(
        id=job.id,
        tenant_id=job.tenant_id,
        name=job.name,
        job_type=job.job_type,
        status=job.status,
        cron_expression=job.cron_expression,
        scheduled_dates=[datetime.fromisoformat(d) for d in job.scheduled_dates],
        topics=job.topics,
        topic_source=job.topic_source,
        keywords=job.keywords,
        content_instructions=job.content_instructions,
        document_ids=[uuid.UUID(d) for d in job.document_ids],
        auto_publish=job.auto_publish,
        auto_publish_threshold=job.auto_publish_threshold,
        publisher_connection_id=job.publisher_connection_id,
        seo_action_id=job.seo_action_id,
        next_run_at=job.next_run_at,
        last_run_at=job.last_run_at,
        last_error=job.last_error,
        created_at=job.created_at,
        updated_at=job.updated_at,
    )


async def require(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID, *, for_update: bool = False
) -> Job:
    job = await repository.get(session, tenant_id, job_id, for_update=for_update)
    if job is None:
        raise NotFound(f"There is no job {job_id}.")
    return job


async def timezone_of(session: AsyncSession, tenant_id: uuid.UUID) -> str:
    tenant = await tenants.tenant_by_id(session, tenant_id)
    return tenant.timezone if tenant is not None else "UTC"


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
    return [to_schema(row) for row in rows]


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.PageJobsInput
) -> schemas.JobPage:
    rows, total = await repository.page(
        session,
        tenant_id,
        status=data.status,
        search=data.search,
        limit=data.limit,
        offset=(data.page - 1) * data.limit,
    )
    return schemas.JobPage(
        data=[to_schema(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def stats(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.JobStats:
    counts = await repository.count_by_status(session, tenant_id)
    return schemas.JobStats(
        total=sum(counts.values()), **{status: counts.get(status, 0) for status in schemas.STATUSES}
    )


# --- writing ----------------------------------------------------------------------------------


async def create(
    session: AsyncSession, tenant_id: uuid.UUID, created_by: str, data: schemas.CreateJobInput
) -> schemas.Job:
    timezone = await timezone_of(session, tenant_id)
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
    _check_schedule(job)
    plan_next_run(job, timezone, utcnow())
    session.add(job)
    await session.flush()
    return to_schema(job)


async def update(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.UpdateJobInput
) -> schemas.Job:
    job = await require(session, tenant_id, data.id, for_update=True)
    timezone = await timezone_of(session, tenant_id)
    if data.name is not None:
        job.name = data.name
    before = (job.cron_expression, list(job.scheduled_dates))
    await _apply(session, job, data, timezone)
    _check_schedule(job)
    if (job.cron_expression, job.scheduled_dates) != before:
        if job.status == "completed":
            job.status = "active"  # new dates or a new schedule: there is something to run
        plan_next_run(job, timezone, utcnow())
    job.updated_at = utcnow()
    return to_schema(job)


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
            raise BadRequest(
                "topicSource seo_plan is reserved for SEO plans, which are not available yet.",
                errors=[FieldError("topicSource", "seo_plan is not available yet")],
            )
        job.topic_source = data.topic_source
    if "keywords" in given:
        job.keywords = [k.strip() for k in data.keywords or [] if k.strip()]
    if "content_instructions" in given:
        job.content_instructions = data.content_instructions
    if "document_ids" in given:
        ids = list(dict.fromkeys(data.document_ids or []))
        await documents.check_usable_for_generation(session, job.tenant_id, ids)
        job.document_ids = [str(i) for i in ids]
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


def _cron(expression: str | None) -> str | None:
    if expression is None:
        return None
    try:
        return schedule.validate_cron(expression)
    except schedule.InvalidSchedule as error:
        raise BadRequest(str(error), errors=[FieldError("cronExpression", str(error))]) from None


def _dates(dates: list[datetime], timezone: str) -> list[str]:
    """UTC ISO strings, sorted and unique; a date without an offset is read in the zone."""
    return [d.isoformat() for d in sorted({in_zone(d, timezone) for d in dates})]


def in_zone(moment: datetime, timezone: str) -> datetime:
    """`moment` in UTC; without an offset it is read on the organization's wall clock."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(timezone))
    return aware.astimezone(UTC)


def _check_schedule(job: Job) -> None:
    """What each job type needs, and nothing it cannot use."""

    def refuse(field: str, message: str) -> BadRequest:
        return BadRequest(message, errors=[FieldError(field, message)])

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
        created_by=created_by,
    )
    session.add(copy)
    await session.flush()
    return to_schema(copy)


def _copy_name(name: str) -> str:
    suffix = " (copy)"
    return name[: 100 - len(suffix)] + suffix


async def pause(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> schemas.Job:
    """Stop scheduling; a run in flight finishes."""
    job = await require(session, tenant_id, job_id, for_update=True)
    if job.status not in ("active", "processing", "error"):
        raise Conflict(f"The job is {job.status}; it cannot be paused.")
    job.status = "paused"
    job.next_run_at = None
    job.updated_at = utcnow()
    return to_schema(job)


async def resume(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> schemas.Job:
    """Schedule again from now: occurrences missed while paused are not run."""
    job = await require(session, tenant_id, job_id, for_update=True)
    if job.status not in ("paused", "error"):
        raise Conflict(f"The job is {job.status}; it cannot be resumed.")
    in_flight = await repository.in_flight(session, tenant_id, job.id)
    job.status = "processing" if in_flight else "active"
    job.last_error = None
    plan_next_run(job, await timezone_of(session, tenant_id), utcnow())
    job.updated_at = utcnow()
    return to_schema(job)


# --- the organization's time zone -------------------------------------------------------------


async def scheduling_config(
    session: AsyncSession, tenant_id: uuid.UUID
) -> schemas.SchedulingConfig:
    return schemas.SchedulingConfig(timezone=await timezone_of(session, tenant_id))


async def update_timezone(
    session: AsyncSession, tenant_id: uuid.UUID, name: str
) -> schemas.SchedulingConfig:
    """Set the zone and recompute next_run_at of every active job in it."""
    try:
        timezone = schedule.validate_timezone(name)
    except schedule.InvalidSchedule as error:
        raise BadRequest(str(error), errors=[FieldError("timezone", str(error))]) from None
    await tenants.lock_tenant(session, tenant_id)
    tenant = await tenants.tenant_by_id(session, tenant_id)
    assert tenant is not None, "a resolved tenant exists"
    tenant.timezone = timezone
    now = utcnow()
    for job in await repository.scheduled(session, tenant_id):
        plan_next_run(job, timezone, now)
    return schemas.SchedulingConfig(timezone=timezone)


# --- runs -------------------------------------------------------------------------------------


async def trigger(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> schemas.JobInstance:
    """Run the job now, whatever its status: a pending instance whose run has started."""
    await tenants.lock_tenant(session, tenant_id)
    job = await require(session, tenant_id, job_id, for_update=True)
    now = utcnow()
    instance = JobInstance(**instances.new_instance(job, now))
    # Added only once the run started, so a refusal (409, 402) leaves nothing behind.
    await instances.start(session, runtime, job, instance, now, by_hand=True)
    session.add(instance)
    await session.flush()
    return instances.to_schema(instance)


async def run_history(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.RunHistoryInput
) -> list[Draft]:
    job = await require(session, tenant_id, data.id)
    return await drafts.of_job(session, tenant_id, job.id, data.limit)


async def analytics(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> schemas.JobAnalytics:
    job = await require(session, tenant_id, job_id)
    counts, mean_score = await drafts.job_figures(session, tenant_id, job.id)
    published = counts.get("published", 0)
    return schemas.JobAnalytics(
        totalDrafts=sum(counts.values()),
        approvedDrafts=counts.get("approved", 0) + published,
        publishedDrafts=published,
        avgSeoScore=round(mean_score, 2) if mean_score is not None else 0.0,
        publishSuccessRate=await publishers.success_rate(session, tenant_id, job.id),
    )


async def find_instances(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListInstancesInput
) -> list[schemas.JobInstance]:
    """jobInstances.list; a window date without an offset is read in the organization's zone."""
    timezone = await timezone_of(session, tenant_id)
    window = {
        name: in_zone(value, timezone)
        for name in ("start_date", "end_date")
        if (value := getattr(data, name)) is not None
    }
    return await instances.list_instances(session, tenant_id, data.model_copy(update=window))


async def list_instances(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> list[schemas.JobInstance]:
    return await instances.of_job(session, tenant_id, await require(session, tenant_id, job_id))


# --- the calendar -----------------------------------------------------------------------------


async def calendar(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CalendarInput
) -> list[schemas.CalendarEntry]:
    """Every occurrence in the window: existing instances, and what the schedules plan beyond
    them (from each job's next run on), oldest first, at most MAX_CALENDAR_ENTRIES."""
    timezone = await timezone_of(session, tenant_id)
    start, end = in_zone(data.start_date, timezone), in_zone(data.end_date, timezone)
    if end <= start:
        raise BadRequest(
            "endDate must be after startDate.",
            errors=[FieldError("endDate", "must be after startDate")],
        )
    if end - start > timedelta(days=schemas.MAX_CALENDAR_DAYS):
        message = f"The window spans at most {schemas.MAX_CALENDAR_DAYS} days."
        raise BadRequest(message, errors=[FieldError("endDate", message)])
    limit = schemas.MAX_CALENDAR_ENTRIES
    entries: dict[tuple[uuid.UUID, datetime], schemas.CalendarEntry] = {}
    for job in await repository.scheduled(session, tenant_id):
        if job.next_run_at is None:
            continue
        for moment in schedule.occurrences(
            spec_of(job), timezone, max(start, job.next_run_at), end, limit
        ):
            entries[(job.id, moment)] = schemas.CalendarEntry(
                jobId=job.id,
                jobName=job.name,
                date=moment,
                instanceId=None,
                status="planned",
                draftId=None,
            )
    existing = await repository.instances_between(session, tenant_id, start, end, limit)
    names = {
        job.id: job.name
        for job in await repository.many(session, tenant_id, list({i.job_id for i in existing}))
    }
    for instance in existing:
        entries[(instance.job_id, instance.scheduled_date)] = schemas.CalendarEntry(
            jobId=instance.job_id,
            jobName=names.get(instance.job_id, ""),
            date=instance.scheduled_date,
            instanceId=instance.id,
            status=instance.status,
            draftId=instance.draft_id,
        )
    return sorted(entries.values(), key=lambda entry: (entry.date, entry.jobName))[:limit]


# --- many at once -----------------------------------------------------------------------------


async def bulk(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    data: schemas.BulkJobsInput,
) -> schemas.BulkOutcome:
    """Apply one action to each id; an id that fails (another tenant's or missing: NOT_FOUND,
    a wrong status: CONFLICT) is reported and leaves the others untouched."""
    # The tenant before any job, as every transaction that locks both does.
    await tenants.lock_tenant(session, tenant_id)
    results = []
    for job_id in dict.fromkeys(data.job_ids):
        try:
            if data.action == "pause":
                await pause(session, tenant_id, job_id)
            elif data.action == "resume":
                await resume(session, tenant_id, job_id)
            elif data.action == "trigger":
                await trigger(session, runtime, tenant_id, job_id)
            else:
                await delete(session, tenant_id, job_id)
        except PlatformError as error:
            results.append(schemas.BulkResult(id=job_id, ok=False, error=error.code))
        else:
            results.append(schemas.BulkResult(id=job_id, ok=True, error=None))
    affected = sum(result.ok for result in results)
    return schemas.BulkOutcome(success=affected == len(results), affected=affected, results=results)


# --- instances by hand ------------------------------------------------------------------------


async def create_instance(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CreateInstanceInput
) -> schemas.JobInstance:
    """Plan one occurrence ahead with its own overrides; the scheduler runs it at its date."""
    job = await require(session, tenant_id, data.job_id)
    scheduled_date = in_zone(data.scheduled_date, await timezone_of(session, tenant_id))
    if await repository.instance_at(session, tenant_id, job.id, scheduled_date) is not None:
        raise Conflict(f"The job already has an instance at {scheduled_date.isoformat()}.")
    values = instances.new_instance(job, scheduled_date)
    values.update(
        day_mode=data.day_mode,
        keywords=instances.clean_keywords(data.keywords),
        content_instructions=data.content_instructions,
        images=list(data.images),
        document_ids=await instances.check_documents(session, tenant_id, data.document_ids),
    )
    if not await repository.add_instance_once(session, **values):
        raise Conflict(f"The job already has an instance at {scheduled_date.isoformat()}.")
    instance = await instances.require(session, tenant_id, values["id"])  # type: ignore[arg-type]
    return instances.to_schema(instance)


async def generate_instance(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, instance_id: uuid.UUID
) -> schemas.JobInstance:
    """Run a planned instance now, or again after it failed or was skipped."""
    await tenants.lock_tenant(session, tenant_id)
    instance = await instances.require(session, tenant_id, instance_id, for_update=True)
    state = instances.state_of(instance)
    if state in ("queued", "running", "completed"):
        raise Conflict(f"The instance is {state}; it cannot be generated again.")
    job = await repository.get(session, tenant_id, instance.job_id, for_update=True)
    if job is None:
        raise Conflict("The instance's job was deleted.")
    await instances.start(session, runtime, job, instance, utcnow(), by_hand=True)
    return instances.to_schema(instance)


async def publisher_of(
    session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> uuid.UUID | None:
    """The publisher connection a job's drafts go to (None: the job is gone or has none)."""
    job = await repository.get(session, tenant_id, job_id)
    return job.publisher_connection_id if job is not None else None


async def check_draft_links(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID | None,
    instance_id: uuid.UUID | None,
) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """The job and instance a draft written by hand names: this organization's (else 404), the
    instance of that job (else 400); naming only the instance names its job too."""
    if instance_id is not None:
        instance = await instances.require(session, tenant_id, instance_id)
        if job_id is not None and job_id != instance.job_id:
            message = "The instance belongs to another job."
            raise BadRequest(message, errors=[FieldError("instanceId", message)])
        job_id = instance.job_id
    if job_id is not None:
        await require(session, tenant_id, job_id)
    return job_id, instance_id
