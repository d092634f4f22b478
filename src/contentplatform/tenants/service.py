"""Resolving the caller's tenant and role; just-in-time provisioning; memberships kept in step
with the identity provider.

Every membership that becomes active (a first login too), is removed, or changes role writes
`member.added`, `member.removed` or `member.role_changed` (with `changes.role`) to the outbox in
the transaction that changes it, resource the user (`user_id`, as team.* names members).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, Select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Identity, Role, TenantAccess
from contentplatform.core import actors
from contentplatform.events import service as events
from contentplatform.kit import text
from contentplatform.kit.db import utcnow
from contentplatform.tenants import repository
from contentplatform.tenants.errors import NotAMember, TenantSuspended
from contentplatform.tenants.models import Membership, Tenant, User
from contentplatform.tenants.schemas import Member, TeamMember

# What the tenants' and users' columns hold.
NAME_LENGTH = 255
EMAIL_LENGTH = 320
URL_LENGTH = 2048
ACTIVE, REMOVED = "active", "removed"
# How finely a member's last activity is recorded.
ACTIVITY_RESOLUTION = timedelta(minutes=5)


async def resolve_access(session: AsyncSession, identity: Identity, org_id: str) -> TenantAccess:
    """The tenant named by `org_id` and the caller's role in it.

    A token that itself vouches for membership of the organization provisions the tenant, the user
    and the membership on first sight. Which role holds then is the newer word of the provider:
    the token's (issued at `iat`), or the stored one once team.updateMemberRole, an identity
    event or team.sync set it (`role_set_at`, on the provider's clock) after the token was issued;
    a removal so set refuses the token. Without such a claim the stored active membership decides;
    without one the caller is refused.
    """
    token_role = identity.organizations.get(org_id)
    if token_role is not None:
        tenant, user, role = await _provision(session, identity, org_id, token_role)
    else:
        tenant, user, role = await _stored_membership(session, identity, org_id)
    if tenant.status != "active":
        raise TenantSuspended("This organization's tenant is suspended.")
    return TenantAccess(
        tenant_id=tenant.id, org_id=org_id, org_name=tenant.name, user_id=user.id, role=role
    )


async def _provision(
    session: AsyncSession, identity: Identity, org_id: str, token_role: Role
) -> tuple[Tenant, User, Role]:
    # The names are the identity provider's, whatever they hold: made plain, never refused.
    name = text.cleaned(identity.organization_names.get(org_id, ""), NAME_LENGTH) or org_id
    tenant = await repository.ensure_tenant(session, org_id, name)
    user = await repository.ensure_user(session, identity.subject)
    _refresh_profile(user, identity)
    now = utcnow()
    member, made = await repository.ensure_membership(
        session, tenant.id, user.id, token_role.value, joined_at=now
    )
    # Before any request names its caller (the guard resolves access first): the caller, whose
    # token brought the provider's word, is who acts.
    caller = actors.of_identity(identity)
    if made:
        _announce(session, "member.added", member, user, actor=caller)
    issued = issued_at(identity)
    stored_is_newer = member.role_set_at is not None and (
        issued is None or issued <= member.role_set_at
    )
    if stored_is_newer:
        if member.status != ACTIVE:
            raise NotAMember(f"You are no longer a member of organization {org_id!r}.")
    elif member.role != token_role.value or member.status != ACTIVE:
        # The token is the provider's newer word: a role changed there, or a member re-added.
        before = (member.role, member.status)
        member.role = token_role.value
        member.status, member.removed_at = ACTIVE, None
        member.role_set_at = issued
        _announce_change(session, member, user, *before, actor=caller)
    _touch(member, now)
    return tenant, user, Role(member.role)


def _announce(
    session: AsyncSession,
    type_: str,
    member: Membership,
    user: User,
    *,
    changes: dict[str, Any] | None = None,
    actor: actors.Actor | None = None,
) -> None:
    events.emit(
        session,
        member.tenant_id,
        type_,
        resource_id=user.id,
        payload={
            "user_id": user.id,
            "idp_user_id": user.idp_user_id,
            "email": user.email,
            "name": user.name,
            "role": member.role,
        },
        changes=changes,
        actor=actor,
    )


def _announce_change(
    session: AsyncSession,
    member: Membership,
    user: User,
    role_before: str,
    status_before: str,
    *,
    actor: actors.Actor | None = None,
) -> None:
    """The event of a membership that was (role_before, status_before) and is what it is now:
    added (active again), removed, or its role changed; nothing when neither changed."""
    if member.status != status_before:
        kind = "member.added" if member.status == ACTIVE else "member.removed"
        _announce(session, kind, member, user, actor=actor)
    elif member.status == ACTIVE and member.role != role_before:
        changes = {"role": {"from": role_before, "to": member.role}}
        _announce(session, "member.role_changed", member, user, changes=changes, actor=actor)


def issued_at(identity: Identity) -> datetime | None:
    """When the token was issued (`iat`), if it says."""
    value = identity.claims.get("iat")
    if isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError, OSError, ValueError):
            return datetime.fromtimestamp(value, UTC)
    return None


def _touch(member: Membership, now: datetime) -> None:
    """Record activity, at most once per ACTIVITY_RESOLUTION (this runs on a cache miss)."""
    if member.last_active_at is None or now - member.last_active_at >= ACTIVITY_RESOLUTION:
        member.last_active_at = now
    if member.joined_at is None:
        member.joined_at = member.created_at


async def _stored_membership(
    session: AsyncSession, identity: Identity, org_id: str
) -> tuple[Tenant, User, Role]:
    refused = NotAMember(f"You are not a member of organization {org_id!r}.")
    tenant = await repository.tenant_by_org(session, org_id)
    user = await repository.user_by_subject(session, identity.subject)
    if tenant is None or user is None:
        raise refused
    member = await repository.membership(session, tenant.id, user.id)
    if member is None or member.status != ACTIVE:
        raise refused
    _touch(member, utcnow())
    return tenant, user, Role(member.role)


def _refresh_profile(user: User, identity: Identity) -> None:
    email = text.cleaned(identity.email or "", EMAIL_LENGTH)
    if email and user.email != email:
        user.email = email
    name = text.cleaned(identity.name or "", NAME_LENGTH)
    if name and user.name != name:
        user.name = name


async def member_profile(session: AsyncSession, access: TenantAccess) -> Member:
    user = await repository.user_by_id(session, access.user_id)
    assert user is not None, "a resolved tenant access always has its user"
    return Member.model_validate(user)


async def member_subject(session: AsyncSession, tenant_id: uuid.UUID, user_ref: str) -> str | None:
    """The identity provider's id of the member `user_ref` names (that id, or our user id), or
    None when no such user belongs to the tenant."""
    user = await repository.user_by_subject(session, user_ref)
    if user is None:
        try:
            user = await repository.user_by_id(session, uuid.UUID(user_ref))
        except ValueError:
            return None
    if user is None:
        return None
    member = await repository.membership(session, tenant_id, user.id)
    if member is None or member.status != ACTIVE:
        return None
    return user.idp_user_id


async def lock_tenant(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Serialize this transaction with the tenant's other locked ones until it ends. Whoever
    locks the tenant and one of its records locks the tenant first."""
    await repository.lock_tenant(session, tenant_id)


async def lock_many(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """`lock_tenant` for each of these tenants at once (the scheduler starts many tenants' jobs
    in one transaction), in an order every caller shares: the time zone of each that is active.
    A suspended tenant is locked and left out (nobody acts in it, its schedule neither)."""
    return {
        tenant_id: timezone
        for tenant_id, status, timezone in await repository.lock_tenants(session, tenant_ids)
        if status == "active"
    }


async def active_tenant(session: AsyncSession, ref: str) -> uuid.UUID | None:
    """The id of the tenant `ref` names, by its own id or else by its organization's id, when
    it exists and is not suspended."""
    tenant = None
    with contextlib.suppress(ValueError):
        tenant = await repository.tenant_by_id(session, uuid.UUID(ref))
    if tenant is None:
        tenant = await repository.tenant_by_org(session, ref)
    return tenant.id if tenant is not None and tenant.status == "active" else None


# --- the organization's time zone -------------------------------------------------------------


async def timezone_of(session: AsyncSession, tenant_id: uuid.UUID) -> str:
    """The IANA zone the organization's schedules and dates are read in (default UTC)."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    return tenant.timezone if tenant is not None else "UTC"


async def set_timezone(session: AsyncSession, tenant_id: uuid.UUID, timezone: str) -> None:
    """Set the zone (a valid IANA name); the caller locked the tenant."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    assert tenant is not None, "a resolved tenant exists"
    tenant.timezone = timezone


async def name_of(session: AsyncSession, tenant_id: uuid.UUID) -> str:
    """The organization's name (settings.get shows it)."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    assert tenant is not None, "a resolved tenant exists"
    return tenant.name


async def rename(session: AsyncSession, tenant_id: uuid.UUID, name: str) -> None:
    """Set the organization's name (settings.update: plain text, already checked)."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    assert tenant is not None, "a resolved tenant exists"
    tenant.name = name


def in_zone(moment: datetime, timezone: str) -> datetime:
    """`moment` in UTC; without an offset it is read on the organization's wall clock."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(timezone))
    return aware.astimezone(UTC)


# --- members, kept in step with the identity provider (the team domain drives these) ----------


def access_scope(org_id: str) -> str:
    """What one change of the organization's memberships retires in every process's access
    cache (tenants/guard.py)."""
    return f"access:{org_id}"


async def members_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    role: str | None,
    limit: int,
    offset: int,
) -> tuple[list[TeamMember], int]:
    rows, total = await repository.members_page(
        session, tenant_id, search=search, role=role, limit=limit, offset=offset
    )
    return [TeamMember.model_validate(row) for row in rows], total


async def team_member(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID
) -> TeamMember | None:
    row = await repository.member(session, tenant_id, user_id)
    return None if row is None else TeamMember.model_validate(dict(row))


async def member_names(
    session: AsyncSession, tenant_id: uuid.UUID, user_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """What to call these users, members of the organization now or before: their name, else
    their email; a user who never was one is absent."""
    rows = await repository.members_named(session, tenant_id, user_ids)
    return {user_id: name or email or str(user_id) for user_id, name, email in rows}


async def active_members(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    return await repository.active_members(session, tenant_id)


async def active_admins(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    return await repository.active_admins(session, tenant_id)


async def is_active_member_email(session: AsyncSession, tenant_id: uuid.UUID, email: str) -> bool:
    return await repository.active_member_by_email(session, tenant_id, email) is not None


async def key_user(session: AsyncSession, subject: str, name: str) -> uuid.UUID:
    """The user an API key acts as (`subject` apikey_<id>, named after the key): a user of its
    own, with no membership, so the team never lists it and what it makes names the key."""
    user = await repository.ensure_user(session, subject)
    user.name = text.cleaned(name, NAME_LENGTH)
    return user.id


async def key_access(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID, role: Role
) -> TenantAccess:
    """The access an API key of the tenant gives (403 when the tenant is suspended)."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    if tenant is None or tenant.status != "active":
        raise TenantSuspended("This organization's tenant is suspended.")
    return TenantAccess(
        tenant_id=tenant.id,
        org_id=tenant.idp_org_id,
        org_name=tenant.name,
        user_id=user_id,
        role=role,
    )


# The user background work acts as when it acts for the organization itself (no one asked).
SYSTEM_USER_ID = uuid.UUID(int=0)


async def system_access(session: AsyncSession, tenant_id: uuid.UUID) -> TenantAccess | None:
    """The access background work acting for an active organization has (None when it is gone
    or suspended): an admin's, as the system user."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    if tenant is None or tenant.status != "active":
        return None
    return TenantAccess(
        tenant_id=tenant.id,
        org_id=tenant.idp_org_id,
        org_name=tenant.name,
        user_id=SYSTEM_USER_ID,
        role=Role.admin,
    )


async def tenant_of_org(session: AsyncSession, org_id: str) -> Tenant | None:
    return await repository.tenant_by_org(session, org_id)


# --- the operator's word on a tenant (admin.*) ------------------------------------------------


async def tenant_by_id(session: AsyncSession, tenant_id: uuid.UUID) -> Tenant | None:
    """The tenant's row, suspended or not (the operators' views read it whole)."""
    return await repository.tenant_by_id(session, tenant_id)


async def set_status(
    session: AsyncSession, tenant: Tenant, status: str, *, reason: str, by: str, at: datetime
) -> bool:
    """Suspend (`suspended`) or reactivate (`active`) the tenant; whether that changed it. A
    suspension keeps its reason, time and author; a reactivation clears them."""
    if tenant.status == status:
        return False
    tenant.status = status
    if status == "suspended":
        tenant.suspended_reason, tenant.suspended_at, tenant.suspended_by = reason, at, by
    else:
        tenant.suspended_reason = tenant.suspended_at = tenant.suspended_by = None
    return True


@dataclass(frozen=True)
class Overrides:
    """The operator's overrides of a tenant's plan (until a time) and limits
    (admin.updateTenant)."""

    plan_id: uuid.UUID | None
    plan_until: datetime | None
    limits: dict[str, int | None] | None


async def overrides_of(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime | None = None
) -> Overrides:
    """What the operator overrides for the tenant, as it applies `now`: a plan override past
    its `until` no longer applies (None)."""
    tenant = await repository.tenant_by_id(session, tenant_id)
    if tenant is None:
        return Overrides(None, None, None)
    now = now or utcnow()
    current = tenant.plan_override_until is None or tenant.plan_override_until > now
    plan = tenant.plan_override_id if current else None
    return Overrides(
        plan, tenant.plan_override_until if plan else None, tenant.limits_override or None
    )


def directory(*, search: str | None, status: str | None) -> Select[Any]:
    """Every tenant matching `search` and `status` as the operators' list shows it (id,
    organization id, name, status, created_at, active members, last activity), a statement
    for the operators' views to add their columns to (correlated with its `id`) and run."""
    return repository.directory(search=search, status=status)


