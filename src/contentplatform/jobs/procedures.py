"""The Jobs operations: declarations only; the rules live in service.py (jobs and their
schedule), calendar.py and analytics.py.

jobs.trigger and jobs.bulk start runs, so they are declared with the flow that runs jobs
(flows/procedures.py)."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
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
from contentplatform.kit.schemas import SUCCESS, Empty, Success
from contentplatform.publishers.errors import ConnectionNotFound
from contentplatform.workflows.errors import WorkflowNotFound, WorkflowNotPublished

router = ProcedureRouter("jobs", tag="Jobs")

SCHEDULES = (
    "A `recurring` job needs `cronExpression` (5 fields, read in the organization's time zone, "
    "see jobs.schedulingConfig); a `scheduled` job needs `scheduledDates` (at most 366; a date "
    "without an offset is read in the organization's time zone); a `one_off` job takes at most "
    "one date, or none to run only when triggered. topicSource `manual` needs at least one "
    "topic; `seo_plan` is reserved for SEO plans. `workflowId` names the workflow the job's "
    "runs follow (a workflow of the organization with a published version: another's or a "
    "deleted one is 404, one never published 400); null: the organization's default."
)


@router.get("list", "/v1/jobs", access=Access.member)
async def list_jobs(ctx: Context, data: schemas.ListJobsInput) -> list[schemas.Job]:
    """Jobs of the organization, newest first.

    Every job that is not deleted, optionally of one `status`, at most `limit` (1-500, default
    100). For pages with a total and a name search, use jobs.page."""
    return await service.list_jobs(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "create",
    "/v1/jobs",
    access=Access.editor,
    description=SCHEDULES + " documentIds must be ready documents of the organization.",
    errors=[
        BadSchedule,
        DocumentNotReady,
        DocumentNotFound,
        ConnectionNotFound,
        PlanLimitReached,
        WorkflowNotFound,
        WorkflowNotPublished,
    ],
)
async def create(ctx: Context, data: schemas.CreateJobInput) -> schemas.Job:
    """Create a job: what to write and when."""
    return await service.create(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("page", "/v1/jobs/page", access=Access.member)
async def page(ctx: Context, data: schemas.PageJobsInput) -> schemas.JobPage:
    """Jobs, newest first, paginated and filtered by name and status.

    `search` matches the name, ignoring case; `total` counts every job the filters match."""
    return await service.page(ctx.session, ctx.tenant.tenant_id, data)


@router.get("stats", "/v1/jobs/stats", access=Access.member)
async def stats(ctx: Context, _: Empty) -> schemas.JobStats:
    """How many jobs are in each status.

    Counts of the organization's jobs that are not deleted, by status, with every status present
    (0 when none), and their total."""
    return await service.stats(ctx.session, ctx.tenant.tenant_id)


@router.get(
    "calendar",
    "/v1/jobs/calendar",
    access=Access.member,
    description=(
        "One object per occurrence, oldest first: `{job_id, job_name, date, instance_id, "
        "status, draft_id}`. Existing instances (any status) are merged with the occurrences the "
        "schedules of active jobs plan from their next run on (`status: planned`, no "
        f"instance_id). The window is [startDate, endDate), at most {schemas.MAX_CALENDAR_DAYS} "
        "days (else 400); a date without an offset is read in the organization's time zone. At "
        f"most {schemas.MAX_CALENDAR_ENTRIES} entries are returned."
    ),
    errors=[CalendarWindowRefused],
)
async def get_calendar(ctx: Context, data: schemas.CalendarInput) -> list[schemas.CalendarEntry]:
    """Every occurrence in a window: planned by the schedules, and existing instances."""
    return await calendar.calendar(ctx.session, ctx.tenant.tenant_id, data)


@router.get("schedulingConfig", "/v1/jobs/scheduling-config", access=Access.member)
async def scheduling_config(ctx: Context, _: Empty) -> schemas.SchedulingConfig:
    """The IANA time zone the organization's schedules are read in (default UTC).

    Every job's cron expression is read in this zone, so a 09:00 schedule stays at 09:00 local
    time across daylight-saving changes."""
    return await service.scheduling_config(ctx.session, ctx.tenant.tenant_id)


@router.patch(
    "updateTimezone", "/v1/jobs/scheduling-config", access=Access.admin, errors=[UnknownTimezone]
)
async def update_timezone(
    ctx: Context, data: schemas.UpdateTimezoneInput
) -> schemas.SchedulingConfig:
    """Set the organization's time zone; every active job's next run is recomputed.

    The zone must be an IANA name (`Europe/Berlin`); an unknown one is 400. The change is
    written to the audit trail."""
    return await service.update_timezone(ctx.session, ctx.tenant.tenant_id, data.timezone)


@router.get("getById", "/v1/jobs/{id}", access=Access.member, errors=[JobNotFound])
async def get_by_id(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    """One job.

    Its topics, schedule, target and review settings, status and next run. Another
    organization's job, or a deleted one, is 404."""
    return schemas.Job.model_validate(
        await service.require(ctx.session, ctx.tenant.tenant_id, data.id)
    )


