"""Issue 36's open-stream figures: what an open chat answer costs a process, against a bare one.

    .venv/bin/python bench/scale_streams.py                  # 1,000 streams, SQLite
    .venv/bin/python bench/scale_streams.py --streams 300 --readers 200 --questions 10
                                            [--database-url postgresql://...] [--redis-url redis://...]
    .venv/bin/python bench/scale_streams.py --first-token-only --questions 20   # 4. alone

Starts `contentplatform serve` (one process, a fresh data directory; SQLite unless
`--database-url`) on a stand-in OpenAI-compatible model that writes an answer's first word at
once and then holds the rest until told (a keep-alive comment every 15 s meanwhile), and the
floor, bench/stream_floor.py: a bare sse-starlette stream that sends one event and then only
pings. Then, interleaved (the service's and the floor's streams opened alternately, measured in
the same window):

1. **memory**: `--streams` chat answers (`chat.message`, 10 organizations, each held open by
   the model after its first word; `--opening` of each kind being opened at a time, 100 by
   default, 0 for all at once) and as many floor streams; RSS rise of each
   process (from /proc) over the number of streams, once every stream has its first event.
   Also the RSS rise of as many more readers (`chat.streamEvents`, one per answer).
2. **idle CPU**: the CPU each process uses over the next 10 s while they are all open, as % of
   one core (/proc/<pid>/stat).
3. **200 readers**: `--readers` clients of one answer in flight (`chat.streamEvents`), then the
   model lets it go on: whether every one got every event in order, and how long it took.
4. **first token**: with the offline model (another service process), the time from sending
   `chat.message` to the first `message_delta`, against the floor's first event; the median of
   `--questions` pairs, taken in turn.

Prints each figure with its target (issue 36) and the load average; `scale(...)` returns the
figures (`summary()` as bench/scale_scheduler.py's), for bench/scale.py to gather. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from chat import QUESTIONS, rss_mb, running_service, small_server  # noqa: E402
from generate import ingest  # noqa: E402

# Issue 36's targets.
MEMORY_TARGET = 2.0  # KB per open answer / KB per bare stream
IDLE_CPU_TARGET = 5.0  # % of one core, the service idling with its streams open
FIRST_TOKEN_TARGET = 10.0  # first token / the bare stream's first event
ORGS = 10
# Streams of each kind being opened at a time: clients arrive over time, so the memory and CPU of
# 1,000 open answers are measured without 1,000 first requests landing in one instant, which on
# SQLite (one writer) queue past a request's pool timeout and are refused 503.
OPENING = 100
# Streams opened and let go before the measures: more than the service's database pools hold
# (30 connections and DBOS's 20, by default).
WARM_UP = 64

# An OpenAI-compatible model that writes the first word at once; while holding, it then waits
# (a keep-alive comment every 15 s: sse-starlette's ping interval, which the service and the
# floor use towards their clients, and well within the service's 60 s model read timeout) until
# POST /release, then writes the rest.
HOLDING_MODEL = """
import asyncio, json, sys, time
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WORDS = 20
state = {"holding": False, "released": asyncio.Event()}

def chunk(delta, finish=None, usage=None):
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": "holding-model", "choices": [] if usage else
            [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\\n\\n"

async def completions(request):
    asked = await request.json()
    if not asked.get("stream"):
        return JSONResponse({"error": {"message": "stream only"}}, status_code=400)
    released = None if not state["holding"] else state["released"]
    async def body():
        yield chunk({"role": "assistant", "content": ""})
        yield chunk({"content": "word0 "})
        while released is not None and not released.is_set():
            try:
                await asyncio.wait_for(released.wait(), 15)
            except asyncio.TimeoutError:
                yield ": hold\\n\\n"
        for n in range(1, WORDS):
            yield chunk({"content": f"word{n} "})
        yield chunk({}, finish="stop")
        yield chunk(None, usage={"prompt_tokens": 200, "completion_tokens": WORDS,
                                 "total_tokens": 200 + WORDS})
        yield "data: [DONE]\\n\\n"
    return StreamingResponse(body(), media_type="text/event-stream")

async def hold(request):
    state["holding"], state["released"] = True, asyncio.Event()
    return Response()

async def release(request):
    state["holding"] = False
    state["released"].set()
    return Response()

app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                        Route("/hold", hold, methods=["POST"]),
                        Route("/release", release, methods=["POST"]),
                        Route("/", lambda r: Response())])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=4096)
