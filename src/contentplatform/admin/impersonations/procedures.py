"""The impersonation operations (admin.*, superadmins only): declarations only."""

from __future__ import annotations

from contentplatform.admin.impersonations import schemas, service
from contentplatform.admin.impersonations.errors import (
    CannotImpersonateSuperadmin,
    ImpersonationAlreadyOpen,
    ImpersonationInputInvalid,
    ImpersonationNotFound,
    ImpersonationTargetNotFound,
    ImpersonationTenantNotFound,
    ImpersonationTenantSuspended,
    ImpersonationTicketNotFound,
)
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter

router = ProcedureRouter("admin", tag="Admin")


@router.post(
    "startImpersonation",
    "/api/admin/impersonations",
    access=Access.superadmin,
    api_keys=False,
    errors=[
        ImpersonationInputInvalid,
        ImpersonationTenantNotFound,
        ImpersonationTargetNotFound,
        ImpersonationTicketNotFound,
        CannotImpersonateSuperadmin,
        ImpersonationAlreadyOpen,
        ImpersonationTenantSuspended,
    ],
)
async def start_impersonation(
    ctx: Context, data: schemas.StartImpersonationInput
) -> schemas.StartedImpersonation:
    """Open a time-boxed, audited support session inside a tenant.

    Answers the session's `token`, shown this once: a bearer token acting as the member
    (`userId`; left out, a synthetic read-only member) in the tenant's organization, which the
    token names (send it in x-idp-org-id too). It carries `act.sub`, the superadmin: every event
    written under it records them as `impersonated_by`, and the tenant's admins are notified
    (`impersonation.started`).

    Guardrails: a `reason` of 20 to 500 characters; `read_only` by default (every operation
    not declared GET is 403, over RPC too); `read_write` only with a `ticketId` of the tenant's
    support tickets and a `userId`; 5 to 60 minutes (`durationMinutes`, default 30), no
    refresh; one open session per superadmin (409); never a superadmin (403); never billing.*,
    credits.*, team.*, API keys, webhook secrets or admin.* (403, in either mode)."""
    return await service.start(ctx.session, ctx.settings, ctx.identity.subject, data)


@router.post(
    "endImpersonation",
    "/api/admin/impersonations/{id}/end",
    access=Access.superadmin,
    api_keys=False,
    errors=[ImpersonationNotFound],
)
async def end_impersonation(
    ctx: Context, data: schemas.ImpersonationIdInput
) -> schemas.EndedImpersonation:
    """End a support session now.

    Its token is refused (401) at once, on every process of the service (Redis carries the
    revocation where it is configured). Idempotent: ending an ended or expired session answers
    when it ended."""
    return await service.end(ctx.session, ctx.runtime.invalidations, ctx.identity.subject, data.id)
