"""Credit rules: buckets and their expiry, grants and refunds, holds and how they settle, usage.
Never commits.

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

import math
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.core import runtime
from contentplatform.credits import pricing, repository
from contentplatform.credits.errors import (
    InsufficientCredits,
    KindNeedsEditor,
    NotHoldCreator,
    ReservationAdopted,
    ReservationNotFound,
    ReservationSettled,
)
from contentplatform.credits.models import (
    ActorType,
    BucketSource,
    CreditAccount,
    CreditLedgerEntry,
    CreditReservation,
    EntryType,
    Owner,
    ReservationStatus,
)
from contentplatform.credits.pricing import Price
from contentplatform.credits.schemas import (
    Actor,
    Balance,
    BalanceBucket,
    BalancePeriod,
    Bucket,
    Committed,
    Estimate,
    EstimateInput,
    LedgerEntry,
    LedgerPage,
    ListLedgerInput,
    ListReservationsInput,
    Reservation,
    ReservationPage,
    ReserveInput,
    Usage,
    UsageBucket,
    UsageResult,
)
from contentplatform.events import service as events
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import BadRequest, PlatformError
from contentplatform.kit.schemas import offset_of

KINDS = pricing.KINDS
MAX_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255
# Kinds a member may not hold credits for through the API: they spend an editor's budget.
EDITOR_KINDS = (pricing.INGEST, pricing.GENERATION, pricing.SITE_PROFILE)
LOW_BALANCE_SHARE = 0.10
RESOURCE_OF_KIND = {
    pricing.INGEST: "document",
    pricing.GENERATION: "draft",
    pricing.CHAT: "conversation",
    pricing.SITE_PROFILE: "crawl_config",
}


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
    the resource it was for when the hold did not name one (a job's run, a conversation)."""

    input_tokens: int = 0
    output_tokens: int = 0
    resource_type: str | None = None
    resource_id: str | None = None


# --- the grant policy ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    monthly_credits: int | None
    automatic: bool
    paused: bool
    rollover_cap: int


FREE_POLICY = Policy(monthly_credits=None, automatic=True, paused=False, rollover_cap=0)


def _policy_of(row: CreditAccount | None) -> Policy:
    if row is None:
        return FREE_POLICY
    return Policy(row.monthly_credits, row.automatic, row.paused, row.rollover_cap)


async def set_grant_policy(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    monthly_credits: int | None,
    automatic: bool,
    paused: bool,
    rollover_cap: int = 0,
) -> None:
    """How the tenant gets credits from now on: `automatic` the calendar-month grant of
    `monthly_credits` (None: the configured one); not automatic, grants come from `grant` (paid
    invoices); `paused` (past_due) writes no new monthly grant, the balance stays usable. Takes
    effect at the tenant's next balance check (this month's grant, once written, stays)."""
    if monthly_credits is not None and monthly_credits < 0:
        raise BadRequest("Monthly credits are 0 or more.")
    if rollover_cap < 0:
        raise BadRequest("The rollover cap is 0 or more.")
    await repository.save_account(
        session,
        tenant_id,
        monthly_credits=monthly_credits,
        automatic=automatic,
        paused=paused,
        rollover_cap=rollover_cap,
    )
    _granted.pop(tenant_id, None)
    _low_lines.pop(tenant_id, None)


def _monthly_amount(policy: Policy, default: int) -> int:
    return default if policy.monthly_credits is None else policy.monthly_credits


def _low_line(policy: Policy, monthly_grant: int | None) -> int:
    """The balance at or under which the tenant runs low: 10 % of its monthly credits (the
    calendar grant on an automatic policy, `monthly_grant` or the configured one; the plan's
    credits on a paid one). The balance's `low_balance_threshold`."""
    if not policy.automatic:
        monthly = policy.monthly_credits or 0
    elif policy.monthly_credits is not None:
        monthly = policy.monthly_credits
    else:
        monthly = configured_monthly_grant() if monthly_grant is None else monthly_grant
    return math.ceil(monthly * LOW_BALANCE_SHARE)