"""


@dataclass
class Figure:
    name: str
    backend: str
    measure: str
    ratio: float  # the figure the target is about
    target: float
    spread: list[float] = field(default_factory=list)
    detail: str = ""
    lower_is_better: bool = True

    @property
    def met(self) -> bool:
        return self.ratio <= self.target if self.lower_is_better else self.ratio >= self.target

    def summary(self) -> dict[str, Any]:
        """What bench/scale.py gathers."""
        return {
            "name": self.name,
            "backend": self.backend,
            "measure": self.measure,
            "ratio": round(self.ratio, 2),
            "target": self.target,
            "met": self.met,
            "spread": [round(value, 2) for value in self.spread],
            "detail": self.detail,
            "load_average": round(os.getloadavg()[0], 2),
        }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Reading:
    """One stream read to its end in a task: its frames' ids and events; `first` is set with
    the first frame that counts (a `message_delta` for an answer, anything for the floor)."""

    def __init__(self) -> None:
        self.first = asyncio.Event()
        self.first_after: float | None = None
        self.frames: list[tuple[str, str]] = []
        self.status: int | None = None

    async def read(
        self, client: httpx.AsyncClient, method: str, url: str, wanted: str | None, **kw: Any
    ) -> Reading:
        started = time.perf_counter()
        async with aconnect_sse(client, method, url, **kw) as source:
            self.status = source.response.status_code
            if self.status != 200:
                self.first.set()
                return self
            async for sse in source.aiter_sse():
                if sse.event == "message" and not sse.data:
                    continue  # a keep-alive comment, as httpx-sse reads one (tests/support/sse.py)
                self.frames.append((sse.id, sse.event))
                if not self.first.is_set() and wanted in (None, sse.event):
                    self.first_after = time.perf_counter() - started
                    self.first.set()
        return self


def ask_body() -> dict[str, Any]:
    return {"query": QUESTIONS[0], "idempotencyKey": f"bench-{uuid.uuid4()}"}


async def all_first(readings: list[Reading], tasks: list[asyncio.Task[Any]]) -> None:
    """Until every reading has its first event (or its task ended without one)."""
    for reading, task in zip(readings, tasks, strict=True):
        await asyncio.wait(
            [asyncio.ensure_future(reading.first.wait()), task],
            return_when=asyncio.FIRST_COMPLETED,
        )


@dataclass
class Crowd:
    """Chat answers and as many floor streams, each read in a task of its own."""

    answers: list[Reading]
    answer_tasks: list[asyncio.Task[Any]]
    floors: list[Reading]
    floor_tasks: list[asyncio.Task[Any]]


async def open_crowd(
    client: httpx.AsyncClient,
    bare: httpx.AsyncClient,
    headers: list[dict[str, str]],
    streams: int,
    opening: int | None = None,
) -> Crowd:
    """`streams` chat answers and as many floor streams, opened alternately, once every one has
    its first event (or its task ended without one). With `opening`, at most that many of each
    are being opened at a time: the next waits for one to have its first event, as clients
    arriving over time would, rather than the whole crowd's requests landing in one instant."""
    crowd = Crowd([], [], [], [])
    for n in range(streams):
        if opening is not None and n >= opening:  # the one opened `opening` before has begun
            earlier = n - opening
            await all_first([crowd.answers[earlier]], [crowd.answer_tasks[earlier]])
            await all_first([crowd.floors[earlier]], [crowd.floor_tasks[earlier]])
        answer, floor = Reading(), Reading()
        crowd.answers.append(answer)
        crowd.answer_tasks.append(
            asyncio.create_task(
                answer.read(
                    client,
                    "POST",
                    "/v1/chat/messages",
                    "message_delta",
                    json=ask_body(),
                    headers=headers[n % ORGS],
                )
            )
        )
        crowd.floors.append(floor)
        crowd.floor_tasks.append(asyncio.create_task(floor.read(bare, "GET", "/events", None)))
    await all_first(crowd.answers, crowd.answer_tasks)
    await all_first(crowd.floors, crowd.floor_tasks)
    return crowd


