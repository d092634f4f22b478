"""The stream log in Redis Streams, when several processes share Redis, see the package."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import redis.asyncio as aioredis
from sse_starlette import EventSourceResponse as EventSourceResponse

from contentplatform.kit.db import (
    json_dumps,
)
from contentplatform.kit.streams.log import (
    BATCH,
    Append,
    Event,
    StreamClosed,
    StreamLog,
    StreamNotFound,
    checked,
)

# How long a Redis reader or writer waits for a free connection of its pool.
POOL_WAIT_SECONDS = 30


# KEYS: the stream, its meta hash (tenant, last id, closed). ARGV: tenant, retention (ms).
_CREATE = """
local owner = redis.call('HGET', KEYS[2], 'tenant')
if owner and owner ~= ARGV[1] then return 0 end
if not owner then
  redis.call('HSET', KEYS[2], 'tenant', ARGV[1], 'last', 0, 'closed', 0)
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
"""
# ARGV: tenant, retention (ms), then (event, data, terminal '1'|'0') per event. Returns the last
# new id, or -1 when the stream is closed, -2 when another tenant owns it.
_APPEND = """
local owner = redis.call('HGET', KEYS[2], 'tenant')
if owner and owner ~= ARGV[1] then return -2 end
if redis.call('HGET', KEYS[2], 'closed') == '1' then return -1 end
local id = 0
for i = 3, #ARGV, 3 do
  id = redis.call('HINCRBY', KEYS[2], 'last', 1)
  redis.call('XADD', KEYS[1], id .. '-0', 'event', ARGV[i], 'data', ARGV[i + 1],
             'terminal', ARGV[i + 2])
  redis.call('HSET', KEYS[2], 'tenant', ARGV[1], 'closed', ARGV[i + 2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id
"""


class RedisStreamLog(StreamLog):
    def __init__(
        self,
        url: str,
        prefix: str,
        *,
        retention_seconds: float,
        poll_seconds: float,
        block_seconds: float = 5,
        max_open_streams: int = 2000,
    ) -> None:
        super().__init__(
            retention_seconds=retention_seconds,
            poll_seconds=poll_seconds,
            max_open_streams=max_open_streams,
        )
        # Each followed stream holds a connection while it blocks on XREAD, so the pool is as
        # large as the streams one process may serve at once (and a few for writers); past it a
        # follower waits for a connection rather than failing (redis-py's default pool stops at
        # 100, with an error).
        # A blocked XREAD answers after block_seconds: the socket waits longer than that (redis-py's
        # default read timeout, 5 s, is the block itself, and a reply a moment late failed it).
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            max_connections=max_open_streams + 50,
            timeout=POOL_WAIT_SECONDS,
            socket_timeout=block_seconds + 10,
        )
        self.redis = aioredis.Redis(connection_pool=pool)
        self.prefix = prefix + "stream:"
        self.block_ms = int(block_seconds * 1000)
        self._create = self.redis.register_script(_CREATE)
        self._append = self.redis.register_script(_APPEND)

    def _keys(self, stream: str) -> list[str]:
        # One hash tag: both keys in the same Redis Cluster slot, as a script needs.
        base = f"{self.prefix}{{{stream}}}"
        return [base, base + ":meta"]

    @property
    def _retention_ms(self) -> int:
        return max(1, int(self.retention_seconds * 1000))

    async def create(self, stream: str, tenant: uuid.UUID) -> None:
        if not await self._create(self._keys(stream), [str(tenant), self._retention_ms]):
            raise StreamNotFound(stream)

    async def append_many(
        self, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> list[int]:
        checked(events)
        args: list[str | int] = [str(tenant), self._retention_ms]
        for item in events:
            args += [item.event, json_dumps(item.data), "1" if item.terminal else "0"]
        last_id = int(await self._append(self._keys(stream), args))
        if last_id == -1:
            raise StreamClosed(stream)
        if last_id == -2:
            raise StreamNotFound(stream)
        return list(range(last_id - len(events) + 1, last_id + 1))

    async def _head(self, stream: str, tenant: uuid.UUID) -> tuple[int, bool]:
        owner, last_id, closed = await self.redis.hmget(
            self._keys(stream)[1], ["tenant", "last", "closed"]
        )
        if owner != str(tenant):
            raise StreamNotFound(stream)
        return int(last_id or 0), closed == "1"

    async def _page(self, stream: str, after: int) -> list[Event]:
        reply: Any = await self.redis.xread({self._keys(stream)[0]: f"{after}-0"}, count=BATCH)
        return events_of(reply)

    async def _follow(self, stream: str, after: int) -> AsyncIterator[list[Event]]:
        key, meta = self._keys(stream)
        last = f"{after}-0"
        while True:
            # One blocked XREAD per stream per process, whatever the number of its clients.
            reply: Any = await self.redis.xread({key: last}, count=BATCH, block=self.block_ms)
            if not reply:
                closed = await self.redis.hget(meta, "closed")
                if closed is None:
                    return  # expired without its terminal event
                if closed != "1":
                    continue
                # Closed while this wait ran out: its last events are there to read.
                reply = await self.redis.xread({key: last}, count=BATCH)
                if not reply:
                    return
            batch = events_of(reply)
            yield batch
            if batch[-1].terminal:
                return
            last = f"{batch[-1].id}-0"

    async def close(self) -> None:
        await super().close()
        await self.redis.aclose()


def events_of(reply: Any) -> list[Event]:
    """The events of an XREAD's RESP2 reply: [[key, [(entry id, fields), ...]]], or []."""
    if not reply:
        return []
    return [
        Event(
            int(entry_id.split("-")[0]), fields["event"], fields["data"], fields["terminal"] == "1"
        )
        for entry_id, fields in reply[0][1]
    ]
