"""The rules of impersonation (catalog-core.md, "Impersonation guardrails").

A superadmin opens a session inside a tenant with a reason (20 characters at least), read-only
unless bound to a support ticket of that tenant, for 5 to 60 minutes, one session at a time,
never as another superadmin. The session's token (auth/impersonation_tokens.py) carries the
superadmin as `act.sub`, so every event written under it names them (`impersonated_by`); the
tenant's admins hear of the start (`impersonation.started`). The guard (tenants/guard.py) asks
`resolve` on each use, so ending a session (or its expiry) refuses its token at once; an end is
published to every process after its commit.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin.impersonations import repository
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
from contentplatform.admin.impersonations.schemas import (
    REASON_MIN,
    EndedImpersonation,
    Mode,
    StartedImpersonation,
    StartImpersonationInput,
)
from contentplatform.auth import impersonation_tokens
from contentplatform.auth.context import ImpersonationAccess, Role, TenantAccess
from contentplatform.config import Settings
from contentplatform.events import service as events
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import Unauthorized
from contentplatform.kit.invalidation import Invalidations
from contentplatform.support import service as support
from contentplatform.tenants import service as tenants
from contentplatform.tenants.errors import TenantSuspended

# What the synthetic member made for a session is called (its subject names the session).
SYNTHETIC_NAME = "Support (impersonation)"
SYNTHETIC_PREFIX = "impersonation_"


async def start(
    session: AsyncSession, settings: Settings, actor: str, data: StartImpersonationInput
) -> StartedImpersonation:
    """Open a session for the superadmin `actor` (their subject) and mint its token."""
    if len(data.reason.strip()) < REASON_MIN:
        raise ImpersonationInputInvalid(
            "reason", f"The reason needs at least {REASON_MIN} characters of text."
        )
    if data.mode == "read_write" and data.ticket_id is None:
        raise ImpersonationInputInvalid(
            "ticketId", "A read_write session must be bound to a support ticket of the tenant."
        )
    if data.mode == "read_write" and data.user_id is None:
        raise ImpersonationInputInvalid(
            "userId",
            "A read_write session acts as a member: name one (the synthetic member is read-only).",
        )
    org_id = await tenants.org_of(session, data.tenant_id)
    if org_id is None:
        raise ImpersonationTenantNotFound(data.tenant_id)
    if await tenants.system_access(session, data.tenant_id) is None:
        raise ImpersonationTenantSuspended("The tenant is suspended: nobody acts in it.")
    if data.ticket_id is not None and not await support.is_tenants_ticket(
        session, data.tenant_id, data.ticket_id
    ):
        raise ImpersonationTicketNotFound(data.ticket_id)

    now = utcnow()
    await repository.close_expired(session, actor, now)
    if await repository.open_session_of(session, actor) is not None:
        raise ImpersonationAlreadyOpen(
            "You have an open impersonation session: end it first (admin.endImpersonation)."
        )

    session_id = uuid.uuid4()
    if data.user_id is not None:
        member = await tenants.team_member(session, data.tenant_id, data.user_id)
        if member is None or member.status != "active":
            raise ImpersonationTargetNotFound(data.user_id)
        if member.idp_user_id == actor or await repository.is_known_superadmin(
            session, member.idp_user_id
        ):
            raise CannotImpersonateSuperadmin("A superadmin is never impersonated.")
        user_id, subject, synthetic = data.user_id, member.idp_user_id, False
    else:
        subject = f"{SYNTHETIC_PREFIX}{session_id}"
        user_id = await tenants.key_user(session, subject, SYNTHETIC_NAME)
        synthetic = True

    expires_at = now + timedelta(minutes=data.duration_minutes)
    added = await repository.add_session(
        session,
        id=session_id,
        tenant_id=data.tenant_id,
        actor=actor,
        user_id=user_id,
        user_subject=subject,
        synthetic=synthetic,
        reason=data.reason.strip(),
        ticket_id=data.ticket_id,
        mode=data.mode,
        expires_at=expires_at,
        created_at=now,
        updated_at=now,
    )
    if not added:  # another start of the same superadmin won the race
        raise ImpersonationAlreadyOpen(
            "You have an open impersonation session: end it first (admin.endImpersonation)."
        )
    events.emit(
        session,
        data.tenant_id,
        "impersonation.started",
        resource_id=session_id,
        payload={
            "impersonation_id": str(session_id),
            "superadmin": actor,
            "user_id": str(user_id),
            "synthetic": synthetic,
            "mode": data.mode,
            "reason": data.reason.strip(),
            "ticket_id": str(data.ticket_id) if data.ticket_id else None,
            "expires_at": expires_at.isoformat(),
        },
    )
    token = impersonation_tokens.ImpersonationTokens.from_settings(settings).mint(
        session_id=session_id,
        subject=subject,
        actor=actor,
        org_id=org_id,
        issued_at=now,
        expires_at=expires_at,
    )
    return StartedImpersonation(id=session_id, token=token, mode=data.mode, expires_at=expires_at)


async def end(
    session: AsyncSession, bus: Invalidations, actor: str, session_id: uuid.UUID
) -> EndedImpersonation:
    """End a session now (any superadmin may: ending only takes power away); ending an ended
    or expired one answers when it ended."""
    row = await repository.session_by_id(session, session_id, for_update=True)
    if row is None:
        raise ImpersonationNotFound(session_id)
    if row.ended_at is None:
        now = utcnow()
        # Found expired: it ended at its expiry; no one acts under it since.
        row.ended_at = min(now, row.expires_at)
        row.ended_by = actor
        events.emit(
            session,
            row.tenant_id,
            "impersonation.ended",
            resource_id=row.id,
            payload={
                "impersonation_id": str(row.id),
                "superadmin": row.actor,
                "ended_by": actor,
                "ended_at": row.ended_at.isoformat(),
            },
        )
        scope = impersonation_tokens.scope(row.id)

        async def publish() -> None:
            await bus.publish(scope)

        # After the commit: a process reading the row before it would cache it open again.
        after_commit(session, publish)
    return EndedImpersonation(id=row.id, ended_at=row.ended_at)


async def resolve(session: AsyncSession, session_id: uuid.UUID) -> ImpersonationAccess:
    """What an open session's token may act as (the guard's resolver): 401 when the session is
    unknown, ended or expired, or its member is no longer one; 403 when the tenant is
    suspended."""
    row = await repository.session_by_id(session, session_id)
    if row is None or row.ended_at is not None:
        raise Unauthorized("This impersonation session has ended.")
    if row.expires_at <= utcnow():
        raise Unauthorized(f"The impersonation session expired at {row.expires_at.isoformat()}.")
    tenant = await tenants.system_access(session, row.tenant_id)
    if tenant is None:
        raise TenantSuspended("This organization's tenant is suspended.")
    role = Role.member
    if not row.synthetic:
        member = await tenants.team_member(session, row.tenant_id, row.user_id)
        if member is None or member.status != "active":
            raise Unauthorized("The member this impersonation session acts as left the tenant.")
        role = Role.from_claim(member.role) or Role.member
    mode: Mode = "read_write" if row.mode == "read_write" else "read_only"
    return ImpersonationAccess(
        session_id=row.id,
        actor=row.actor,
        tenant=TenantAccess(
            tenant_id=tenant.tenant_id,
            org_id=tenant.org_id,
            org_name=tenant.org_name,
            user_id=row.user_id,
            role=role,
        ),
        mode=mode,
        expires_at=row.expires_at,
    )


async def record_superadmin(session: AsyncSession, subject: str) -> None:
    """Remember that `subject` is a superadmin (the guard, on their admin.* calls)."""
    await repository.add_superadmin(session, subject)