# --- settling: this month's grant in, expired buckets out ---------------------------------------

# Tenant -> the month this process has seen granted in a committed transaction: granting again
# would change nothing, so a hit skips reading the policy (a confirmed upload or a scheduled run
# holds credits many times a month). Only a commit records it; `set_grant_policy` forgets it in
# its own process, and an entry lives a minute, so a policy changed by another process (a
# subscription ended: the calendar grant again) is read by every process within that minute.
_granted: TTLCache[uuid.UUID, str] = TTLCache(maxsize=100_000, ttl=60)
# Tenant -> its low-balance line (`_low_line`), kept wherever the policy is read anyway, so a
# debit decides whether it crossed the line without a query of its own; a miss reads the policy
# once. Forgotten as `_granted` is, on the same terms.
_low_lines: TTLCache[uuid.UUID, int] = TTLCache(maxsize=100_000, ttl=60)


async def _settle(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    monthly_grant: int | None,
    now: datetime,
    *,
    expire: bool = False,
) -> None:
    """Take the tenant's credit lock (until the transaction ends), write this month's grant if
    the policy gives one, and expire what is due: always with `expire` (a balance check),
    else on the month's first settling in this process. A hold needs no expiry row: available
    ignores expired buckets, and the reconciler's pass writes the rows."""
    await repository.lock_ledger(session, tenant_id)
    current = period_of(now)
    policy: Policy | None = None
    if _granted.get(tenant_id) == current and not expire:
        return
    if _granted.get(tenant_id) != current:
        policy = _policy_of(await repository.account(session, tenant_id))
        _low_lines[tenant_id] = _low_line(policy, monthly_grant)
        if policy.automatic and not policy.paused:
            default = configured_monthly_grant() if monthly_grant is None else monthly_grant
            amount = _monthly_amount(policy, default)
            if amount > 0:
                _, end = month_bounds(current)
                await _add_bucket(
                    session,
                    tenant_id,
                    source=BucketSource.monthly_grant,
                    amount=amount,
                    expires_at=end,
                    period=current,
                    reference=f"monthly:{current}",
                    description=f"Monthly credits for {current}",
                    actor=(ActorType.system, None),
                    now=now,
                )

        async def remember() -> None:
            _granted[tenant_id] = current

        after_commit(session, remember)
    await _expire_due(session, tenant_id, now, policy)


async def _expire_due(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime, policy: Policy | None
) -> int:
    """An `expiry` row for what each bucket past its expiry still held (under the lock); a
    monthly grant's rollover carried into a bucket of its own. Credits expired."""
    due = await repository.due_buckets(session, tenant_id, now)
    if not due:
        return 0
    if policy is None:
        policy = _policy_of(await repository.account(session, tenant_id))
    balance = await repository.total_remaining(session, tenant_id)
    expired = 0
    for bucket in due:
        balance -= bucket.remaining
        expired += bucket.remaining
        await repository.set_remaining(session, tenant_id, bucket.id, 0, now)
        await repository.add_entries(
            session,
            tenant_id,
            [
                _entry(
                    tenant_id,
                    EntryType.expiry,
                    -bucket.remaining,
                    balance,
                    bucket_id=bucket.id,
                    period=bucket.period,
                    description=f"Unused credits of “{bucket.description}” expired",
                    now=now,
                )
            ],
        )
        carried = min(bucket.remaining, policy.rollover_cap)
        if bucket.source == BucketSource.monthly_grant and carried > 0:
            assert bucket.expires_at is not None  # due buckets have an expiry
            _, until = month_bounds(period_of(bucket.expires_at))
            bucket_made = await _add_bucket(
                session,
                tenant_id,
                source=BucketSource.monthly_grant,
                amount=carried,
                expires_at=until,
                period=period_of(bucket.expires_at),
                reference=f"rollover:{bucket.id}",
                description=f"Rolled over from “{bucket.description}”",
                actor=(ActorType.system, None),
                now=now,
            )
            if bucket_made:
                balance += carried
    return expired


