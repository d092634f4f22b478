"""The credits service for one tenant, each call in a transaction of its own."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select

from contentplatform.credits import buckets, repository, service
from contentplatform.credits.models import CreditBucket, CreditLedgerEntry, EntryType
from contentplatform.credits.schemas import Balance, Bucket, Reservation
from contentplatform.kit.db import Database
from contentplatform.kit.errors import PlatformError
from tests.support.orgs import new_tenant

GRANT = 10
# Fixed instants in the future: deterministic months; a sweep at them never touches holds that
# other tests take at the real time, and the session server's real-time sweep of expired holds
# never touches these.
JAN = datetime(2090, 1, 15, 12, tzinfo=UTC)
FEB = datetime(2090, 2, 3, 9, tzinfo=UTC)
MAR = datetime(2090, 3, 1, 0, tzinfo=UTC)


class Credits:
    def __init__(self, db: Database, tenant_id: uuid.UUID, grant: int = GRANT) -> None:
        self.db = db
        self.tenant_id = tenant_id
        self.grant = grant

    @classmethod
    async def for_new_tenant(cls, db: Database, grant: int = GRANT) -> Credits:
        return cls(db, await new_tenant(db), grant)

    async def balance(self, now: datetime = JAN) -> Balance:
        async with self.db.unit_of_work() as session:
            return await service.balance(session, self.tenant_id, monthly_grant=self.grant, now=now)

    async def reserve(
        self,
        key: str,
        amount: int,
        *,
        kind: str = "documents.ingest",
        ttl: int = 600,
        now: datetime = JAN,
    ) -> Reservation:
        async with self.db.unit_of_work() as session:
            return await service.reserve(
                session,
                self.tenant_id,
                kind=kind,
                idempotency_key=key,
                amount=amount,
                ttl_seconds=ttl,
                monthly_grant=self.grant,
                now=now,
            )

    async def reserve_many(
        self, holds: list[tuple[str, int]], *, kind: str = "generation.blog", now: datetime = JAN
    ) -> list[Reservation | PlatformError]:
        """Holds of (key, amount), together, in one transaction."""
        async with self.db.unit_of_work() as session:
            return await service.reserve_many(
                session,
                self.tenant_id,
                kind=kind,
                holds=[service.Hold(key, amount) for key, amount in holds],
                ttl_seconds=600,
                monthly_grant=self.grant,
                now=now,
            )

    async def commit(
        self,
        reservation_id: uuid.UUID,
        amount: int | None = None,
        now: datetime = JAN,
        spent: service.Spent | None = None,
    ) -> Reservation:
        async with self.db.unit_of_work() as session:
            return await service.commit(
                session, self.tenant_id, reservation_id, amount, now=now, spent=spent
            )

    async def release(self, reservation_id: uuid.UUID, now: datetime = JAN) -> Reservation:
        async with self.db.unit_of_work() as session:
            return await service.release(session, self.tenant_id, reservation_id, now=now)

    async def extend(self, reservation_id: uuid.UUID, ttl: int, now: datetime = JAN) -> Reservation:
        async with self.db.unit_of_work() as session:
            return await service.extend(session, self.tenant_id, reservation_id, ttl, now=now)

    async def get(self, reservation_id: uuid.UUID, now: datetime = JAN) -> Reservation:
        async with self.db.unit_of_work() as session:
            return await service.get_reservation(session, self.tenant_id, reservation_id, now=now)

    async def by_key(
        self, key: str, kind: str = "documents.ingest", now: datetime = JAN
    ) -> Reservation | None:
        async with self.db.unit_of_work() as session:
            return await service.reservation_by_key(session, self.tenant_id, kind, key, now=now)

    async def ledger(self) -> list[CreditLedgerEntry]:
        async with self.db.unit_of_work() as session:
            return await repository.ledger(session, self.tenant_id)

    async def entries(self, entry_type: EntryType) -> list[tuple[int, str | None]]:
        """(amount, period) of the tenant's ledger rows of one type, oldest first."""
        return [(e.amount, e.period) for e in await self.ledger() if e.entry_type == entry_type]

    async def give(
        self,
        amount: int,
        *,
        reference: str | None = None,
        source: str = "admin_grant",
        expires_at: datetime | None = None,
        now: datetime = JAN,
    ) -> Bucket:
        """Credits granted by other means than the monthly grant (a pack, an admin's grant)."""
        async with self.db.unit_of_work() as session:
            return await buckets.grant(
                session,
                self.tenant_id,
                source=source,
                amount=amount,
                expires_at=expires_at,
                reference=reference,
                description="test",
                now=now,
            )

    async def revoke(self, reference: str, amount: int | None = None, now: datetime = JAN) -> int:
        async with self.db.unit_of_work() as session:
            return await buckets.revoke_grant(
                session, self.tenant_id, reference, amount=amount, description="refund", now=now
            )

    async def buckets(self) -> list[CreditBucket]:
        async with self.db.unit_of_work() as session:
            result = await session.execute(
                select(CreditBucket).where(CreditBucket.tenant_id == self.tenant_id)
            )
            return list(result.scalars())

    async def reconciles(self) -> int:
        """The ledger's sum, once checked equal to what the buckets hold."""
        total = sum(e.amount for e in await self.ledger())
        assert total == sum(b.remaining for b in await self.buckets())
        return total


def period(balance: Balance) -> str:
    """The month a balance covers, as "2090-01"."""
    return f"{balance.period.start:%Y-%m}"
