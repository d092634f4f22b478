"""Credit rules: holds and how they settle, and the balance. Never commits. The buckets (grants,
refunds, expiry, the debit a commit draws) are in buckets.py, the API's own operations in
operations.py, what was used in usage.py.

The model (the catalog's Billing model):

- Credits live in buckets (`monthly_grant`, `top_up`, `admin_grant`), each with its expiry or
  none. Every movement is one ledger row of one bucket with the tenant's balance after it, so
  the sum of the ledger always equals the sum of the buckets' `remaining`.
- available = unexpired remainders - open holds. A hold (`reserve`) writes no ledger row;
  `commit` debits the actual amount from the earliest-expiring buckets first (no expiry last),
  one `debit` row per bucket it draws on; `release` gives the hold back.
- The calendar-month grant (free plan) is written lazily, at the tenant's first balance check
  of the month, as today; billing changes it through `set_grant_policy` (paid plans grant from
  paid invoices with `grant`; past_due pauses new monthly grants). A bucket past its expiry gets
  an `expiry` row for what remained at the tenant's next balance check and in the reconciler's
  pass; a monthly grant carries up to the policy's `rollover_cap` into a new bucket.
- A hold past its `expires_at` no longer counts and reads as `expired` at once; `expire_stale`
  only records that in its status, for the reconciler.

Decisions callers rely on:

- `reserve` with a (tenant, kind, key) already used returns that reservation, whatever its
  status; asking for another amount under it is a Conflict. A metered operation (owner
  `operation`) reserving under the key of a client's hold adopts it. `reserve_many` holds many
  at once (one balance check, one insert), in order: a hold the credits left cannot cover is
  refused on its own (PaymentRequired) and the others are held.
- `commit` twice is a no-op (another explicit amount: Conflict); committing a released or
  expired hold is a Conflict. Credits that expired while held are not charged: the debit takes
  what the unexpired buckets still have.
- `release` twice, or of an expired hold, is a no-op; releasing a committed hold is a Conflict.
- An id of another tenant's reservation is NotFound, as is an unknown one.
- A debit that takes the balance down to the low-balance line (10 % of the monthly credits) or
  to zero writes `credits.low_balance` in its transaction, once per crossing.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import buckets, pricing, repository, usage_repository
from contentplatform.credits.errors import (
    InsufficientCredits,
    ReservationNotFound,
    ReservationSettled,
)
from contentplatform.credits.models import (
    ActorType,
    CreditReservation,
    EntryType,
    Owner,
    ReservationStatus,
)
from contentplatform.credits.pricing import Price
from contentplatform.credits.schemas import Balance, BalanceBucket, BalancePeriod, Reservation
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, PlatformError

KINDS = pricing.KINDS
MAX_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255


def configured_ttl_seconds() -> int:
    return runtime.current().settings.credit_reservation_ttl_seconds


def price(kind: str, *, content_length: int | None = None) -> Price:
    """The price table's hold for `kind` (see pricing.py): what metered operations hold."""
    return pricing.price(kind, content_length=content_length)


def tokens_charge(tokens: int) -> int:
    """The price table's charge for model tokens (see pricing.py): what metered operations
    commit, before their floor of 1 and the hold cap it."""
    return pricing.tokens_charge(tokens)


def words_charge(words: int) -> int:
    """The price table's charge for a regenerated draft's words (see pricing.py)."""
    return pricing.words_charge(words)


@dataclass(frozen=True)
class Spent:
    """What a metered operation's commit records on its debit: the model tokens it used, and
    the resource it was for when the hold did not name one (a job's run, a conversation); for
    AI usage, the model its calls used (`model_name` for calls to several), and the generation
    run, its workflow and job instance where it ran in one."""

    input_tokens: int = 0
    output_tokens: int = 0
    resource_type: str | None = None
    resource_id: str | None = None
    model: str | None = None
    workflow_id: uuid.UUID | None = None
    workflow_run_id: uuid.UUID | None = None
    job_instance_id: uuid.UUID | None = None


MODEL_NAME_LENGTH = 100