async def expire_due_buckets(session: AsyncSession, now: datetime | None = None) -> int:
    """The reconciler's pass: expire every tenant's buckets past their expiry; credits expired."""
    now = now or utcnow()
    expired = 0
    for tenant_id in await repository.due_bucket_tenants(session, now):
        await repository.lock_ledger(session, tenant_id)
        expired += await _expire_due(session, tenant_id, now, None)
    return expired


async def _add_bucket(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    source: BucketSource,
    amount: int,
    expires_at: datetime | None,
    period: str | None,
    reference: str | None,
    description: str,
    actor: tuple[ActorType, str | None],
    now: datetime,
) -> bool:
    """A bucket and its `grant` row, once per reference; whether it was added. Under the lock."""
    bucket_id = uuid.uuid4()
    added = await repository.add_bucket_once(
        session,
        tenant_id,
        id=bucket_id,
        source=source.value,
        granted=amount,
        remaining=amount,
        expires_at=expires_at,
        period=period,
        reference=reference,
        description=description,
        created_at=now,
        updated_at=now,
    )
    if added:
        balance = await repository.total_remaining(session, tenant_id)
        await repository.add_entries(
            session,
            tenant_id,
            [
                _entry(
                    tenant_id,
                    EntryType.grant,
                    amount,
                    balance,
                    bucket_id=bucket_id,
                    period=period,
                    actor=actor,
                    description=description,
                    now=now,
                )
            ],
        )
    return added


def _entry(
    tenant_id: uuid.UUID,
    entry_type: EntryType,
    amount: int,
    balance_after: int,
    *,
    description: str,
    now: datetime,
    bucket_id: uuid.UUID | None = None,
    period: str | None = None,
    kind: str | None = None,
    reservation_id: uuid.UUID | None = None,
    actor: tuple[ActorType, str | None] = (ActorType.system, None),
    resource: tuple[str | None, str | None] = (None, None),
    tokens: tuple[int, int] | None = None,
) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "entry_type": entry_type.value,
        "amount": amount,
        "balance_after": balance_after,
        "kind": kind,
        "bucket_id": bucket_id,
        "reservation_id": reservation_id,
        "period": period,
        "actor_type": actor[0].value,
        "actor_id": actor[1],
        "resource_type": resource[0],
        "resource_id": resource[1],
        "description": description[:500],
        "input_tokens": None if tokens is None else tokens[0],
        "output_tokens": None if tokens is None else tokens[1],
        "created_at": now,
    }


# --- grants and refunds (billing's) -------------------------------------------------------------


async def grant(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    source: str,
    amount: int,
    expires_at: datetime | None,
    reference: str | None,
    description: str,
    actor_type: str = "system",
    actor_id: str | None = None,
    now: datetime | None = None,
) -> Bucket:
    """Add a bucket of `amount` credits with its `grant` row. Idempotent by (tenant,
    reference): a repeat returns the bucket already there and writes nothing."""
    if amount < 1:
        raise BadRequest("A grant adds at least 1 credit.")
    now = now or utcnow()
    await repository.lock_ledger(session, tenant_id)
    if reference is not None:
        found = await repository.bucket_by_reference(session, tenant_id, reference)
        if found is not None:
            return Bucket.model_validate(found)
    bucket_source = BucketSource(source)
    await _add_bucket(
        session,
        tenant_id,
        source=bucket_source,
        amount=amount,
        expires_at=expires_at,
        period=period_of(now) if bucket_source == BucketSource.monthly_grant else None,
        reference=reference,
        description=description,
        actor=(ActorType(actor_type), actor_id),
        now=now,
    )
    if reference is None:
        latest = await repository.latest_bucket(session, tenant_id)
        return Bucket.model_validate(latest)
    made = await repository.bucket_by_reference(session, tenant_id, reference)
    return Bucket.model_validate(made)


