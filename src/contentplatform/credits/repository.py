"""Every query on credit buckets, the ledger, holds and grant policies; each takes the tenant
first.

The exceptions are `expire_held` and `due_bucket_tenants`, the reconciler's sweeps over all
tenants. The ledger is only ever inserted into: nothing here updates or deletes a ledger row.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    func,
    insert,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits.models import (
    CreditAccount,
    CreditBucket,
    CreditLedgerEntry,
    CreditReservation,
    EntryType,
    ReservationStatus,
)
from contentplatform.kit.db import (
    cross_tenant,
    insert_ignoring_conflicts,
    lock_rows,
    page_of,
    writes_already,
)

# First key of PostgreSQL's two-key advisory locks taken here ("CRED"), so that they cannot
# collide with another domain's.
_LOCK_NAMESPACE = 0x43524544


async def lock_ledger(session: AsyncSession, tenant_id: uuid.UUID) -> None:
    """Serialize the tenant's credit decisions until this transaction ends.

    PostgreSQL: a transaction-scoped advisory lock (two tenants sharing the 32-bit key only wait
    for each other). SQLite: its one writer; a write that changes nothing takes it when this
    transaction has not written yet, so what is read next is current.
    """
    await lock_ledgers(session, [tenant_id])


async def lock_ledgers(session: AsyncSession, tenant_ids: Collection[uuid.UUID]) -> None:
    """`lock_ledger` for each of these tenants, in one statement; PostgreSQL takes the keys in
    ascending order, so that two transactions locking overlapping sets never wait on each other
    in turn."""
    if not tenant_ids:
        return
    if session.get_bind().dialect.name == "postgresql":
        keys = sorted({int.from_bytes(t.bytes[:4], "big", signed=True) for t in tenant_ids})
        statement = (
            text(
                "SELECT pg_advisory_xact_lock(:namespace, key) "
                "FROM unnest(CAST(:keys AS integer[])) AS key"
            )
            if len(keys) > 1
            else text("SELECT pg_advisory_xact_lock(:namespace, :key)")
        )
        values = {"keys": keys} if len(keys) > 1 else {"key": keys[0]}
        await session.execute(statement, {"namespace": _LOCK_NAMESPACE, **values})
    elif not await writes_already(session):
        await lock_rows(session, CreditAccount, CreditAccount.tenant_id.in_(set(tenant_ids)))


# --- grant policy -------------------------------------------------------------------------------


async def account(session: AsyncSession, tenant_id: uuid.UUID) -> CreditAccount | None:
    return await session.scalar(
        select(CreditAccount)
        .where(CreditAccount.tenant_id == tenant_id)
        .execution_options(populate_existing=True)
    )


async def accounts(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, CreditAccount]:
    """The policies of those of these tenants that have one."""
    result = await session.execute(
        select(CreditAccount)
        .where(CreditAccount.tenant_id.in_(set(tenant_ids)))
        .execution_options(populate_existing=True)
    )
    return {row.tenant_id: row for row in result.scalars()}


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


async def add_buckets_once(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], rows: Sequence[dict[str, Any]]
) -> set[uuid.UUID]:
    """Insert buckets of these tenants (each row names its own) but those whose reference the
    tenant has already, in one statement: the ids of those inserted."""
    assert all(row["tenant_id"] in tenant_ids for row in rows), "those tenants' buckets only"
    if not rows:
        return set()
    statement = insert_ignoring_conflicts(session, CreditBucket).returning(CreditBucket.id)
    return set((await session.execute(statement, list(rows))).scalars())


async def bucket_by_reference(
    session: AsyncSession, tenant_id: uuid.UUID, reference: str
) -> CreditBucket | None:
    return await session.scalar(
        select(CreditBucket)
        .where(CreditBucket.tenant_id == tenant_id, CreditBucket.reference == reference)
        .execution_options(populate_existing=True)
    )


async def ledger_entry(
    session: AsyncSession, tenant_id: uuid.UUID, entry_id: uuid.UUID
) -> CreditLedgerEntry | None:
    return await session.scalar(
        select(CreditLedgerEntry).where(
            CreditLedgerEntry.tenant_id == tenant_id, CreditLedgerEntry.id == entry_id
        )
    )


async def grant_entry(
    session: AsyncSession, tenant_id: uuid.UUID, bucket_id: uuid.UUID
) -> CreditLedgerEntry | None:
    """The `grant` row that added the bucket."""
    return await session.scalar(
        select(CreditLedgerEntry).where(
            CreditLedgerEntry.tenant_id == tenant_id,
            CreditLedgerEntry.bucket_id == bucket_id,
            CreditLedgerEntry.entry_type == EntryType.grant.value,
        )
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
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], now: datetime
) -> dict[uuid.UUID, list[CreditBucket]]:
    """These tenants' buckets past their expiry with credits still in them, oldest first, by
    tenant."""
    if not tenant_ids:
        return {}
    result = await session.execute(
        select(CreditBucket)
        .where(
            CreditBucket.tenant_id.in_(set(tenant_ids)),
            CreditBucket.remaining > 0,
            CreditBucket.expires_at <= now,
        )
        .order_by(CreditBucket.expires_at, CreditBucket.id)
        .execution_options(populate_existing=True)
    )
    due: dict[uuid.UUID, list[CreditBucket]] = {}
    for bucket in result.scalars():
        due.setdefault(bucket.tenant_id, []).append(bucket)
    return due


@cross_tenant("the sweep that finds every tenant with buckets due to expire")
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


async def totals_remaining(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, int]:
    """`total_remaining` of each of these tenants, in one query."""
    result = await session.execute(
        select(CreditBucket.tenant_id, func.sum(CreditBucket.remaining))
        .where(CreditBucket.tenant_id.in_(set(tenant_ids)))
        .group_by(CreditBucket.tenant_id)
    )
    totals = {tenant_id: int(total or 0) for tenant_id, total in result.tuples()}
    return {tenant_id: totals.get(tenant_id, 0) for tenant_id in tenant_ids}


def _holds_open(tenant_id: uuid.UUID, now: datetime) -> Any:
    return select(func.coalesce(func.sum(CreditReservation.amount), 0)).where(
        CreditReservation.tenant_id == tenant_id,
        CreditReservation.status == ReservationStatus.held.value,
        CreditReservation.expires_at > now,
    )


async def available(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], now: datetime
) -> dict[uuid.UUID, int]:
    """Each tenant's unexpired bucket remainders less its holds still open at `now`, in one
    query."""
    if not tenant_ids:
        return {}
    wanted = set(tenant_ids)
    spendable = (
        select(CreditBucket.tenant_id, func.sum(CreditBucket.remaining).label("amount"))
        .where(CreditBucket.tenant_id.in_(wanted), _unexpired(now))
        .group_by(CreditBucket.tenant_id)
    )
    held_open = (
        select(CreditReservation.tenant_id, -func.sum(CreditReservation.amount))
        .where(
            CreditReservation.tenant_id.in_(wanted),
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
        )
        .group_by(CreditReservation.tenant_id)
    )
    totals = dict.fromkeys(tenant_ids, 0)
    for tenant_id, amount in (await session.execute(union_all(spendable, held_open))).tuples():
        totals[tenant_id] += int(amount or 0)
    return totals


def available_column(tenant_id: ColumnElement[uuid.UUID], now: datetime) -> ColumnElement[Any]:
    """`available` as SQL, for the tenant whose id is the enclosing query's `tenant_id` (one
    statement over many tenants): its unexpired bucket remainders less its holds open at
    `now`."""
    remaining = (
        select(func.coalesce(func.sum(CreditBucket.remaining), 0))
        .where(CreditBucket.tenant_id == tenant_id, _unexpired(now))
        .correlate_except(CreditBucket)
        .scalar_subquery()
    )
    held_open = (
        select(func.coalesce(func.sum(CreditReservation.amount), 0))
        .where(
            CreditReservation.tenant_id == tenant_id,
            CreditReservation.status == ReservationStatus.held.value,
            CreditReservation.expires_at > now,
        )
        .correlate_except(CreditReservation)
        .scalar_subquery()
    )
    return remaining - held_open


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


async def add_entries_of(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID], rows: Sequence[dict[str, Any]]
) -> None:
    """Append ledger rows of these tenants (each row names its own), in one statement."""
    assert all(row["tenant_id"] in tenant_ids for row in rows), "those tenants' rows only"
    if rows:
        await session.execute(insert(CreditLedgerEntry), list(rows))


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
    found = await reservations_by_keys(session, {tenant_id: [idempotency_key]}, kind)
    return found.get((tenant_id, idempotency_key))


async def reservations_by_keys(
    session: AsyncSession, by_tenant: Mapping[uuid.UUID, Sequence[str]], kind: str
) -> dict[tuple[uuid.UUID, str], CreditReservation]:
    """The holds of `kind` of each tenant under its idempotency keys, by (tenant, key)."""
    wanted = {(tenant_id, key) for tenant_id, keys in by_tenant.items() for key in keys}
    if not wanted:
        return {}
    result = await session.execute(
        select(CreditReservation)
        .where(
            CreditReservation.tenant_id.in_(set(by_tenant)),
            CreditReservation.kind == kind,
            CreditReservation.idempotency_key.in_({key for _, key in wanted}),
        )
        .execution_options(populate_existing=True)
    )
    found = {(row.tenant_id, row.idempotency_key): row for row in result.scalars()}
    return {pair: row for pair, row in found.items() if pair in wanted}


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
    by_tenant: Mapping[uuid.UUID, Sequence[tuple[str, int]]],
    *,
    kind: str,
    expires_at: datetime,
    now: datetime,
    **about: Any,
) -> list[dict[str, Any]]:
    """Insert open holds of `kind`, (idempotency key, amount) each, of each tenant, in one
    statement, with `about` (owner, creator, resource) on each: the values of each row
    inserted."""
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
        for tenant_id, holds in by_tenant.items()
        for key, amount in holds
    ]
    if rows:
        await session.execute(insert(CreditReservation), rows)
    return rows


async def adopt(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    reservation_ids: list[uuid.UUID],
    now: datetime,
) -> None:
    """Hand client-owned holds (of these tenants) over to the operation that now runs under
    their keys."""
    if reservation_ids:
        await session.execute(
            update(CreditReservation)
            .where(
                CreditReservation.tenant_id.in_(set(tenant_ids)),
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


@cross_tenant("the sweep of every tenant's holds past their time")
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
