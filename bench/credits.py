"""Credit reservations per second on PostgreSQL under concurrent clients, beside a floor.

    .venv/bin/python bench/credits.py [--database-url postgresql://postgres@127.0.0.1:5432/test]
                                      [--clients 50] [--seconds 5]

Makes a throwaway database on that server (dropped after), migrates it, and runs two rounds of
`--clients` concurrent clients for `--seconds` each:

- **one tenant**: every client reserves for the same tenant, so every hold waits for the
  tenant's credit lock (the worst case: a scheduler tick or a burst of uploads of one tenant);
- **a tenant each**: every client its own tenant (many tenants at once).

Each reservation is `credits.reserve` in a transaction of its own (the balance check under the
lock, the key lookup, one insert): what a metered operation pays to hold credits. The floor is a
bare INSERT of the same row shape, one transaction per client call, with the same concurrency on
the same engine. Then every hold is committed or released (every other one) and the ledger of
every tenant is checked to reconcile exactly: the sum of its rows = the sum of its buckets =
the grant less what was committed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, insert, select

from contentplatform.config import Settings
from contentplatform.credits import service as credits
from contentplatform.credits.models import CreditBucket, CreditLedgerEntry, CreditReservation
from contentplatform.kit import migrations
from contentplatform.kit.db import Database, utcnow
from contentplatform.tenants import repository as tenants
from tests.support.backends import postgres_databases

SERVER_URL = "postgresql://postgres@127.0.0.1:5432/test"
GRANT = 10_000_000  # never the limit: the bench measures holds, not refusals
KIND = "chat.message"


async def new_tenant(db: Database) -> uuid.UUID:
    org = f"org_bench_{uuid.uuid4().hex[:12]}"
    async with db.unit_of_work() as session:
        return (await tenants.ensure_tenant(session, org, org)).id


async def reserve(db: Database, tenant_id: uuid.UUID, key: str) -> uuid.UUID:
    async with db.unit_of_work() as session:
        hold = await credits.reserve(
            session,
            tenant_id,
            kind=KIND,
            idempotency_key=key,
            amount=3,
            ttl_seconds=3600,
            monthly_grant=GRANT,
        )
        return hold.id


async def bare_insert(db: Database, tenant_id: uuid.UUID, key: str) -> uuid.UUID:
    """The floor: one row of a hold's shape, inserted in a transaction of its own."""
    row_id = uuid.uuid4()
    now = utcnow()
    async with db.unit_of_work() as session:
        await session.execute(
            insert(CreditReservation).values(
                id=row_id,
                tenant_id=tenant_id,
                kind="floor",
                idempotency_key=key,
                amount=3,
                status="released",
                expires_at=now,
                created_at=now,
                updated_at=now,
                owner="operation",
            )
        )
    return row_id


Call = Callable[[Database, uuid.UUID, str], Awaitable[uuid.UUID]]


async def drive(
    db: Database, call: Call, tenant_of: list[uuid.UUID], seconds: float
) -> tuple[float, list[tuple[uuid.UUID, uuid.UUID]]]:
    """Each client calls in a loop until `seconds` pass: calls per second, (tenant, id) made."""
    made: list[tuple[uuid.UUID, uuid.UUID]] = []
    deadline = time.perf_counter() + seconds

    async def client(tenant_id: uuid.UUID) -> None:
        while time.perf_counter() < deadline:
            made.append((tenant_id, await call(db, tenant_id, uuid.uuid4().hex)))

    started = time.perf_counter()
    await asyncio.gather(*(client(tenant_id) for tenant_id in tenant_of))
    return len(made) / (time.perf_counter() - started), made


async def settle(db: Database, holds: list[tuple[uuid.UUID, uuid.UUID]]) -> int:
    """Commit every other hold (2 of its 3 credits), release the rest: credits committed."""
    committed = 0
    for n, (tenant_id, hold_id) in enumerate(holds):
        async with db.unit_of_work() as session:
            if n % 2 == 0:
                await credits.commit(session, tenant_id, hold_id, 2)
                committed += 2
            else:
                await credits.release(session, tenant_id, hold_id)
    return committed


async def reconciles(db: Database, tenant_ids: set[uuid.UUID], committed: int) -> bool:
    """Every tenant's ledger sum = its buckets' sum, and all of them = grants - commits."""
    ledger_total = bucket_total = 0
    async with db.unit_of_work() as session:
        for tenant_id in tenant_ids:
            rows = await session.scalar(
                select(func.coalesce(func.sum(CreditLedgerEntry.amount), 0)).where(
                    CreditLedgerEntry.tenant_id == tenant_id
                )
            )
            left = await session.scalar(
                select(func.coalesce(func.sum(CreditBucket.remaining), 0)).where(
                    CreditBucket.tenant_id == tenant_id
                )
            )
            if rows != left:
                print(f"  tenant {tenant_id}: ledger {rows} != buckets {left}")
                return False
            ledger_total += int(rows or 0)
            bucket_total += int(left or 0)
    expected = GRANT * len(tenant_ids) - committed
    print(f"  ledger {ledger_total} = buckets {bucket_total} = grants - commits {expected}")
    return ledger_total == bucket_total == expected


async def round_of(db: Database, label: str, tenant_of: list[uuid.UUID], seconds: float) -> bool:
    # Warm up: the month's grant written and the pool's connections open.
    await asyncio.gather(*(reserve(db, t, f"warm-{uuid.uuid4().hex}") for t in set(tenant_of)))
    floor, _ = await drive(db, bare_insert, tenant_of, seconds)
    rate, holds = await drive(db, reserve, tenant_of, seconds)
    print(
        f"{label:<14} floor {floor:8.0f} inserts/s   reserve {rate:8.0f} holds/s   "
        f"{floor / rate:5.2f}x the floor's time"
    )
    warm = await _warm_holds(db, set(tenant_of))
    committed = await settle(db, holds + warm)
    return await reconciles(db, set(tenant_of), committed)


async def _warm_holds(
    db: Database, tenant_ids: set[uuid.UUID]
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    async with db.unit_of_work() as session:
        rows = await session.execute(
            select(CreditReservation.tenant_id, CreditReservation.id).where(
                CreditReservation.tenant_id.in_(tenant_ids),
                CreditReservation.idempotency_key.like("warm-%"),
            )
        )
        return [(tenant_id, hold_id) for tenant_id, hold_id in rows.all()]


async def bench(database_url: str, clients: int, seconds: float) -> bool:
    db = Database(database_url, pool_size=clients, max_overflow=0)
    try:
        shared = await new_tenant(db)
        ok = await round_of(db, "one tenant", [shared] * clients, seconds)
        own = [await new_tenant(db) for _ in range(clients)]
        ok = await round_of(db, "a tenant each", own, seconds) and ok
    finally:
        await db.dispose()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=SERVER_URL, help="a PostgreSQL server URL")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    name = f"cp_bench_credits_{uuid.uuid4().hex[:8]}"
    with postgres_databases(args.database_url, name) as (database_url, _):
        migrations.upgrade(Settings(_env_file=None, database_url=database_url))  # type: ignore[call-arg]
        url = Settings(_env_file=None, database_url=database_url).resolved_database_url  # type: ignore[call-arg]
        print(f"PostgreSQL, {args.clients} concurrent clients, {args.seconds:g} s per figure")
        ok = asyncio.run(bench(url, args.clients, args.seconds))
    print("ledger reconciles exactly" if ok else "LEDGER DOES NOT RECONCILE")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
