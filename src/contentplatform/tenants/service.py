"""Resolving the caller's tenant and role; just-in-time provisioning."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Identity, Role, TenantAccess
from contentplatform.kit import text
from contentplatform.tenants import repository
from contentplatform.tenants.errors import NotAMember, TenantSuspended
from contentplatform.tenants.models import Tenant, User
from contentplatform.tenants.schemas import Member

# What the tenants' and users' columns hold.
NAME_LENGTH = 255
EMAIL_LENGTH = 320


async def resolve_access(session: AsyncSession, identity: Identity, org_id: str) -> TenantAccess:
    """The tenant named by `org_id` and the caller's role in it.

    A token that itself vouches for membership of the organization provisions the tenant, the user
    and the membership on first sight and keeps the stored role in step with the token. Otherwise
    the stored membership decides; without one the caller is refused.
    """
    token_role = identity.organizations.get(org_id)
    if token_role is not None:
        tenant, user = await _provision(session, identity, org_id, token_role)
        role = token_role
    else:
        tenant, user, role = await _stored_membership(session, identity, org_id)
    if tenant.status != "active":
        raise TenantSuspended("This organization's tenant is suspended.")
    return TenantAccess(
        tenant_id=tenant.id, org_id=org_id, org_name=tenant.name, user_id=user.id, role=role
    )


async def _provision(
    session: AsyncSession, identity: Identity, org_id: str, role: Role
) -> tuple[Tenant, User]:
    # The names are the identity provider's, whatever they hold: made plain, never refused.
    name = text.cleaned(identity.organization_names.get(org_id, ""), NAME_LENGTH) or org_id
    tenant = await repository.ensure_tenant(session, org_id, name)
    user = await repository.ensure_user(session, identity.subject)
    _refresh_profile(user, identity)
    member = await repository.ensure_membership(session, tenant.id, user.id, role.value)
    if member.role != role.value:
        member.role = role.value
    return tenant, user


async def _stored_membership(
    session: AsyncSession, identity: Identity, org_id: str
) -> tuple[Tenant, User, Role]:
    refused = NotAMember(f"You are not a member of organization {org_id!r}.")
    tenant = await repository.tenant_by_org(session, org_id)
    user = await repository.user_by_subject(session, identity.subject)
    if tenant is None or user is None:
        raise refused
    member = await repository.membership(session, tenant.id, user.id)
    if member is None:
        raise refused
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
    if user is None or await repository.membership(session, tenant_id, user.id) is None:
        return None
    return user.idp_user_id


async def lock_tenant(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Serialize this transaction with the tenant's other locked ones until it ends. Whoever
    locks the tenant and one of its records locks the tenant first."""
    await repository.lock_tenant(session, tenant_id)


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


def in_zone(moment: datetime, timezone: str) -> datetime:
    """`moment` in UTC; without an offset it is read on the organization's wall clock."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(timezone))
    return aware.astimezone(UTC)
