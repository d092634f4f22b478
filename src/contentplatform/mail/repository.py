"""The outbox's queries. The outbox is the platform's: a message is found by its own key (the
caller's message id), and a tenant's mail carries its tenant on the row."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import cross_tenant, utcnow
from contentplatform.mail.models import UNSETTLED, OutboxMail


@cross_tenant("the outbox is keyed by the caller's message id; the row carries its tenant")
async def insert_once(session: AsyncSession, values: dict[str, object]) -> bool:
    """Add the message unless its message id is there already; whether it was added."""
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    now = utcnow()
    statement = (
        insert(OutboxMail)
        .values(created_at=now, updated_at=now, status="queued", attempts=0, **values)
        .on_conflict_do_nothing(index_elements=["message_id"])
        .returning(OutboxMail.id)
    )
    return (await session.execute(statement)).first() is not None


@cross_tenant("the outbox is keyed by the caller's message id; the row carries its tenant")
async def by_message_id(session: AsyncSession, message_id: str) -> OutboxMail | None:
    return (
        await session.execute(select(OutboxMail).where(OutboxMail.message_id == message_id))
    ).scalar_one_or_none()


@cross_tenant("the outbox is keyed by the caller's message id; the row carries its tenant")
async def begin_attempt(session: AsyncSession, message_id: str) -> OutboxMail | None:
    """Mark an unsettled message `sending` and count the attempt; None when it is settled
    (sent or failed) or not there."""
    result = await session.execute(
        update(OutboxMail)
        .where(OutboxMail.message_id == message_id, OutboxMail.status.in_(("queued", "sending")))
        .values(status="sending", attempts=OutboxMail.attempts + 1, updated_at=utcnow())
        .returning(OutboxMail)
    )
    return result.scalar_one_or_none()


@cross_tenant("the outbox is keyed by the caller's message id; the row carries its tenant")
async def settle(
    session: AsyncSession, message_id: str, *, status: str, error: str | None = None
) -> None:
    """Record an attempt's end: `sent` (with its time), `failed`, or `queued` for another try."""
    now = utcnow()
    await session.execute(
        update(OutboxMail)
        .where(OutboxMail.message_id == message_id, OutboxMail.status.in_(("queued", "sending")))
        .values(
            status=status,
            last_error=error[:500] if error else None,
            sent_at=now if status == "sent" else None,
            updated_at=now,
        )
    )


@cross_tenant("the reconciler's sweep of every tenant's unsettled mail")
async def unsettled(
    session: AsyncSession, before: datetime, limit: int
) -> list[tuple[str, str, int]]:
    """(message id, status, attempts) of mail queued or sending, untouched since before
    `before`, oldest first."""
    rows = await session.execute(
        select(OutboxMail.message_id, OutboxMail.status, OutboxMail.attempts)
        .where(UNSETTLED, OutboxMail.updated_at < before)
        .order_by(OutboxMail.created_at)
        .limit(limit)
    )
    return [(message_id, status, attempts) for message_id, status, attempts in rows.tuples()]
