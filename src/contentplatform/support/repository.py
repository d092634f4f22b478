"""Every query on support's tables; a tenant's come with the tenant first. Staff's (superadmin)
reads across tenants and contact messages are marked `cross_tenant`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant, lock_rows, writes_already
from contentplatform.support.models import (
    CONTACT_SCOPE,
    FailedRequest,
    SupportMessage,
    SupportTicket,
)

# First key of the PostgreSQL advisory locks taken here ("SUPP"): no other domain's collide.
_LOCK_NAMESPACE = 0x53555050


def scope_of(tenant_id: uuid.UUID | None) -> str:
    return str(tenant_id) if tenant_id is not None else CONTACT_SCOPE


@cross_tenant("a contact message has no tenant; a tenant's ticket is numbered in its own scope")
async def add_numbered(session: AsyncSession, ticket: SupportTicket) -> None:
    """Insert `ticket` with the next number of its scope (its tenant, or contact messages),
    serialized with every other numbering in that scope until this transaction ends."""
    scope = scope_of(ticket.tenant_id)
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(hashlib.sha256(scope.encode()).digest()[:4], "big", signed=True)
        await session.execute(
            text("SELECT pg_advisory_xact_lock(:namespace, :key)"),
            {"namespace": _LOCK_NAMESPACE, "key": key},
        )
    elif not await writes_already(session):
        # SQLite: its one write lock, taken by a write that changes nothing.
        await lock_rows(session, SupportTicket, SupportTicket.number_scope == scope)
    last = await session.scalar(
        select(func.max(SupportTicket.number)).where(SupportTicket.number_scope == scope)
    )
    ticket.number_scope = scope
    ticket.number = (last or 0) + 1
    session.add(ticket)
    await session.flush()


async def ticket(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    ticket_id: uuid.UUID,
    *,
    created_by: str | None = None,
    for_update: bool = False,
) -> SupportTicket | None:
    """The tenant's ticket (only if `created_by` opened it, when given)."""
    statement = select(SupportTicket).where(
        SupportTicket.tenant_id == tenant_id, SupportTicket.id == ticket_id
    )
    if created_by is not None:
        statement = statement.where(SupportTicket.created_by == created_by)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    created_by: str | None,
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[SupportTicket], int]:
    """The tenant's tickets (of `created_by` only, when given), latest activity first."""
    statement = select(SupportTicket).where(SupportTicket.tenant_id == tenant_id)
    if created_by is not None:
        statement = statement.where(SupportTicket.created_by == created_by)
    if status is not None:
        statement = statement.where(SupportTicket.status == status)
    return await _paged(session, statement, limit, offset)


async def open_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """The tenant's tickets not resolved or closed."""
    found = await session.scalar(
        select(func.count())
        .select_from(SupportTicket)
        .where(
            SupportTicket.tenant_id == tenant_id,
            SupportTicket.status.in_(("open", "pending")),
        )
    )
    return int(found or 0)


async def messages(
    session: AsyncSession, tenant_id: uuid.UUID, ticket_id: uuid.UUID, *, internal: bool
) -> list[SupportMessage]:
    """A tenant's ticket's messages, oldest first; notes only with `internal`."""
    statement = select(SupportMessage).where(
        SupportMessage.tenant_id == tenant_id, SupportMessage.ticket_id == ticket_id
    )
    if not internal:
        statement = statement.where(SupportMessage.internal.is_(False))
    ordered = statement.order_by(SupportMessage.created_at, SupportMessage.id)
    return list((await session.execute(ordered)).scalars())


# --- staff: every tenant's tickets and the contact messages -----------------------------------


@cross_tenant("platform staff read every tenant's tickets and contact messages")
async def any_ticket(
    session: AsyncSession, ticket_id: uuid.UUID, *, for_update: bool = False
) -> SupportTicket | None:
    statement = select(SupportTicket).where(SupportTicket.id == ticket_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


@cross_tenant("platform staff read every tenant's tickets and contact messages")
async def any_page(
    session: AsyncSession, filters: dict[str, Any], *, limit: int, offset: int
) -> tuple[list[SupportTicket], int]:
    """Tickets of every tenant and contact messages, filtered by column (`status`, `priority`,
    `source`, `tenant_id`), latest activity first."""
    statement = select(SupportTicket)
    for column, value in filters.items():
        if value is not None:
            statement = statement.where(getattr(SupportTicket, column) == value)
    return await _paged(session, statement, limit, offset)


@cross_tenant("the ticket's own tenant (or none, for a contact message) is read from the ticket")
async def thread(session: AsyncSession, ticket: SupportTicket) -> list[SupportMessage]:
    """Every message of `ticket`, notes included, oldest first."""
    statement = select(SupportMessage).where(SupportMessage.ticket_id == ticket.id)
    if ticket.tenant_id is None:
        statement = statement.where(SupportMessage.tenant_id.is_(None))
    else:
        statement = statement.where(SupportMessage.tenant_id == ticket.tenant_id)
    ordered = statement.order_by(SupportMessage.created_at, SupportMessage.id)
    return list((await session.execute(ordered)).scalars())


@cross_tenant("runs a statement its caller already filtered (by tenant, or staff's across them)")
async def _paged(
    session: AsyncSession, statement: Select[SupportTicket], limit: int, offset: int
) -> tuple[list[SupportTicket], int]:
    total = await session.scalar(select(func.count()).select_from(statement.subquery()))
    ordered = statement.order_by(
        SupportTicket.last_message_at.desc(), SupportTicket.id.desc()
    ).limit(limit)
    rows = list((await session.execute(ordered.offset(offset))).scalars())
    return rows, int(total or 0)


# --- the failed requests tickets cite (request_log.py) ----------------------------------------


async def add_failed_requests(
    session: AsyncSession, tenant_id: uuid.UUID, rows: Sequence[dict[str, object]]
) -> None:
    """The tenant's failed requests (request_id, operation, method, status, code, created_at):
    one INSERT run over them, nothing read."""
    await session.execute(
        insert(FailedRequest), [{**row, "id": uuid.uuid4(), "tenant_id": tenant_id} for row in rows]
    )


async def failed_requests(
    session: AsyncSession, tenant_id: uuid.UUID, request_ids: Sequence[str], *, since: datetime
) -> list[FailedRequest]:
    """The tenant's failed requests under these ids answered since `since`, oldest first."""
    statement = (
        select(FailedRequest)
        .where(
            FailedRequest.tenant_id == tenant_id,
            FailedRequest.request_id.in_(request_ids),
            FailedRequest.created_at >= since,
        )
        .order_by(FailedRequest.created_at, FailedRequest.id)
    )
    return list((await session.execute(statement)).scalars())


@cross_tenant("retention, over every tenant's failed requests")
async def delete_failed_requests_before(session: AsyncSession, moment: datetime) -> int:
    result = await session.execute(delete(FailedRequest).where(FailedRequest.created_at < moment))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
