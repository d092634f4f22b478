"""The rules of the team: members and invitations, written to the identity provider first and
then here, and the provider's events applied. Never commits.

Members' events (added, removed, role changed) are written where memberships change
(tenants.set_member_state); invitations' here: `invitation.created` for a new pending one (ours
or one made at the provider), `invitation.revoked` when one becomes revoked (audit).

A write holds the tenant's lock across the provider's call: two admins demoting each other at
once must not both pass the last-admin check. Team writes are rare; the provider's timeout
(CONTENTPLATFORM_IDP_TIMEOUT_SECONDS) bounds the wait.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.billing import service as billing
from contentplatform.config import Settings
from contentplatform.drafts import service as drafts
from contentplatform.events import service as events
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.inbound import IGNORED, PROCESSED, RECEIVED
from contentplatform.kit.invalidation import Invalidations
from contentplatform.kit.schemas import window_of
from contentplatform.settings import keys
from contentplatform.team import repository, schemas
from contentplatform.team.errors import (
    AlreadyInvited,
    AlreadyMember,
    InvitationNotFound,
    LastAdmin,
    MemberNotFound,
    NotPending,
    RedirectNotAllowed,
)
from contentplatform.team.idp import (
    Directory,
    RemoteInvitation,
    RemoteMembership,
    instant,
    invitation_of,
    membership_of,
    user_profile,
)
from contentplatform.team.models import Invitation
from contentplatform.tenants import service as tenants

log = logging.getLogger(__name__)

SOURCE = "clerk"


def announce_after_commit(session: AsyncSession, bus: Invalidations, org_ids: list[str]) -> None:
    """Once the change is committed, every process drops what it cached of these
    organizations' access (never before: a process could cache the old rows again)."""
    if not org_ids:
        return

    async def publish() -> None:
        for org_id in dict.fromkeys(org_ids):
            await bus.publish(tenants.access_scope(org_id))

    after_commit(session, publish)


# --- members ----------------------------------------------------------------------------------


async def list_members(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListMembersInput
) -> schemas.MemberPage:
    rows, total = await tenants.members_page(
        session, tenant_id, search=data.search, role=data.role, **window_of(data)
    )
    return schemas.MemberPage(data=rows, total=total, page=data.page, limit=data.limit)


async def _active_member(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID
) -> schemas.Member:
    member = await tenants.team_member(session, tenant_id, user_id)
    if member is None or member.status != tenants.ACTIVE:
        raise MemberNotFound(user_id)
    return member


async def _keep_an_admin(
    session: AsyncSession, tenant_id: uuid.UUID, member: schemas.Member
) -> None:
    """Refuse to demote or remove the organization's last active admin."""
    if member.role == Role.admin.value and await tenants.active_admins(session, tenant_id) <= 1:
        raise LastAdmin(
            "The organization would be left without an admin: make another member admin first."
        )


async def update_role(
    session: AsyncSession,
    directory: Directory,
    bus: Invalidations,
    tenant: TenantAccess,
    data: schemas.UpdateRoleInput,
) -> schemas.Member:
    await tenants.lock_tenant(session, tenant.tenant_id)
    member = await _active_member(session, tenant.tenant_id, data.user_id)
    role = Role(data.role)
    if member.role == role.value:
        return member
    if (
        member.role == Role.admin.value
        and await tenants.active_admins(session, tenant.tenant_id) <= 1
    ):
        raise LastAdmin("The organization would be left without an admin: make another first.")
    changed_at = await directory.update_role(tenant.org_id, member.idp_user_id, role)
    await tenants.set_member_state(
        session,
        tenant.org_id,
        member.idp_user_id,
        role=role,
        removed=False,
        at=changed_at or utcnow(),
        updated_at=changed_at,
        provision=False,
    )
    announce_after_commit(session, bus, [tenant.org_id])
    return await _active_member(session, tenant.tenant_id, data.user_id)


