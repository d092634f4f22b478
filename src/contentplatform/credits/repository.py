"""Every query on the credit ledger and reservations; each takes the tenant first.

The one exception is `expire_held`, the reconciler's sweep over all tenants.
The ledger is only ever inserted into: nothing here updates or deletes a ledger row.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, insert, not_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from contentplatform.credits.models import (
    CreditLedgerEntry,
    CreditReservation,
    EntryType,
    ReservationStatus,
)
from contentplatform.kit.db import insert_ignoring_conflicts, writes_already

# First key of PostgreSQL's two-key advisory locks taken here ("CRED"), so that they cannot
# collide with another domain's.
_LOCK_NAMESPACE = 0x43524544


async def lock_ledger(session: AsyncSession, tenant_id: uuid.UUID) -> bool:
    """Serialize the tenant's credit decisions until this transaction ends, if this can; whether
    it is now serialized.

    PostgreSQL: a transaction-scoped advisory lock (two tenants sharing the 32-bit key only wait
    for each other). SQLite: its one writer serializes, once the transaction has written; until
    then (False), the caller's next statement must be a write, which takes that lock.
    """
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(tenant_id.bytes[:4], "big", signed=True)
        await session.execute(
            text("SELECT pg_advisory_xact_lock(:namespace, :key)"),
            {"namespace": _LOCK_NAMESPACE, "key": key},
        )
        return True
    return await writes_already(session)


async def add_entry(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    entry_type: EntryType,
    amount: int,
    reason: str,
    created_at: datetime,
    kind: str | None = None,
    reservation_id: uuid.UUID | None = None,
    period: str | None = None,
) -> None:
    """Append a ledger row. One with a `period` is written once: a repeat is silently ignored."""
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "entry_type": entry_type.value,
        "amount": amount,
        "kind": kind,
        "reservation_id": reservation_id,
        "period": period,
        "reason": reason,
        "created_at": created_at,
    }
    if period is None:
        await session.execute(insert(CreditLedgerEntry).values(**values))
    else:
        await session.execute(insert_ignoring_conflicts(session, CreditLedgerEntry, **values))


async def grants_to_expire(
    session: AsyncSession, tenant_id: uuid.UUID, before: str
) -> list[tuple[str, int]]:
    """(period, amount) of the monthly grants before `before` that have no expiry yet."""
    grant = aliased(CreditLedgerEntry)
    expiry = select(CreditLedgerEntry.id).where(
        CreditLedgerEntry.tenant_id == tenant_id,
        CreditLedgerEntry.entry_type == EntryType.expiry.value,
        CreditLedgerEntry.period == grant.period,
    )
    result = await session.execute(
        select(grant.period, grant.amount)
        .where(
            grant.tenant_id == tenant_id,
            grant.entry_type == EntryType.monthly_grant.value,
            grant.period < before,
            not_(expiry.exists()),
        )
        .order_by(grant.period)
    )
    return [(str(period), int(amount)) for period, amount in result.tuples()]


async def debited(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> int:
    """Credits debited in [start, end), as a positive number."""
    total = await session.scalar(
        select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type == EntryType.debit.value,
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
    )
    return -int(total or 0)


async def added(session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime) -> int:
    """Credits added in [start, end): grants of any sort and adjustments (net)."""
    added_types = [EntryType.monthly_grant.value, EntryType.grant.value, EntryType.adjustment.value]
    total = await session.scalar(
        select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type.in_(added_types),
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
    )
    return int(total or 0)


async def ledger_total(
    session: AsyncSession, tenant_id: uuid.UUID, *, through_period: str | None = None
) -> int:
    """The sum of the tenant's ledger; with `through_period`, without later months' grants."""
    query = select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
        CreditLedgerEntry.tenant_id == tenant_id
    )
    if through_period is not None:
        later_grant = and_(
            CreditLedgerEntry.entry_type == EntryType.monthly_grant.value,
            CreditLedgerEntry.period > through_period,
        )
        query = query.where(not_(later_grant))
    return int(await session.scalar(query) or 0)


async def available(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """The sum of the tenant's ledger less its holds still open at `now`, in one query."""
    ledger = select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
        CreditLedgerEntry.tenant_id == tenant_id
    )
    holds = select(func.coalesce(func.sum(CreditReservation.amount), 0)).where(
        CreditReservation.tenant_id == tenant_id,
        CreditReservation.status == ReservationStatus.held.value,
        CreditReservation.expires_at > now,
    )
    return int(
        await session.scalar(select(ledger.scalar_subquery() - holds.scalar_subquery())) or 0
    )


