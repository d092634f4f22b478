"""Background upkeep of credits: the sweep of stale holds.

Not a DBOS workflow or a reconcile source: it is one idempotent UPDATE, safe to run from every
worker process at once, and correctness never waits for it (balances ignore expired holds
already). It runs on every reconcile pass.
"""

from __future__ import annotations

import logging

from contentplatform.credits import service
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
