"""Every query on invitations (always of one tenant) and inbound identity events (the
provider's, of no tenant until processed)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, owned_by, page_of, plain
from contentplatform.kit.inbound import InboundEvents
from contentplatform.team.models import IdentityEvent, Invitation

get_invitation = Owned(Invitation)


def _with_status(statement: Any, status: str, now: datetime) -> Any:
    """A pending invitation past its expiry reads as expired."""
    live = or_(Invitation.expires_at.is_(None), Invitation.expires_at > now)
    if status == "pending":
        return statement.where(Invitation.status == "pending", live)
    if status == "expired":
        return statement.where(
            or_(
                Invitation.status == "expired",
                and_(Invitation.status == "pending", Invitation.expires_at <= now),
            )
        )
    return statement.where(Invitation.status == status)


async def pending_invitations(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    statement = select(func.count()).select_from(Invitation)
    statement = statement.where(Invitation.tenant_id == tenant_id)
    return int(await session.scalar(_with_status(statement, "pending", now)) or 0)


async def invitations_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    status: str | None,
    now: datetime,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    statement = plain(select(Invitation).where(Invitation.tenant_id == tenant_id))
    if status is not None:
        statement = _with_status(statement, status, now)
    return await page_of(
        session,
        statement,
        Invitation.created_at.desc(),
        Invitation.id,
        limit=limit,
        offset=offset,
    )


async def pending_for_email(
    session: AsyncSession, tenant_id: uuid.UUID, email: str, now: datetime
) -> Invitation | None:
    statement = select(Invitation).where(
        Invitation.tenant_id == tenant_id, Invitation.email == email.lower()
    )
    result = await session.execute(_with_status(statement, "pending", now))
    return result.scalars().first()


async def invitation_by_idp_id(
    session: AsyncSession, tenant_id: uuid.UUID, idp_invitation_id: str
) -> Invitation | None:
    return await owned_by(session, Invitation, tenant_id, idp_invitation_id=idp_invitation_id)


async def invitations_of(session: AsyncSession, tenant_id: uuid.UUID) -> list[Invitation]:
    result = await session.execute(select(Invitation).where(Invitation.tenant_id == tenant_id))
    return list(result.scalars())


def add_invitation(session: AsyncSession, tenant_id: uuid.UUID, **values: Any) -> Invitation:
    invitation = Invitation(id=uuid.uuid4(), tenant_id=tenant_id, **values)
    session.add(invitation)
    return invitation


# --- inbound identity events ----------------------------------------------------------------

events = InboundEvents(IdentityEvent)


def inbound_listing(
    tenant_of_org: Callable[[ColumnElement[str]], ColumnElement[uuid.UUID]],
) -> Select[Any]:
    """Every stored identity event (`InboundEvents.listing`), its tenant the one of the
    organization it names (`tenant_of_org` of that organization's id): an organization event
    names the organization itself; a membership or an invitation names it as `organization`; a
    user event names none."""
    org = case(
        (
            IdentityEvent.type.like("organization.%"),
            IdentityEvent.payload["data"]["id"].as_string(),
        ),
        else_=IdentityEvent.payload["data"]["organization"]["id"].as_string(),
    )
    return events.listing(tenant_of_org(org))
