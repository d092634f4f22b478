"""The stream log's interface, whatever keeps it: what is appended and read, the hub that fans
a stream out to the clients of this process, and the cap on open streams (see the package)."""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from sse_starlette import EventSourceResponse as EventSourceResponse

from contentplatform.kit.db import after_commit
from contentplatform.kit.errors import Busy, Conflict, RecordNotFound


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


def checked(events: Sequence[Append]) -> None:
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
# What a client refused at the stream limit is told to wait, in seconds.
RETRY_AFTER_SECONDS = 5

log = logging.getLogger(__name__)


class OpenStreams:
    """The streams this process serves at once, at most `maximum`: one more is refused with 503
    and Retry-After (Busy) before its response begins, so a crowd of readers costs a retry, not
    the process's memory."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.count = 0

    def check(self) -> None:
        """Busy when the process serves as many streams as it may (nothing taken)."""
        if self.count >= self.maximum:
            raise Busy(
                RETRY_AFTER_SECONDS,
                detail=f"This process serves as many event streams as it may ({self.maximum}); "
                "try again shortly.",
            )

    def take(self) -> Slot:
        """One open stream, until the slot is released (or dropped); Busy at the limit."""
        self.check()
        self.count += 1
        return Slot(self)

    def _give_back(self) -> None:
        self.count -= 1


class Slot:
    """One stream counted by OpenStreams; released once, explicitly or when dropped."""

    def __init__(self, streams: OpenStreams) -> None:
        self._release = weakref.finalize(self, streams._give_back)

    def release(self) -> None:
        self._release()


class Hub:
    """The clients of one stream in this process and what they share: one follower task reads
    each new event once, keeps it until every client has passed it, and wakes them all."""

    def __init__(self, stream: str, tenant: uuid.UUID, head: int) -> None:
        self.stream = stream
        self.tenant = tenant
        self.base = head  # the events after this id that the follower read are in `events`
        self.events: list[Event] = []
        self.cursors: set[Cursor] = set()
        self.changed = asyncio.Event()
        self.ended = False
        self.follower: asyncio.Task[None] | None = None

    @property
    def head(self) -> int:
        return self.base + len(self.events)

    def after(self, last: int) -> list[Event]:
        return self.events[max(0, last - self.base) :]

    def publish(self, events: Sequence[Event]) -> None:
        fresh = [event for event in events if event.id > self.head]
        self.events.extend(fresh)
        # What every client has sent is dropped: a late client reads the log instead.
        passed = min((cursor.last for cursor in self.cursors), default=self.head) - self.base
        if passed > 0:
            del self.events[:passed]
            self.base += passed
        self._wake()

    def end(self) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class Cursor:
    """Where one client of a hub is: the id of the last event it was given."""

    __slots__ = ("last",)

    def __init__(self, last: int) -> None:
        self.last = last


class StreamLog(ABC):
    """A backend's log, and this process's hubs: however many clients read a stream here, one
    task follows it (`_follow`) and every client is given its events from memory. A client
    reads the log itself only for a backlog the hub no longer holds, one page at a time, and
    holds no connection while it waits."""

    def __init__(
        self, *, retention_seconds: float, poll_seconds: float, max_open_streams: int = 2000
    ) -> None:
        self.retention_seconds = retention_seconds
        self.poll_seconds = poll_seconds
        self.open_streams = OpenStreams(max_open_streams)
        self._hubs: dict[str, Hub] = {}

    @abstractmethod
    async def create(self, stream: str, tenant: uuid.UUID) -> None:
        """Make the stream exist (owned by `tenant`, no events yet) so readers can open it before
        the producer's first event. Idempotent; StreamNotFound if another tenant owns it."""

    async def create_in(self, session: AsyncSession, stream: str, tenant: uuid.UUID) -> None:
        """`create` with the caller's transaction: in it when the log is kept in the session's
        database (it is made or not with the rest), else once it commits (before the
        after-commit hooks registered after this call)."""

        async def create() -> None:
            await self.create(stream, tenant)

        after_commit(session, create)

    async def append_in(
        self, session: AsyncSession, stream: str, tenant: uuid.UUID, events: Sequence[Append]
    ) -> bool:
        """`append_many` in the caller's transaction, when the log is kept in the session's
        database: the events are added if and only if it commits (its readers are woken then),
        and StreamClosed or StreamNotFound is raised here, for the caller to roll back. False
        when the log is kept elsewhere: nothing was done, the caller appends once it commits."""
        return False

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
    async def _head(self, stream: str, tenant: uuid.UUID) -> tuple[int, bool]:
        """The stream's last id and whether it is closed. StreamNotFound if it is missing,
        expired or another tenant's."""

    @abstractmethod
    async def _page(self, stream: str, after: int) -> list[Event]:
        """Up to BATCH events after id `after`, read at once (no waiting)."""

    @abstractmethod
    def _follow(self, stream: str, after: int) -> AsyncIterator[list[Event]]:
        """The events after id `after` as they come, in batches; it ends after the terminal
        event, or when the stream is gone without one."""

    async def read(
        self, stream: str, tenant: uuid.UUID, *, after: int = 0, made: bool = False
    ) -> AsyncIterator[Event]:
        """The events after id `after`, then the live ones, ending with the terminal event.
        StreamNotFound (raised here, before any event) if the stream is missing, expired or
        another tenant's. `made`: the caller has just made the stream for `tenant` (its first
        reader, the one that asked for it), so it is followed without a look at it first."""
        hub = self._hubs.get(stream)
        if hub is not None and not hub.ended:
            if hub.tenant != tenant:
                raise StreamNotFound(stream)
            return self._client(stream, tenant, after, closed=False)
        if made:
            return self._client(stream, tenant, after, closed=False)
        head, closed = await self._head(stream, tenant)
        if closed and after >= head:
            return nothing()
        return self._client(stream, tenant, after, closed=closed, head=head)

    async def _client(
        self, stream: str, tenant: uuid.UUID, after: int, *, closed: bool, head: int = 0
    ) -> AsyncIterator[Event]:
        if closed:  # all there is, in the log: no follower
            last = after
            while page := await self._page(stream, last):
                for event in page:
                    yield event
                    if event.terminal:
                        return
                    last = event.id
            return
        # Attached here, when the response starts sending: a reader never iterated holds nothing.
        hub = self._hubs.get(stream)
        if hub is None or hub.ended:
            hub = self._hubs[stream] = Hub(stream, tenant, head)
            hub.follower = asyncio.create_task(self._run(hub), name=f"follow {stream}")
        cursor = Cursor(after)
        hub.cursors.add(cursor)
        try:
            while True:
                changed = hub.changed
                if cursor.last < hub.base:
                    batch = await self._page(stream, cursor.last)  # its backlog
                    if not batch:
                        return  # purged under it
                else:
                    batch = hub.after(cursor.last)
                    if not batch:
                        if hub.ended:
                            return
                        await changed.wait()
                        continue
                for event in batch:
                    yield event
                    cursor.last = event.id
                    if event.terminal:
                        return
        finally:
            self._detach(hub, cursor)

    def _detach(self, hub: Hub, cursor: Cursor) -> None:
        hub.cursors.discard(cursor)
        if not hub.cursors:
            if hub.follower is not None:
                hub.follower.cancel()
            if self._hubs.get(hub.stream) is hub:
                del self._hubs[hub.stream]

    async def _run(self, hub: Hub) -> None:
        try:
            async for batch in self._follow(hub.stream, hub.head):
                hub.publish(batch)
                if batch and batch[-1].terminal:
                    break
        except Exception:
            log.exception("following stream %s failed; its readers reconnect", hub.stream)
        finally:
            hub.end()
            if self._hubs.get(hub.stream) is hub:
                del self._hubs[hub.stream]

    def followed(self) -> int:
        """How many streams this process follows now (one task each)."""
        return len(self._hubs)

    async def close(self) -> None:
        for hub in list(self._hubs.values()):
            if hub.follower is not None:
                hub.follower.cancel()
        self._hubs.clear()


async def nothing() -> AsyncIterator[Event]:
    return
    yield