async def remove_member(
    session: AsyncSession,
    directory: Directory,
    bus: Invalidations,
    tenant: TenantAccess,
    data: schemas.MemberIdInput,
) -> None:
    await tenants.lock_tenant(session, tenant.tenant_id)
    member = await _active_member(session, tenant.tenant_id, data.user_id)
    if (
        member.role == Role.admin.value
        and await tenants.active_admins(session, tenant.tenant_id) <= 1
    ):
        raise LastAdmin(
            "The organization would be left without an admin: make another admin first."
        )
    removed_at = await directory.remove(tenant.org_id, member.idp_user_id)
    await _remove_locally(session, tenant.org_id, tenant.tenant_id, member.idp_user_id, removed_at)
    announce_after_commit(session, bus, [tenant.org_id])


async def _remove_locally(
    session: AsyncSession,
    org_id: str,
    tenant_id: uuid.UUID,
    idp_user_id: str,
    at: datetime | None,
    updated_at: datetime | None = None,
) -> str:
    outcome = await tenants.set_member_state(
        session,
        org_id,
        idp_user_id,
        role=None,
        removed=True,
        at=at or utcnow(),
        updated_at=updated_at,
        provision=False,
    )
    if outcome != tenants.UNCHANGED:
        await _member_left(session, tenant_id, idp_user_id)
    return outcome


async def _member_left(session: AsyncSession, tenant_id: uuid.UUID, idp_user_id: str) -> None:
    """Their conversations stay theirs (chat shows each user only their own), so no one else
    reads them; their drafts go back to the pool; the API keys they made stop working (the
    caller's announcement of the removal retires them on every process)."""
    await drafts.unassign_member(session, tenant_id, idp_user_id)
    await keys.revoke_keys_of(session, tenant_id, idp_user_id)


# --- invitations ------------------------------------------------------------------------------


def _invitation(row: Any, now: datetime) -> schemas.Invitation:
    """A stored invitation as shown: a pending one past its expiry reads as expired."""
    record = schemas.Invitation.model_validate(row)
    if record.status == "pending" and record.expires_at is not None and record.expires_at <= now:
        return record.model_copy(update={"status": "expired"})
    return record


async def list_invitations(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListInvitationsInput
) -> schemas.InvitationPage:
    now = utcnow()
    rows, total = await repository.invitations_page(
        session, tenant_id, status=data.status, now=now, **window_of(data)
    )
    return schemas.InvitationPage(
        data=[_invitation(row, now) for row in rows], total=total, page=data.page, limit=data.limit
    )


def check_redirect(settings: Settings, url: str | None) -> None:
    if url is None:
        return
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    allowed = {o.rstrip("/").lower() for o in settings.team_redirect_origins}
    if parts.scheme != "https" or not parts.netloc or (allowed and origin not in allowed):
        raise RedirectNotAllowed(
            "The redirect URL must be an https URL on an allowed origin.",
            errors=[FieldError("redirectUrl", "must be an https URL on an allowed origin")],
        )


