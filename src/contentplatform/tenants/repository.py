"""Every query on tenants, users and memberships."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from contentplatform.kit.db import cross_tenant, insert_ignoring_conflicts, page_of
from contentplatform.tenants.models import Membership, Tenant, User


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def tenant_by_org(session: AsyncSession, org_id: str) -> Tenant | None:
    result = await session.execute(select(Tenant).where(Tenant.idp_org_id == org_id))
    return result.scalar_one_or_none()


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
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


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def user_by_subject(session: AsyncSession, subject: str) -> User | None:
    result = await session.execute(select(User).where(User.idp_user_id == subject))
    return result.scalar_one_or_none()


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
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
    session: AsyncSession,
    tenant_id: uuid.UUID,
    user_id: uuid.UUID,
    role: str,
    joined_at: datetime | None = None,
) -> tuple[Membership, bool]:
    """The membership, made (active, `role`) when there is none: it, and whether this call
    made it (of two racing to, only one did)."""
    found = await membership(session, tenant_id, user_id)
    made = False
    if found is None:
        result = await session.execute(
            insert_ignoring_conflicts(
                session,
                Membership,
                id=uuid.uuid4(),
                tenant_id=tenant_id,
                user_id=user_id,
                role=role,
                status="active",
                joined_at=joined_at,
            )
        )
        made = bool(result.rowcount)  # type: ignore[attr-defined]
        found = await membership(session, tenant_id, user_id)
    assert found is not None
    return found, made


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
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


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def lock_tenants(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> list[tuple[uuid.UUID, str, str]]:
    """`lock_tenant` for each of these tenants, in one statement: (id, status, timezone) of each.

    PostgreSQL locks their rows in the order of their ids (in the mode lock_tenant's UPDATE
    takes), so that two transactions locking overlapping sets never wait on each other in turn;
    SQLite takes its one write lock.
    """
    ordered = sorted(set(tenant_ids))
    if not ordered:
        return []
    if session.get_bind().dialect.name == "sqlite":
        await session.execute(
            update(Tenant)
            .where(Tenant.id.in_(ordered))
            .values(updated_at=Tenant.updated_at)
            .execution_options(synchronize_session=False)
        )
    statement = (
        select(Tenant.id, Tenant.status, Tenant.timezone)
        .where(Tenant.id.in_(ordered))
        .order_by(Tenant.id)
        .with_for_update(key_share=True)  # FOR NO KEY UPDATE: what an UPDATE of the row takes
    )
    return [(row.id, row.status, row.timezone) for row in await session.execute(statement)]


# --- members, as the team sees them ------------------------------------------------------------

MEMBER_COLUMNS = (
    Membership.user_id,
    User.idp_user_id,
    User.email,
    User.name,
    User.avatar_url,
    Membership.role,
    Membership.status,
    Membership.joined_at,
    Membership.last_active_at,
)


def _members(tenant_id: uuid.UUID) -> Any:
    return (
        select(*MEMBER_COLUMNS)
        .join(User, User.id == Membership.user_id)
        .where(Membership.tenant_id == tenant_id)
    )


async def members_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    role: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Active members first, then by when they joined."""
    statement = _members(tenant_id)
    if role is not None:
        statement = statement.where(Membership.role == role)
    if search:
        pattern = f"%{_escaped_like(search.lower())}%"
        statement = statement.where(
            or_(
                func.lower(User.email).like(pattern, escape="\\"),
                func.lower(User.name).like(pattern, escape="\\"),
            )
        )
    rows, total = await page_of(
        session,
        statement,
        Membership.status,  # "active" sorts before "removed"
        Membership.joined_at,
        Membership.created_at,
        Membership.id,
        limit=limit,
        offset=offset,
    )
    return rows, total


def _escaped_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def members_named(
    session: AsyncSession, tenant_id: uuid.UUID, user_ids: Collection[uuid.UUID]
) -> list[Any]:
    """(user_id, name, email) of these users who are or were members of the organization."""
    if not user_ids:
        return []
    statement = (
        select(Membership.user_id, User.name, User.email)
        .join(User, User.id == Membership.user_id)
        .where(Membership.tenant_id == tenant_id, Membership.user_id.in_(set(user_ids)))
    )
    return list((await session.execute(statement)).all())


async def member(session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID) -> Any:
    """One member's row (the columns of MEMBER_COLUMNS), or None."""
    result = await session.execute(_members(tenant_id).where(Membership.user_id == user_id))
    return result.mappings().one_or_none()


