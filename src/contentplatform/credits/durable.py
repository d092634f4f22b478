"""Background upkeep of credits: the sweep of stale holds and of expired buckets.

Not DBOS workflows or reconcile sources: each is idempotent, safe to run from every worker
process at once, and correctness never waits for them (balances ignore expired holds and
buckets already; a bucket's `expiry` row is also written at the tenant's next balance check).
They run on every reconcile pass.
"""

from __future__ import annotations

import logging

from contentplatform.credits import buckets, service
from contentplatform.kit import durable
from contentplatform.kit.db import Database

log = logging.getLogger(__name__)


@durable.maintenance("credits.expire_stale_holds")
async def expire_stale_holds(db: Database) -> int:
    """One sweep in its own transaction; how many holds it marked expired."""
    async with db.unit_of_work() as session:
        expired = await service.expire_stale(session)
    if expired:
        log.info("expired %d stale credit holds", expired)
    return expired


@durable.maintenance("credits.expire_buckets")
async def expire_buckets(db: Database) -> int:
    """Write the `expiry` rows of every bucket past its expiry; how many credits expired."""
    async with db.unit_of_work() as session:
        expired = await buckets.expire_due_buckets(session)
    if expired:
        log.info("expired %d credits of past buckets", expired)
    return expired
