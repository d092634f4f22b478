"""Telling every process at once that something it may have cached has changed.

A process caches what it resolved (a caller's tenant access, later an API key) to keep requests
cheap; when the stored truth changes, `publish(scope)` reaches every listener of every process:

- with Redis, through one pub/sub channel: each process holds one subscribing connection and a
  task reading it, so a request pays nothing (no per-request read of a version key). A message
  sent while a process was disconnected is lost, so on every (re)connection the listeners are
  told to drop everything (`EVERYTHING`): a cache never outlives a gap it could not hear through.
- without Redis, to the listeners registered in this process (every app of it: in tests the
  suite's service and a second one share the process). Other processes then only learn when
  their cache entries expire: run Redis to share state between processes.

The publisher's own process is told directly too, before the message goes out, so a change is
enforced where it was made even while Redis is slow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import redis.asyncio as aioredis

log = logging.getLogger(__name__)

# The scope a listener receives when it must drop everything it holds.
EVERYTHING = "*"
Listener = Callable[[str], None]

# Every listener in this process, whichever bus registered it.
_local: set[Listener] = set()
RECONNECT_SECONDS = 1.0


class Invalidations:
    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self.redis_url = redis_url
        self.channel = prefix + "invalidate"
        self.listeners: set[Listener] = set()
        self._redis: aioredis.Redis | None = None
        self._reader: asyncio.Task[None] | None = None

    def subscribe(self, listener: Listener) -> None:
        """Call `listener(scope)` whenever any process publishes `scope` (from a running loop:
        with Redis the first subscription starts the reading task)."""
        self.listeners.add(listener)
        _local.add(listener)
        if self.redis_url and self._reader is None:
            self._redis = aioredis.Redis.from_url(self.redis_url)
            self._reader = asyncio.get_running_loop().create_task(self._read_forever())

    async def publish(self, scope: str) -> None:
        _tell(set(_local), scope)
        if not self.redis_url:
            return
        try:
            # A connection of its own: publishing is rare (a role changed), and it may happen on
            # another event loop than the reader's (a DBOS workflow's).
            async with aioredis.Redis.from_url(self.redis_url) as client:
                await client.publish(self.channel, scope)
        except aioredis.RedisError:
            # The other processes keep their entries until they expire; nothing else to do.
            log.exception("could not publish the invalidation of %s", scope)

    async def _read_forever(self) -> None:
        assert self._redis is not None
        while True:
            try:
                async with self._redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self.channel)
                    _tell(self.listeners, EVERYTHING)  # whatever was missed before this
                    async for message in pubsub.listen():
                        data = message.get("data")
                        if isinstance(data, bytes):
                            _tell(self.listeners, data.decode())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("invalidation channel lost; reconnecting", exc_info=True)
                _tell(self.listeners, EVERYTHING)
                await asyncio.sleep(RECONNECT_SECONDS)

    async def close(self) -> None:
        for listener in self.listeners:
            _local.discard(listener)
        self.listeners.clear()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None


def _tell(listeners: set[Listener], scope: str) -> None:
    for listener in list(listeners):
        try:
            listener(scope)
        except Exception:
            log.exception("an invalidation listener failed")