async def revoke_grant(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    reference: str,
    *,
    amount: int | None = None,
    description: str,
    now: datetime | None = None,
) -> int:
    """Remove the unspent credits of the bucket granted under `reference` (at most `amount`)
    with one `refund` row; credits removed. Once per bucket: a second call removes nothing, as
    does an unknown reference. Holds open on the tenant stay; they may leave it short."""
    now = now or utcnow()
    await repository.lock_ledger(session, tenant_id)
    bucket = await repository.bucket_by_reference(session, tenant_id, reference)
    if bucket is None or await repository.refunded(session, tenant_id, bucket.id):
        return 0
    removed = bucket.remaining if amount is None else max(0, min(amount, bucket.remaining))
    if removed == 0:
        return 0
    balance = await repository.total_remaining(session, tenant_id) - removed
    await repository.set_remaining(session, tenant_id, bucket.id, bucket.remaining - removed, now)
    await repository.add_entries(
        session,
        tenant_id,
        [
            _entry(
                tenant_id,
                EntryType.refund,
                -removed,
                balance,
                bucket_id=bucket.id,
                description=description,
                now=now,
            )
        ],
    )
    return removed


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
    await _settle(session, tenant_id, monthly_grant, now, expire=True)
    start, end = month_bounds(period_of(now))
    buckets = await repository.spendable_buckets(session, tenant_id, now)
    total = sum(bucket.remaining for bucket in buckets)
    reserved = await repository.held(session, tenant_id, now)
    policy = _policy_of(await repository.account(session, tenant_id))
    low_line = _low_lines[tenant_id] = _low_line(policy, monthly_grant)
    granted = await repository.ledger_sum(session, tenant_id, [EntryType.grant], start, end)
    used = -await repository.ledger_sum(session, tenant_id, [EntryType.debit], start, end)
    return Balance(
        available=total - reserved,
        reserved=reserved,
        total=total,
        period=BalancePeriod(start=start, end=end, granted=granted, used=used),
        buckets=[BalanceBucket.model_validate(bucket) for bucket in buckets],
        low_balance_threshold=low_line,
    )


async def _available(
    session: AsyncSession, tenant_id: uuid.UUID, *, monthly_grant: int | None, now: datetime
) -> int:
    """`balance(...).available` in one query after settling (the scheduler holds credits for
    thousands of runs in one tick)."""
    await _settle(session, tenant_id, monthly_grant, now)
    return await repository.available(session, tenant_id, now)


@dataclass(frozen=True)
class MonthUsage:
    """Credits debited in the current calendar month (UTC), [start, end)."""

    start: datetime
    end: datetime
    used: int


async def month_usage(
    session: AsyncSession, tenant_id: uuid.UUID, *, now: datetime | None = None
) -> MonthUsage:
    """This calendar month's debits, for billing.getQuota's `credits` item. Reads only."""
    start, end = month_bounds(period_of(now or utcnow()))
    used = -await repository.ledger_sum(session, tenant_id, [EntryType.debit], start, end)
    return MonthUsage(start=start, end=end, used=used)


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

    One balance check and one insert for them all (the scheduler holds credits for a tenant's
    due jobs together). A key given twice is one hold. An operation reserving under the key of
    a client's open hold adopts it.
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
    if creator.owner == Owner.operation:
        # Only a hold of the amount the operation asks for: another is refused below, and
        # stays the client's to release.
        asked = {hold.idempotency_key: hold.amount for hold in holds}
        adopted = [
            row
            for key, row in found.items()
            if row.owner == Owner.client
            and row.amount == asked[key]
            and _status(row, now) == ReservationStatus.held
        ]
        await repository.adopt(session, tenant_id, [row.id for row in adopted], now)
        for row in adopted:
            row.owner = Owner.operation.value
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
            owner=creator.owner.value,
            created_by=creator.actor_id,
            creator_type=creator.actor_type.value,
            resource_type=creator.resource_type,
            resource_id=creator.resource_id,
        )
        for values in inserted:
            # Built from the values just written: a scheduler tick holds thousands.
            made[values["idempotency_key"]] = Reservation.model_construct(
                amount_held=values["amount"],
                amount_committed=None,
                **{
                    name: values[name]
                    for name in Reservation.model_fields
                    if name in values and name not in ("amount_held", "amount_committed")
                },
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
    description: str | None = None,
    actor: tuple[ActorType, str | None] | None = None,
    spent: Spent | None = None,
) -> Reservation:
    """Settle a hold at `amount` (default: all of it) with its debit rows; the rest is free
    again. `actor` defaults to whoever created the hold; `spent` is recorded on the debit."""
    reservation, _ = await _commit(
        session, tenant_id, reservation_id, amount, now or utcnow(), description, actor, spent
    )
    return reservation


