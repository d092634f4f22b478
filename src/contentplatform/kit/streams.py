"""Resumable event streams: one log per stream, read live over SSE (`text/event-stream`).

A stream (id such as `chat:<message id>` or `run:<run id>`) belongs to one tenant. Its producer
appends events, each given the next id of the stream (1, 2, 3, ...); the last is terminal, and
nothing is appended after it. A reader replays the events after the id it last saw, then follows
new ones live until the terminal event. Producers never depend on readers: a reader that goes
away stops reading, nothing else.

Two backends behind one interface (`StreamLog`):

- the database (tables `streams` and `stream_events`): the stream's row hands out ids (an UPDATE
  that also refuses a closed stream) and the (stream, id) key makes a shared id impossible.
  Readers poll every `poll_seconds`, and are woken at once by a writer in the same process.
- Redis Streams, when several processes share Redis: one script appends (XADD with the id
  `<id>-0`) and refuses a closed stream; readers follow with XREAD BLOCK.

A log lives `retention_seconds` (24 hours) after its last event: after the terminal one, or
after a producer that went silent. The database's expired logs are purged by the reconciler's
maintenance (`purge_expired`); Redis expires its keys itself.
"""

from __future__ import annotations

import asyncio
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import redis.asyncio as aioredis
from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    Uuid,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column
from sse_starlette import EventSourceResponse as EventSourceResponse
from sse_starlette import ServerSentEvent
from starlette.requests import Request

from contentplatform.kit import durable
from contentplatform.kit.db import (
    Base,
    Database,
    UTCDateTime,
    insert_ignoring_conflicts,
    json_dumps,
    json_loads,
    utcnow,
)
from contentplatform.kit.errors import BadRequest, Conflict, FieldError, RecordNotFound


class Stream(Base):
    """A stream: its owner, the last id handed out, whether its terminal event came."""

    __tablename__ = "streams"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    last_id: Mapped[int] = mapped_column(Integer, nullable=False)
    closed: Mapped[bool] = mapped_column(Boolean, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, index=True)


