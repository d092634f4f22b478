"""The events' background work: the dispatcher in every worker process, and the retention."""

from __future__ import annotations

from contentplatform.config import Settings
from contentplatform.events import service
from contentplatform.kit import durable
from contentplatform.kit.db import Database

# The activity trail (and with it the audit trail) is kept a year.
RETENTION_DAYS = 365


@durable.background("events.dispatch")
async def dispatch(db: Database, settings: Settings) -> None:
    await service.dispatch_forever(db, settings.events_poll_seconds)


@durable.maintenance("events.retention")
async def forget_old_events(db: Database) -> int:
    return await service.forget_older_than(db, RETENTION_DAYS)