@router.patch(
    "update",
    "/v1/jobs/{id}",
    access=Access.editor,
    description=SCHEDULES,
    errors=[
        BadSchedule,
        DocumentNotReady,
        JobNotFound,
        DocumentNotFound,
        ConnectionNotFound,
        PlanLimitReached,
        WorkflowNotFound,
        WorkflowNotPublished,
    ],
)
async def update(ctx: Context, data: schemas.UpdateJobInput) -> schemas.Job:
    """Change a job; returns it. A changed schedule recomputes its next run."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, data)


@router.delete("delete", "/v1/jobs/{id}", access=Access.admin, errors=[JobNotFound])
async def delete(ctx: Context, data: schemas.JobIdInput) -> Success:
    """Soft-delete a job; it is never scheduled again.

    The drafts it wrote stay. Deleted or another
    organization's: 404."""
    await service.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post("clone", "/v1/jobs/{id}/clone", access=Access.editor, errors=[JobNotFound])
async def clone(ctx: Context, data: schemas.CloneJobInput) -> schemas.Job:
    """Copy a job's settings into a new paused job (default name: '<name> (copy)').

    Topics, keywords, instructions, documents, schedule, auto-publish settings, connection and
    workflow are copied; its instances, runs and drafts are not. The copy is paused until
    someone resumes it."""
    return await service.clone(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.post(
    "pause", "/v1/jobs/{id}/pause", access=Access.admin, errors=[JobNotFound, IllegalJobTransition]
)
async def pause(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    """Stop scheduling a job; returns it. A run in flight finishes.

    Active, processing and failed (error) jobs can be paused; others are 409."""
    return await service.pause(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "resume",
    "/v1/jobs/{id}/resume",
    access=Access.admin,
    errors=[JobNotFound, IllegalJobTransition, PlanLimitReached],
)
async def resume(ctx: Context, data: schemas.JobIdInput) -> schemas.Job:
    """Schedule a paused or failed job again from now; returns it with its next run.

    Occurrences missed while paused are not run. Other statuses are 409."""
    return await service.resume(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get("getRunHistory", "/v1/jobs/{id}/runs", access=Access.member, errors=[JobNotFound])
async def get_run_history(ctx: Context, data: schemas.RunHistoryInput) -> list[Draft]:
    """The drafts the job's runs wrote, newest first.

    At most `limit` drafts, each as drafts.getById shows it, so a job's output can be reviewed
    from the job."""
    return await analytics.run_history(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getAnalytics", "/v1/jobs/{id}/analytics", access=Access.member, errors=[JobNotFound])
async def get_analytics(ctx: Context, data: schemas.JobIdInput) -> schemas.JobAnalytics:
    """How the job's drafts fared: counts, mean SEO score and publish success rate.

    Over every draft the job wrote: how many there are, how many were approved and published,
    their mean SEO score, and the share of its publish attempts that succeeded."""
    return await analytics.analytics(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get("listInstances", "/v1/jobs/{id}/instances", access=Access.member, errors=[JobNotFound])
async def list_instances(ctx: Context, data: schemas.JobIdInput) -> list[JobInstance]:
    """The job's instances, latest scheduled first (at most 1,000).

    Planned, running and finished instances, each with its topic, status and the draft it wrote;
    jobInstances.list filters across jobs."""
    return await service.list_instances(ctx.session, ctx.tenant.tenant_id, data.id)
