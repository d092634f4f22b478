"""A draft written by hand (drafts.createDraft): the job and instance it names must be its own
organization's, and the instance one of that job's."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import schemas
from contentplatform.drafts import service as drafts
from contentplatform.job_instances import service as instances
from contentplatform.job_instances.errors import InstanceOfAnotherJob
from contentplatform.jobs import service as jobs
from contentplatform.kit.errors import FieldError


async def create_draft(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    author: drafts.Author,
    data: schemas.CreateDraftInput,
) -> schemas.Draft:
    job_id, instance_id = await _links(session, tenant_id, data.job_id, data.instance_id)
    data = data.model_copy(update={"job_id": job_id, "instance_id": instance_id})
    return await drafts.create(session, tenant_id, author, data)


async def _links(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID | None,
    instance_id: uuid.UUID | None,
) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """This organization's job and instance (else 404), the instance of that job (else 400);
    naming only the instance names its job too."""
    if instance_id is not None:
        instance = await instances.require(session, tenant_id, instance_id)
        if job_id is not None and job_id != instance.job_id:
            message = "The instance belongs to another job."
            raise InstanceOfAnotherJob(message, errors=[FieldError("instanceId", message)])
        job_id = instance.job_id
    if job_id is not None:
        await jobs.require(session, tenant_id, job_id)
    return job_id, instance_id