async def let_go(crowd: Crowd, model: httpx.AsyncClient) -> None:
    """The model goes on, the answers end; the floor streams are closed."""
    await model.post("/release")
    await asyncio.gather(*crowd.answer_tasks, return_exceptions=True)
    for task in crowd.floor_tasks:
        task.cancel()
    await asyncio.gather(*crowd.floor_tasks, return_exceptions=True)


async def warm_up(
    client: httpx.AsyncClient,
    bare: httpx.AsyncClient,
    model: httpx.AsyncClient,
    headers: list[dict[str, str]],
    streams: int,
) -> None:
    """`streams` answers and as many floor streams opened once and let go, before anything is
    measured: what a process keeps after its first crowd (its database pools grown to their
    limit, their threads and page caches) is not what one more open stream costs. Both processes
    get the same, and WARM_UP is a small part of the streams measured, since each keeps the heap
    its first streams freed for the next."""
    await let_go(await open_crowd(client, bare, headers, streams), model)


async def measure_open(
    service: Any,
    model_url: str,
    floor: tuple[str, int],
    streams: int,
    readers: int,
    backend: str,
    opening: int | None,
) -> list[Figure]:
    figures: list[Figure] = []
    headers = [service.headers(f"org_bench_{uuid.uuid4().hex[:8]}") for _ in range(ORGS)]
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    timeout = httpx.Timeout(600)
    floor_url, floor_pid = floor
    async with (
        httpx.AsyncClient(base_url=service.url, timeout=timeout, limits=limits) as client,
        httpx.AsyncClient(base_url=floor_url, timeout=timeout, limits=limits) as bare,
        httpx.AsyncClient(base_url=model_url, timeout=timeout) as model,
    ):
        for each in headers:  # warm-up: each organization has a document and an answer
            await ingest(client, each, 1)
            await Reading().read(
                client, "POST", "/v1/chat/messages", None, json=ask_body(), headers=each
            )
        await model.post("/hold")
        await warm_up(client, bare, model, headers, min(streams, WARM_UP))
        await model.post("/hold")
        await asyncio.sleep(2)
        quiet = cpu_seconds(service.pid)
        await asyncio.sleep(5)
        quiet = (cpu_seconds(service.pid) - quiet) * 20  # % of a core with nothing open
        before, floor_before = rss_mb(service.pid), rss_mb(floor_pid)

        # 1. memory: the service's and the floor's streams opened alternately.
        opened = time.perf_counter()
        held = await open_crowd(client, bare, headers, streams, opening)
        answers = held.answers
        open_seconds = time.perf_counter() - opened
        await asyncio.sleep(2)
        after, floor_after = rss_mb(service.pid), rss_mb(floor_pid)
        refused = Counter(a.status for a in answers if a.status != 200)
        per_stream = (after - before) * 1024 / streams
        floor_per_stream = (floor_after - floor_before) * 1024 / streams
        figures.append(
            Figure(
                "open streams: memory",
                backend,
                f"KB per open chat answer ({streams:,} at once) / per bare sse-starlette stream",
                per_stream / floor_per_stream,
                MEMORY_TARGET,
                detail=f"{per_stream:.0f} KB vs {floor_per_stream:.0f} KB per stream; all "
                f"{streams:,} of each open in {open_seconds:.1f} s; refused: {dict(refused) or 0}",
            )
        )

        # 2. idle CPU, both processes in the same 10 s.
        profiler = os.environ.get("BENCH_PROFILE_IDLE")  # e.g. "py-spy record --gil -d 10 -o F -p"
        if profiler:  # what the service does while idle (the profiler's own cost shows in the CPU)
            profiling = await asyncio.create_subprocess_exec(*profiler.split(), str(service.pid))
        samples, floor_samples = [], []
        for _ in range(10):
            cpu, floor_cpu = cpu_seconds(service.pid), cpu_seconds(floor_pid)
            await asyncio.sleep(1)
            samples.append((cpu_seconds(service.pid) - cpu) * 100)
            floor_samples.append((cpu_seconds(floor_pid) - floor_cpu) * 100)
        idle = statistics.mean(samples)
        if profiler:
            await profiling.wait()
        figures.append(
            Figure(
                "open streams: idle CPU",
                backend,
                f"% of one core over 10 s, {streams:,} chat answers open",
                idle,
                IDLE_CPU_TARGET,
                spread=[min(samples), max(samples)],
                detail=f"the floor with as many: {statistics.mean(floor_samples):.2f}%; the "
                f"service with nothing open: {quiet:.1f}%",
            )
        )

        # One more reader of each answer: what a stream costs beside the answer it reads.
        message_ids = [a.frames[0][0].rsplit(":", 1)[0] for a in answers if a.frames]
        extra = [Reading() for _ in message_ids]
        extra_tasks = [
            asyncio.create_task(
                reading.read(
                    client,
                    "GET",
                    f"/v1/chat/messages/{message_id}/events",
                    None,
                    headers=headers[n % ORGS],
                )
            )
            for n, (reading, message_id) in enumerate(zip(extra, message_ids, strict=True))
        ]
        await all_first(extra, extra_tasks)
        await asyncio.sleep(2)
        per_reader = (rss_mb(service.pid) - after) * 1024 / max(1, len(extra))
        figures[0].detail += f"; one more reader of each answer: {per_reader:.0f} KB each"

        await let_go(held, model)
        await asyncio.gather(*extra_tasks, return_exceptions=True)
        ended = Counter(
            a.frames[-1][1] if a.frames else "nothing" for a in answers if a.status == 200
        )
        figures[0].detail += f"; the answers' last events: {dict(ended)}"

        # 3. readers of one answer in flight.
        await model.post("/hold")
        asked = Reading()
        asking = asyncio.create_task(
            asked.read(
                client,
                "POST",
                "/v1/chat/messages",
                "message_delta",
                json=ask_body(),
                headers=headers[0],
            )
        )
        await asked.first.wait()
        message_id = asked.frames[0][0].rsplit(":", 1)[0]
        crowd = [Reading() for _ in range(readers)]
        crowd_tasks = [
            asyncio.create_task(
                r.read(
                    client,
                    "GET",
                    f"/v1/chat/messages/{message_id}/events",
                    None,
                    headers=headers[0],
                )
            )
            for r in crowd
        ]
        await all_first(crowd, crowd_tasks)
        released = time.perf_counter()
        await model.post("/release")
        results = await asyncio.gather(*crowd_tasks, return_exceptions=True)
        took = time.perf_counter() - released
        await asyncio.gather(asking, return_exceptions=True)
        whole = await Reading().read(
            client, "GET", f"/v1/chat/messages/{message_id}/events", None, headers=headers[0]
        )
        served = sum(
            1
            for r in results
            if isinstance(r, Reading)
            and r.frames == whole.frames
            and whole.frames[-1][1] == "message_end"
        )
        figures.append(
            Figure(
                "readers of one answer",
                backend,
                f"readers of one answer in flight served every event in order (of {readers})",
                served,
                readers,
                detail=f"all ended {took:.2f} s after the model went on",
                lower_is_better=False,
            )
        )
    return figures


