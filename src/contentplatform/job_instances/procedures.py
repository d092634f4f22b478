"""The Job instances operations: declarations only; the rules live in service.py.

jobInstances.create and jobInstances.generate start or plan runs of a job, so they are declared
with the flow that runs jobs (flows/procedures.py)."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.job_instances import schemas, service
from contentplatform.job_instances.errors import InstanceNotWaiting, JobInstanceNotFound

router = ProcedureRouter("jobInstances", tag="Job instances")


@router.get(
    "list",
    "/v1/job-instances",
    access=Access.member,
    description="startDate is inclusive, endDate exclusive; a date without an offset is read "
    "in the organization's time zone. limit defaults to 50.",
)
async def list_instances(
    ctx: Context, data: schemas.ListInstancesInput
) -> list[schemas.JobInstance]:
    """Job instances by scheduled date, filtered by window, job and status."""
    return await service.list_instances(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getById", "/v1/job-instances/{id}", access=Access.member, errors=[JobInstanceNotFound])
async def get_by_id(ctx: Context, data: schemas.InstanceIdInput) -> schemas.JobInstance:
    """One job instance.

    Its job, topic, scheduled time, status and the draft it wrote. Another organization's
    instance is 404."""
    return schemas.JobInstance.model_validate(
        await service.require(ctx.session, ctx.tenant.tenant_id, data.id)
    )


@router.patch(
    "update",
    "/v1/job-instances/{id}",
    access=Access.editor,
    errors=[JobInstanceNotFound, InstanceNotWaiting],
)
async def update(ctx: Context, data: schemas.UpdateInstanceInput) -> schemas.JobInstance:
    """Change a pending instance's overrides or day mode; returns it.

    Only a pending instance no run has taken can be changed (else 409)."""
    return await service.update(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getProgress",
    "/v1/job-instances/{id}/progress",
    access=Access.member,
    errors=[JobInstanceNotFound],
)
async def get_progress(ctx: Context, data: schemas.InstanceIdInput) -> schemas.InstanceProgress:
    """Where the instance's run is: status, pipeline step and percent.

    A light read for polling; the generation run's SSE stream (generation.streamRun) tells the
    same as it happens."""
    return schemas.InstanceProgress.model_validate(
        await service.require(ctx.session, ctx.tenant.tenant_id, data.id)
    )


@router.post(
    "skip",
    "/v1/job-instances/{id}/skip",
    access=Access.editor,
    errors=[JobInstanceNotFound, InstanceNotWaiting],
)
async def skip(ctx: Context, data: schemas.InstanceIdInput) -> schemas.JobInstance:
    """Skip a pending instance; returns it.

    Only a pending instance no run has taken can be skipped (else 409)."""
    return await service.skip_by_hand(ctx.session, ctx.tenant.tenant_id, data.id)
