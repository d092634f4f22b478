"""The notifications' background work: the listener the events' dispatcher hands every new event
to, and the retention."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit import durable
from contentplatform.kit.db import Database
from contentplatform.notifications import service


@events.listener("notifications")
async def notify(session: AsyncSession, taken: Sequence[Event]) -> None:
    """In the dispatcher's transaction: the notifications commit with the events' claim, so
    each event is told once."""
    await service.notify(session, taken)


@durable.maintenance("notifications.retention")
async def forget_old_notifications(db: Database) -> int:
    async with db.unit_of_work() as session:
        return await service.forget_old(session)
