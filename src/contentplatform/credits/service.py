"""Credit rules: the monthly grant and its expiry, holds, and how holds settle. Never commits.

The model, a first cut of the Billing model's buckets that later issues extend:

- Each calendar month (UTC) a tenant gets the monthly grant. The first balance check of the
  month writes it (a `monthly_grant` row, once per tenant and period).
- Usage draws on the month's grant first, since it is the first credit to expire. The first
  balance check after a month ends expires its unused part (an `expiry` row, once per period):
  the grant less what was debited during that month, and never more than the balance, so
  credits that came by other means (`grant`, `adjustment`) carry over untouched.
- A hold (`reserve`) writes no ledger row: available = sum of the ledger - open holds.
  `commit` writes one `debit` row of the actual amount; `release` gives the hold back.
- A hold past its `expires_at` no longer counts and reads as `expired` at once; `expire_stale`
  only records that in its status, for the reconciler.

Decisions callers rely on:

- `reserve` with a (tenant, kind, key) already used returns that reservation, whatever its
  status; asking for another amount under it is a Conflict. `reserve_many` holds many at once
  (one balance check, one insert), in order: a hold the credits left cannot cover is refused
  on its own (PaymentRequired) and the others are held.
- `commit` twice is a no-op (another explicit amount: Conflict); committing a released or
  expired hold is a Conflict.
- `release` twice, or of an expired hold, is a no-op; releasing a committed hold is a Conflict
  (its credits were spent; giving them back will be a refund).
- An id of another tenant's reservation is NotFound, as is an unknown one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cachetools import LRUCache
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import repository
from contentplatform.credits.errors import (
    InsufficientCredits,
    ReservationNotFound,
    ReservationSettled,
)
from contentplatform.credits.models import CreditReservation, EntryType, ReservationStatus
from contentplatform.credits.schemas import Balance, Reservation
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import BadRequest, PlatformError

KINDS = ("documents.ingest", "generation.blog", "chat.message")
MAX_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255


def configured_monthly_grant() -> int:
    return runtime.current().settings.monthly_credit_grant


def configured_ttl_seconds() -> int:
    return runtime.current().settings.credit_reservation_ttl_seconds


def period_of(moment: datetime) -> str:
    """The calendar month (UTC) of `moment`, e.g. "2026-11"."""
    return f"{moment.astimezone(UTC):%Y-%m}"


def month_bounds(period: str) -> tuple[datetime, datetime]:
    """The first instant of the month `period` and of the month after it."""
    year, month = (int(part) for part in period.split("-"))
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, end


async def balance(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    monthly_grant: int | None = None,
    now: datetime | None = None,
) -> Balance:
    """The tenant's credits, once this month's grant is in and past months' leftovers expired.

    `monthly_grant` defaults to the configured one. Holds the tenant's credit lock until the
    transaction ends (see `repository.lock_ledger`).
    """
    now = now or utcnow()
    grant = configured_monthly_grant() if monthly_grant is None else monthly_grant
    await _settle_months(session, tenant_id, grant, now)
    period = period_of(now)
    start, end = month_bounds(period)
    total = await repository.ledger_total(session, tenant_id)
    held = await repository.held(session, tenant_id, now)
    return Balance(
        period=period,
        granted=await repository.added(session, tenant_id, start, end),
        used=await repository.debited(session, tenant_id, start, end),
        held=held,
        available=total - held,
    )


async def _available(
    session: AsyncSession, tenant_id: uuid.UUID, *, monthly_grant: int | None, now: datetime
) -> int:
    """`balance(...).available` without the month's figures a hold does not need (the
    scheduler holds credits for thousands of runs in one tick)."""
    grant = configured_monthly_grant() if monthly_grant is None else monthly_grant
    await _settle_months(session, tenant_id, grant, now)
    return await repository.available(session, tenant_id, now)


# (tenant, month) this process has seen settled in a committed transaction: the month's grant
# written, earlier months' grants expired. Settling again would change nothing, so a hit skips
# it (a confirmed upload or a scheduled run holds credits many times a month), unless its first
# write is what takes SQLite's lock. Only a commit records it: a settling rolled back is done
# again.
_settled: LRUCache[tuple[uuid.UUID, str], bool] = LRUCache(maxsize=100_000)


async def _settle_months(
    session: AsyncSession, tenant_id: uuid.UUID, monthly_grant: int, now: datetime
) -> None:
    locked = await repository.lock_ledger(session, tenant_id)
    current = period_of(now)
    if locked and (tenant_id, current) in _settled:
        return
    # A repeat is ignored by the unique constraint; on SQLite, a first write takes the write
    # lock that serializes everything after it.
    await repository.add_entry(
        session,
        tenant_id,
        entry_type=EntryType.monthly_grant,
        amount=monthly_grant,
        period=current,
        reason=f"Monthly credits for {current}",
        created_at=now,
    )
    if (tenant_id, current) in _settled:
        return

    async def remember() -> None:
        _settled[tenant_id, current] = True

    after_commit(session, remember)
    for period, granted in await repository.grants_to_expire(session, tenant_id, current):
        start, end = month_bounds(period)
        unused = granted - await repository.debited(session, tenant_id, start, end)
        left = await repository.ledger_total(session, tenant_id, through_period=period)
        await repository.add_entry(
            session,
            tenant_id,
            entry_type=EntryType.expiry,
            amount=-max(0, min(unused, left)),
            period=period,
            reason=f"Unused monthly credits of {period} expired",
            created_at=now,
        )


@dataclass(frozen=True)
class Hold:
    """One hold asked for in `reserve_many`: `amount` credits under `idempotency_key`."""

    idempotency_key: str
    amount: int


async def reserve(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    idempotency_key: str,
    amount: int,
    ttl_seconds: int | None = None,
    monthly_grant: int | None = None,
    now: datetime | None = None,
) -> Reservation:
    """Hold `amount` credits for `kind` under `idempotency_key`, or return the hold already there.

    PaymentRequired when fewer than `amount` credits are available.
    """
    [outcome] = await reserve_many(
        session,
        tenant_id,
        kind=kind,
        holds=[Hold(idempotency_key, amount)],
        ttl_seconds=ttl_seconds,
        monthly_grant=monthly_grant,
        now=now,
    )
    if isinstance(outcome, PlatformError):
        raise outcome
    return outcome


async def reserve_many(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    kind: str,
    holds: Sequence[Hold],
    ttl_seconds: int | None = None,
    monthly_grant: int | None = None,
    now: datetime | None = None,
) -> list[Reservation | PlatformError]:
    """`reserve` for many holds of one tenant at once, in their order: for each, its hold (new,
    or the one already under its key), or why it was refused (InsufficientCredits once the holds
    before it took what was available; ReservationSettled for a key holding another amount).

    One balance check and one insert for them all (the scheduler holds credits for a tenant's
    due jobs together). A key given twice is one hold.
    """
    if kind not in KINDS:
        raise BadRequest(f"Unknown credit kind {kind!r}; one of {', '.join(KINDS)}.")
    for hold in holds:
        if not 1 <= len(hold.idempotency_key) <= MAX_KEY_LENGTH:
            raise BadRequest(f"An idempotency key has 1 to {MAX_KEY_LENGTH} characters.")
        if hold.amount < 1:
            raise BadRequest("A reservation holds at least 1 credit.")
    ttl = _checked_ttl(ttl_seconds)
    now = now or utcnow()
    keys = list(dict.fromkeys(hold.idempotency_key for hold in holds))
    # The balance first, which takes the tenant's credit lock; then the holds already under
    # these keys, read under it, so a racing request cannot make one in between.
    available = await _available(session, tenant_id, monthly_grant=monthly_grant, now=now)
    found = await repository.reservations_by_keys(session, tenant_id, kind, keys)
    made: dict[str, Reservation] = {}
    refused: dict[str, PlatformError] = {}
    if len(found) < len(keys):
        wanted: dict[str, int] = {}  # key -> amount, of the holds to make
        for hold in holds:
            key = hold.idempotency_key
            if key in found or key in refused or key in wanted:
                continue
            if available < hold.amount:
                refused[key] = InsufficientCredits(_shortfall(hold.amount, available))
                continue
            available -= hold.amount
            wanted[key] = hold.amount
        # Plain inserts: under the tenant's credit lock no other hold of these keys can appear,
        # and if one did, the unique key fails the transaction rather than hold twice.
        inserted = await repository.add_reservations(
            session,
            tenant_id,
            kind=kind,
            holds=list(wanted.items()),
            expires_at=now + timedelta(seconds=ttl),
            now=now,
        )
        for values in inserted:
            # Built from the values just written: a scheduler tick holds thousands.
            made[values["idempotency_key"]] = Reservation.model_construct(
                **{**values, "status": ReservationStatus.held}
            )
    outcomes: list[Reservation | PlatformError] = []
    for hold in holds:
        key = hold.idempotency_key
        if key in refused:
            outcomes.append(refused[key])
            continue
        held = made[key] if key in made else _view(found[key], now)
        if held.amount != hold.amount:
            outcomes.append(
                ReservationSettled(
                    f"The idempotency key {key!r} already holds {held.amount} credits for "
                    f"{kind}; a replay must ask for the same amount."
                )
            )
        else:
            outcomes.append(held)
    return outcomes


def _shortfall(needed: int, available: int) -> str:
    credits = "credit" if needed == 1 else "credits"
    left = max(available, 0)
    return f"This needs {needed} {credits}; {left} {'is' if left == 1 else 'are'} available."


def _checked_ttl(ttl_seconds: int | None) -> int:
    ttl = configured_ttl_seconds() if ttl_seconds is None else ttl_seconds
    if not 1 <= ttl <= MAX_TTL_SECONDS:
        raise BadRequest(f"A hold lasts 1 to {MAX_TTL_SECONDS} seconds.")
    return ttl


async def commit(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    amount: int | None = None,
    *,
    now: datetime | None = None,
) -> Reservation:
    """Settle a hold at `amount` (default: all of it) with one debit; the rest is free again."""
    now = now or utcnow()
    # The hold moved first, read only when it did not move: a commit is two statements.
    moved = None
    if amount is None or amount >= 0:
        moved = await repository.update_open_hold(
            session,
            tenant_id,
            reservation_id,
            now,
            holding_at_least=amount or 0,
            status=ReservationStatus.committed.value,
            committed_amount=CreditReservation.amount if amount is None else amount,
        )
    if moved is not None:
        spent = moved.committed_amount or 0
        await repository.add_entry(
            session,
            tenant_id,
            entry_type=EntryType.debit,
            amount=-spent,
            kind=moved.kind,
            reservation_id=moved.id,
            reason=f"{moved.kind} ({moved.idempotency_key})",
            created_at=now,
        )
        return _view(moved, now)
    row = await _row(session, tenant_id, reservation_id)
    out_of_range = amount is not None and not 0 <= amount <= row.amount
    if row.status != ReservationStatus.committed and out_of_range:
        raise BadRequest(f"Commit 0 to {row.amount} credits, what this reservation holds.")
    status = _status(row, now)
    if status != ReservationStatus.committed:
        raise ReservationSettled(
            f"This reservation is {status.value}; it can no longer be committed."
        )
    if amount is not None and amount != row.committed_amount:
        raise ReservationSettled(
            f"This reservation was already committed at {row.committed_amount}."
        )
    return _view(row, now)


async def release(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    *,
    now: datetime | None = None,
) -> Reservation:
    """Give a hold back. A no-op when it is already released or expired."""
    now = now or utcnow()
    row = await _row(session, tenant_id, reservation_id)
    if _status(row, now) == ReservationStatus.held:
        moved = await repository.update_open_hold(
            session, tenant_id, reservation_id, now, status=ReservationStatus.released.value
        )
        if moved is not None:
            return _view(moved, now)
        row = await _row(session, tenant_id, reservation_id)  # it settled meanwhile
    if _status(row, now) == ReservationStatus.committed:
        raise ReservationSettled("This reservation was committed; its credits are spent.")
    return _view(row, now)


async def extend(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    ttl_seconds: int | None = None,
    *,
    now: datetime | None = None,
) -> Reservation:
    """Keep an open hold for `ttl_seconds` from now (never shortening it)."""
    ttl = _checked_ttl(ttl_seconds)
    now = now or utcnow()
    row = await _row(session, tenant_id, reservation_id)
    if _status(row, now) == ReservationStatus.held:
        moved = await repository.update_open_hold(
            session,
            tenant_id,
            reservation_id,
            now,
            expires_at=max(row.expires_at, now + timedelta(seconds=ttl)),
        )
        if moved is not None:
            return _view(moved, now)
        row = await _row(session, tenant_id, reservation_id)  # it settled meanwhile
    raise ReservationSettled(
        f"This reservation is {_status(row, now).value}; it cannot be extended."
    )


async def expire_stale(session: AsyncSession, now: datetime | None = None) -> int:
    """Mark the holds of every tenant that are past `expires_at` as expired; how many were.

    Bookkeeping for the reconciler: balances already ignore such holds.
    """
    return await repository.expire_held(session, now or utcnow())


async def get_reservation(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    *,
    now: datetime | None = None,
) -> Reservation:
    return _view(await _row(session, tenant_id, reservation_id), now or utcnow())


async def reservation_by_key(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    kind: str,
    idempotency_key: str,
    *,
    now: datetime | None = None,
) -> Reservation | None:
    found = await repository.reservation_by_key(session, tenant_id, kind, idempotency_key)
    return None if found is None else _view(found, now or utcnow())


async def _row(
    session: AsyncSession, tenant_id: uuid.UUID, reservation_id: uuid.UUID
) -> CreditReservation:
    found = await repository.reservation_by_id(session, tenant_id, reservation_id)
    if found is None:
        raise ReservationNotFound()
    return found


def _status(row: CreditReservation, now: datetime) -> ReservationStatus:
    """The stored status, except that a hold past its expiry is expired already."""
    if row.status == ReservationStatus.held and row.expires_at <= now:
        return ReservationStatus.expired
    return ReservationStatus(row.status)


def _view(row: CreditReservation, now: datetime) -> Reservation:
    return Reservation.model_validate(row).model_copy(update={"status": _status(row, now)})
