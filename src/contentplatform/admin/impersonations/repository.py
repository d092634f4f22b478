"""Every query of impersonation. Sessions and superadmins are the platform's (a superadmin acts
across tenants), so their queries are keyed by session or superadmin, not by a tenant."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.admin.models import ImpersonationSession, KnownSuperadmin
from contentplatform.kit.db import cross_tenant, insert_ignoring_conflicts


@cross_tenant("a superadmin's sessions span tenants; the session id is how one is found")
async def session_by_id(
    session: AsyncSession, session_id: uuid.UUID, *, for_update: bool = False
) -> ImpersonationSession | None:
    statement = select(ImpersonationSession).where(ImpersonationSession.id == session_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


@cross_tenant("a superadmin's open session may be in any tenant")
async def close_expired(session: AsyncSession, actor: str, now: datetime) -> None:
    """End the superadmin's sessions that outlived their expiry (at that expiry), so that the
    one-open-session index counts only live ones."""
    await session.execute(
        update(ImpersonationSession)
        .where(
            ImpersonationSession.actor == actor,
            ImpersonationSession.ended_at.is_(None),
            ImpersonationSession.expires_at <= now,
        )
        .values(ended_at=ImpersonationSession.expires_at, updated_at=now)
    )


@cross_tenant("a superadmin's open session may be in any tenant")
async def open_session_of(session: AsyncSession, actor: str) -> ImpersonationSession | None:
    result = await session.execute(
        select(ImpersonationSession).where(
            ImpersonationSession.actor == actor, ImpersonationSession.ended_at.is_(None)
        )
    )
    return result.scalars().first()


@cross_tenant("the row carries its own tenant")
async def add_session(session: AsyncSession, **values: Any) -> bool:
    """Insert an open session; False when the superadmin holds one already (the unique index
    of open sessions: two starts at once open one)."""
    statement = insert_ignoring_conflicts(session, ImpersonationSession, **values).returning(
        ImpersonationSession.id
    )
    return (await session.execute(statement)).scalar_one_or_none() is not None


@cross_tenant("superadmins are the platform's")
async def is_known_superadmin(session: AsyncSession, subject: str) -> bool:
    found = await session.scalar(
        select(KnownSuperadmin.id).where(KnownSuperadmin.subject == subject)
    )
    return found is not None


@cross_tenant("superadmins are the platform's")
async def add_superadmin(session: AsyncSession, subject: str) -> None:
    await session.execute(insert_ignoring_conflicts(session, KnownSuperadmin, subject=subject))