async def seats_taken(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """What the plan's `members` limit counts: active members and pending invitations."""
    members = await tenants.active_members(session, tenant_id)
    return members + await repository.pending_invitations(session, tenant_id, now)


async def invite(
    session: AsyncSession,
    directory: Directory,
    settings: Settings,
    tenant: TenantAccess,
    inviter: str,
    data: schemas.InviteInput,
) -> schemas.Invitation:
    check_redirect(settings, data.redirect_url)
    email = data.email_address.strip().lower()
    await tenants.lock_tenant(session, tenant.tenant_id)
    now = utcnow()
    if await tenants.is_active_member_email(session, tenant.tenant_id, email):
        raise AlreadyMember(f"{email} is a member of this organization already.")
    if await repository.pending_for_email(session, tenant.tenant_id, email, now) is not None:
        raise AlreadyInvited(f"{email} has a pending invitation already.")
    await billing.check_limit(
        session,
        tenant.tenant_id,
        "members",
        used=lambda: seats_taken(session, tenant.tenant_id, now),
    )
    role = Role(data.role)
    remote = await directory.invite(tenant.org_id, email, role, inviter, data.redirect_url)
    invitation = await repository.invitation_by_idp_id(session, tenant.tenant_id, remote.id)
    if invitation is None:  # its created event may have been applied first (and told it)
        invitation = repository.add_invitation(
            session,
            tenant.tenant_id,
            idp_invitation_id=remote.id,
            email=email,
            role=role.value,
            status=remote.status,
            invited_by=tenant.user_id,
            expires_at=remote.expires_at,
            idp_updated_at=remote.updated_at,
            created_at=remote.created_at or now,
        )
        _announce(session, "invitation.created", invitation)
    else:
        invitation.invited_by = tenant.user_id
    await session.flush()
    return _invitation(invitation, now)


async def revoke_invitation(
    session: AsyncSession,
    directory: Directory,
    tenant: TenantAccess,
    requester: str,
    data: schemas.InvitationIdInput,
) -> schemas.Invitation:
    await tenants.lock_tenant(session, tenant.tenant_id)
    invitation = await repository.get_invitation(session, tenant.tenant_id, data.id)
    if invitation is None:
        raise InvitationNotFound(data.id)
    now = utcnow()
    if _invitation(invitation, now).status != "pending":
        raise NotPending(f"The invitation is {_invitation(invitation, now).status}, not pending.")
    revoked_at = await directory.revoke(tenant.org_id, invitation.idp_invitation_id, requester)
    invitation.status = "revoked"
    invitation.idp_updated_at = revoked_at or invitation.idp_updated_at
    _announce(session, "invitation.revoked", invitation)
    return _invitation(invitation, now)


def _announce(session: AsyncSession, type_: str, invitation: Invitation) -> None:
    events.emit(
        session,
        invitation.tenant_id,
        type_,
        resource_id=invitation.id,
        payload={
            "invitation_id": invitation.id,
            "email": invitation.email,
            "role": invitation.role,
            "expires_at": invitation.expires_at,
        },
    )


def _apply_invitation(invitation: Invitation, remote: RemoteInvitation) -> bool:
    """The provider's word on an invitation, unless it is older than what we have."""
    stored = invitation.idp_updated_at
    if stored is not None and remote.updated_at is not None and remote.updated_at < stored:
        return False
    before = (invitation.status, invitation.role, invitation.expires_at)
    invitation.status = remote.status
    invitation.role = remote.role.value
    invitation.expires_at = remote.expires_at or invitation.expires_at
    invitation.idp_updated_at = remote.updated_at or invitation.idp_updated_at
    return (invitation.status, invitation.role, invitation.expires_at) != before


async def _upsert_invitation(
    session: AsyncSession, tenant_id: uuid.UUID, remote: RemoteInvitation
) -> bool:
    invitation = await repository.invitation_by_idp_id(session, tenant_id, remote.id)
    if invitation is None:
        invitation = repository.add_invitation(
            session,
            tenant_id,
            idp_invitation_id=remote.id,
            email=remote.email.lower(),
            role=remote.role.value,
            status=remote.status,
            invited_by=None,
            expires_at=remote.expires_at,
            idp_updated_at=remote.updated_at,
            created_at=remote.created_at or utcnow(),
        )
        if invitation.status == "pending":  # made at the provider, not through us
            _announce(session, "invitation.created", invitation)
        return True
    was_revoked = invitation.status == "revoked"
    changed = _apply_invitation(invitation, remote)
    if invitation.status == "revoked" and not was_revoked:
        _announce(session, "invitation.revoked", invitation)
    return changed


# --- sync: the nightly reconcile and team.sync ---------------------------------------------------


@dataclass
class Pulled:
    """What the provider holds of one organization, read before any lock is taken (None: no
    provider to pull from, a standalone local service)."""

    memberships: list[RemoteMembership] | None = None
    invitations: list[RemoteInvitation] = field(default_factory=list)


async def pull(directory: Directory, org_id: str) -> Pulled:
    if directory.standalone:
        return Pulled()
    return Pulled(await directory.memberships(org_id), await directory.invitations(org_id))


async def sync(
    session: AsyncSession,
    bus: Invalidations,
    tenant_id: uuid.UUID,
    org_id: str,
    pulled: Pulled,
) -> schemas.SyncResult:
    """Make members and invitations what the provider holds: members it lists are added or
    updated, active members it does not list are removed, its invitations upserted."""
    now = utcnow()
    if pulled.memberships is None:
        return schemas.SyncResult(
            members_added=0,
            members_updated=0,
            members_removed=0,
            invitations_updated=0,
            synced_at=now,
        )
    await tenants.lock_tenant(session, tenant_id)
    counts = {tenants.ADDED: 0, tenants.CHANGED: 0, "removed": 0}
    listed = set()
    for remote in pulled.memberships:
        listed.add(remote.idp_user_id)
        outcome = await tenants.set_member_state(
            session,
            org_id,
            remote.idp_user_id,
            role=remote.role,
            removed=False,
            at=remote.updated_at or now,
            updated_at=remote.updated_at,
            joined_at=remote.created_at,
            membership_id=remote.membership_id,
            profile=remote.profile,
        )
        counts[outcome] = counts.get(outcome, 0) + 1
    for subject in await tenants.active_member_subjects(session, tenant_id):
        if subject in listed:
            continue
        if await _remove_locally(session, org_id, tenant_id, subject, now) != tenants.UNCHANGED:
            counts["removed"] += 1
    invitations = 0
    for invitation in pulled.invitations:
        invitations += await _upsert_invitation(session, tenant_id, invitation)
    if counts[tenants.ADDED] or counts[tenants.CHANGED] or counts["removed"]:
        announce_after_commit(session, bus, [org_id])
    return schemas.SyncResult(
        members_added=counts[tenants.ADDED],
        members_updated=counts[tenants.CHANGED],
        members_removed=counts["removed"],
        invitations_updated=invitations,
        synced_at=now,
    )


# --- identity events --------------------------------------------------------------------------


async def receive_event(
    session: AsyncSession, event_id: str, type: str, payload: dict[str, Any]
) -> uuid.UUID | None:
    """Store a verified event once; its row id, or None when it was stored before."""
    return await repository.events.record(session, SOURCE, event_id, type, payload)


async def process_event(session: AsyncSession, bus: Invalidations, event_id: uuid.UUID) -> str:
    """Apply a stored event, once: its new status (processed or ignored), or the status it had
    when it was handled before."""
    event = await repository.events.for_update(session, event_id)
    if event is None:
        return "missing"
    if event.status != RECEIVED:
        return event.status
    data = event.payload.get("data")
    handler = HANDLERS.get(event.type)
    if handler is None or not isinstance(data, dict):
        event.status = IGNORED
    else:
        changed = await handler(session, data)
        if changed is None:
            event.status, event.error = IGNORED, "the event's data lacks what it needs"
        else:
            event.status = PROCESSED
            announce_after_commit(session, bus, changed)
    event.processed_at = utcnow()
    return event.status


async def fail_event(session: AsyncSession, event_id: uuid.UUID, reason: str) -> None:
    await repository.events.fail(session, event_id, reason)


def inbound_events() -> Select[Any]:
    """Every stored identity event as the operators' list shows it (admin.listWebhookEvents):
    `id`, `provider_event_id`, `type`, `tenant_id` (the tenant of the organization it names),
    `status`, `error`, `received_at`, `processed_at`; a statement to filter and run."""
    return repository.inbound_listing(tenants.tenant_id_of_org_column)


async def reset_event(session: AsyncSession, event_id: uuid.UUID) -> bool:
    """Set a stored event back to `received`, to be processed again (admin.replayWebhookEvent
    starts its workflow); False when there is no such event."""
    return await repository.events.reset(session, event_id)


# Each handler applies one type of event; it returns the organizations whose access changed, or
# None when the event lacks what it needs (stored as ignored, with that reason).


async def _organization(
    session: AsyncSession, data: dict[str, Any], deleted: bool
) -> list[str] | None:
    org_id = data.get("id")
    if not isinstance(org_id, str) or not org_id:
        return None
    name = data.get("name")
    changed = await tenants.apply_organization(
        session,
        org_id,
        name=name if isinstance(name, str) else None,
        deleted=deleted,
        updated_at=instant(data.get("updated_at")),
    )
    return [org_id] if changed else []


async def _organization_upserted(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    return await _organization(session, data, deleted=False)


async def _organization_deleted(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    return await _organization(session, data, deleted=True)


async def _membership_upserted(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    remote = membership_of(data)
    if remote is None or remote.org_id is None:
        return None
    outcome = await tenants.set_member_state(
        session,
        remote.org_id,
        remote.idp_user_id,
        role=remote.role,
        removed=False,
        at=remote.updated_at or utcnow(),
        updated_at=remote.updated_at,
        joined_at=remote.created_at,
        membership_id=remote.membership_id,
        profile=remote.profile,
    )
    return [] if outcome == tenants.UNCHANGED else [remote.org_id]


async def _membership_deleted(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    remote = membership_of(data)
    if remote is None or remote.org_id is None:
        return None
    tenant = await tenants.tenant_of_org(session, remote.org_id)
    if tenant is None:
        return []
    outcome = await _remove_locally(
        session,
        remote.org_id,
        tenant.id,
        remote.idp_user_id,
        remote.updated_at or utcnow(),
        remote.updated_at,
    )
    return [] if outcome == tenants.UNCHANGED else [remote.org_id]


async def _invitation_event(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    remote = invitation_of(data)
    if remote is None or remote.org_id is None:
        return None
    tenant = await tenants.tenant_of_org(session, remote.org_id)
    if tenant is None:
        return []  # an organization we have never seen: its first member's request makes it
    await _upsert_invitation(session, tenant.id, remote)
    if remote.status != "accepted":
        return []
    # The membership.created event that follows says the same; whichever comes first adds them.
    subject = await tenants.sole_user_with_email(session, remote.email)
    if subject is None:
        return []
    outcome = await tenants.set_member_state(
        session,
        remote.org_id,
        subject,
        role=remote.role,
        removed=False,
        at=remote.updated_at or utcnow(),
    )
    return [] if outcome == tenants.UNCHANGED else [remote.org_id]


def _with_status(status: str) -> Any:
    async def handle(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
        return await _invitation_event(session, {**data, "status": status})

    return handle


async def _user_updated(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    user_id = data.get("id")
    if not isinstance(user_id, str) or not user_id:
        return None
    await tenants.apply_user(session, user_id, user_profile(data), instant(data.get("updated_at")))
    return []  # a profile is no part of anyone's access


async def _user_deleted(session: AsyncSession, data: dict[str, Any]) -> list[str] | None:
    user_id = data.get("id")
    if not isinstance(user_id, str) or not user_id:
        return None
    orgs = await tenants.remove_user(session, user_id, utcnow())
    for org_id in orgs:
        tenant = await tenants.tenant_of_org(session, org_id)
        if tenant is not None:
            await _member_left(session, tenant.id, user_id)
    return orgs


HANDLERS = {
    "organization.created": _organization_upserted,
    "organization.updated": _organization_upserted,
    "organization.deleted": _organization_deleted,
    "organizationMembership.created": _membership_upserted,
    "organizationMembership.updated": _membership_upserted,
    "organizationMembership.deleted": _membership_deleted,
    "organizationInvitation.created": _with_status("pending"),
    "organizationInvitation.accepted": _with_status("accepted"),
    "organizationInvitation.revoked": _with_status("revoked"),
    "user.updated": _user_updated,
    "user.deleted": _user_deleted,
}
