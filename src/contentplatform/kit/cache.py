"""Short-lived caches (cashews): in process by default, Redis when several processes share state.

Entries of a scope (e.g. one tenant's document list) are grouped under a generation number;
`invalidate(scope)` bumps it, which retires every entry of the scope at once without a key scan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cashews import Cache


class ScopedCache:
    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self.prefix = prefix + "cache:"
        self.backend = Cache()
        if redis_url:
            # JSON, never pickle: what is read back from Redis must not be able to run code.
            self.backend.setup(redis_url, pickle_type="json", client_side=False)
        else:
            self.backend.setup("mem://", size=10_000)

    async def _generation(self, scope: str) -> int:
        value = await self.backend.get(f"{self.prefix}{scope}:generation")
        return int(value or 0)

    async def get_or_set(
        self,
        scope: str,
        key: str,
        ttl_seconds: float,
        produce: Callable[[], Awaitable[str]],
    ) -> str:
        """The text cached under `key` in `scope` (an answer's JSON body, sent again as it is),
        or `produce()`'s, kept for `ttl_seconds`."""
        generation = await self._generation(scope)
        full_key = f"{self.prefix}{scope}:{generation}:{key}"
        cached = await self.backend.get(full_key)
        if isinstance(cached, str):
            return cached
        value = await produce()
        # Written only if nobody invalidated the scope meanwhile, so a stale read never lands.
        if await self._generation(scope) == generation:
            await self.backend.set(full_key, value, expire=ttl_seconds)
        return value

    async def invalidate(self, scope: str) -> None:
        await self.backend.incr(f"{self.prefix}{scope}:generation", expire=86_400)

    async def ping(self) -> None:
        await self.backend.ping()

    async def close(self) -> None:
        await self.backend.close()
