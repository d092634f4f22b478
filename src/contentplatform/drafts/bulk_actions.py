"""drafts.bulk: one action on many drafts, each through the state machine on its own. Never
commits."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role
from contentplatform.drafts import schemas, service
from contentplatform.drafts.errors import BulkActionNeedsField, BulkDeleteNeedsAdmin
from contentplatform.kit.errors import FieldError, PlatformError
from contentplatform.tenants import service as tenants


async def bulk(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    role: Role,
    actor: str,
    data: schemas.BulkDraftsInput,
) -> schemas.DraftBulkOutcome:
    """One action on each draft, each through the state machine on its own: a draft that cannot
    take it (missing or another tenant's: NOT_FOUND; a status that forbids it: CONFLICT) is
    reported and leaves the others going. `actor` approves; `delete` needs an admin."""
    if data.action == "delete" and not role.includes(Role.admin):
        raise BulkDeleteNeedsAdmin(f"Deleting drafts needs the admin role; you are {role.value}.")
    needed = {"reject": ("reason", data.reason), "assign": ("assigneeId", data.assignee_id)}
    if data.action in needed and needed[data.action][1] is None:
        field = needed[data.action][0]
        raise BulkActionNeedsField(
            f"To {data.action} drafts, give {field}.",
            errors=[FieldError(field, f"is required to {data.action}")],
        )
    # The tenant before any draft, as every transaction that locks both does: two bulk actions
    # over the same drafts in other orders wait for each other instead of deadlocking.
    await tenants.lock_tenant(session, tenant_id)
    assignee = None
    if data.action == "assign":
        assert data.assignee_id is not None  # required above
        assignee = await service.assignee_subject(session, tenant_id, data.assignee_id)
    results = []
    for draft_id in data.draft_ids:
        try:
            await _act(session, tenant_id, draft_id, data, actor, assignee)
        except PlatformError as error:
            failed = schemas.DraftBulkError(code=error.code, detail=error.detail)
            results.append(schemas.DraftBulkResult(id=draft_id, ok=False, error=failed))
        else:
            results.append(schemas.DraftBulkResult(id=draft_id, ok=True, error=None))
    affected = sum(result.ok for result in results)
    return schemas.DraftBulkOutcome(
        success=affected == len(results), affected=affected, results=results
    )


async def _act(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_id: uuid.UUID,
    data: schemas.BulkDraftsInput,
    actor: str,
    assignee: str | None,
) -> None:
    """One draft's part of a bulk action. Each refusal comes before any change to the draft."""
    if data.action == "approve":
        await service.approve(session, tenant_id, draft_id, actor)
    elif data.action == "reject":
        assert data.reason is not None  # required by bulk()
        await service.reject(session, tenant_id, draft_id, data.reason)
    elif data.action == "archive":
        await service.archive(session, tenant_id, draft_id, data.reason)
    elif data.action == "assign":
        assert assignee is not None
        service.mark_assigned(
            session, await service.require(session, tenant_id, draft_id, for_update=True), assignee
        )
    else:
        await service.delete(session, tenant_id, draft_id)