async def _commit(
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
        rows = await _debit(
            session,
            tenant_id,
            moved,
            moved.committed_amount or 0,
            now=now,
            actor=by,
            description=description or f"{moved.kind} ({moved.idempotency_key})",
            spent=spent or Spent(),
        )
        return _view(moved, now), rows
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
    return _view(row, now), None


async def _debit(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    hold: CreditReservation,
    amount: int,
    *,
    now: datetime,
    actor: tuple[ActorType, str | None],
    description: str,
    spent: Spent,
) -> list[dict[str, Any]]:
    """Draw `amount` from the earliest-expiring buckets (under the lock): one row per bucket.
    The tokens go on the first row only, so summing rows counts them once."""
    if amount <= 0:
        return []
    resource = (hold.resource_type, hold.resource_id)
    if resource == (None, None):
        resource = (spent.resource_type, spent.resource_id)
    tokens: tuple[int, int] | None = (spent.input_tokens, spent.output_tokens)
    balance = before = await repository.total_remaining(session, tenant_id)
    rows: list[dict[str, Any]] = []
    left = amount
    for bucket in await repository.spendable_buckets(session, tenant_id, now):
        take = min(left, bucket.remaining)
        await repository.set_remaining(session, tenant_id, bucket.id, bucket.remaining - take, now)
        balance -= take
        left -= take
        rows.append(
            _entry(
                tenant_id,
                EntryType.debit,
                -take,
                balance,
                bucket_id=bucket.id,
                kind=hold.kind,
                reservation_id=hold.id,
                actor=actor,
                resource=resource,
                description=description,
                now=now,
                tokens=tokens,
            )
        )
        tokens = None
        if left == 0:
            break
    await repository.add_entries(session, tenant_id, rows)
    await _announce_low_balance(session, tenant_id, before, balance, now)
    return rows


async def _announce_low_balance(
    session: AsyncSession, tenant_id: uuid.UUID, before: int, after: int, now: datetime
) -> None:
    """`credits.low_balance` when a debit took the balance (the ledger's: credits left in the
    buckets) across the low-balance line, or to zero: once per crossing, since a debit that
    starts under the line crosses nothing (a grant that lifts the balance over it arms it
    again). A debit crossing both is told once, as `zero`. The line comes from the cache the
    policy's readers fill: no query per debit."""
    if after >= before:
        return
    line = _low_lines.get(tenant_id)
    if line is None:
        line = _low_lines[tenant_id] = await _stored_low_line(session, tenant_id, now)
    if after <= 0 < before:
        threshold = "zero"
    elif after <= line < before:
        threshold = "10_percent"
    else:
        return
    events.emit(
        session,
        tenant_id,
        "credits.low_balance",
        resource_id=tenant_id,
        payload={"balance": after, "threshold": threshold, "low_balance_threshold": line},
    )


async def _stored_low_line(session: AsyncSession, tenant_id: uuid.UUID, now: datetime) -> int:
    """The low-balance line from what is stored (a cache miss): the policy, and on the calendar
    grant this month's grant, as written. No configuration is read: a commit needs none (it
    runs where no runtime is installed, bench/credits.py)."""
    policy = _policy_of(await repository.account(session, tenant_id))
    if policy.automatic and policy.monthly_credits is None:
        granted = await repository.bucket_by_reference(
            session, tenant_id, f"monthly:{period_of(now)}"
        )
        return _low_line(policy, granted.granted if granted is not None else 0)
    return _low_line(policy, None)


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
            session,
            tenant_id,
            reservation_id,
            now,
            status=ReservationStatus.released.value,
            settled_at=now,
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


# --- the API's operations -----------------------------------------------------------------------


def caller(tenant: TenantAccess, api_key_subject: str | None) -> tuple[ActorType, str]:
    """The actor a request acts as: its API key, else its member (by user id)."""
    if api_key_subject is not None:
        return ActorType.api_key, api_key_subject
    return ActorType.user, str(tenant.user_id)


async def estimate(session: AsyncSession, tenant_id: uuid.UUID, data: EstimateInput) -> Estimate:
    """The price table's amount for the kind, against what is available now."""
    quoted = price(data.kind, content_length=data.content_length)
    available = await _available(session, tenant_id, monthly_grant=None, now=utcnow())
    return Estimate(
        kind=quoted.kind,
        amount=quoted.amount,
        price_basis=quoted.basis,
        available=available,
        sufficient=available >= quoted.amount,
    )


async def reserve_for_client(
    session: AsyncSession,
    tenant: TenantAccess,
    actor: tuple[ActorType, str],
    data: ReserveInput,
) -> Reservation:
    """A client-owned hold (pre-flight) under the key the client will send the operation."""
    if data.kind in EDITOR_KINDS and not tenant.role.includes(Role.editor):
        raise KindNeedsEditor(f"Holding credits for {data.kind} needs the editor role.")
    amount = data.amount or price(data.kind, content_length=data.content_length).amount
    return await reserve(
        session,
        tenant.tenant_id,
        kind=data.kind,
        idempotency_key=data.idempotency_key,
        amount=amount,
        ttl_seconds=data.ttl_seconds,
        creator=Creator(
            owner=Owner.client,
            actor_type=actor[0],
            actor_id=actor[1],
            resource_type=RESOURCE_OF_KIND[data.kind] if data.resource_id else None,
            resource_id=str(data.resource_id) if data.resource_id else None,
        ),
    )


async def commit_for_client(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    actor: tuple[ActorType, str],
    reservation_id: uuid.UUID,
    amount: int,
    description: str | None,
) -> Committed:
    """Settle a client-owned hold at `amount`; the same amount again answers the same."""
    row = await _row(session, tenant_id, reservation_id)
    if row.owner == Owner.operation:
        raise ReservationAdopted()
    reservation, rows = await _commit(
        session, tenant_id, reservation_id, amount, utcnow(), description, actor, None
    )
    if rows is None:
        entries = [
            _ledger_entry(entry)
            for entry in await repository.entries_of_reservation(session, tenant_id, reservation_id)
        ]
    else:
        entries = [_ledger_entry(CreditLedgerEntry(**values)) for values in rows]
    return Committed(
        reservation=reservation,
        ledger_entry=entries[-1] if entries else None,
        ledger_entries=entries,
    )


async def release_for_client(
    session: AsyncSession,
    tenant: TenantAccess,
    actor: tuple[ActorType, str],
    reservation_id: uuid.UUID,
) -> Reservation:
    """Give back a client-owned hold: its creator's or an admin's to release."""
    row = await _row(session, tenant.tenant_id, reservation_id)
    if row.created_by != actor[1] and not tenant.role.includes(Role.admin):
        raise NotHoldCreator()
    if row.owner == Owner.operation:
        raise ReservationAdopted()
    return await release(session, tenant.tenant_id, reservation_id)


async def list_reservations(
    session: AsyncSession, tenant_id: uuid.UUID, data: ListReservationsInput
) -> ReservationPage:
    now = utcnow()
    rows, total = await repository.reservations_page(
        session,
        tenant_id,
        status=data.status,
        kind=data.kind,
        now=now,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return ReservationPage(
        data=[_view(row, now) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def list_ledger(
    session: AsyncSession, tenant_id: uuid.UUID, data: ListLedgerInput
) -> LedgerPage:
    """The ledger as the balance sees it: this month's grant and due expiries written first."""
    await _settle(session, tenant_id, None, utcnow(), expire=True)
    rows, total = await repository.ledger_page(
        session,
        tenant_id,
        entry_type=data.type,
        kind=data.kind,
        start=data.start_date,
        end=data.end_date,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    return LedgerPage(
        data=[_ledger_entry(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


def _ledger_entry(row: CreditLedgerEntry) -> LedgerEntry:
    return LedgerEntry(
        id=row.id,
        type=EntryType(row.entry_type),
        kind=row.kind,
        amount=row.amount,
        balance_after=row.balance_after,
        bucket_id=row.bucket_id,
        reservation_id=row.reservation_id,
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        actor=Actor(type=ActorType(row.actor_type or ActorType.system.value), id=row.actor_id),
        description=row.description,
        created_at=row.created_at,
    )


# --- usage (billing.getUsage) -------------------------------------------------------------------

BucketWidth = Literal["1h", "1d", "1mo"]
GroupBy = Literal["kind", "user", "job"]


def _bucket_start(moment: datetime, width: BucketWidth) -> datetime:
    moment = moment.astimezone(UTC)
    if width == "1h":
        return moment.replace(minute=0, second=0, microsecond=0)
    if width == "1d":
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return month_bounds(period_of(moment))[0]


def _bucket_end(start: datetime, width: BucketWidth) -> datetime:
    if width == "1h":
        return start + timedelta(hours=1)
    if width == "1d":
        return start + timedelta(days=1)
    return month_bounds(period_of(start))[1]


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


async def usage(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    start: datetime,
    end: datetime,
    bucket_width: BucketWidth,
    group_by: GroupBy | None,
    kind: str | None,
) -> Usage:
    """Committed debits in [start, end) in time buckets aligned to UTC hours, days or months
    (every bucket of the window, empty ones too), one result per group. `operations` counts
    commits (a commit spanning buckets is one); tokens are the model tokens the metered
    operations recorded on their debits (0 for ingests and client-committed holds)."""
    rows = await repository.debits(session, tenant_id, start, end, kind)
    credits: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    operations: defaultdict[tuple[datetime, Any], set[uuid.UUID]] = defaultdict(set)
    input_tokens: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    output_tokens: defaultdict[tuple[datetime, Any], int] = defaultdict(int)
    for row in rows:
        if group_by == "kind":
            group: Any = row.kind
        elif group_by == "user":
            is_user = row.actor_type == ActorType.user.value
            group = _uuid_or_none(row.actor_id) if is_user else None
        elif group_by == "job":
            group = _uuid_or_none(row.resource_id) if row.resource_type == "job" else None
        else:
            group = None
        slot = (_bucket_start(row.created_at, bucket_width), group)
        credits[slot] -= row.amount
        operations[slot].add(row.reservation_id or row.id)
        input_tokens[slot] += row.input_tokens or 0
        output_tokens[slot] += row.output_tokens or 0
    buckets: list[UsageBucket] = []
    cursor = _bucket_start(start, bucket_width)
    while cursor < end:
        results = [
            UsageResult(
                kind=group if group_by == "kind" else None,
                user_id=group if group_by == "user" else None,
                job_id=group if group_by == "job" else None,
                credits=amount,
                operations=len(operations[slot_start, group]),
                input_tokens=input_tokens[slot_start, group],
                output_tokens=output_tokens[slot_start, group],
            )
            for (slot_start, group), amount in sorted(
                credits.items(), key=lambda item: str(item[0][1])
            )
            if slot_start == cursor
        ]
        following = _bucket_end(cursor, bucket_width)
        buckets.append(UsageBucket(start_time=cursor, end_time=following, results=results))
        cursor = following
    return Usage(data=buckets, total=len(buckets))
