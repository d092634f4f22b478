"""Reading event streams in tests with httpx-sse."""

from __future__ import annotations

from httpx_sse import ServerSentEvent


def is_ping(sse: ServerSentEvent) -> bool:
    """Whether httpx-sse made this "event" of a keep-alive comment (`: ping`): once a stream
    has sent an id, it reports the blank line after a comment as an event with no name and no
    data, which it calls "message" (it keeps the last id, as the spec says, but dispatches where
    a browser would not). Every event of ours has a name of its own."""
    return sse.event == "message" and not sse.data
