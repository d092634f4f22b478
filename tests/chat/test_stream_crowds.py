"""Many readers of chat answers on a real `contentplatform serve` process (issue 36.3, 35.9): a
crowd reading one answer in flight on a small connection pool, and the process's limit of open
streams (MAX_OPEN_STREAMS), past which a stream is refused with 503 and Retry-After before it
begins, on every way of opening one (REST, RPC, a new question, a stream URL).

The answer is written by `SlowModel` (stand_in.py), paused mid-answer so that it stays in flight
while the readers gather; the processes and databases come from tests.support.processes
(PostgreSQL and Redis when the suite has them).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from tests.chat.stand_in import ANSWER, SlowModel
from tests.chat.support import QUESTION, Frame, read_sse, text_of
from tests.chat.test_processes import Asker, chatting, one_terminal
from tests.support.problems import problem
from tests.support.processes import LOOPBACK, TIMEOUT, Services, Stack, wait_for
from tests.support.sse import is_ping

READERS = 200


async def read_all(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], first: threading.Semaphore
) -> list[Frame]:
    """The frames of one stream to its end; `first` is released with the first frame."""
    frames: list[Frame] = []
    async with aconnect_sse(client, "GET", path, headers=headers) as source:
        assert source.response.status_code == 200, await source.response.aread()
        async for sse in source.aiter_sse():
            if is_ping(sse):
                continue
            frames.append(Frame(sse.id, sse.event, json.loads(sse.data)))
            if len(frames) == 1:
                first.release()
    return frames


def crowd(
    asker: Asker, message_id: str, readers: int, *, gathered: Any
) -> list[list[Frame] | BaseException]:
    """`readers` clients reading the answer's stream at once, over one socket each; `gathered()`
    is called once every one of them has its first frame."""
    path = f"/v1/chat/messages/{message_id}/events"
    first = threading.Semaphore(0)

    async def main() -> list[list[Frame] | BaseException]:
        limits = httpx.Limits(max_connections=readers + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(
            base_url=asker.service.url, limits=limits, timeout=TIMEOUT
        ) as client:
            tasks = [
                asyncio.create_task(read_all(client, path, asker.headers, first))
                for _ in range(readers)
            ]

            def await_all_firsts() -> None:
                for _ in range(readers):
                    if not first.acquire(timeout=TIMEOUT):
                        return
                gathered()

            await asyncio.to_thread(await_all_firsts)
            return await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(main())


def test_200_readers_of_one_answer_in_flight_are_all_served_every_event_on_a_small_pool(
    stack: Stack, services: Services
) -> None:
    """200 clients read one answer while it is written, on a process with 3 database connections:
    each is sent every event in order, ending with message_end; none is refused or cut off for
    want of a connection. Each reader holds a connection only for its opening reads; 200 of them
    queue for 3 connections, which took over 5 s once on a loaded CI host, hence 30 s."""
    with SlowModel(word_delay=0.01, pauses=[3]) as model:
        service, asker = chatting(
            services,
            model.base_url,
            "crowd",
            database_pool_size="3",
            database_max_overflow="0",
            database_pool_timeout_seconds="30",
        )
        asked = asker.ask("crowd", stop_after=1)
        message_id = asked[0].data["message_id"]
        wait_for("the model to pause mid-answer", lambda: model.paused_at == 3, service)
        results = crowd(asker, message_id, READERS, gathered=model.resume)

    failures = [r for r in results if isinstance(r, BaseException)]
    assert failures == [], f"{len(failures)} of {READERS} readers failed: {failures[:3]!r}"
    whole = asker.events(message_id)
    assert one_terminal(whole).event == "message_end"
    assert text_of(whole) == ANSWER
    assert all(frames == whole for frames in results)


def test_a_stream_past_the_limit_is_503_with_retry_after_and_the_open_ones_go_on(
    stack: Stack, services: Services
) -> None:
    """MAX_OPEN_STREAMS=2, open: a question's stream and a reader of it: a third stream is
    refused before it begins with 503 problem+json and Retry-After, over REST, RPC, a stream
    URL and a new question (which is not taken); the two open streams are sent the whole
    answer, and once they end streams open again."""
    with SlowModel(word_delay=0.01, pauses=[3]) as model:
        service, asker = chatting(services, model.base_url, "limit", max_open_streams="2")
        asked: list[Frame] = []

        def ask() -> None:
            with httpx.Client(base_url=service.url) as http:
                read_sse(
                    http,
                    "POST",
                    "/v1/chat/messages",
                    headers=asker.headers,
                    json_body={"query": QUESTION, "idempotencyKey": "limited"},
                    into=asked,
                )

        asking = threading.Thread(target=ask)
        asking.start()
        wait_for("the model to pause mid-answer", lambda: model.paused_at == 3, service)
        message_id = asked[0].data["message_id"]
        refused: list[httpx.Response] = []

        def try_more() -> None:
            url = f"{service.url}/v1/chat/messages/{message_id}/events"
            refused.append(LOOPBACK.get(url, headers=asker.headers, timeout=30))
            refused.append(
                LOOPBACK.post(
                    f"{service.url}/api/rpc/chat.streamEvents",
                    json={"id": message_id},
                    headers=asker.headers,
                    timeout=30,
                )
            )
            made = asker.request("POST", f"/v1/chat/messages/{message_id}/stream-url")
            refused.append(LOOPBACK.get(made["url"], timeout=30))
            refused.append(
                LOOPBACK.post(
                    f"{service.url}/v1/chat/messages",
                    json={"query": "Another?", "idempotencyKey": "past-the-limit"},
                    headers=asker.headers,
                    timeout=30,
                )
            )
            model.resume()

        results = crowd(asker, message_id, 1, gathered=try_more)
        asking.join(TIMEOUT)
        assert not asking.is_alive()

        assert len(refused) == 4
        for response in refused:
            body = problem(response, 503, "INTERNAL_SERVER_ERROR")
            assert int(response.headers["retry-after"]) > 0
            assert body["retryable"] is True
            assert "event streams" in body["detail"]
        whole = asker.events(message_id)  # the slots came back: a stream opens again
        assert one_terminal(whole).event == "message_end"
        assert results == [whole]
        assert [(f.id, f.event, f.data) for f in asked] == [(f.id, f.event, f.data) for f in whole]
        # The refused question was not taken: its key is still free, for a new question.
        model.resume()
        again = asker.ask("past-the-limit", query="Another?")
        assert one_terminal(again).event == "message_end"
        assert again[0].data["message_id"] != message_id