async def membership_for_update(
    session: AsyncSession, tenant_id: uuid.UUID, user_id: uuid.UUID
) -> Membership | None:
    result = await session.execute(
        select(Membership)
        .where(Membership.tenant_id == tenant_id, Membership.user_id == user_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return result.scalar_one_or_none()


async def active_members(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    result = await session.scalar(
        select(func.count())
        .select_from(Membership)
        .where(Membership.tenant_id == tenant_id, Membership.status == "active")
    )
    return int(result or 0)


async def active_admins(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    result = await session.scalar(
        select(func.count())
        .select_from(Membership)
        .where(
            Membership.tenant_id == tenant_id,
            Membership.role == "admin",
            Membership.status == "active",
        )
    )
    return int(result or 0)


async def active_member_by_email(
    session: AsyncSession, tenant_id: uuid.UUID, email: str
) -> Membership | None:
    result = await session.execute(
        select(Membership)
        .join(User, User.id == Membership.user_id)
        .where(
            Membership.tenant_id == tenant_id,
            Membership.status == "active",
            func.lower(User.email) == email.lower(),
        )
    )
    return result.scalars().first()


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def users_by_email(session: AsyncSession, email: str) -> list[User]:
    result = await session.execute(select(User).where(func.lower(User.email) == email.lower()))
    return list(result.scalars())


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def memberships_of_user(session: AsyncSession, user_id: uuid.UUID) -> list[Membership]:
    result = await session.execute(select(Membership).where(Membership.user_id == user_id))
    return list(result.scalars())


async def active_memberships(session: AsyncSession, tenant_id: uuid.UUID) -> list[Membership]:
    result = await session.execute(
        select(Membership).where(Membership.tenant_id == tenant_id, Membership.status == "active")
    )
    return list(result.scalars())


async def active_member_roles(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, str]:
    """The provider's user id -> role of every active member, in one query."""
    result = await session.execute(
        select(User.idp_user_id, Membership.role)
        .join(User, User.id == Membership.user_id)
        .where(Membership.tenant_id == tenant_id, Membership.status == "active")
    )
    return dict(result.tuples().all())


async def active_member_emails(
    session: AsyncSession, tenant_id: uuid.UUID, subjects: Collection[str]
) -> dict[str, str]:
    """The provider's user id -> email of those of `subjects` who are active members and have
    an email (issue 40: notification mail)."""
    if not subjects:
        return {}
    result = await session.execute(
        select(User.idp_user_id, User.email)
        .join(Membership, User.id == Membership.user_id)
        .where(
            Membership.tenant_id == tenant_id,
            Membership.status == "active",
            User.idp_user_id.in_(list(subjects)),
            User.email.is_not(None),
        )
    )
    return {subject: email for subject, email in result.tuples().all() if email}


@cross_tenant("tenants and users are the platform's; a user belongs to several tenants")
async def active_tenants(session: AsyncSession) -> list[Tenant]:
    result = await session.execute(select(Tenant).where(Tenant.status == "active"))
    return list(result.scalars())


# --- pieces of the operators' queries (admin.*), each one statement over every tenant ----------


def directory(*, search: str | None, status: str | None) -> Select[Any]:
    """Every tenant matching `search` (in its name or organization id, case-insensitive; `%`
    and `_` are plain characters) and `status`, as the operators' list shows it: its own
    columns, its active members and its members' last activity, one row each. Not run here:
    the caller adds other domains' columns, correlated with its `id`, and runs it."""
    members = (
        select(func.count())
        .where(Membership.tenant_id == Tenant.id, Membership.status == "active")
        .scalar_subquery()
    )
    last_active = (
        select(func.max(Membership.last_active_at))
        .where(Membership.tenant_id == Tenant.id)
        .scalar_subquery()
    )
    statement = select(
        Tenant.id,
        Tenant.idp_org_id,
        Tenant.name,
        Tenant.status,
        Tenant.created_at,
        members.label("members"),
        last_active.label("last_active_at"),
    )
    if search:
        pattern = "%" + _escaped_like(search.lower()) + "%"
        statement = statement.where(
            or_(
                func.lower(Tenant.name).like(pattern, escape="\\"),
                func.lower(Tenant.idp_org_id).like(pattern, escape="\\"),
            )
        )
    if status is not None:
        statement = statement.where(Tenant.status == status)
    return statement


def plan_override_column(tenant_id: ColumnElement[uuid.UUID], now: datetime) -> ColumnElement[Any]:
    """The operator's plan override of the tenant whose id is `tenant_id` (a column of the
    enclosing query) as it applies `now` (past its `until`: null), as a correlated subquery."""
    tenant = aliased(Tenant)
    current = and_(
        tenant.plan_override_id.is_not(None),
        or_(tenant.plan_override_until.is_(None), tenant.plan_override_until > now),
    )
    return (
        select(case((current, tenant.plan_override_id), else_=None))
        .where(tenant.id == tenant_id)
        .correlate_except(tenant)
        .scalar_subquery()
    )


def tenant_id_of_org_column(org_id: ColumnElement[str]) -> ColumnElement[uuid.UUID]:
    """The id of the tenant of the organization `org_id` (an expression of the enclosing
    query) names, as a correlated subquery (null: none)."""
    return (
        select(Tenant.id)
        .where(Tenant.idp_org_id == org_id)
        .limit(1)
        .correlate_except(Tenant)
        .scalar_subquery()
    )