async def held(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """Credits in holds that are still open at `now`."""
    total = await session.scalar(
        select(func.coalesce(func.sum(CreditReservation.amount), 0)).where(
            CreditReservation.tenant_id == tenant_id,
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
        )
    )
    return int(total or 0)


async def ledger(session: AsyncSession, tenant_id: uuid.UUID) -> list[CreditLedgerEntry]:
    """The tenant's ledger, oldest first."""
    result = await session.execute(
        select(CreditLedgerEntry)
        .where(CreditLedgerEntry.tenant_id == tenant_id)
        .order_by(CreditLedgerEntry.created_at, CreditLedgerEntry.id)
    )
    return list(result.scalars())


async def reservation_by_id(
    session: AsyncSession, tenant_id: uuid.UUID, reservation_id: uuid.UUID
) -> CreditReservation | None:
    # populate_existing: another transaction may have moved it since this session last read it.
    result = await session.execute(
        select(CreditReservation)
        .where(CreditReservation.tenant_id == tenant_id, CreditReservation.id == reservation_id)
        .execution_options(populate_existing=True)
    )
    return result.scalar_one_or_none()


async def reservation_by_key(
    session: AsyncSession, tenant_id: uuid.UUID, kind: str, idempotency_key: str
) -> CreditReservation | None:
    result = await session.execute(
        select(CreditReservation)
        .where(
            CreditReservation.tenant_id == tenant_id,
            CreditReservation.kind == kind,
            CreditReservation.idempotency_key == idempotency_key,
        )
        .execution_options(populate_existing=True)
    )
    return result.scalar_one_or_none()


async def reservations_by_keys(
    session: AsyncSession, tenant_id: uuid.UUID, kind: str, idempotency_keys: list[str]
) -> dict[str, CreditReservation]:
    """The tenant's holds of `kind` under these keys, by key."""
    if not idempotency_keys:
        return {}
    result = await session.execute(
        select(CreditReservation)
        .where(
            CreditReservation.tenant_id == tenant_id,
            CreditReservation.kind == kind,
            CreditReservation.idempotency_key.in_(idempotency_keys),
        )
        .execution_options(populate_existing=True)
    )
    return {row.idempotency_key: row for row in result.scalars()}


async def add_reservations(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    holds: list[tuple[str, int]],
    expires_at: datetime,
    now: datetime,
) -> list[dict[str, Any]]:
    """Insert open holds of `kind`, (idempotency key, amount) each, in one statement: the
    values of each row inserted."""
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": tenant_id,
            "kind": kind,
            "idempotency_key": key,
            "amount": amount,
            "status": ReservationStatus.held.value,
            "committed_amount": None,
            "expires_at": expires_at,
            "created_at": now,
            "updated_at": now,
        }
        for key, amount in holds
    ]
    if rows:
        await session.execute(insert(CreditReservation), rows)
    return rows


async def update_open_hold(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    now: datetime,
    *,
    holding_at_least: int = 0,
    **values: Any,
) -> CreditReservation | None:
    """Change a hold only if it is still open (held and unexpired) at `now` and holds at least
    `holding_at_least` credits; None if it is not.

    The condition is checked by the UPDATE itself, so of two racing transactions exactly one
    moves the hold (PostgreSQL re-checks it after the row lock; SQLite has one writer).
    """
    result = await session.execute(
        update(CreditReservation)
        .where(
            CreditReservation.tenant_id == tenant_id,
            CreditReservation.id == reservation_id,
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
            CreditReservation.amount >= holding_at_least,
        )
        .values(updated_at=now, **values)
        .returning(CreditReservation)
        .execution_options(populate_existing=True, synchronize_session=False)
    )
    return result.scalar_one_or_none()


async def expire_held(session: AsyncSession, now: datetime) -> int:
    """Mark every tenant's holds past their expiry as expired; how many were."""
    result = await session.execute(
        update(CreditReservation)
        .where(
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at <= now,
        )
        .values(status=ReservationStatus.expired.value, updated_at=now)
        .returning(CreditReservation.id)
        .execution_options(synchronize_session=False)
    )
    return len(result.all())
