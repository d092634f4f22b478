"""Every query on credit buckets, the ledger, holds and grant policies; each takes the tenant
first.

The exceptions are `expire_held` and `due_bucket_tenants`, the reconciler's sweeps over all
tenants. The ledger is only ever inserted into: nothing here updates or deletes a ledger row.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits.models import (
    CreditAccount,
    CreditBucket,
    CreditLedgerEntry,
    CreditReservation,
    EntryType,
    ReservationStatus,
)
from contentplatform.kit.db import insert_ignoring_conflicts, lock_rows, page_of, writes_already

# First key of PostgreSQL's two-key advisory locks taken here ("CRED"), so that they cannot
# collide with another domain's.
_LOCK_NAMESPACE = 0x43524544


async def lock_ledger(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Serialize the tenant's credit decisions until this transaction ends.

    PostgreSQL: a transaction-scoped advisory lock (two tenants sharing the 32-bit key only wait
    for each other). SQLite: its one writer; a write that changes nothing takes it when this
    transaction has not written yet, so what is read next is current.
    """
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(tenant_id.bytes[:4], "big", signed=True)
        await session.execute(
            text("SELECT pg_advisory_xact_lock(:namespace, :key)"),
            {"namespace": _LOCK_NAMESPACE, "key": key},
        )
    elif not await writes_already(session):
        await lock_rows(session, CreditAccount, CreditAccount.tenant_id == tenant_id)


# --- grant policy -------------------------------------------------------------------------------


async def account(session: AsyncSession, tenant_id: uuid.UUID) -> CreditAccount | None:
    return await session.scalar(
        select(CreditAccount)
        .where(CreditAccount.tenant_id == tenant_id)
        .execution_options(populate_existing=True)
    )


async def save_account(session: AsyncSession, tenant_id: uuid.UUID, **values: Any) -> None:
    """Create or replace the tenant's policy."""
    found = await account(session, tenant_id)
    if found is None:
        session.add(CreditAccount(tenant_id=tenant_id, **values))
    else:
        for name, value in values.items():
            setattr(found, name, value)
    await session.flush()


# --- buckets ------------------------------------------------------------------------------------


async def add_bucket_once(session: AsyncSession, tenant_id: uuid.UUID, **values: Any) -> bool:
    """Insert a bucket unless one with its reference exists; whether it was inserted."""
    statement = insert_ignoring_conflicts(
        session, CreditBucket, tenant_id=tenant_id, **values
    ).returning(CreditBucket.id)
    return (await session.execute(statement)).scalar_one_or_none() is not None


async def bucket_by_reference(
    session: AsyncSession, tenant_id: uuid.UUID, reference: str
) -> CreditBucket | None:
    return await session.scalar(
        select(CreditBucket)
        .where(CreditBucket.tenant_id == tenant_id, CreditBucket.reference == reference)
        .execution_options(populate_existing=True)
    )


async def latest_bucket(session: AsyncSession, tenant_id: uuid.UUID) -> CreditBucket | None:
    """The bucket added last (a grant without a reference reads back its own)."""
    return await session.scalar(
        select(CreditBucket)
        .where(CreditBucket.tenant_id == tenant_id)
        .order_by(CreditBucket.created_at.desc(), CreditBucket.id.desc())
        .limit(1)
    )


async def refunded(session: AsyncSession, tenant_id: uuid.UUID, bucket_id: uuid.UUID) -> bool:
    """Whether the bucket has a `refund` row already."""
    found = await session.scalar(
        select(CreditLedgerEntry.id)
        .where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.bucket_id == bucket_id,
            CreditLedgerEntry.entry_type == EntryType.refund.value,
        )
        .limit(1)
    )
    return found is not None


def _unexpired(now: datetime) -> Any:
    return or_(CreditBucket.expires_at.is_(None), CreditBucket.expires_at > now)


# Draw order: the earliest expiry first, buckets that never expire last, then the oldest.
_DRAW_ORDER = (
    CreditBucket.expires_at.is_(None),
    CreditBucket.expires_at,
    CreditBucket.created_at,
    CreditBucket.id,
)


