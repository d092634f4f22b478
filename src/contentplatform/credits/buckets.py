"""Credits in buckets: the grant policy, this month's grant in and expired buckets out, grants
and refunds (billing's), what is available, and a debit drawn from the buckets with the
low-balance event it may write. Every movement is one ledger row of one bucket. Never commits.

service.py holds credits against these buckets and settles the holds here (`debit`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
from contentplatform.credits import repository
from contentplatform.credits.models import (
    ActorType,
    BucketSource,
    CreditAccount,
    CreditBucket,
    CreditReservation,
    EntryType,
)
from contentplatform.credits.schemas import Bucket
from contentplatform.events import service as events
from contentplatform.kit.db import after_commit, utcnow
from contentplatform.kit.errors import BadRequest

LOW_BALANCE_SHARE = 0.10


def configured_monthly_grant() -> int:
    return runtime.current().settings.monthly_credit_grant


def period_of(moment: datetime) -> str:
    """The calendar month (UTC) of `moment`, e.g. "2026-11"."""
    return f"{moment.astimezone(UTC):%Y-%m}"


def month_bounds(period: str) -> tuple[datetime, datetime]:
    """The first instant of the month `period` and of the month after it."""
    year, month = (int(part) for part in period.split("-"))
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, end


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


async def settle(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    monthly_grant: int | None,
    now: datetime,
    *,
    expire: bool = False,
) -> None:
    """Take the tenants' credit locks (until the transaction ends), write this month's grant of
    each whose policy gives one, and expire what is due: always with `expire` (a balance
    check), else on the month's first settling in this process. A hold needs no expiry row:
    available ignores expired buckets, and the reconciler's pass writes the rows. A few queries
    however many tenants there are (the scheduler settles a tick's tenants together)."""
    await repository.lock_ledgers(session, tenant_ids)
    current = period_of(now)
    fresh = [tenant_id for tenant_id in tenant_ids if _granted.get(tenant_id) != current]
    policies: dict[uuid.UUID, Policy] = {}
    if fresh:
        accounts = await repository.accounts(session, fresh)
        default = configured_monthly_grant() if monthly_grant is None else monthly_grant
        _, end = month_bounds(current)
        grants: list[dict[str, Any]] = []
        for tenant_id in fresh:
            policy = policies[tenant_id] = _policy_of(accounts.get(tenant_id))
            _low_lines[tenant_id] = _low_line(policy, monthly_grant)
            amount = _monthly_amount(policy, default)
            if policy.automatic and not policy.paused and amount > 0:
                grants.append(
                    _bucket(
                        tenant_id,
                        source=BucketSource.monthly_grant,
                        amount=amount,
                        expires_at=end,
                        period=current,
                        reference=f"monthly:{current}",
                        description=f"Monthly credits for {current}",
                        now=now,
                    )
                )
        await _add_buckets(session, grants, actor=(ActorType.system, None), now=now)

        async def remember() -> None:
            for tenant_id in fresh:
                _granted[tenant_id] = current

        after_commit(session, remember)
    await _expire_due(session, tenant_ids if expire else fresh, now, policies)


async def _expire_due(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    now: datetime,
    policies: dict[uuid.UUID, Policy],
) -> int:
    """An `expiry` row for what each bucket of these tenants past its expiry still held (under
    their locks); a monthly grant's rollover carried into a bucket of its own. Credits expired.
    `policies` has those already read."""
    expired = 0
    for tenant_id, due in (await repository.due_buckets(session, tenant_ids, now)).items():
        policy = policies.get(tenant_id) or _policy_of(await repository.account(session, tenant_id))
        expired += await _expire_buckets(session, tenant_id, due, now, policy)
    return expired


async def _expire_buckets(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    due: list[CreditBucket],
    now: datetime,
    policy: Policy,
) -> int:
    """`_expire_due` for one tenant's due buckets."""
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
        expired += await _expire_due(session, [tenant_id], now, {})
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
    row = _bucket(
        tenant_id,
        source=source,
        amount=amount,
        expires_at=expires_at,
        period=period,
        reference=reference,
        description=description,
        now=now,
    )
    return bool(await _add_buckets(session, [row], actor=actor, now=now))


def _bucket(
    tenant_id: uuid.UUID,
    *,
    source: BucketSource,
    amount: int,
    expires_at: datetime | None,
    period: str | None,
    reference: str | None,
    description: str,
    now: datetime,
) -> dict[str, Any]:
    """The values of a new bucket of `amount` credits."""
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "source": source.value,
        "granted": amount,
        "remaining": amount,
        "expires_at": expires_at,
        "period": period,
        "reference": reference,
        "description": description,
        "created_at": now,
        "updated_at": now,
    }


