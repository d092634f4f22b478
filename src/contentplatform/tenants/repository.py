"""Every query on tenants, users and memberships."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import insert_ignoring_conflicts
from contentplatform.tenants.models import Membership, Tenant, User


async def tenant_by_org(session: AsyncSession, org_id: str) -> Tenant | None:
    result = await session.execute(select(Tenant).where(Tenant.idp_org_id == org_id))
    return result.scalar_one_or_none()


async def ensure_tenant(session: AsyncSession, org_id: str, name: str) -> Tenant:
    """Get or create, safe against two first requests racing to create the same tenant."""
    tenant = await tenant_by_org(session, org_id)
    if tenant is None:
        await session.execute(
            insert_ignoring_conflicts(
                session, Tenant, id=uuid.uuid4(), idp_org_id=org_id, name=name, status="active"
            )
        )
        tenant = await tenant_by_org(session, org_id)
    assert tenant is not None
    return tenant


async def user_by_subject(session: AsyncSession, subject: str) -> User | None:
    result = await session.execute(select(User).where(User.idp_user_id == subject))
    return result.scalar_one_or_none()


async def ensure_user(session: AsyncSession, subject: str) -> User:
    user = await user_by_subject(session, subject)
    if user is None:
        await session.execute(
            insert_ignoring_conflicts(session, User, id=uuid.uuid4(), idp_user_id=subject)
        )
        user = await user_by_subject(session, subject)
    assert user is not None
    return user


async def membership(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID
) -> Membership | None:
    result = await session.execute(
        select(Membership).where(Membership.tenant_id == tenant_id, Membership.user_id == user_id)
    )
    return result.scalar_one_or_none()


async def ensure_membership(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID, role: str
) -> Membership:
    found = await membership(session, tenant_id, user_id)
    if found is None:
        await session.execute(
            insert_ignoring_conflicts(
                session,
                Membership,
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                user_id=user_id,
                role=role,
            )
        )
        found = await membership(session, tenant_id, user_id)
    assert found is not None
    return found


async def user_by_id(session: AsyncSession, user_id: uuid.UUID) -> User | None:
    return await session.get(User, user_id)


async def tenant_by_id(session: AsyncSession, tenant_id: uuid.UUID) -> Tenant | None:
    return await session.get(Tenant, tenant_id)


async def lock_tenant(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Serialize this transaction with the tenant's other locked ones until it ends.

    A no-op write: PostgreSQL locks the tenant's row; SQLite takes its one write lock (which,
    as the transaction's first write, also keeps its snapshot current).
    """
    await session.execute(
        update(Tenant).where(Tenant.id == tenant_id).values(updated_at=Tenant.updated_at)
    )
