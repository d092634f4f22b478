"""The Workflows operation whose rule crosses domains: declared here, as the jobs (above
workflows in the floors) are asked whether one names the workflow. Tagged and grouped with the
workflows' own operations (workflows/procedures.py), after them."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.flows import workflow_actions
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.workflows import schemas
from contentplatform.workflows.errors import WorkflowInUse, WorkflowNotFound

workflows_router = ProcedureRouter("workflows", tag="Workflows")


@workflows_router.delete(
    "delete",
    "/v1/workflows/{id}",
    access=Access.admin,
    errors=[WorkflowNotFound, WorkflowInUse],
)
async def delete(ctx: Context, data: schemas.WorkflowIdInput) -> Success:
    """Soft-delete a workflow.

    It leaves every operation (404). 409 when it is the organization's default, or when a job
    that is not deleted names it, whatever that job's status (`jobIds` lists them): give those
    jobs another workflow first. Its versions stay, so runs in flight finish on theirs and
    finished runs stay readable."""
    await workflow_actions.delete(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS
