"""A full connection pool: a client waiting on a request gets PoolTimeout after the pool's timeout
(the API's 503 with Retry-After, tests/api/test_busy.py), while work nobody waits on (a durable
step, an answer writing its stream) queues for its connection until `work_patience` has passed
(issue 36: 1,000 answers settling at once ended with `error` for want of a connection).

One connection, held by one unit of work while the others ask for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from contentplatform.kit.db import Database, client_waiting
from contentplatform.kit.http import RequestContextMiddleware

POOL_TIMEOUT = 0.2


def one_connection(path: Path, *, work_patience: float) -> Database:
    return Database(
        f"sqlite+aiosqlite:///{path / 'pool.db'}",
        pool_size=1,
        max_overflow=0,
        pool_timeout=POOL_TIMEOUT,
        work_patience=work_patience,
    )


def while_held(
    found: Database, seconds: float, ask: Callable[[], Awaitable[object]]
) -> tuple[object, float]:
    """What `ask` returns (or raises) while another unit of work holds the only connection for
    `seconds`, and how long it took."""

    async def scenario() -> tuple[object, float]:
        held = asyncio.Event()

        async def hold() -> None:
            async with found.unit_of_work() as session:
                await session.execute(text("SELECT 1"))
                held.set()
                await asyncio.sleep(seconds)

        holder = asyncio.create_task(hold())
        await held.wait()
        started = time.monotonic()
        try:
            outcome: object = await ask()
        except PoolTimeout as error:
            outcome = error
        took = time.monotonic() - started
        await holder
        await found.dispose()
        return outcome, took

    return asyncio.run(scenario())


async def select_one(found: Database) -> object:
    async with found.unit_of_work() as session:
        return await session.scalar(text("SELECT 1"))


def test_work_nobody_waits_on_queues_past_the_pool_timeout_for_its_connection(
    tmp_path: Path,
) -> None:
    found = one_connection(tmp_path, work_patience=30)

    outcome, took = while_held(found, 1.0, lambda: select_one(found))

    assert outcome == 1
    assert took > POOL_TIMEOUT * 2  # it waited through several of the pool's timeouts


def test_a_client_waiting_gets_the_pool_timeout_at_once(tmp_path: Path) -> None:
    found = one_connection(tmp_path, work_patience=30)

    async def as_a_request() -> object:
        with client_waiting():
            return await select_one(found)

    outcome, took = while_held(found, 2.0, as_a_request)

    assert isinstance(outcome, PoolTimeout)
    assert took < 1.5  # the pool's 0.2 s, not the holder's 2 s nor the work's patience


def test_work_gives_up_once_its_patience_has_passed(tmp_path: Path) -> None:
    found = one_connection(tmp_path, work_patience=0.5)

    outcome, took = while_held(found, 3.0, lambda: select_one(found))

    assert isinstance(outcome, PoolTimeout)
    assert 0.5 <= took < 2.5


@pytest.mark.parametrize("waiting", [False, True])
def test_a_free_pool_answers_either_at_once(tmp_path: Path, waiting: bool) -> None:
    found = one_connection(tmp_path, work_patience=30)

    async def scenario() -> object:
        try:
            if waiting:
                with client_waiting():
                    return await select_one(found)
            return await select_one(found)
        finally:
            await found.dispose()

    assert asyncio.run(scenario()) == 1


def test_a_request_gives_up_before_its_response_begins_and_waits_once_it_has(
    tmp_path: Path,
) -> None:
    """Through the request middleware (kit/http.py): before the response starts, a full pool is
    the client's PoolTimeout (its 503); once a stream has begun, its reads wait their turn, as a
    stream cut mid-way cannot be answered 503 any more."""
    found = one_connection(tmp_path, work_patience=30)

    async def before_answering(request: Request) -> Response:
        try:
            value = await select_one(found)
        except PoolTimeout:
            return PlainTextResponse("pool timeout", status_code=503)
        return PlainTextResponse(str(value))

    async def streaming(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"begun;"
            yield f"read {await select_one(found)}".encode()

        return StreamingResponse(body(), media_type="text/plain")

    app = RequestContextMiddleware(
        Starlette(routes=[Route("/before", before_answering), Route("/stream", streaming)])
    )

    def get(path: str) -> Callable[[], Awaitable[object]]:
        async def ask() -> object:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                response = await client.get(path)
                return response.status_code, response.text

        return ask

    found_before, _ = while_held(found, 2.0, get("/before"))
    found = one_connection(tmp_path, work_patience=30)
    found_stream, took = while_held(found, 1.0, get("/stream"))

    assert found_before == (503, "pool timeout")
    assert found_stream == (200, "begun;read 1")
    assert took > POOL_TIMEOUT * 2
