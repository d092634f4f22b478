"""What crosses from workflows to jobs: deleting a workflow, which no job may still name. Never
commits."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.jobs import service as jobs
from contentplatform.workflows import service as workflows


async def delete(session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID) -> None:
    """Soft-delete the workflow unless it is the organization's default or a job that is not
    deleted names it (WorkflowInUse). The workflow is locked first, and a job naming a workflow
    locks it too (jobs.create, jobs.update), so a job cannot come to name it meanwhile."""
    workflow = await workflows.require(session, tenant_id, workflow_id, for_update=True)
    workflows.check_deletable(workflow, await jobs.naming_workflow(session, tenant_id, workflow.id))
    workflows.mark_deleted(workflow)
