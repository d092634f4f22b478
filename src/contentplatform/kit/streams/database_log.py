"""The stream log in the database (tables `streams` and `stream_events`), see the package."""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    Select,
    String,
    Text,
    Uuid,
    cast,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column
from sse_starlette import EventSourceResponse as EventSourceResponse

from contentplatform.kit import durable
from contentplatform.kit.db import (
    Base,
    Database,
    UTCDateTime,
    after_commit,
    insert_ignoring_conflicts,
    json_dumps,
    json_items,
    utcnow,
)
from contentplatform.kit.streams.log import (
    BATCH,
    Append,
    Event,
    StreamClosed,
    StreamLog,
    StreamNotFound,
    checked,
    log,
)


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


# Expired logs one purge deletes (the next pass takes the rest).
PURGE_BATCH = 1000
# Streams whose heads one poll of the database looks at in one statement.
POLL_CHUNK = 500
# With PostgreSQL's LISTEN/NOTIFY waking the followers, the database is still polled this often,
# in case a notification was missed (the listening connection dropped and came back).
SAFETY_POLL_SECONDS = 5.0
# The channel appends notify on PostgreSQL; the payload is the stream's name.
NOTIFY_CHANNEL = "contentplatform_streams"


class DatabaseStreamLog(StreamLog):
    """Followers wait to be woken: at once by a writer in this process; on PostgreSQL by its
    LISTEN/NOTIFY (every append notifies, on commit); else by one poll of the database every
    `poll_seconds` that looks at the heads of every stream this process follows at once (every
    SAFETY_POLL_SECONDS on PostgreSQL, in case a notification was missed)."""

    def __init__(
        self,
        db: Database,
        *,
        retention_seconds: float,
        poll_seconds: float,
        max_open_streams: int = 2000,
    ) -> None:
        super().__init__(
            retention_seconds=retention_seconds,
            poll_seconds=poll_seconds,
            max_open_streams=max_open_streams,
        )
        self.db = db
        self.notifies = db.dialect == "postgresql"
        # Followers in this process waiting for a stream's next event.
        self._wakeups: dict[str, asyncio.Event] = {}
        self._poller: asyncio.Task[None] | None = None
        self._listener: Any = None  # asyncpg's connection, LISTENing on NOTIFY_CHANNEL
        self._connecting = asyncio.Lock()

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

    def _shares(self, session: AsyncSession) -> bool:
        """Whether `session` is a unit of work of this log's database."""
        return session.bind is self.db.engine

    async def create(self, stream: str, tenant: uuid.UUID) -> None:
        async with self.db.unit_of_work() as session:
            await self._create(session, stream, tenant)

    async def create_in(self, session: AsyncSession, stream: str, tenant: uuid.UUID) -> None:
        if not self._shares(session):
            await super().create_in(session, stream, tenant)
            return
        await self._create(session, stream, tenant)

    async def _create(self, session: AsyncSession, stream: str, tenant: uuid.UUID) -> None:
        await session.execute(self._new_stream(session, stream, tenant))
        owner = await session.scalar(select(Stream.tenant_id).where(Stream.id == stream))
        if owner != tenant:
            raise StreamNotFound(stream)

    async def append_many(
        self, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> list[int]:
        checked(events)
        async with self.db.unit_of_work() as session:
            appended = await self._append(session, stream, tenant, events)
        self._wake(stream, appended)
        return [event.id for event in appended]

    async def append_in(
        self, session: AsyncSession, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> bool:
        checked(events)
        if not self._shares(session):
            return False
        appended = await self._append(session, stream, tenant, events)

        async def wake() -> None:
            self._wake(stream, appended)

        after_commit(session, wake)
        return True

    async def _append(
        self, session: AsyncSession, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> list[Event]:
        """The events added in `session`'s transaction (PostgreSQL's listeners notified when it
        commits), as they are kept."""
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
        last_id = await session.scalar(take)
        if last_id is None:
            await session.execute(self._new_stream(session, stream, tenant))
            last_id = await session.scalar(take)
        if last_id is None:
            owner = await session.scalar(select(Stream.tenant_id).where(Stream.id == stream))
            raise StreamClosed(stream) if owner == tenant else StreamNotFound(stream)
        first = last_id - len(events) + 1
        appended = [
            Event(first + offset, item.event, json_dumps(item.data), item.terminal)
            for offset, item in enumerate(events)
        ]
        now = utcnow()
        await session.execute(
            insert(StreamEvent),
            [
                {
                    "stream_id": stream,
                    "id": event.id,
                    "event": event.event,
                    "data": event.data,
                    "terminal": event.terminal,
                    "created_at": now,
                }
                for event in appended
            ],
        )
        if self.notifies:  # sent when this commits, to every process's listener
            await session.execute(select(func.pg_notify(NOTIFY_CHANNEL, stream)))
        return appended

    def _wake(self, stream: str, appended: Sequence[Event] = ()) -> None:
        """Wake the stream's follower in this process; what this process has just appended
        (committed) goes to its clients at once, without waiting for the follower's read, when
        it comes right after what they were given (the follower's read then finds it there)."""
        hub = self._hubs.get(stream)
        if appended and hub is not None and not hub.ended and hub.head == appended[0].id - 1:
            hub.publish(appended)
        wakeup = self._wakeups.pop(stream, None)
        if wakeup is not None:
            wakeup.set()

    async def _head(self, stream: str, tenant: uuid.UUID) -> tuple[int, bool]:
        async with self.db.unit_of_work() as session:
            head = (
                await session.execute(
                    select(Stream.tenant_id, Stream.last_id, Stream.closed).where(
                        Stream.id == stream, Stream.expires_at > utcnow()
                    )
                )
            ).one_or_none()
        if head is None or head.tenant_id != tenant:
            raise StreamNotFound(stream)
        return head.last_id, head.closed

    async def _page(self, stream: str, after: int) -> list[Event]:
        async with self.db.unit_of_work() as session:
            rows = await session.scalars(
                select(StreamEvent)
                .where(StreamEvent.stream_id == stream, StreamEvent.id > after)
                .order_by(StreamEvent.id)
                .limit(BATCH)
            )
            return [Event(row.id, row.event, row.data, row.terminal) for row in rows]

    async def _follow(self, stream: str, after: int) -> AsyncIterator[list[Event]]:
        await self._listen()  # before the first look: no append after it goes unnoticed
        self._start_polling()
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
                batch = [Event(row.id, row.event, row.data, row.terminal) for row in rows]
            if head is None or (not batch and (head.closed or head.expires_at <= utcnow())):
                self._wakeups.pop(stream, None)
                return  # past the terminal event, or purged or expired without one
            if batch:
                yield batch
                if batch[-1].terminal:
                    self._wakeups.pop(stream, None)  # nothing will be appended any more
                    return
                last = batch[-1].id
                if len(batch) == BATCH:
                    continue
            await wakeup.wait()

    def _start_polling(self) -> None:
        if self._poller is None or self._poller.done():
            # Every follower's, so in a context of its own: not the first reader's request (its
            # id in the logs, its wait for a connection that gives up with a 503).
            self._poller = asyncio.get_running_loop().create_task(
                self._poll(), name="poll streams", context=contextvars.Context()
            )

    async def _poll(self) -> None:
        """Wake the followers of the streams another process appended to (or ended, or let
        expire), looking at all their heads in one statement; until none is followed."""
        while self._hubs:
            listening = await self._listen()
            await asyncio.sleep(SAFETY_POLL_SECONDS if listening else self.poll_seconds)
            followed = list(self._hubs.items())
            try:
                for start in range(0, len(followed), POLL_CHUNK):
                    chunk = dict(followed[start : start + POLL_CHUNK])
                    async with self.db.unit_of_work() as session:
                        moved = await session.scalars(
                            self._moved({stream: hub.head for stream, hub in chunk.items()})
                        )
                        for stream in moved:
                            self._wake(stream)
            except Exception:
                log.warning("polling the followed streams failed", exc_info=True)

    def _moved(self, heads: dict[str, int]) -> Select[Any]:
        """Of the streams `heads` names (with the last id their followers have), those past it,
        closed, expired or gone. The heads go as one JSON parameter, read back as a table, so
        the statement compiles once whatever their number, and only those rows come back: a
        thousand followed streams that are quiet cost a statement that returns nothing."""
        known = json_items(self.db.dialect, "heads", heads)
        return (
            select(known.c.key)
            .select_from(known.outerjoin(Stream, Stream.id == known.c.key))
            .where(
                or_(
                    Stream.id.is_(None),
                    Stream.last_id > cast(known.c.value, Integer),
                    Stream.closed,
                    Stream.expires_at <= utcnow(),
                )
            )
        )

    async def _listen(self) -> bool:
        """Whether this process LISTENs for appends (PostgreSQL), connecting when it does not
        yet or lost its connection: on a connection of its own, outside the pool."""
        if not self.notifies:
            return False
        async with self._connecting:
            return await self._connect_listener()

    async def _connect_listener(self) -> bool:
        if self._listener is not None and not self._listener.is_closed():
            return True
        try:
            url = make_url(str(self.db.engine.url.render_as_string(hide_password=False)))
            dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
            self._listener = await asyncpg.connect(dsn, timeout=10)
            await self._listener.add_listener(
                NOTIFY_CHANNEL, lambda _conn, _pid, _channel, stream: self._wake(stream)
            )
        except Exception:
            log.warning("could not LISTEN for stream appends; polling instead", exc_info=True)
            self._listener = None
            return False
        return True

    async def close(self) -> None:
        await super().close()
        if self._poller is not None:
            self._poller.cancel()
        if self._listener is not None and not self._listener.is_closed():
            await self._listener.close()


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