def plan_override_column(tenant_id: ColumnElement[uuid.UUID], now: datetime) -> ColumnElement[Any]:
    """`overrides_of(...).plan_id` as SQL: the plan override that applies `now` to the tenant
    whose id is the enclosing query's `tenant_id` (null: none), for one statement over many
    tenants."""
    return repository.plan_override_column(tenant_id, now)


def tenant_id_of_org_column(org_id: ColumnElement[str]) -> ColumnElement[uuid.UUID]:
    """`tenant_of_org(...).id` as SQL: the tenant of the organization the enclosing query's
    `org_id` names (null: none)."""
    return repository.tenant_id_of_org_column(org_id)


async def org_of(session: AsyncSession, tenant_id: uuid.UUID) -> str | None:
    tenant = await repository.tenant_by_id(session, tenant_id)
    return tenant.idp_org_id if tenant is not None else None


async def active_orgs(session: AsyncSession) -> list[tuple[uuid.UUID, str]]:
    """(tenant id, organization id) of every active tenant."""
    return [(tenant.id, tenant.idp_org_id) for tenant in await repository.active_tenants(session)]


async def active_member_subjects(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, str]:
    """The provider's user id -> role of every active member."""
    return await repository.active_member_roles(session, tenant_id)


async def active_member_emails(
    session: AsyncSession, tenant_id: uuid.UUID, subjects: Collection[str]
) -> dict[str, str]:
    """The provider's user id -> email of those of `subjects` who are active members with an
    email (whom notification mail can reach)."""
    return await repository.active_member_emails(session, tenant_id, subjects)