def model_name(models: Collection[str]) -> str | None:
    """What a debit records as its model: the one model its calls used; for calls to several
    (a run whose model was changed between its steps), their names sorted and joined by "+",
    so its tokens are still counted once, under that one name; None for no model."""
    names = sorted({name for name in models if name})
    return "+".join(names)[:MODEL_NAME_LENGTH] or None


def _recorded(hold: CreditReservation, spent: Spent) -> dict[str, Any]:
    """The resource, tokens and model a hold's debit records: the hold's resource, else the
    one `spent` names."""
    resource = (hold.resource_type, hold.resource_id)
    if resource == (None, None):
        resource = (spent.resource_type, spent.resource_id)
    return {
        "resource": resource,
        "tokens": (spent.input_tokens, spent.output_tokens),
        "about": {
            "model": spent.model[:MODEL_NAME_LENGTH] if spent.model else None,
            "workflow_id": spent.workflow_id,
            "workflow_run_id": spent.workflow_run_id,
            "job_instance_id": spent.job_instance_id,
        },
    }


# --- the balance --------------------------------------------------------------------------------


async def balance(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    monthly_grant: int | None = None,
    now: datetime | None = None,
) -> Balance:
    """The tenant's credits, once this month's grant is in and expired buckets expired.

    `monthly_grant` is the default for the calendar grant (the configured one when None).
    Holds the tenant's credit lock until the transaction ends.
    """
    now = now or utcnow()
    await buckets.settle(session, [tenant_id], monthly_grant, now, expire=True)
    start, end = buckets.month_bounds(buckets.period_of(now))
    spendable = await repository.spendable_buckets(session, tenant_id, now)
    total = sum(bucket.remaining for bucket in spendable)
    reserved = await repository.held(session, tenant_id, now)
    low_line = await buckets.low_line(session, tenant_id, monthly_grant)
    granted = await repository.ledger_sum(session, tenant_id, [EntryType.grant], start, end)
    used = -await repository.ledger_sum(session, tenant_id, [EntryType.debit], start, end)
    return Balance(
        available=total - reserved,
        reserved=reserved,
        total=total,
        period=BalancePeriod(start=start, end=end, granted=granted, used=used),
        buckets=[BalanceBucket.model_validate(bucket) for bucket in spendable],
        low_balance_threshold=low_line,
    )


def available_column(tenant_id: ColumnElement[uuid.UUID], now: datetime) -> ColumnElement[Any]:
    """The balance's `available` as last settled, as SQL, for the tenant whose id is the
    enclosing query's `tenant_id` (one statement over many tenants, as the operators' list
    reads it): unexpired bucket remainders less holds open at `now`. Nothing is settled."""
    return repository.available_column(tenant_id, now)


# --- holds --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hold:
    """One hold asked for in `reserve_many`: `amount` credits under `idempotency_key`."""

    idempotency_key: str
    amount: int


@dataclass(frozen=True)
class Creator:
    """Who takes a hold and whose debit it becomes: the metered operation (system) by default;
    through the API, the member or API key that asked (owner `client`)."""

    owner: Owner = Owner.operation
    actor_type: ActorType = ActorType.system
    actor_id: str | None = None
    resource_type: str | None = None
    resource_id: str | None = None


OPERATION = Creator()


async def debited_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime
) -> list[tuple[datetime, int]]:
    """(when, credits) of each debit written in [start, end), oldest first: reads only (the
    dashboard cuts them into days of the organization's zone)."""
    rows = await usage_repository.debits(session, tenant_id, start, end, None)
    return [(row.created_at, -row.amount) for row in rows]


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
    creator: Creator = OPERATION,
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
        creator=creator,
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
    creator: Creator = OPERATION,
) -> list[Reservation | PlatformError]:
    """`reserve` for many holds of one tenant at once, in their order: for each, its hold (new,
    or the one already under its key), or why it was refused (InsufficientCredits once the holds
    before it took what was available; ReservationSettled for a key holding another amount).

    One balance check and one insert for them all. A key given twice is one hold. An operation
    reserving under the key of a client's open hold adopts it.
    """
    outcomes = await reserve_across(
        session,
        kind=kind,
        holds={tenant_id: holds},
        ttl_seconds=ttl_seconds,
        monthly_grant=monthly_grant,
        now=now,
        creator=creator,
    )
    return outcomes.get(tenant_id, [])


