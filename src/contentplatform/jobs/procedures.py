"""The Jobs operations: declarations only; the rules live in service.py (jobs and their
schedule), calendar.py and analytics.py.

jobs.trigger and jobs.bulk start runs, so they are declared with the flow that runs jobs
(flows/procedures.py)."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.documents.errors import DocumentNotFound, DocumentNotReady
from contentplatform.drafts.schemas import Draft
from contentplatform.job_instances.schemas import JobInstance
from contentplatform.jobs import analytics, calendar, schemas, service
from contentplatform.jobs.errors import (
    BadSchedule,
    CalendarWindowRefused,
    IllegalJobTransition,
    JobNotFound,
    UnknownTimezone,
)
from contentplatform.kit.schemas import Empty
from contentplatform.publishers.errors import ConnectionNotFound

router = ProcedureRouter("jobs", tag="Jobs")

SCHEDULES = (
    "A `recurring` job needs `cronExpression` (5 fields, read in the organization's time zone, "
    "see jobs.schedulingConfig); a `scheduled` job needs `scheduledDates` (at most 366; a date "
    "without an offset is read in the organization's time zone); a `one_off` job takes at most "
    "one date, or none to run only when triggered. topicSource `manual` needs at least one "
    "topic; `seo_plan` is reserved for SEO plans."
)


@router.procedure(
    "list",
    "GET",
    "/v1/jobs",
    access=Access.member,
    input=schemas.ListJobsInput,
    output=list[schemas.Job],
    summary="Jobs of the organization, newest first.",
)
async def list_jobs(ctx: Context, data: schemas.ListJobsInput) -> list[schemas.Job]:
    return await service.list_jobs(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "create",
    "POST",
    "/v1/jobs",
    access=Access.editor,
    input=schemas.CreateJobInput,
    output=schemas.Job,
    summary="Create a job: what to write and when.",
    description=SCHEDULES + " documentIds must be ready documents of the organization.",
    errors=[BadSchedule, DocumentNotReady, DocumentNotFound, ConnectionNotFound],
)
async def create(ctx: Context, data: schemas.CreateJobInput) -> schemas.Job:
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.procedure(
    "page",
    "GET",
    "/v1/jobs/page",
    access=Access.member,
    input=schemas.PageJobsInput,
    output=schemas.JobPage,
    summary="Jobs, newest first, paginated and filtered by name and status.",
)
async def page(ctx: Context, data: schemas.PageJobsInput) -> schemas.JobPage:
    return await service.page(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "stats",
    "GET",
    "/v1/jobs/stats",
    access=Access.member,
    output=schemas.JobStats,
    summary="How many jobs are in each status.",
)
async def stats(ctx: Context, _: Empty) -> schemas.JobStats:
    return await service.stats(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "calendar",
    "GET",
    "/v1/jobs/calendar",
    access=Access.member,
    input=schemas.CalendarInput,
    output=list[schemas.CalendarEntry],
    summary="Every occurrence in a window: planned by the schedules, and existing instances.",
    description=(
        "One object per occurrence, oldest first: `{jobId, jobName, date, instanceId, status, "
        "draftId}`. Existing instances (any status) are merged with the occurrences the "
        "schedules of active jobs plan from their next run on (`status: planned`, no "
        f"instanceId). The window is [startDate, endDate), at most {schemas.MAX_CALENDAR_DAYS} "
        "days (else 400); a date without an offset is read in the organization's time zone. At "
        f"most {schemas.MAX_CALENDAR_ENTRIES} entries are returned."
    ),
    errors=[CalendarWindowRefused],
)
async def get_calendar(ctx: Context, data: schemas.CalendarInput) -> list[schemas.CalendarEntry]:
    return await calendar.calendar(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "schedulingConfig",
    "GET",
    "/v1/jobs/scheduling-config",
    access=Access.member,
    output=schemas.SchedulingConfig,
    summary="The IANA time zone the organization's schedules are read in (default UTC).",
)
async def scheduling_config(ctx: Context, _: Empty) -> schemas.SchedulingConfig:
    return await service.scheduling_config(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "updateTimezone",
    "PATCH",
    "/v1/jobs/scheduling-config",
    access=Access.admin,
    input=schemas.UpdateTimezoneInput,
    output=schemas.SchedulingConfig,
    summary="Set the organization's time zone; every active job's next run is recomputed.",
    errors=[UnknownTimezone],
)
async def update_timezone(
    ctx: Context, data: schemas.UpdateTimezoneInput
) -> schemas.SchedulingConfig:
    return await service.update_timezone(ctx.session, ctx.tenant.tenant_id, data.timezone)


@router.procedure(
    "getById",
    "GET",
    "/v1/jobs/{id}",
    access=Access.member,
    input=schemas.JobIdInput,
    output=schemas.Job,
    summary="One job.",
    errors=[JobNotFound],
)
async def get_by_id(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    return service.to_schema(await service.require(ctx.session, ctx.tenant.tenant_id, data.id))


@router.procedure(
    "update",
    "PATCH",
    "/v1/jobs/{id}",
    access=Access.editor,
    input=schemas.UpdateJobInput,
    output=schemas.Job,
    summary="Change a job; returns it. A changed schedule recomputes its next run.",
    description=SCHEDULES,
    errors=[BadSchedule, DocumentNotReady, JobNotFound, DocumentNotFound, ConnectionNotFound],
)
async def update(ctx: Context, data: schemas.UpdateJobInput) -> schemas.Job:
    return await service.update(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "delete",
    "DELETE",
    "/v1/jobs/{id}",
    access=Access.admin,
    input=schemas.JobIdInput,
    output=schemas.Success,
    summary="Soft-delete a job; it is never scheduled again.",
    errors=[JobNotFound],
)
async def delete(ctx: Context, data: schemas.JobIdInput) -> schemas.Success:
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return schemas.Success(success=True)


@router.procedure(
    "clone",
    "POST",
    "/v1/jobs/{id}/clone",
    access=Access.editor,
    input=schemas.CloneJobInput,
    output=schemas.Job,
    summary="Copy a job's settings into a new paused job (default name: '<name> (copy)').",
    errors=[JobNotFound],
)
async def clone(ctx: Context, data: schemas.CloneJobInput) -> schemas.Job:
    return await service.clone(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.procedure(
    "pause",
    "POST",
    "/v1/jobs/{id}/pause",
    access=Access.admin,
    input=schemas.JobIdInput,
    output=schemas.Job,
    summary="Stop scheduling a job; returns it. A run in flight finishes.",
    description="Active, processing and failed (error) jobs can be paused; others are 409.",
    errors=[JobNotFound, IllegalJobTransition],
)
async def pause(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    return await service.pause(ctx.session, ctx.tenant.tenant_id, data.id)


@router.procedure(
    "resume",
    "POST",
    "/v1/jobs/{id}/resume",
    access=Access.admin,
    input=schemas.JobIdInput,
    output=schemas.Job,
    summary="Schedule a paused or failed job again from now; returns it with its next run.",
    description="Occurrences missed while paused are not run. Other statuses are 409.",
    errors=[JobNotFound, IllegalJobTransition],
)
async def resume(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    return await service.resume(ctx.session, ctx.tenant.tenant_id, data.id)


@router.procedure(
    "getRunHistory",
    "GET",
    "/v1/jobs/{id}/runs",
    access=Access.member,
    input=schemas.RunHistoryInput,
    output=list[Draft],
    summary="The drafts the job's runs wrote, newest first.",
    errors=[JobNotFound],
)
async def get_run_history(ctx: Context, data: schemas.RunHistoryInput) -> list[Draft]:
    return await analytics.run_history(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "getAnalytics",
    "GET",
    "/v1/jobs/{id}/analytics",
    access=Access.member,
    input=schemas.JobIdInput,
    output=schemas.JobAnalytics,
    summary="How the job's drafts fared: counts, mean SEO score and publish success rate.",
    errors=[JobNotFound],
)
async def get_analytics(ctx: Context, data: schemas.JobIdInput) -> schemas.JobAnalytics:
    return await analytics.analytics(ctx.session, ctx.tenant.tenant_id, data.id)


@router.procedure(
    "listInstances",
    "GET",
    "/v1/jobs/{id}/instances",
    access=Access.member,
    input=schemas.JobIdInput,
    output=list[JobInstance],
    summary="The job's instances, latest scheduled first (at most 1,000).",
    errors=[JobNotFound],
)
async def list_instances(ctx: Context, data: schemas.JobIdInput) -> list[JobInstance]:
    return await service.list_instances(ctx.session, ctx.tenant.tenant_id, data.id)
