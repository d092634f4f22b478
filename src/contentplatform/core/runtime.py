"""The resources of this process: settings, database, rate limiter, cache, stream log, object
store, model.

DBOS is process-global, so workflows reach our database through here rather than through a request.
"""

from __future__ import annotations

from dataclasses import dataclass

from contentplatform.ai.base import ChatModel
from contentplatform.ai.providers import from_settings
from contentplatform.config import Settings
from contentplatform.kit.cache import ScopedCache
from contentplatform.kit.db import Database
from contentplatform.kit.ratelimit import RateLimiter
from contentplatform.kit.streams import StreamLog, stream_log
from contentplatform.storage.store import ObjectStore


@dataclass
class Runtime:
    settings: Settings
    db: Database
    limiter: RateLimiter
    cache: ScopedCache
    streams: StreamLog
    store: ObjectStore
    model: ChatModel

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        db = Database(
            settings.resolved_database_url,
            pool_size=settings.database_pool_size,
            max_overflow=settings.database_max_overflow,
        )
        return cls(
            settings=settings,
            db=db,
            limiter=RateLimiter(settings.redis_url, settings.redis_prefix),
            cache=ScopedCache(settings.redis_url, settings.redis_prefix),
            streams=stream_log(
                db,
                settings.redis_url,
                settings.redis_prefix,
                retention_seconds=settings.stream_retention_hours * 3600,
                poll_seconds=settings.stream_poll_seconds,
            ),
            store=ObjectStore.from_settings(settings),
            model=from_settings(settings),
        )

    async def close(self) -> None:
        await self.model.close()
        await self.cache.close()
        await self.streams.close()
        await self.db.dispose()


_current: Runtime | None = None


def install(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


def current() -> Runtime:
    if _current is None:
        raise RuntimeError("no runtime installed in this process")
    return _current