@dataclass(frozen=True)
class Profile:
    """What the provider says of a user (any part may be missing)."""

    email: str | None = None
    name: str | None = None
    avatar_url: str | None = None


def _apply_profile(user: User, profile: Profile) -> None:
    email = text.cleaned(profile.email or "", EMAIL_LENGTH)
    if email:
        user.email = email
    name = text.cleaned(profile.name or "", NAME_LENGTH)
    if name:
        user.name = name
    avatar = text.cleaned(profile.avatar_url or "", URL_LENGTH)
    if avatar.startswith("https://"):
        user.avatar_url = avatar


def _is_stale(stored: datetime | None, incoming: datetime | None) -> bool:
    """An event older than what was applied already changes nothing (events arrive in any
    order). Without a time of its own an event is never stale."""
    return stored is not None and incoming is not None and incoming < stored


ADDED, CHANGED, UNCHANGED = "added", "changed", "unchanged"


async def set_member_state(
    session: AsyncSession,
    org_id: str,
    idp_user_id: str,
    *,
    role: Role | None,
    removed: bool,
    at: datetime,
    updated_at: datetime | None = None,
    joined_at: datetime | None = None,
    membership_id: str | None = None,
    profile: Profile | None = None,
    provision: bool = True,
) -> str:
    """Make the stored membership say what the provider says (a role, or removed), as of `at`
    (the provider's time of it). A word older than the last one applied (`updated_at` against
    the stored one) changes nothing. Without the tenant or the user, a removal is moot and an
    addition provisions them when `provision`. ADDED or CHANGED when anything an access depends
    on changed (role, status), else UNCHANGED."""
    tenant = await repository.tenant_by_org(session, org_id)
    if tenant is None:
        if removed or not provision:
            return UNCHANGED
        tenant = await repository.ensure_tenant(session, org_id, org_id)
    user = await repository.user_by_subject(session, idp_user_id)
    if user is None:
        if removed or not provision:
            return UNCHANGED
        user = await repository.ensure_user(session, idp_user_id)
    if profile is not None:
        _apply_profile(user, profile)
    member = await repository.membership_for_update(session, tenant.id, user.id)
    if member is None:
        if removed or role is None:
            return UNCHANGED
        member, made = await repository.ensure_membership(
            session, tenant.id, user.id, role.value, joined_at=joined_at or at
        )
        member.role_set_at, member.idp_updated_at = at, updated_at
        member.idp_membership_id = membership_id or member.idp_membership_id
        if made:
            _announce(session, "member.added", member, user)
        return ADDED
    if _is_stale(member.idp_updated_at, updated_at):
        return UNCHANGED
    member.idp_updated_at = updated_at or member.idp_updated_at
    member.idp_membership_id = membership_id or member.idp_membership_id
    before = (member.role, member.status)
    if removed:
        if member.status != REMOVED:
            member.status, member.removed_at = REMOVED, at
    else:
        member.status, member.removed_at = ACTIVE, None
        if role is not None:
            member.role = role.value
        if joined_at is not None and member.joined_at is None:
            member.joined_at = joined_at
    changed = (member.role, member.status) != before
    if changed or member.role_set_at is None or member.role_set_at < at:
        member.role_set_at = at
    if not changed:
        return UNCHANGED
    _announce_change(session, member, user, *before)
    return ADDED if before[1] == REMOVED and not removed else CHANGED


