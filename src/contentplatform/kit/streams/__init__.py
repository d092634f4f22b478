"""Resumable event streams: one log per stream, read live over SSE (`text/event-stream`).

A stream (id such as `chat:<message id>` or `run:<run id>`) belongs to one tenant. Its producer
appends events, each given the next id of the stream (1, 2, 3, ...); the last is terminal, and
nothing is appended after it. A reader replays the events after the id it last saw, then follows
new ones live until the terminal event. Producers never depend on readers: a reader that goes
away stops reading, nothing else.

Two backends behind one interface (`StreamLog`):

- the database (tables `streams` and `stream_events`): the stream's row hands out ids (an UPDATE
  that also refuses a closed stream) and the (stream, id) key makes a shared id impossible.
  Followers are woken at once by a writer in the same process (whose clients are given what it
  appended without a read), by LISTEN/NOTIFY on PostgreSQL, else by one poll of every followed
  stream's head each `poll_seconds`. A producer may make a stream and append to it within its
  own transaction (`create_in`, `append_in`): one commit for its change and its events.
- Redis Streams, when several processes share Redis: one script appends (XADD with the id
  `<id>-0`) and refuses a closed stream; readers follow with XREAD BLOCK.

Each process follows a stream once, however many of its clients read it (the hub in `log`).

A log lives `retention_seconds` (24 hours) after its last event: after the terminal one, or
after a producer that went silent. The database's expired logs are purged by the reconciler's
maintenance (`purge_expired`); Redis expires its keys itself.

The package: `log` (the interface, the per-process hub and the cap on open streams),
`database_log` and `redis_log` (the two backends), `sse` (the HTTP side).
"""

from __future__ import annotations

from contentplatform.kit.db import Database
from contentplatform.kit.streams.database_log import (
    DatabaseStreamLog,
    Stream,
    StreamEvent,
    purge_expired,
)
from contentplatform.kit.streams.log import (
    Append,
    Event,
    OpenStreams,
    Slot,
    StreamClosed,
    StreamLog,
    StreamNotFound,
)
from contentplatform.kit.streams.redis_log import RedisStreamLog
from contentplatform.kit.streams.sse import (
    EventSourceResponse,
    event_number,
    last_event_id,
    sse_response,
    stream_response,
)

__all__ = [
    "Append",
    "DatabaseStreamLog",
    "Event",
    "EventSourceResponse",
    "OpenStreams",
    "RedisStreamLog",
    "Slot",
    "Stream",
    "StreamClosed",
    "StreamEvent",
    "StreamLog",
    "StreamNotFound",
    "event_number",
    "last_event_id",
    "purge_expired",
    "sse_response",
    "stream_log",
    "stream_response",
]


def stream_log(
    db: Database,
    redis_url: str | None,
    prefix: str,
    *,
    retention_seconds: float,
    poll_seconds: float,
    max_open_streams: int = 2000,
) -> StreamLog:
    """In Redis when there is one (several processes share it), else in the database."""
    if redis_url:
        return RedisStreamLog(
            redis_url,
            prefix,
            retention_seconds=retention_seconds,
            poll_seconds=poll_seconds,
            max_open_streams=max_open_streams,
        )
    return DatabaseStreamLog(
        db,
        retention_seconds=retention_seconds,
        poll_seconds=poll_seconds,
        max_open_streams=max_open_streams,
    )
