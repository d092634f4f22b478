"""The kit's event streams (kit/streams/): the log on each backend, and SSE over real HTTP.

The backend tests run on the database and, when the suite has Redis
(CONTENTPLATFORM_TEST_REDIS_URL), on Redis. The HTTP tests mount a tiny app of their own on the
suite's database, with the log the runtime would choose (Redis when the suite has it).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from httpx_sse import connect_sse
from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.kit import streams
from contentplatform.kit.db import Database
from contentplatform.kit.http import install_error_handlers
from contentplatform.kit.streams import (
    Append,
    DatabaseStreamLog,
    Event,
    RedisStreamLog,
    StreamClosed,
    StreamLog,
    StreamNotFound,
)
from tests.support.database import run_on
from tests.support.orgs import new_tenant
from tests.support.servers import AppServer

HOUR = 3600.0


def new_stream() -> str:
    return f"test:{uuid.uuid4()}"


LogOf = Callable[..., StreamLog]


@pytest.fixture(params=["database", "redis"])
def scenario(request: pytest.FixtureRequest, server: AppServer, settings: Settings) -> Any:
    """`scenario(async def body(log_of, tenant, other))`: runs `body` on a fresh loop, where
    `log_of(retention_seconds=...)` makes a log on the backend under test (each a separate
    instance, as another process's would be) and `tenant`, `other` are two tenants."""
    if request.param == "redis" and not settings.redis_url:
        pytest.skip("no test Redis (CONTENTPLATFORM_TEST_REDIS_URL)")

    def runner(body: Callable[[LogOf, uuid.UUID, uuid.UUID], Awaitable[Any]]) -> Any:
        async def main(db: Database) -> Any:
            made: list[StreamLog] = []

            def log_of(retention_seconds: float = HOUR, poll_seconds: float = 0.05) -> StreamLog:
                log: StreamLog
                if request.param == "redis":
                    assert settings.redis_url
                    log = RedisStreamLog(
                        settings.redis_url,
                        settings.redis_prefix,
                        retention_seconds=retention_seconds,
                        poll_seconds=poll_seconds,
                        block_seconds=0.2,
                    )
                else:
                    log = DatabaseStreamLog(
                        db, retention_seconds=retention_seconds, poll_seconds=poll_seconds
                    )
                made.append(log)
                return log

            try:
                return await body(log_of, await new_tenant(db), await new_tenant(db))
            finally:
                for log in made:
                    await log.close()

        return run_on(settings, main)

    return runner


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    async with asyncio.timeout(5):
        return [event async for event in events]


def test_append_then_read_round_trip(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        log, stream = log_of(), new_stream()
        assert await log.append(stream, tenant, "token", {"text": "Hel"}) == 1
        assert await log.append(stream, tenant, "token", {"text": "lo é"}) == 2
        assert await log.append(stream, tenant, "message_end", {"n": 2}, terminal=True) == 3
        events = await collect(await log.read(stream, tenant))
        assert [(e.id, e.event, json.loads(e.data), e.terminal) for e in events] == [
            (1, "token", {"text": "Hel"}, False),
            (2, "token", {"text": "lo é"}, False),
            (3, "message_end", {"n": 2}, True),
        ]

    scenario(body)


def test_a_batch_of_events_is_appended_in_order_with_consecutive_ids(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        log, stream = log_of(), new_stream()
        await log.append(stream, tenant, "message_start", {})
        tokens = [Append("message_delta", {"text": word}) for word in ("a ", "b ", "c")]
        assert await log.append_many(stream, tenant, tokens) == [2, 3, 4]
        end = [Append("message_delta", {"text": "."}), Append("message_end", {}, terminal=True)]
        assert await log.append_many(stream, tenant, end) == [5, 6]
        events = await collect(await log_of().read(stream, tenant, after=1))
        assert [(e.id, json.loads(e.data).get("text")) for e in events] == [
            (2, "a "),
            (3, "b "),
            (4, "c"),
            (5, "."),
            (6, None),
        ]
        assert events[-1].terminal
        # A closed stream takes none of a batch; another tenant's takes none either.
        with pytest.raises(StreamClosed):
            await log.append_many(stream, tenant, tokens)
        with pytest.raises(StreamNotFound):
            await log.append_many(stream, other, tokens)
        with pytest.raises(ValueError, match="last"):
            await log.append_many(new_stream(), tenant, [end[1], end[0]])
        assert [e.id for e in await collect(await log.read(stream, tenant))][-1] == 6

    scenario(body)


def test_replay_after_n_then_live_events_no_gap_no_duplicate(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        writer, reader, stream = log_of(), log_of(), new_stream()
        for n in range(1, 6):
            await writer.append(stream, tenant, "token", {"n": n})
        reading = asyncio.create_task(collect(await reader.read(stream, tenant, after=3)))
        await asyncio.sleep(0.1)  # the reader has replayed 4 and 5 and waits
        assert not reading.done()
        for n in range(6, 9):
            await writer.append(stream, tenant, "token", {"n": n})
        await writer.append(stream, tenant, "run_finished", {}, terminal=True)
        events = await reading
        assert [e.id for e in events] == [4, 5, 6, 7, 8, 9]
        assert [json.loads(e.data) for e in events[:-1]] == [{"n": n} for n in range(4, 9)]
        assert events[-1].event == "run_finished"

    scenario(body)


def test_terminal_event_ends_readers_and_refuses_appends(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        log, stream = log_of(), new_stream()
        await log.create(stream, tenant)
        reading = asyncio.create_task(collect(await log.read(stream, tenant)))
        await log.append(stream, tenant, "error", {"code": "PROVIDER"}, terminal=True)
        assert [(e.id, e.event) for e in await reading] == [(1, "error")]
        with pytest.raises(StreamClosed):
            await log.append(stream, tenant, "token", {})
        with pytest.raises(StreamClosed):
            await log.append(stream, tenant, "message_end", {}, terminal=True)
        # A reader coming after the end replays and ends; one past the end just ends.
        assert [e.id for e in await collect(await log.read(stream, tenant))] == [1]
        assert await collect(await log.read(stream, tenant, after=1)) == []

    scenario(body)


def test_concurrent_writers_never_share_an_id(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        first, second, stream = log_of(), log_of(), new_stream()

        async def write(log: StreamLog, name: str) -> list[int]:
            return [await log.append(stream, tenant, name, {}) for _ in range(15)]

        ids = await asyncio.gather(
            write(first, "a"), write(second, "b"), write(first, "c"), write(second, "d")
        )
        taken = [i for each in ids for i in each]
        assert sorted(taken) == list(range(1, 61))
        assert all(each == sorted(each) for each in ids)  # each writer's in its order
        await first.append(stream, tenant, "end", {}, terminal=True)
        events = await collect(await second.read(stream, tenant))
        assert [e.id for e in events] == list(range(1, 62))

    scenario(body)


def test_a_log_in_the_database_writes_within_the_callers_transaction(run):
    """`create_in` and `append_in`: in the caller's transaction when it is of the log's
    database (nothing of a rolled-back one, readers woken at its commit), else after it."""

    async def scenario(db: Database) -> None:
        tenant = await new_tenant(db)
        log = DatabaseStreamLog(db, retention_seconds=HOUR, poll_seconds=0.05)
        elsewhere_db = Database(db.url)
        elsewhere = DatabaseStreamLog(elsewhere_db, retention_seconds=HOUR, poll_seconds=0.05)
        try:
            stream = new_stream()
            with pytest.raises(RuntimeError):
                async with db.unit_of_work() as session:
                    await log.create_in(session, stream, tenant)
                    assert await log.append_in(session, stream, tenant, [Append("a", {})])
                    raise RuntimeError("rolled back")
            with pytest.raises(StreamNotFound):
                await log.read(stream, tenant)

            async with db.unit_of_work() as session:
                await log.create_in(session, stream, tenant)
            reading = asyncio.create_task(collect(await log.read(stream, tenant)))
            events = [Append("a", {"n": 1}), Append("end", {}, terminal=True)]
            async with db.unit_of_work() as session:
                assert await log.append_in(session, stream, tenant, events)
                await asyncio.sleep(0.2)
                assert not reading.done()  # nothing is seen before the commit
            assert [(e.id, e.event) for e in await reading] == [(1, "a"), (2, "end")]
            with pytest.raises(StreamClosed):
                async with db.unit_of_work() as session:
                    await log.append_in(session, stream, tenant, [Append("late", {})])

            # A log of another database (here another engine): nothing done in the session;
            # the stream is made once it commits, the caller appends itself.
            later = new_stream()
            async with db.unit_of_work() as session:
                await elsewhere.create_in(session, later, tenant)
                assert not await elsewhere.append_in(session, later, tenant, [Append("a", {})])
                with pytest.raises(StreamNotFound):  # not yet
                    await elsewhere._head(later, tenant)
            assert await elsewhere._head(later, tenant) == (0, False)
        finally:
            await log.close()
            await elsewhere.close()
            await elsewhere_db.dispose()

    run(scenario)


def test_another_tenants_stream_is_not_found(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        log, stream = log_of(), new_stream()
        await log.append(stream, tenant, "token", {})
        with pytest.raises(StreamNotFound):
            await log.read(stream, other)
        with pytest.raises(StreamNotFound):
            await log.append(stream, other, "token", {})
        with pytest.raises(StreamNotFound):
            await log.create(stream, other)
        with pytest.raises(StreamNotFound):
            await log.read(new_stream(), tenant)
        await log.create(stream, tenant)  # its own: idempotent
        assert await log.append(stream, tenant, "end", {}, terminal=True) == 2

    scenario(body)


def test_a_stream_created_before_its_first_event_is_followed_from_another_instance(scenario):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        producer, stream = log_of(), new_stream()
        await producer.create(stream, tenant)
        # Another process: its own connections, nothing shared in memory with the producer.
        reading = asyncio.create_task(collect(await log_of().read(stream, tenant)))
        # Quiet for longer than a reader waits at once (Redis blocks 0.2 s here, the database
        # polls every 0.05 s): a stream with no event yet is still open, not ended.
        await asyncio.sleep(0.5)
        assert not reading.done()
        for n in range(3):
            await producer.append(stream, tenant, "token", {"n": n})
            await asyncio.sleep(0.02)
        await producer.append(stream, tenant, "message_end", {}, terminal=True)
        assert [e.id for e in await reading] == [1, 2, 3, 4]

    scenario(body)


async def until(condition: Callable[[], bool]) -> None:
    """Once `condition` holds (what it looks at has no event to wait on); fails after 5 s."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not come to hold in 5 s")


def test_a_writer_elsewhere_wakes_the_reader_without_its_poll(scenario, settings: Settings):
    """Another instance (another process's) appends: on PostgreSQL its NOTIFY wakes the reader
    and on Redis its XREAD does, long before a poll would; SQLite has only the poll."""

    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        on_sqlite = settings.resolved_database_url.startswith("sqlite") and not isinstance(
            log_of(), RedisStreamLog
        )
        poll = 0.05 if on_sqlite else 60.0
        producer, reader, stream = log_of(), log_of(poll_seconds=poll), new_stream()
        await producer.create(stream, tenant)
        seen: asyncio.Queue[int] = asyncio.Queue()

        async def follow() -> None:
            async for event in await reader.read(stream, tenant):
                seen.put_nowait(event.id)

        reading = asyncio.create_task(follow())
        await until(lambda: reader.followed() == 1)
        for n in range(1, 4):
            sent = time.monotonic()
            await producer.append(stream, tenant, "token", {"n": n})
            async with asyncio.timeout(5):
                assert await seen.get() == n
            assert time.monotonic() - sent < 2  # a poll comes after SAFETY_POLL_SECONDS (5 s)
        await producer.append(stream, tenant, "message_end", {}, terminal=True)
        async with asyncio.timeout(10):
            await reading
        assert seen.get_nowait() == 4
        assert reader.followed() == 0

    scenario(body)


def test_without_notifications_the_poll_wakes_the_reader_of_an_append_elsewhere(scenario):
    """A reader whose process cannot LISTEN (SQLite, or PostgreSQL with its listening connection
    lost) learns of another process's appends from its poll of the followed streams' heads."""

    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        producer, reader = log_of(), log_of(poll_seconds=0.05)
        if not isinstance(reader, DatabaseStreamLog):
            pytest.skip("Redis readers block on XREAD; they have no poll")
        reader.notifies = False
        quiet, busy = new_stream(), new_stream()
        for stream in (quiet, busy):
            await producer.create(stream, tenant)
        waiting = asyncio.create_task(collect(await reader.read(quiet, tenant)))
        reading = asyncio.create_task(collect(await reader.read(busy, tenant)))
        await until(lambda: reader.followed() == 2)
        await producer.append(busy, tenant, "token", {"n": 1})
        await producer.append(busy, tenant, "message_end", {}, terminal=True)
        assert [e.id for e in await reading] == [1, 2]
        assert not waiting.done()  # a quiet stream beside it is not woken for nothing
        await producer.append(quiet, tenant, "message_end", {}, terminal=True)
        assert [e.id for e in await waiting] == [1]

    scenario(body)


def test_clients_of_one_stream_share_one_follower_that_stops_with_the_last(scenario):
    """Many clients of a stream in one process: one follower task, each client every event in
    order (its backlog read from the log); when the last client leaves, the follower stops,
    and no task is left behind."""

    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        log, stream = log_of(), new_stream()

        def followers() -> list[asyncio.Task[Any]]:
            return [t for t in asyncio.all_tasks() if t.get_name().startswith("follow test:")]

        for n in range(1, 4):
            await log.append(stream, tenant, "token", {"n": n})
        clients = [await log.read(stream, tenant, after=after) for after in (0, 2, 3) * 10]
        reading = [asyncio.create_task(collect(client)) for client in clients]
        await until(lambda: log.followed() == 1)
        await log.append_many(stream, tenant, [Append("token", {"n": n}) for n in (4, 5)])
        assert len(followers()) == 1
        await log.append(stream, tenant, "message_end", {}, terminal=True)
        got = [[e.id for e in events] for events in await asyncio.gather(*reading)]
        assert got == [[1, 2, 3, 4, 5, 6], [3, 4, 5, 6], [4, 5, 6]] * 10
        await until(lambda: not followers())
        assert log.followed() == 0

        # Clients that go away mid-stream (a disconnect cancels their reading): with the last
        # one, the follower stops.
        live = new_stream()
        await log.create(live, tenant)
        leaving = [asyncio.create_task(collect(await log.read(live, tenant))) for _ in range(3)]
        await until(lambda: log.followed() == 1 and len(followers()) == 1)
        for task in leaving[:2]:
            task.cancel()
        await asyncio.sleep(0.1)
        assert len(followers()) == 1  # one client still reads
        leaving[2].cancel()
        await until(lambda: not followers())
        assert log.followed() == 0
        await log.append(live, tenant, "message_end", {}, terminal=True)  # nobody reads it

    scenario(body)


def test_expired_logs_read_as_not_found_and_are_purged(scenario, settings: Settings):
    async def body(log_of: LogOf, tenant: uuid.UUID, other: uuid.UUID) -> None:
        # Kept a second: long enough to read it back on a loaded machine, short for a test.
        brief, kept = log_of(retention_seconds=1.0), log_of()
        gone, live = new_stream(), new_stream()
        appended = time.monotonic()
        await brief.append(gone, tenant, "end", {}, terminal=True)
        await kept.append(live, tenant, "token", {})
        try:
            assert [e.id for e in await collect(await brief.read(gone, tenant))] == [1]
        except StreamNotFound:
            # Only a machine so loaded that the second had passed may miss it, never sooner.
            assert time.monotonic() - appended >= 1.0
        await asyncio.sleep(1.1)
        with pytest.raises(StreamNotFound):
            await brief.read(gone, tenant)
        await kept.read(live, tenant)
        if isinstance(kept, DatabaseStreamLog):
            # The suite's service purges on its own reconcile passes too: either may take it.
            await streams.purge_expired(kept.db)
            async with kept.db.unit_of_work() as session:
                left = set(
                    await session.scalars(
                        select(streams.StreamEvent.stream_id).where(
                            streams.StreamEvent.stream_id.in_([gone, live])
                        )
                    )
                )
            assert left == {live}  # the expired stream's events went with it

    scenario(body)


# --- over HTTP ------------------------------------------------------------------------------------


def stream_app(settings: Settings) -> FastAPI:
    """Reading a stream (its tenant in the query, for the test) and a producer that appends
    `n` tokens `delay` seconds apart, then `message_end`, in a task of its own."""
    tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(settings.resolved_database_url, pool_size=5, max_overflow=5)
        app.state.log = streams.stream_log(
            db, settings.redis_url, settings.redis_prefix, retention_seconds=HOUR, poll_seconds=0.05
        )
        yield
        await app.state.log.close()
        await db.dispose()

    app = FastAPI(lifespan=lifespan)
    install_error_handlers(app)

    @app.get("/streams/{stream}")
    async def read(
        stream: str, tenant: uuid.UUID, request: Request, ping: float = 15, prefixed: bool = False
    ) -> streams.EventSourceResponse:
        return await streams.stream_response(
            app.state.log,
            request,
            stream,
            tenant,
            ping_seconds=ping,
            id_prefix="m1" if prefixed else None,
            seq_in_data=prefixed,
        )

    @app.post("/streams/{stream}")
    async def produce(stream: str, tenant: uuid.UUID, n: int, delay: float = 0) -> None:
        log: StreamLog = app.state.log
        await log.create(stream, tenant)

        async def tokens() -> None:
            for i in range(1, n + 1):
                await log.append(stream, tenant, "token", {"i": i})
                await asyncio.sleep(delay)
            await log.append(stream, tenant, "message_end", {"tokens": n}, terminal=True)

        task = asyncio.create_task(tokens())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return app


@pytest.fixture(scope="module")
def http(server: AppServer, settings: Settings) -> Iterator[httpx.Client]:
    with AppServer(stream_app(settings)) as running, running.client() as client:
        yield client


@pytest.fixture
def owner(run: Any) -> uuid.UUID:
    return run(new_tenant)


def produced(http: httpx.Client, owner: uuid.UUID, n: int, delay: float = 0) -> str:
    stream = new_stream()
    answer = http.post(f"/streams/{stream}", params={"tenant": str(owner), "n": n, "delay": delay})
    assert answer.status_code == 200, answer.text
    return stream


def read_all(
    http: httpx.Client, stream: str, owner: uuid.UUID, **options: Any
) -> list[tuple[str, str, Any]]:
    params = {"tenant": str(owner), **options.pop("params", {})}
    with connect_sse(http, "GET", f"/streams/{stream}", params=params, **options) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(sse.id, sse.event, sse.json()) for sse in source.iter_sse()]


def test_sse_frames_every_event_with_id_event_and_json_data(http, owner):
    stream = produced(http, owner, 3, delay=0.02)
    assert read_all(http, stream, owner) == [
        ("1", "token", {"i": 1}),
        ("2", "token", {"i": 2}),
        ("3", "token", {"i": 3}),
        ("4", "message_end", {"tokens": 3}),
    ]
    # The wire itself: one frame per event, and the response ends after the terminal one.
    text = http.get(f"/streams/{stream}", params={"tenant": str(owner)}).text
    # The first frame also tells EventSource how long to wait before reconnecting.
    assert text.startswith('id: 1\r\nevent: token\r\ndata: {"i":1}\r\nretry: 3000\r\n\r\n')
    assert text.count("retry:") == 1
    assert text.endswith('id: 4\r\nevent: message_end\r\ndata: {"tokens":3}\r\n\r\n')


def test_resumes_after_last_event_id_header_or_query(http, owner):
    stream = produced(http, owner, 4)
    resumed = read_all(http, stream, owner, headers={"Last-Event-ID": "2"})
    assert [frame[0] for frame in resumed] == ["3", "4", "5"]
    by_query = read_all(http, stream, owner, params={"lastEventId": "4"})
    assert [frame[0] for frame in by_query] == ["5"]
    # The header (what EventSource sends on reconnecting) wins over the URL's older query.
    both = read_all(
        http, stream, owner, params={"lastEventId": "1"}, headers={"Last-Event-ID": "3"}
    )
    assert [frame[0] for frame in both] == ["4", "5"]


def test_prefixed_ids_carry_the_stream_name_and_data_its_seq(http, owner):
    stream = produced(http, owner, 2)
    frames = read_all(http, stream, owner, params={"prefixed": True})
    assert frames == [
        ("m1:1", "token", {"i": 1, "seq": 1}),
        ("m1:2", "token", {"i": 2, "seq": 2}),
        ("m1:3", "message_end", {"tokens": 2, "seq": 3}),
    ]
    # Either form of the id is taken back; another stream's prefix is refused.
    for seen in ("m1:1", "1"):
        rest = read_all(
            http, stream, owner, params={"prefixed": True}, headers={"Last-Event-ID": seen}
        )
        assert [frame[0] for frame in rest] == ["m1:2", "m1:3"]
    wrong = http.get(
        f"/streams/{stream}",
        params={"tenant": str(owner), "prefixed": True},
        headers={"Last-Event-ID": "m2:1"},
    )
    assert wrong.status_code == 400
    assert "m1:<n>" in wrong.json()["detail"]


def test_disconnect_stops_only_the_reader_and_resume_gets_exactly_the_rest(http, owner):
    stream = produced(http, owner, 8, delay=0.03)
    seen: list[str] = []
    params = {"tenant": str(owner)}
    with connect_sse(http, "GET", f"/streams/{stream}", params=params) as source:
        for sse in source.iter_sse():
            seen.append(sse.id)
            if len(seen) == 2:
                break  # the client goes away mid-stream
    assert seen == ["1", "2"]
    rest = read_all(http, stream, owner, headers={"Last-Event-ID": seen[-1]})
    ids = seen + [frame[0] for frame in rest]
    assert ids == [str(i) for i in range(1, 10)]  # no gap, no duplicate
    assert rest[-1][1] == "message_end"  # the producer went on to the end


def test_keep_alive_ping_is_a_comment(http, owner):
    stream = produced(http, owner, 2, delay=0.35)
    started = time.monotonic()
    text = http.get(f"/streams/{stream}", params={"tenant": str(owner), "ping": 0.1}).text
    assert time.monotonic() - started < 3
    assert "\r\n: ping\r\n\r\n" in text or text.startswith(": ping\r\n\r\n")
    assert "event: ping" not in text
    assert text.endswith('event: message_end\r\ndata: {"tokens":2}\r\n\r\n')


def test_problems_come_before_the_stream_as_problem_json(http, owner, run):
    stream = produced(http, owner, 1)
    stranger = run(new_tenant)
    for params, headers, status in [
        ({"tenant": str(stranger)}, {}, 404),
        ({"tenant": str(owner)}, {"Last-Event-ID": "-1"}, 400),
        ({"tenant": str(owner), "lastEventId": "x"}, {}, 400),
    ]:
        answer = http.get(f"/streams/{stream}", params=params, headers=headers)
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    missing = http.get(f"/streams/{new_stream()}", params={"tenant": str(owner)})
    assert missing.status_code == 404
    assert missing.json()["code"] == "NOT_FOUND"
