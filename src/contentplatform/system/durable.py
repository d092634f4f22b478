"""Every worker process shares the outcomes of its real calls (kit/health.py) through Redis
when one is configured, so system.status, answered by any process, sees every process's. Run
with the reconciler's passes (idempotent: the first one in a process opens the connection)."""

from __future__ import annotations

from contentplatform.core import runtime
from contentplatform.kit import durable, health
from contentplatform.kit.db import Database


@durable.maintenance("system.health_shared")
async def share_health(db: Database) -> None:
    settings = runtime.current().settings
    health.share(settings.redis_url, settings.redis_prefix)