async def reserve_across(
    session: AsyncSession,
    *,
    kind: str,
    holds: Mapping[uuid.UUID, Sequence[Hold]],
    ttl_seconds: int | None = None,
    monthly_grant: int | None = None,
    now: datetime | None = None,
    creator: Creator = OPERATION,
) -> dict[uuid.UUID, list[Reservation | PlatformError]]:
    """`reserve_many` for the holds of many tenants at once (the scheduler's tick): each
    tenant's against its own credits, with one lock statement, balance check and insert for
    them all. A tenant without holds is not touched."""
    if kind not in KINDS:
        raise BadRequest(f"Unknown credit kind {kind!r}; one of {', '.join(KINDS)}.")
    for asked in holds.values():
        for hold in asked:
            if not 1 <= len(hold.idempotency_key) <= MAX_KEY_LENGTH:
                raise BadRequest(f"An idempotency key has 1 to {MAX_KEY_LENGTH} characters.")
            if hold.amount < 1:
                raise BadRequest("A reservation holds at least 1 credit.")
    ttl = _checked_ttl(ttl_seconds)
    now = now or utcnow()
    keys = {
        tenant_id: list(dict.fromkeys(hold.idempotency_key for hold in asked))
        for tenant_id, asked in holds.items()
        if asked
    }
    if not keys:
        return {tenant_id: [] for tenant_id in holds}
    # The balances first, which take the tenants' credit locks; then the holds already under
    # these keys, read under them, so a racing request cannot make one in between.
    available = await buckets.available_of(
        session, keys.keys(), monthly_grant=monthly_grant, now=now
    )
    found = await repository.reservations_by_keys(session, keys, kind)
    if creator.owner == Owner.operation:
        # Only a hold of the amount the operation asks for: another is refused below, and
        # stays the client's to release.
        asked_amounts = {
            (tenant_id, hold.idempotency_key): hold.amount
            for tenant_id, asked in holds.items()
            for hold in asked
        }
        adopted = [
            row
            for pair, row in found.items()
            if row.owner == Owner.client
            and row.amount == asked_amounts[pair]
            and _status(row, now) == ReservationStatus.held
        ]
        await repository.adopt(session, keys.keys(), [row.id for row in adopted], now)
        for row in adopted:
            row.owner = Owner.operation.value
    refused: dict[tuple[uuid.UUID, str], PlatformError] = {}
    wanted: dict[uuid.UUID, dict[str, int]] = {}  # tenant -> key -> amount, of holds to make
    for tenant_id, asked in holds.items():
        left = available.get(tenant_id, 0)
        making = wanted.setdefault(tenant_id, {})
        for hold in asked:
            key = hold.idempotency_key
            if (tenant_id, key) in found or (tenant_id, key) in refused or key in making:
                continue
            if left < hold.amount:
                refused[(tenant_id, key)] = InsufficientCredits(_shortfall(hold.amount, left))
                continue
            left -= hold.amount
            making[key] = hold.amount
    # Plain inserts: under the tenants' credit locks no other hold of these keys can appear,
    # and if one did, the unique key fails the transaction rather than hold twice.
    inserted = await repository.add_reservations(
        session,
        {tenant_id: list(making.items()) for tenant_id, making in wanted.items()},
        kind=kind,
        expires_at=now + timedelta(seconds=ttl),
        now=now,
        owner=creator.owner.value,
        created_by=creator.actor_id,
        creator_type=creator.actor_type.value,
        resource_type=creator.resource_type,
        resource_id=creator.resource_id,
    )
    made: dict[tuple[uuid.UUID, str], Reservation] = {}
    for values in inserted:
        # Built from the values just written: a scheduler tick holds thousands.
        made[(values["tenant_id"], values["idempotency_key"])] = Reservation.model_construct(
            amount_held=values["amount"],
            amount_committed=None,
            **{
                name: values[name]
                for name in Reservation.model_fields
                if name in values and name not in ("amount_held", "amount_committed")
            },
        )
    outcomes: dict[uuid.UUID, list[Reservation | PlatformError]] = {}
    for tenant_id, asked in holds.items():
        outcomes[tenant_id] = []
        for hold in asked:
            pair = (tenant_id, hold.idempotency_key)
            if pair in refused:
                outcomes[tenant_id].append(refused[pair])
                continue
            held = made[pair] if pair in made else as_reservation(found[pair], now)
            if held.amount != hold.amount:
                outcomes[tenant_id].append(
                    ReservationSettled(
                        f"The idempotency key {hold.idempotency_key!r} already holds "
                        f"{held.amount} credits for {kind}; a replay must ask for the same amount."
                    )
                )
            else:
                outcomes[tenant_id].append(held)
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
    description: str | None = None,
    actor: tuple[ActorType, str | None] | None = None,
    spent: Spent | None = None,
) -> Reservation:
    """Settle a hold at `amount` (default: all of it) with its debit rows; the rest is free
    again. `actor` defaults to whoever created the hold; `spent` is recorded on the debit."""
    reservation, _ = await commit_with_rows(
        session, tenant_id, reservation_id, amount, now or utcnow(), description, actor, spent
    )
    return reservation