async def spendable_buckets(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime
) -> list[CreditBucket]:
    """The tenant's unexpired buckets with credits left, in the order debits draw on them."""
    result = await session.execute(
        select(CreditBucket)
        .where(
            CreditBucket.tenant_id == tenant_id,
            CreditBucket.remaining > 0,
            _unexpired(now),
        )
        .order_by(*_DRAW_ORDER)
        .execution_options(populate_existing=True)
    )
    return list(result.scalars())


async def due_buckets(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime
) -> list[CreditBucket]:
    """The tenant's buckets past their expiry with credits still in them, oldest first."""
    result = await session.execute(
        select(CreditBucket)
        .where(
            CreditBucket.tenant_id == tenant_id,
            CreditBucket.remaining > 0,
            CreditBucket.expires_at <= now,
        )
        .order_by(CreditBucket.expires_at, CreditBucket.id)
        .execution_options(populate_existing=True)
    )
    return list(result.scalars())


async def due_bucket_tenants(session: AsyncSession, now: datetime) -> list[uuid.UUID]:
    """Every tenant with a bucket past its expiry and credits in it (the reconciler's pass)."""
    result = await session.execute(
        select(CreditBucket.tenant_id)
        .where(CreditBucket.remaining > 0, CreditBucket.expires_at <= now)
        .distinct()
    )
    return list(result.scalars())


async def set_remaining(
    session: AsyncSession, tenant_id: uuid.UUID, bucket_id: uuid.UUID, remaining: int, now: datetime
) -> None:
    await session.execute(
        update(CreditBucket)
        .where(CreditBucket.tenant_id == tenant_id, CreditBucket.id == bucket_id)
        .values(remaining=remaining, updated_at=now)
        .execution_options(synchronize_session=False)
    )


async def total_remaining(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """What is left in all the tenant's buckets, expired or not: the sum of its ledger."""
    total = await session.scalar(
        select(func.coalesce(func.sum(CreditBucket.remaining), 0)).where(
            CreditBucket.tenant_id == tenant_id
        )
    )
    return int(total or 0)


def _holds_open(tenant_id: uuid.UUID, now: datetime) -> Any:
    return select(func.coalesce(func.sum(CreditReservation.amount), 0)).where(
        CreditReservation.tenant_id == tenant_id,
        CreditReservation.status == ReservationStatus.held.value,
        CreditReservation.expires_at > now,
    )


async def available(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """Unexpired bucket remainders less the holds still open at `now`, in one query."""
    spendable = select(func.coalesce(func.sum(CreditBucket.remaining), 0)).where(
        CreditBucket.tenant_id == tenant_id, _unexpired(now)
    )
    difference = spendable.scalar_subquery() - _holds_open(tenant_id, now).scalar_subquery()
    return int(await session.scalar(select(difference)) or 0)


async def held(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """Credits in holds that are still open at `now`."""
    return int(await session.scalar(_holds_open(tenant_id, now)) or 0)


# --- the ledger ---------------------------------------------------------------------------------


async def add_entries(
    session: AsyncSession, tenant_id: uuid.UUID, rows: Sequence[dict[str, Any]]
) -> None:
    """Append the tenant's ledger rows, in one statement."""
    if rows:
        await session.execute(
            insert(CreditLedgerEntry), [{**row, "tenant_id": tenant_id} for row in rows]
        )


async def ledger_sum(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    entry_types: Sequence[EntryType],
    start: datetime,
    end: datetime,
) -> int:
    """The signed sum of the tenant's rows of these types written in [start, end)."""
    total = await session.scalar(
        select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.entry_type.in_([t.value for t in entry_types]),
            CreditLedgerEntry.created_at >= start,
            CreditLedgerEntry.created_at < end,
        )
    )
    return int(total or 0)


async def ledger(session: AsyncSession, tenant_id: uuid.UUID) -> list[CreditLedgerEntry]:
    """The tenant's whole ledger, oldest first."""
    result = await session.execute(
        select(CreditLedgerEntry)
        .where(CreditLedgerEntry.tenant_id == tenant_id)
        .order_by(CreditLedgerEntry.created_at, CreditLedgerEntry.id)
    )
    return list(result.scalars())


async def ledger_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    entry_type: str | None,
    kind: str | None,
    start: datetime | None,
    end: datetime | None,
    limit: int,
    offset: int,
) -> tuple[list[CreditLedgerEntry], int]:
    """A page of the tenant's ledger, newest first."""
    statement = select(CreditLedgerEntry).where(CreditLedgerEntry.tenant_id == tenant_id)
    if entry_type is not None:
        statement = statement.where(CreditLedgerEntry.entry_type == entry_type)
    if kind is not None:
        statement = statement.where(CreditLedgerEntry.kind == kind)
    if start is not None:
        statement = statement.where(CreditLedgerEntry.created_at >= start)
    if end is not None:
        statement = statement.where(CreditLedgerEntry.created_at < end)
    return await page_of(
        session,
        statement,
        CreditLedgerEntry.created_at.desc(),
        CreditLedgerEntry.id.desc(),
        limit=limit,
        offset=offset,
    )


async def debits(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, kind: str | None
) -> list[CreditLedgerEntry]:
    """The tenant's debit rows written in [start, end), oldest first."""
    statement = select(CreditLedgerEntry).where(
        CreditLedgerEntry.tenant_id == tenant_id,
        CreditLedgerEntry.entry_type == EntryType.debit.value,
        CreditLedgerEntry.created_at >= start,
        CreditLedgerEntry.created_at < end,
    )
    if kind is not None:
        statement = statement.where(CreditLedgerEntry.kind == kind)
    result = await session.execute(statement.order_by(CreditLedgerEntry.created_at))
    return list(result.scalars())


async def entries_of_reservation(
    session: AsyncSession, tenant_id: uuid.UUID, reservation_id: uuid.UUID
) -> list[CreditLedgerEntry]:
    result = await session.execute(
        select(CreditLedgerEntry)
        .where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.reservation_id == reservation_id,
        )
        .order_by(CreditLedgerEntry.balance_after.desc(), CreditLedgerEntry.id)
    )
    return list(result.scalars())