async def first_tokens(service: Any, floor_url: str, questions: int, backend: str) -> Figure:
    headers = service.headers(f"org_bench_{uuid.uuid4().hex[:8]}")
    async with (
        httpx.AsyncClient(base_url=service.url, timeout=httpx.Timeout(120)) as client,
        httpx.AsyncClient(base_url=floor_url, timeout=httpx.Timeout(120)) as bare,
    ):
        await ingest(client, headers, 1)
        await Reading().read(
            client, "POST", "/v1/chat/messages", None, json=ask_body(), headers=headers
        )
        ours, floors = [], []
        for _ in range(questions):
            answer = await Reading().read(
                client,
                "POST",
                "/v1/chat/messages",
                "message_delta",
                json=ask_body(),
                headers=headers,
            )
            ours.append(answer.first_after or float("nan"))
            reading = Reading()
            task = asyncio.create_task(reading.read(bare, "GET", "/events", None))
            await reading.first.wait()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            floors.append(reading.first_after or float("nan"))
    ratios = [a / b for a, b in zip(ours, floors, strict=True)]
    return Figure(
        "first token",
        backend,
        "first message_delta of one answer (offline model) / the bare stream's first event",
        statistics.median(ours) / statistics.median(floors),
        FIRST_TOKEN_TARGET,
        spread=[min(ratios), max(ratios)],
        detail=f"median {statistics.median(ours) * 1000:.1f} ms vs "
        f"{statistics.median(floors) * 1000:.1f} ms, {questions} of each in turn",
    )


