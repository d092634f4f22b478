"""The floor of an open event stream: a bare sse-starlette app, nothing of ours in the way.

    .venv/bin/python bench/stream_floor.py --port PORT

`GET /events` answers an EventSourceResponse that sends one event at once, then only its keep-alive
pings (sse-starlette's default, every 15 s) until the client goes away. bench/scale_streams.py
starts it beside the service and holds as many of these open as it holds chat answers.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator

import uvicorn
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route


async def events(request: Request) -> EventSourceResponse:
    async def frames() -> AsyncIterator[ServerSentEvent]:
        yield ServerSentEvent(data='{"text":"word "}', event="message_delta", id="1")
        await asyncio.Event().wait()  # open until the client leaves

    return EventSourceResponse(frames())


app = Starlette(routes=[Route("/events", events)])

if __name__ == "__main__":
    args = argparse.ArgumentParser()
    args.add_argument("--port", type=int, required=True)
    port = args.parse_args().port
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=4096)