class StreamEvent(Base):
    """One event of a stream; `data` is its JSON text, sent as it is."""

    __tablename__ = "stream_events"

    stream_id: Mapped[str] = mapped_column(
        String(255), ForeignKey("streams.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    event: Mapped[str] = mapped_column(String(64), nullable=False)
    data: Mapped[str] = mapped_column(Text, nullable=False)
    terminal: Mapped[bool] = mapped_column(Boolean, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class StreamNotFound(RecordNotFound):
    """The stream does not exist, has expired, or belongs to another tenant."""


class StreamClosed(Conflict):
    """The stream has had its terminal event; nothing more can be appended."""

    def __init__(self, stream: str) -> None:
        super().__init__(f"Stream {stream} has ended.")


@dataclass(frozen=True)
class Append:
    """An event to add: its name, its data (made JSON) and whether it ends the stream."""

    event: str
    data: Any
    terminal: bool = False


def _checked(events: Sequence[Append]) -> None:
    if not events:
        raise ValueError("nothing to append")
    if any(e.terminal for e in events[:-1]):
        raise ValueError("only the last event appended may be terminal")


@dataclass(frozen=True)
class Event:
    id: int
    event: str
    data: str  # JSON text
    terminal: bool


# Events one read fetches at a time.
BATCH = 500
# How long a Redis reader or writer waits for a free connection of its pool.
POOL_WAIT_SECONDS = 30
# Expired logs one purge deletes (the next pass takes the rest).
PURGE_BATCH = 1000


class StreamLog(ABC):
    def __init__(self, *, retention_seconds: float, poll_seconds: float) -> None:
        self.retention_seconds = retention_seconds
        self.poll_seconds = poll_seconds

    @abstractmethod
    async def create(self, stream: str, tenant: uuid.UUID) -> None:
        """Make the stream exist (owned by `tenant`, no events yet) so readers can open it before
        the producer's first event. Idempotent; StreamNotFound if another tenant owns it."""

    async def append(
        self, stream: str, tenant: uuid.UUID, event: str, data: Any, *, terminal: bool = False
    ) -> int:
        """Add `event` with `data` (made JSON) and return its id; creates the stream if needed.
        `terminal` ends the stream. StreamClosed after the terminal event; StreamNotFound if
        another tenant owns the stream."""
        [event_id] = await self.append_many(stream, tenant, [Append(event, data, terminal)])
        return event_id

    @abstractmethod
    async def append_many(
        self, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> list[int]:
        """`append` of several events at once, in order, in one write (a producer of many
        small events, such as tokens, batches them); their ids. Only the last may be terminal;
        none is added when the stream is closed already."""

    @abstractmethod
    async def read(self, stream: str, tenant: uuid.UUID, *, after: int = 0) -> AsyncIterator[Event]:
        """The events after id `after`, then the live ones, ending with the terminal event.
        StreamNotFound (raised here, before any event) if the stream is missing, expired or
        another tenant's."""

    async def close(self) -> None:
        return None


class DatabaseStreamLog(StreamLog):
    def __init__(self, db: Database, *, retention_seconds: float, poll_seconds: float) -> None:
        super().__init__(retention_seconds=retention_seconds, poll_seconds=poll_seconds)
        self.db = db
        # Readers in this process waiting for a stream's next event.
        self._wakeups: dict[str, asyncio.Event] = {}

    def _expiry(self) -> datetime:
        return utcnow() + timedelta(seconds=self.retention_seconds)

    def _new_stream(self, session: AsyncSession, stream: str, tenant: uuid.UUID) -> Any:
        """The stream's row, no events yet; nothing if the stream exists already."""
        return insert_ignoring_conflicts(
            session,
            Stream,
            id=stream,
            tenant_id=tenant,
            last_id=0,
            closed=False,
            created_at=utcnow(),
            expires_at=self._expiry(),
        )

    async def create(self, stream: str, tenant: uuid.UUID) -> None:
        async with self.db.unit_of_work() as session:
            await session.execute(self._new_stream(session, stream, tenant))
            owner = await session.scalar(select(Stream.tenant_id).where(Stream.id == stream))
        if owner != tenant:
            raise StreamNotFound(stream)

    async def append_many(
        self, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> list[int]:
        _checked(events)
        take = (
            update(Stream)
            .where(Stream.id == stream, Stream.tenant_id == tenant, Stream.closed.is_(False))
            .values(
                last_id=Stream.last_id + len(events),
                closed=events[-1].terminal,
                expires_at=self._expiry(),
            )
            .returning(Stream.last_id)
            .execution_options(synchronize_session=False)
        )
        async with self.db.unit_of_work() as session:
            last_id = await session.scalar(take)
            if last_id is None:
                await session.execute(self._new_stream(session, stream, tenant))
                last_id = await session.scalar(take)
            if last_id is None:
                owner = await session.scalar(select(Stream.tenant_id).where(Stream.id == stream))
                raise StreamClosed(stream) if owner == tenant else StreamNotFound(stream)
            first = last_id - len(events) + 1
            now = utcnow()
            await session.execute(
                insert(StreamEvent),
                [
                    {
                        "stream_id": stream,
                        "id": first + offset,
                        "event": item.event,
                        "data": json_dumps(item.data),
                        "terminal": item.terminal,
                        "created_at": now,
                    }
                    for offset, item in enumerate(events)
                ],
            )
        wakeup = self._wakeups.pop(stream, None)
        if wakeup is not None:
            wakeup.set()
        return list(range(first, last_id + 1))

    async def read(self, stream: str, tenant: uuid.UUID, *, after: int = 0) -> AsyncIterator[Event]:
        async with self.db.unit_of_work() as session:
            owner = await session.scalar(
                select(Stream.tenant_id).where(Stream.id == stream, Stream.expires_at > utcnow())
            )
        if owner != tenant:
            raise StreamNotFound(stream)
        return self._follow(stream, after)

    async def _follow(self, stream: str, after: int) -> AsyncIterator[Event]:
        last = after
        while True:
            # Taken before looking, so an append between the look and the wait still wakes us.
            wakeup = self._wakeups.setdefault(stream, asyncio.Event())
            async with self.db.unit_of_work() as session:
                head = (
                    await session.execute(
                        select(Stream.last_id, Stream.closed, Stream.expires_at).where(
                            Stream.id == stream
                        )
                    )
                ).one_or_none()
                rows = []
                if head is not None and head.last_id > last:
                    rows = list(
                        await session.scalars(
                            select(StreamEvent)
                            .where(StreamEvent.stream_id == stream, StreamEvent.id > last)
                            .order_by(StreamEvent.id)
                            .limit(BATCH)
                        )
                    )
            if head is None or (not rows and (head.closed or head.expires_at <= utcnow())):
                self._wakeups.pop(stream, None)
                return  # past the terminal event, or purged or expired without one
            for row in rows:
                yield Event(row.id, row.event, row.data, row.terminal)
                if row.terminal:
                    self._wakeups.pop(stream, None)  # nothing will be appended any more
                    return
                last = row.id
            if not rows:
                try:
                    async with asyncio.timeout(self.poll_seconds):
                        await wakeup.wait()
                except TimeoutError:
                    pass


@durable.maintenance("streams.purge_expired")
async def purge_expired(db: Database) -> int:
    """Delete the database's expired stream logs (their events go with them); how many.

    Looked for first, and deleted only when there are some: this runs on every reconcile pass
    in every process, and on SQLite even a DELETE of nothing takes the one write lock."""
    async with db.unit_of_work() as session:
        expired = list(
            await session.scalars(
                select(Stream.id).where(Stream.expires_at <= utcnow()).limit(PURGE_BATCH)
            )
        )
        if expired:
            await session.execute(
                delete(Stream)
                .where(Stream.id.in_(expired), Stream.expires_at <= utcnow())
                .execution_options(synchronize_session=False)
            )
    return len(expired)


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
        max_connections: int = 2000,
    ) -> None:
        super().__init__(retention_seconds=retention_seconds, poll_seconds=poll_seconds)
        # Each reader holds a connection while it blocks on XREAD, so the pool is as large as
        # the streams one process serves at once; past it a reader waits for a connection
        # rather than failing (redis-py's default pool stops at 100, with an error).
        # A blocked XREAD answers after block_seconds: the socket waits longer than that (redis-py's
        # default read timeout, 5 s, is the block itself, and a reply a moment late failed it).
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            max_connections=max_connections,
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
        _checked(events)
        args: list[str | int] = [str(tenant), self._retention_ms]
        for item in events:
            args += [item.event, json_dumps(item.data), "1" if item.terminal else "0"]
        last_id = int(await self._append(self._keys(stream), args))
        if last_id == -1:
            raise StreamClosed(stream)
        if last_id == -2:
            raise StreamNotFound(stream)
        return list(range(last_id - len(events) + 1, last_id + 1))

    async def read(self, stream: str, tenant: uuid.UUID, *, after: int = 0) -> AsyncIterator[Event]:
        key, meta = self._keys(stream)
        owner, last_id, closed = await self.redis.hmget(meta, ["tenant", "last", "closed"])
        if owner != str(tenant):
            raise StreamNotFound(stream)
        return self._follow(key, meta, after, ended=closed == "1" and after >= int(last_id or 0))

    async def _follow(self, key: str, meta: str, after: int, ended: bool) -> AsyncIterator[Event]:
        last = f"{after}-0"
        while not ended:
            # RESP2's reply: [[key, [(entry id, fields), ...]]], or [] when the block timed out.
            reply: Any = await self.redis.xread({key: last}, count=BATCH, block=self.block_ms)
            if not reply:
                closed = await self.redis.hget(meta, "closed")
                if closed is None:
                    return  # expired without its terminal event
                if closed != "1":
                    continue
                # Closed while this reader's wait ran out: its last events are there to read.
                reply = await self.redis.xread({key: last}, count=BATCH)
                if not reply:
                    return
            for entry_id, fields in reply[0][1]:
                event = Event(
                    int(entry_id.split("-")[0]),
                    fields["event"],
                    fields["data"],
                    fields["terminal"] == "1",
                )
                yield event
                if event.terminal:
                    return
                last = entry_id

    async def close(self) -> None:
        await self.redis.aclose()


def stream_log(
    db: Database,
    redis_url: str | None,
    prefix: str,
    *,
    retention_seconds: float,
    poll_seconds: float,
) -> StreamLog:
    """In Redis when there is one (several processes share it), else in the database."""
    if redis_url:
        return RedisStreamLog(
            redis_url, prefix, retention_seconds=retention_seconds, poll_seconds=poll_seconds
        )
    return DatabaseStreamLog(db, retention_seconds=retention_seconds, poll_seconds=poll_seconds)


def last_event_id(request: Request, prefix: str | None = None) -> int:
    """The id a client saw last: the `Last-Event-ID` header (what `EventSource` sends when it
    reconnects), else the `lastEventId` query parameter, else 0 (from the start). With `prefix`,
    ids are sent as `<prefix>:<n>` (sse_response), and either form is accepted back."""
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId") or "0"
    return event_number(raw, prefix)


def event_number(raw: str, prefix: str | None = None) -> int:
    """The n of an event id a client sent back: `<n>`, or `<prefix>:<n>`. 400 otherwise."""
    if prefix is not None and raw.startswith(prefix + ":"):
        raw = raw[len(prefix) + 1 :]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        expected = "an event id" if prefix is None else f"an event id of this stream ({prefix}:<n>)"
        raise BadRequest(
            f"Last-Event-ID must be {expected}.",
            errors=[FieldError("lastEventId", "is not an event id of this stream")],
        )
    return int(raw)


# What EventSource waits before reconnecting after a dropped connection (sent with the first
# frame), in milliseconds.
RECONNECT_MS = 3000


def sse_response(
    events: AsyncIterator[Event],
    *,
    ping_seconds: float = 15,
    id_prefix: str | None = None,
    seq_in_data: bool = False,
) -> EventSourceResponse:
    """`events` as `text/event-stream`: `id:`, `event:` and `data:` (JSON) per event, a `: ping`
    comment every `ping_seconds`; it ends after the terminal event. A client that disconnects
    only stops this reading.

    With `id_prefix`, each id is `<prefix>:<n>` (a client holding ids of several streams knows
    which one an id is of); with `seq_in_data`, each data object also carries `seq` (n). The
    first frame tells the client to reconnect after RECONNECT_MS."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        retry: int | None = RECONNECT_MS
        async for event in events:
            data = event.data
            if seq_in_data and data.startswith("{"):
                data = json_dumps({**json_loads(data), "seq": event.id})
            event_id = str(event.id) if id_prefix is None else f"{id_prefix}:{event.id}"
            yield ServerSentEvent(data=data, event=event.event, id=event_id, retry=retry)
            retry = None

    return EventSourceResponse(
        frames(), ping=ping_seconds, ping_message_factory=lambda: ServerSentEvent(comment="ping")
    )


async def stream_response(
    log: StreamLog,
    request: Request,
    stream: str,
    tenant: uuid.UUID,
    *,
    ping_seconds: float = 15,
    id_prefix: str | None = None,
    seq_in_data: bool = False,
) -> EventSourceResponse:
    """The stream for `request`, resumed after its Last-Event-ID. StreamNotFound and a bad
    Last-Event-ID are raised here, before the response begins (so they are problem+json)."""
    events = await log.read(stream, tenant, after=last_event_id(request, id_prefix))
    return sse_response(
        events, ping_seconds=ping_seconds, id_prefix=id_prefix, seq_in_data=seq_in_data
    )
