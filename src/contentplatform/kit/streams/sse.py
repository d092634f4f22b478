"""Streams as server-sent events over HTTP: the id a client saw last, and the response that
sends a log's events with keep-alive pings and gives back its slot when it ends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse as EventSourceResponse
from sse_starlette import ServerSentEvent
from starlette.requests import Request

from contentplatform.kit.db import (
    json_dumps,
    json_loads,
)
from contentplatform.kit.errors import BadRequest, FieldError
from contentplatform.kit.streams.log import Event, Slot, StreamLog


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


class _StreamResponse(EventSourceResponse):
    """An EventSourceResponse that gives back its slot of the process's open streams and stops
    reading its events when it ends, however it ends (also when it never started sending)."""

    def __init__(self, *args: Any, slot: Slot | None, events: AsyncIterator[Any], **kw: Any):
        super().__init__(*args, **kw)
        self._slot = slot
        self._events = events

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self._slot is not None:
                self._slot.release()
            aclose = getattr(self._events, "aclose", None)
            if aclose is not None:
                await aclose()


def sse_response(
    events: AsyncIterator[Event],
    *,
    slot: Slot | None = None,
    ping_seconds: float = 15,
    id_prefix: str | None = None,
    seq_in_data: bool = False,
) -> EventSourceResponse:
    """`events` as `text/event-stream`: `id:`, `event:` and `data:` (JSON) per event, a `: ping`
    comment every `ping_seconds`; it ends after the terminal event. A client that disconnects
    only stops this reading. `slot` (OpenStreams.take) is released when the response ends.

    With `id_prefix`, each id is `<prefix>:<n>` (a client holding ids of several streams knows
    which one an id is of); with `seq_in_data`, each data object also carries `seq` (n). The
    first frame tells the client to reconnect after RECONNECT_MS."""

    async def frames() -> AsyncIterator[ServerSentEvent]:
        retry: int | None = RECONNECT_MS
        try:
            async for event in events:
                data = event.data
                if seq_in_data and data.startswith("{"):
                    data = json_dumps({**json_loads(data), "seq": event.id})
                event_id = str(event.id) if id_prefix is None else f"{id_prefix}:{event.id}"
                yield ServerSentEvent(data=data, event=event.event, id=event_id, retry=retry)
                retry = None
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()  # the client leaves its stream's hub now, not when collected

    body = frames()
    return _StreamResponse(
        body,
        slot=slot,
        events=body,
        ping=ping_seconds,
        ping_message_factory=lambda: ServerSentEvent(comment="ping"),
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
    """The stream for `request`, resumed after its Last-Event-ID. Busy at the process's limit
    of open streams, StreamNotFound and a bad Last-Event-ID are raised here, before the
    response begins (so they are problem+json)."""
    after = last_event_id(request, id_prefix)
    slot = log.open_streams.take()
    try:
        events = await log.read(stream, tenant, after=after)
    except BaseException:
        slot.release()
        raise
    return sse_response(
        events, slot=slot, ping_seconds=ping_seconds, id_prefix=id_prefix, seq_in_data=seq_in_data
    )
