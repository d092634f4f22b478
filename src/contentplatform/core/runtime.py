"""The resources of this process: settings, database, rate limiter, cache, object store, model.

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
from contentplatform.storage.store import ObjectStore


@dataclass
class Runtime:
    settings: Settings
    db: Database
    limiter: RateLimiter
    cache: ScopedCache
    store: ObjectStore
    model: ChatModel

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        return cls(
            settings=settings,
            db=Database(
                settings.resolved_database_url,
                pool_size=settings.database_pool_size,
                max_overflow=settings.database_max_overflow,
            ),
            limiter=RateLimiter(settings.redis_url, settings.redis_prefix),
            cache=ScopedCache(settings.redis_url, settings.redis_prefix),
            store=ObjectStore.from_settings(settings),
            model=from_settings(settings),
        )

    async def close(self) -> None:
        await self.model.close()
        await self.cache.close()
        await self.db.dispose()


_current: Runtime | None = None


def install(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


def current() -> Runtime:
    if _current is None:
        raise RuntimeError("no runtime installed in this process")
    return _current
