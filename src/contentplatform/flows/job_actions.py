"""What a person asks of jobs and their instances: trigger a run, act on many jobs at once, plan
an instance ahead, or run one now. Runs themselves start and are followed in job_runs.py. Never
commits.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.flows import job_runs
from contentplatform.job_instances import schemas as instance_schemas
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.errors import InstanceDateTaken, InstanceNotRunnable
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs import schemas
from contentplatform.jobs import service as jobs
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import PlatformError
from contentplatform.tenants import service as tenants


async def trigger(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> instance_schemas.JobInstance:
    """Run the job now, whatever its status: a pending instance whose run has started."""
    await tenants.lock_tenant(session, tenant_id)
    job = await jobs.require(session, tenant_id, job_id, for_update=True)
    now = utcnow()
    instance = JobInstance(**instances.new_instance(tenant_id, job.id, now))
    # Added only once the run started, so a refusal (409, 402) leaves nothing behind.
    await job_runs.start(session, runtime, job, instance, now, by_hand=True)
    session.add(instance)
    await session.flush()
    return instance_schemas.JobInstance.model_validate(instance)


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
                await jobs.pause(session, tenant_id, job_id)
            elif data.action == "resume":
                await jobs.resume(session, tenant_id, job_id)
            elif data.action == "trigger":
                await trigger(session, runtime, tenant_id, job_id)
            else:
                await jobs.delete(session, tenant_id, job_id)
        except PlatformError as error:
            results.append(schemas.BulkResult(id=job_id, ok=False, error=error.code))
        else:
            results.append(schemas.BulkResult(id=job_id, ok=True, error=None))
    affected = sum(result.ok for result in results)
    return schemas.BulkOutcome(success=affected == len(results), affected=affected, results=results)


async def plan_instance(
    session: AsyncSession, tenant_id: uuid.UUID, data: instance_schemas.CreateInstanceInput
) -> instance_schemas.JobInstance:
    """Plan one occurrence ahead with its own overrides; the scheduler runs it at its date."""
    job = await jobs.require(session, tenant_id, data.job_id)
    timezone = await tenants.timezone_of(session, tenant_id)
    scheduled_date = tenants.in_zone(data.scheduled_date, timezone)
    taken = InstanceDateTaken(f"The job already has an instance at {scheduled_date.isoformat()}.")
    if await instances.at(session, tenant_id, job.id, scheduled_date) is not None:
        raise taken
    values = instances.new_instance(tenant_id, job.id, scheduled_date)
    values.update(
        day_mode=data.day_mode,
        keywords=instances.clean_keywords(data.keywords),
        content_instructions=data.content_instructions,
        images=list(data.images),
        document_ids=None
        if data.document_ids is None
        else await jobs.checked_documents(session, tenant_id, data.document_ids),
    )
    if not await instances.plan_once(session, values):
        raise taken
    instance = await instances.require(session, tenant_id, values["id"])  # type: ignore[arg-type]
    return instance_schemas.JobInstance.model_validate(instance)


async def generate_instance(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, instance_id: uuid.UUID
) -> instance_schemas.JobInstance:
    """Run a planned instance now, or again after it failed or was skipped."""
    await tenants.lock_tenant(session, tenant_id)
    instance = await instances.require(session, tenant_id, instance_id, for_update=True)
    state = instances.state_of(instance)
    if state in ("queued", "running", "completed"):
        raise InstanceNotRunnable(f"The instance is {state}; it cannot be generated again.")
    job = await jobs.find(session, tenant_id, instance.job_id, for_update=True)
    if job is None:
        raise InstanceNotRunnable("The instance's job was deleted.")
    await job_runs.start(session, runtime, job, instance, utcnow(), by_hand=True)
    return instance_schemas.JobInstance.model_validate(instance)