def scale(
    *,
    streams: int = 1000,
    readers: int = 200,
    questions: int = 10,
    database_url: str | None = None,
    redis_url: str | None = None,
    opening: int | None = OPENING,
    first_token_only: bool = False,
) -> list[Figure]:
    """The figures above, on a fresh data directory (and database, when one is given); only
    the first token's with `first_token_only`."""
    backend = "PostgreSQL" if database_url else "SQLite"
    settings: dict[str, str] = {}
    if database_url:
        settings["database_url"] = database_url
    if redis_url:
        backend += "+Redis"
        settings["redis_url"] = redis_url
        settings["redis_prefix"] = f"bench-streams-{uuid.uuid4().hex[:8]}:"
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp:
        root = Path(tmp)
        with floor_server() as floor, small_server(HOLDING_MODEL) as (model_url, _):
            figures: list[Figure] = []
            if not first_token_only:
                (root / "held").mkdir()
                with running_service(
                    root / "held",
                    llm_provider="openai",
                    llm_base_url=f"{model_url}/v1",
                    llm_api_key="bench",
                    llm_model="holding-model",
                    **settings,
                ) as service:
                    figures = asyncio.run(
                        measure_open(service, model_url, floor, streams, readers, backend, opening)
                    )
            (root / "offline").mkdir()
            with running_service(root / "offline", llm_provider="offline", **settings) as service:
                figures.append(asyncio.run(first_tokens(service, floor[0], questions, backend)))
    return figures


def floor_server() -> Any:
    """bench/stream_floor.py in a process of its own: its URL and pid."""
    return small_server(
        "import runpy, sys; sys.argv = ['stream_floor', '--port', sys.argv[1]]; "
        f"runpy.run_path({str(HERE / 'stream_floor.py')!r}, run_name='__main__')"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument(
        "--opening",
        type=int,
        default=OPENING,
        help="streams of each kind being opened at a time (0: all at once)",
    )
    parser.add_argument("--readers", type=int, default=200)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    parser.add_argument(
        "--first-token-only", action="store_true", help="measure the first token alone (4.)"
    )
    args = parser.parse_args()
    figures = scale(
        streams=args.streams,
        opening=args.opening or None,
        readers=args.readers,
        questions=args.questions,
        database_url=args.database_url,
        redis_url=args.redis_url,
        first_token_only=args.first_token_only,
    )
    for figure in figures:
        summary = figure.summary()
        if args.json:
            print(json.dumps(summary))
            continue
        verdict = "met" if summary["met"] else "NOT met"
        print(
            f"{summary['name']} ({summary['backend']}): {summary['ratio']} "
            f"(target {'<=' if figure.lower_is_better else '>='} {summary['target']}, {verdict}); "
            f"{summary['measure']}; spread {summary['spread']}; {summary['detail']}; "
            f"load average {summary['load_average']}"
        )


if __name__ == "__main__":
    main()
