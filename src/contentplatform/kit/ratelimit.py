"""Request rate limits (the `limits` library): in memory for one process, Redis for many.

The sliding window counter: two counters per key (this window and the last, weighted by how much
of it still overlaps), one small write per request in memory or one script call in Redis. The
moving window it replaces kept a timestamp per request in the window, allocating one per hit and
moving the whole list on each, with a thread-pool hop to expire them: several times the cost,
on every request.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from redis.asyncio import BlockingConnectionPool

from contentplatform.kit.errors import TooManyRequests

# Connections to Redis one process's limiter opens at most; a request finding none free waits
# for one (up to POOL_WAIT_SECONDS) instead of failing, as redis-py's default pool (100, then an
# error) would under a burst of requests.
POOL_SIZE = 100
POOL_WAIT_SECONDS = 10


class RateLimiter:
    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self.storage: Storage
        if redis_url:
            pool = BlockingConnectionPool.from_url(
                redis_url, max_connections=POOL_SIZE, timeout=POOL_WAIT_SECONDS
            )
            self.storage = RedisStorage(
                "async+" + redis_url,
                implementation="redispy",
                key_prefix=prefix + "ratelimit",
                connection_pool=pool,  # type: ignore[arg-type]  # typed as if options were scalars
            )
        else:
            self.storage = MemoryStorage()
        self.limiter = SlidingWindowCounterRateLimiter(self.storage)

    async def check(self, rule: str, key: str) -> None:
        """Count one hit of `key` against `rule` ("600/minute"); 429 with Retry-After past it."""
        limit = _parsed(rule)
        if await self.limiter.hit(limit, key):
            return
        stats = await self.limiter.get_window_stats(limit, key)
        retry_after = math.ceil(stats.reset_time - time.time())
        raise TooManyRequests(
            f"Rate limit of {rule} exceeded; retry later.", retry_after=retry_after
        )

    async def ping(self) -> bool:
        return bool(await self.storage.check())


@lru_cache(maxsize=64)
def _parsed(rule: str) -> RateLimitItem:
    """A rule is read once, not on every request."""
    return parse(rule)