async def commit_with_rows(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    amount: int | None,
    now: datetime,
    description: str | None,
    actor: tuple[ActorType, str | None] | None,
    spent: Spent | None = None,
) -> tuple[Reservation, list[dict[str, Any]] | None]:
    """The committed hold and the debit rows written (None when it was committed before)."""
    # The lock before the hold's row: the order `reserve` takes them in, so the two never
    # wait for each other crosswise.
    await repository.lock_ledger(session, tenant_id)
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
            settled_at=now,
        )
    if moved is not None:
        by = actor or (
            ActorType(moved.creator_type or ActorType.system.value),
            moved.created_by,
        )
        rows = await buckets.debit(
            session,
            tenant_id,
            moved,
            moved.committed_amount or 0,
            now=now,
            actor=by,
            description=description or f"{moved.kind} ({moved.idempotency_key})",
            **_recorded(moved, spent or Spent()),
        )
        return as_reservation(moved, now), rows
    row = await hold_row(session, tenant_id, reservation_id)
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
    return as_reservation(row, now), None


async def release(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reservation_id: uuid.UUID,
    *,
    now: datetime | None = None,
) -> Reservation:
    """Give a hold back. A no-op when it is already released or expired."""
    now = now or utcnow()
    row = await hold_row(session, tenant_id, reservation_id)
    if _status(row, now) == ReservationStatus.held:
        moved = await repository.update_open_hold(
            session,
            tenant_id,
            reservation_id,
            now,
            status=ReservationStatus.released.value,
            settled_at=now,
        )
        if moved is not None:
            return as_reservation(moved, now)
        row = await hold_row(session, tenant_id, reservation_id)  # it settled meanwhile
    if _status(row, now) == ReservationStatus.committed:
        raise ReservationSettled("This reservation was committed; its credits are spent.")
    return as_reservation(row, now)


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
    row = await hold_row(session, tenant_id, reservation_id)
    if _status(row, now) == ReservationStatus.held:
        moved = await repository.update_open_hold(
            session,
            tenant_id,
            reservation_id,
            now,
            expires_at=max(row.expires_at, now + timedelta(seconds=ttl)),
        )
        if moved is not None:
            return as_reservation(moved, now)
        row = await hold_row(session, tenant_id, reservation_id)  # it settled meanwhile
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
    return as_reservation(await hold_row(session, tenant_id, reservation_id), now or utcnow())


async def reservation_by_key(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    kind: str,
    idempotency_key: str,
    *,
    now: datetime | None = None,
) -> Reservation | None:
    found = await repository.reservation_by_key(session, tenant_id, kind, idempotency_key)
    return None if found is None else as_reservation(found, now or utcnow())


async def hold_row(
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


def as_reservation(row: CreditReservation, now: datetime) -> Reservation:
    return Reservation.model_validate(row).model_copy(update={"status": _status(row, now)})


async def debited_by_resource(
    session: AsyncSession, tenant_id: uuid.UUID, resource_type: str, start: datetime, end: datetime
) -> dict[str, int]:
    """Credits debited in [start, end) for each resource of this type (a job's runs are debited
    to the job), by its id: positive amounts."""
    return await usage_repository.debited_by_resource(session, tenant_id, resource_type, start, end)
