"""Looking behind the kit's event streams in tests."""

from __future__ import annotations

import redis
from sqlalchemy import delete

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.kit.streams import Stream
from tests.support.database import run_on


def forget_stream(settings: Settings, stream: str) -> None:
    """Drop a stream's log, as its expiry and purge would (in Redis when the suite has it)."""
    if settings.redis_url:
        client = redis.Redis.from_url(settings.redis_url)
        try:
            base = f"{settings.redis_prefix}stream:{{{stream}}}"
            client.delete(base, base + ":meta")
        finally:
            client.close()
        return

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(delete(Stream).where(Stream.id == stream))

    run_on(settings, scenario)