# --- holds --------------------------------------------------------------------------------------


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
    found = await reservations_by_keys(session, tenant_id, kind, [idempotency_key])
    return found.get(idempotency_key)


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


async def reservations_page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    status: ReservationStatus | None,
    kind: str | None,
    now: datetime,
    limit: int,
    offset: int,
) -> tuple[list[CreditReservation], int]:
    """A page of the tenant's holds, newest first; `held` and `expired` as they read at `now`
    (a hold past its expiry is expired before the sweep marks it)."""
    statement = select(CreditReservation).where(CreditReservation.tenant_id == tenant_id)
    if status == ReservationStatus.held:
        statement = statement.where(
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
        )
    elif status == ReservationStatus.expired:
        statement = statement.where(
            or_(
                CreditReservation.status == ReservationStatus.expired.value,
                (CreditReservation.status == ReservationStatus.held.value)
                & (CreditReservation.expires_at <= now),
            )
        )
    elif status is not None:
        statement = statement.where(CreditReservation.status == status.value)
    if kind is not None:
        statement = statement.where(CreditReservation.kind == kind)
    return await page_of(
        session,
        statement,
        CreditReservation.created_at.desc(),
        CreditReservation.id.desc(),
        limit=limit,
        offset=offset,
    )


async def add_reservations(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    holds: list[tuple[str, int]],
    expires_at: datetime,
    now: datetime,
    **about: Any,
) -> list[dict[str, Any]]:
    """Insert open holds of `kind`, (idempotency key, amount) each, in one statement, with
    `about` (owner, creator, resource) on each: the values of each row inserted."""
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
            "settled_at": None,
            "created_at": now,
            "updated_at": now,
            **about,
        }
        for key, amount in holds
    ]
    if rows:
        await session.execute(insert(CreditReservation), rows)
    return rows


async def adopt(
    session: AsyncSession, tenant_id: uuid.UUID, reservation_ids: list[uuid.UUID], now: datetime
) -> None:
    """Hand client-owned holds over to the operation that now runs under their keys."""
    if reservation_ids:
        await session.execute(
            update(CreditReservation)
            .where(
                CreditReservation.tenant_id == tenant_id,
                CreditReservation.id.in_(reservation_ids),
            )
            .values(owner="operation", updated_at=now)
            .execution_options(synchronize_session=False)
        )


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
        .values(status=ReservationStatus.expired.value, updated_at=now, settled_at=now)
        .returning(CreditReservation.id)
        .execution_options(synchronize_session=False)
    )
    return len(result.all())
