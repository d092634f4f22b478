"""The Job instances operations: declarations only; the rules live in instances.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.jobs import instances, schemas, service
from contentplatform.kit.errors import Conflict, NotFound, PaymentRequired

router = ProcedureRouter("jobInstances", tag="Job instances")


@router.procedure(
    "list",
    "GET",
    "/v1/job-instances",
    access=Access.member,
    input=schemas.ListInstancesInput,
    output=list[schemas.JobInstance],
    summary="Job instances by scheduled date, filtered by window, job and status.",
    description="startDate is inclusive, endDate exclusive; a date without an offset is read "
    "in the organization's time zone. limit defaults to 50.",
)
async def list_instances(
    ctx: Context, data: schemas.ListInstancesInput
) -> list[schemas.JobInstance]:
    return await service.find_instances(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "create",
    "POST",
    "/v1/job-instances",
    access=Access.editor,
    input=schemas.CreateInstanceInput,
    output=schemas.JobInstance,
    summary="Plan one occurrence of a job with its own keywords, instructions and documents.",
    description=(
        "The scheduler runs it when its date comes (at once when the date has passed) unless "
        "the job is paused. `select_existing` takes an approved draft instead of generating. "
        "409 when the job already has an instance at that date."
    ),
    errors=[NotFound, Conflict],
)
async def create(ctx: Context, data: schemas.CreateInstanceInput) -> schemas.JobInstance:
    return await service.create_instance(ctx.session, ctx.tenant.tenant_id, data)


@router.procedure(
    "getById",
    "GET",
    "/v1/job-instances/{id}",
    access=Access.member,
    input=schemas.InstanceIdInput,
    output=schemas.JobInstance,
    summary="One job instance.",
)
async def get_by_id(ctx: Context, data: schemas.InstanceIdInput) -> schemas.JobInstance:
    instance = await instances.require(ctx.session, ctx.tenant.tenant_id, data.id)
    return instances.to_schema(instance)


@router.procedure(
    "update",
    "PATCH",
    "/v1/job-instances/{id}",
    access=Access.editor,
    input=schemas.UpdateInstanceInput,
    output=schemas.JobInstance,
    summary="Change a pending instance's overrides or day mode; returns it.",
    description="Only a pending instance no run has taken can be changed (else 409).",
    errors=[Conflict],
)
async def update(ctx: Context, data: schemas.UpdateInstanceInput) -> schemas.JobInstance:
    instance = await instances.require(ctx.session, ctx.tenant.tenant_id, data.id, for_update=True)
    instances.update(instance, data)
    return instances.to_schema(instance)


@router.procedure(
    "getProgress",
    "GET",
    "/v1/job-instances/{id}/progress",
    access=Access.member,
    input=schemas.InstanceIdInput,
    output=schemas.InstanceProgress,
    summary="Where the instance's run is: status, pipeline step and percent.",
)
async def get_progress(ctx: Context, data: schemas.InstanceIdInput) -> schemas.InstanceProgress:
    return instances.progress(await instances.require(ctx.session, ctx.tenant.tenant_id, data.id))


@router.procedure(
    "skip",
    "POST",
    "/v1/job-instances/{id}/skip",
    access=Access.editor,
    input=schemas.InstanceIdInput,
    output=schemas.JobInstance,
    summary="Skip a pending instance; returns it.",
    description="Only a pending instance no run has taken can be skipped (else 409).",
    errors=[Conflict],
)
async def skip(ctx: Context, data: schemas.InstanceIdInput) -> schemas.JobInstance:
    instance = await instances.require(ctx.session, ctx.tenant.tenant_id, data.id, for_update=True)
    instances.skip_by_hand(instance)
    return instances.to_schema(instance)


@router.procedure(
    "generate",
    "POST",
    "/v1/job-instances/{id}/generate",
    access=Access.member,
    input=schemas.InstanceIdInput,
    output=schemas.JobInstance,
    summary="Run an instance now with its own overrides; returns it.",
    description=(
        "For a pending instance, or again for a failed or skipped one. A `generate` instance "
        "starts a generation run (follow it with getProgress); a `select_existing` one takes "
        "an approved draft (409 when none is left). 409 while it, or another run of its job, "
        "is in flight; 402 without the credits a run holds."
    ),
    errors=[PaymentRequired, Conflict],
)
async def generate(ctx: Context, data: schemas.InstanceIdInput) -> schemas.JobInstance:
    return await service.generate_instance(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data.id)