async def apply_user(
    session: AsyncSession,
    idp_user_id: str,
    profile: Profile,
    updated_at: datetime | None,
) -> bool:
    """The provider's user.updated: the stored profile follows unless the event is stale."""
    user = await repository.user_by_subject(session, idp_user_id)
    if user is None or _is_stale(user.idp_updated_at, updated_at):
        return False
    _apply_profile(user, profile)
    user.idp_updated_at = updated_at or user.idp_updated_at
    return True


async def remove_user(session: AsyncSession, idp_user_id: str, at: datetime) -> list[str]:
    """The provider's user.deleted: every membership removed; the organizations affected."""
    user = await repository.user_by_subject(session, idp_user_id)
    if user is None:
        return []
    affected = []
    for member in await repository.memberships_of_user(session, user.id):
        if member.status == ACTIVE:
            member.status, member.removed_at, member.role_set_at = REMOVED, at, at
            _announce(session, "member.removed", member, user)
            tenant = await repository.tenant_by_id(session, member.tenant_id)
            if tenant is not None:
                affected.append(tenant.idp_org_id)
    return affected


async def apply_organization(
    session: AsyncSession,
    org_id: str,
    *,
    name: str | None,
    deleted: bool,
    updated_at: datetime | None,
) -> bool:
    """The provider's organization.created|updated|deleted: the tenant made, renamed, or closed
    (status `deleted`: every request to it is refused). True when access changed."""
    tenant = await repository.tenant_by_org(session, org_id)
    if tenant is None:
        if deleted:
            return False
        cleaned = text.cleaned(name or "", NAME_LENGTH) or org_id
        tenant = await repository.ensure_tenant(session, org_id, cleaned)
        tenant.idp_updated_at = updated_at
        return False
    if _is_stale(tenant.idp_updated_at, updated_at):
        return False
    tenant.idp_updated_at = updated_at or tenant.idp_updated_at
    if deleted:
        changed = tenant.status != "deleted"
        tenant.status = "deleted"
        return changed
    cleaned = text.cleaned(name or "", NAME_LENGTH)
    if cleaned and cleaned != tenant.name:
        tenant.name = cleaned
        return True  # the name is part of every cached access
    return False


async def sole_user_with_email(session: AsyncSession, email: str) -> str | None:
    """The provider's id of the one user known by `email`; None when none or several are."""
    users = await repository.users_by_email(session, email)
    return users[0].idp_user_id if len(users) == 1 else None
