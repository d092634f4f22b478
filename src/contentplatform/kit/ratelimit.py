"""Request rate limits (the `limits` library): in memory for one process, Redis for many."""

from __future__ import annotations

import math
import time

from limits import parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from contentplatform.kit.errors import TooManyRequests


class RateLimiter:
    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self.storage: Storage
        if redis_url:
            self.storage = RedisStorage(
                "async+" + redis_url, implementation="redispy", key_prefix=prefix + "ratelimit"
            )
        else:
            self.storage = MemoryStorage()
        self.limiter = MovingWindowRateLimiter(self.storage)

    async def check(self, rule: str, key: str) -> None:
        """Count one hit of `key` against `rule` ("600/minute"); 429 with Retry-After past it."""
        limit = parse(rule)
        if await self.limiter.hit(limit, key):
            return
        stats = await self.limiter.get_window_stats(limit, key)
        retry_after = math.ceil(stats.reset_time - time.time())
        raise TooManyRequests(
            f"Rate limit of {rule} exceeded; retry later.", retry_after=retry_after
        )

    async def ping(self) -> bool:
        return bool(await self.storage.check())
