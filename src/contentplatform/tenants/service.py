"""Resolving the caller's tenant and role; just-in-time provisioning."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Identity, Role, TenantAccess
from contentplatform.kit.errors import Forbidden
from contentplatform.tenants import repository
from contentplatform.tenants.models import Tenant, User
from contentplatform.tenants.schemas import Member


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
        raise Forbidden("This organization's tenant is suspended.")
    return TenantAccess(
        tenant_id=tenant.id, org_id=org_id, org_name=tenant.name, user_id=user.id, role=role
    )


async def _provision(
    session: AsyncSession, identity: Identity, org_id: str, role: Role
) -> tuple[Tenant, User]:
    tenant = await repository.ensure_tenant(
        session, org_id, identity.organization_names.get(org_id, org_id)
    )
    user = await repository.ensure_user(session, identity.subject)
    _refresh_profile(user, identity)
    member = await repository.ensure_membership(session, tenant.id, user.id, role.value)
    if member.role != role.value:
        member.role = role.value
    return tenant, user


async def _stored_membership(
    session: AsyncSession, identity: Identity, org_id: str
) -> tuple[Tenant, User, Role]:
    refused = Forbidden(f"You are not a member of organization {org_id!r}.")
    tenant = await repository.tenant_by_org(session, org_id)
    user = await repository.user_by_subject(session, identity.subject)
    if tenant is None or user is None:
        raise refused
    member = await repository.membership(session, tenant.id, user.id)
    if member is None:
        raise refused
    return tenant, user, Role(member.role)


def _refresh_profile(user: User, identity: Identity) -> None:
    if identity.email and user.email != identity.email:
        user.email = identity.email
    if identity.name and user.name != identity.name:
        user.name = identity.name


async def member_profile(session: AsyncSession, access: TenantAccess) -> Member:
    user = await repository.user_by_id(session, access.user_id)
    assert user is not None, "a resolved tenant access always has its user"
    return Member(id=user.id, idp_user_id=user.idp_user_id, email=user.email, name=user.name)


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
