"""The activity trail: declarations only."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.events import schemas, service
from contentplatform.events.errors import AuditNeedsAdmin

router = ProcedureRouter("activity", tag="Notifications")


@router.get("list", "/v1/activity", access=Access.member, errors=[AuditNeedsAdmin])
async def list_activity(ctx: Context, data: schemas.ListActivityInput) -> schemas.ActivityPage:
    """The tenant's activity feed, newest first: who did what to which resource.

    One row per change, written in the change's own transaction; nothing edits or deletes a
    row (rows older than 365 days are dropped). Filter by resource, actor, action (an event
    type of the catalog, e.g. `draft.published`) and time. `scope=audit` (admins; 403 for
    others) adds security and settings events (roles, invitations, API keys, settings with
    their `changes` diff, webhook endpoints) and shows each request's `ip` and `user_agent`.
    Actions taken while impersonating carry `impersonated_by`."""
    return await service.list_activity(ctx.session, ctx.tenant.tenant_id, ctx.tenant.role, data)