async def _add_buckets(
    session: AsyncSession,
    buckets: list[dict[str, Any]],
    *,
    actor: tuple[ActorType, str | None],
    now: datetime,
) -> set[uuid.UUID]:
    """`_add_bucket` for buckets (`_bucket`'s) of different tenants, at most one each: the ids
    of those added. Under their locks."""
    added = await repository.add_buckets_once(session, {b["tenant_id"] for b in buckets}, buckets)
    if not added:
        return added
    made = [bucket for bucket in buckets if bucket["id"] in added]
    balances = await repository.totals_remaining(session, {b["tenant_id"] for b in made})
    entries = [
        _entry(
            bucket["tenant_id"],
            EntryType.grant,
            bucket["granted"],
            balances[bucket["tenant_id"]],
            bucket_id=bucket["id"],
            period=bucket["period"],
            actor=actor,
            description=bucket["description"],
            now=now,
        )
        for bucket in made
    ]
    await repository.add_entries_of(session, balances.keys(), entries)
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


async def claw_back(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    amount: int,
    *,
    description: str,
    actor: tuple[ActorType, str | None],
    now: datetime,
) -> dict[str, Any] | None:
    """Remove `amount` credits (an operator's adjustment, admin.grantCredits) from the
    earliest-expiring buckets with one `adjustment` row, which it returns; None, removing
    nothing, when the tenant's available credits (open holds kept) are fewer: a clawback never
    takes the balance below zero. The caller settled the tenant (credits.balance) first."""
    await repository.lock_ledger(session, tenant_id)
    if (await repository.available(session, [tenant_id], now))[tenant_id] < amount:
        return None
    balance = await repository.total_remaining(session, tenant_id) - amount
    left = amount
    for bucket in await repository.spendable_buckets(session, tenant_id, now):
        take = min(left, bucket.remaining)
        await repository.set_remaining(session, tenant_id, bucket.id, bucket.remaining - take, now)
        left -= take
        if left == 0:
            break
    entry = _entry(
        tenant_id,
        EntryType.adjustment,
        -amount,
        balance,
        actor=actor,
        description=description,
        now=now,
    )
    await repository.add_entries(session, tenant_id, [entry])
    return entry


async def low_line(session: AsyncSession, tenant_id: uuid.UUID, monthly_grant: int | None) -> int:
    """The tenant's low-balance line (`_low_line`) from its stored policy, remembered for its
    debits."""
    policy = _policy_of(await repository.account(session, tenant_id))
    line = _low_lines[tenant_id] = _low_line(policy, monthly_grant)
    return line


async def available(
    session: AsyncSession, tenant_id: uuid.UUID, *, monthly_grant: int | None, now: datetime
) -> int:
    """`balance(...).available` in one query after settling."""
    return (await available_of(session, [tenant_id], monthly_grant=monthly_grant, now=now))[
        tenant_id
    ]


async def available_of(
    session: AsyncSession,
    tenant_ids: Collection[uuid.UUID],
    *,
    monthly_grant: int | None,
    now: datetime,
) -> dict[uuid.UUID, int]:
    """`available` of each of these tenants, in a few queries however many they are (the
    scheduler holds credits for a tick's tenants together)."""
    await settle(session, tenant_ids, monthly_grant, now)
    return await repository.available(session, tenant_ids, now)


async def debit(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    hold: CreditReservation,
    amount: int,
    *,
    now: datetime,
    actor: tuple[ActorType, str | None],
    description: str,
    resource: tuple[str | None, str | None],
    tokens: tuple[int, int],
    about: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Draw `amount` from the earliest-expiring buckets (under the lock) for `hold`: one row per
    bucket. The tokens go on the first row only, so summing rows counts them once; `about`
    (model, workflow, run, job instance) goes on every row, so credits group by it."""
    if amount <= 0:
        return []
    tokens_left: tuple[int, int] | None = tokens
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
                tokens=tokens_left,
            )
            | dict(about or {})
        )
        tokens_left = None
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
