"""Chat over SSE: time to first token and tokens/s, and 500 streams open at once on one process.

    .venv/bin/python bench/chat.py [--questions 30] [--streams 500] [--tokens 40]
                                   [--token-interval 0.1] [--redis-url redis://127.0.0.1:6379/0]

Two legs, each beside its floor measured in the same run (these machines are shared and noisy,
so a bare figure means little; the ratio is the figure):

1. Latency (offline provider). Starts `contentplatform serve` on a free loopback port with a
   fresh data directory (SQLite, local storage, the offline extractive writer), ingests three
   handbooks through the HTTP API, warms up with one question, then asks `--questions` questions
   one after another, each in a new conversation, reading the answer's stream with httpx-sse.
   Time to first token: from sending `chat.message` to the first `message_delta`; tokens/s: the
   answer's output tokens over the time from its first delta to `message_end`. The floor is a bare
   sse-starlette route in a process of its own, streaming as many events as an answer has deltas,
   read by the same client: its time to first event and events/s.

2. Open streams. A second service whose model is an OpenAI-compatible stand-in (a process of its
   own) that streams `--tokens` tokens `--token-interval` seconds apart, so every answer stays open
   for seconds; `--streams` questions are sent at once and every stream is read to its end. The
   service's resident memory (VmRSS) is sampled every 100 ms; memory per stream is (peak - before)
   / streams. Prints whether every stream got exactly one terminal event, and which. The floor is
   the bare SSE route holding as many streams open at the same pace.

Prints figures; asserts nothing. With `--redis-url`, leg 2's service keeps its event log in Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from generate import ingest
from httpx_sse import aconnect_sse
from serving import dev_headers, free_port, service_env, serving

QUESTIONS = [
    "How often should volunteers water the raised beds?",
    "What goes into the compost bins?",
    "How do we keep the garden's accounts?",
    "Who may sign up for a plot?",
    "What should new volunteers bring on their first day?",
    "How are tools shared between members?",
]

# --- the floor and the slow model: small servers in processes of their own ---------------------

FLOOR_APP = """
import asyncio, sys
import uvicorn
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.routing import Route

async def events(request):
    count = int(request.query_params["count"])
    interval = float(request.query_params.get("interval", "0"))
    async def frames():
        for seq in range(1, count + 1):
            if interval:
                await asyncio.sleep(interval)
            yield ServerSentEvent(data='{"text":"word "}', event="message_delta", id=str(seq))
        yield ServerSentEvent(data="{}", event="message_end", id=str(count + 1))
    return EventSourceResponse(frames())

app = Starlette(routes=[Route("/events", events)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=2048)
"""

# An OpenAI-compatible chat-completions server that streams its answer slowly.
SLOW_MODEL = """
import asyncio, json, sys, time
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

TOKENS, INTERVAL = int(sys.argv[2]), float(sys.argv[3])

def chunk(delta, finish=None, usage=None):
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": "slow-model", "choices": [] if usage else
            [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\\n\\n"

async def completions(request):
    asked = await request.json()
    if not asked.get("stream"):
        return JSONResponse({"error": {"message": "stream only", "type": "invalid_request_error"}},
                            status_code=400)
    async def body():
        yield chunk({"role": "assistant", "content": ""})
        for n in range(TOKENS):
            await asyncio.sleep(INTERVAL)
            yield chunk({"content": f"word{n} "})
        yield chunk({}, finish="stop")
        yield chunk(None, usage={"prompt_tokens": 200, "completion_tokens": TOKENS,
                                 "total_tokens": 200 + TOKENS})
        yield "data: [DONE]\\n\\n"
    return StreamingResponse(body(), media_type="text/event-stream")

app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=2048)
"""


@contextmanager
def small_server(source: str, *args: str) -> Iterator[tuple[str, int]]:
    """`source` run as a process of its own on a free port: its base URL and pid."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", source, str(port), *args])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise SystemExit(f"the server {source.split()[1]!r} did not start") from None
            time.sleep(0.05)
    try:
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(10)


# --- the service --------------------------------------------------------------------------------


@dataclass
class Service:
    url: str
    env: dict[str, str]
    directory: Path
    pid: int

    def headers(self, org: str) -> dict[str, str]:
        return dev_headers(self.env, self.directory, org)


@contextmanager
def running_service(directory: Path, **settings: str) -> Iterator[Service]:
    env = service_env(directory, credits_monthly_grant="100000000", **settings)
    with serving(directory, env) as (url, pid):
        yield Service(url, env, directory, pid)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- reading streams ----------------------------------------------------------------------------


@dataclass
class Read:
    first: float | None = None  # seconds from the request to the first delta
    end: float | None = None  # seconds from the request to the terminal event
    deltas: int = 0
    output_tokens: int = 0
    terminals: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


async def read_stream(client: httpx.AsyncClient, method: str, url: str, **options: Any) -> Read:
    read = Read()
    started = time.perf_counter()
    async with aconnect_sse(client, method, url, **options) as source:
        if source.response.status_code != 200:
            body = await source.response.aread()
            raise SystemExit(f"{url}: {source.response.status_code} {body[:300]!r}")
        async for sse in source.aiter_sse():
            read.ids.append(sse.id)
            if sse.event == "message_delta":
                read.deltas += 1
                if read.first is None:
                    read.first = time.perf_counter() - started
            elif sse.event in ("message_end", "error"):
                read.terminals.append(sse.event)
                read.end = time.perf_counter() - started
                if sse.event == "message_end" and sse.data != "{}":
                    usage = json.loads(sse.data).get("usage") or {}
                    read.output_tokens = usage.get("output_tokens", 0)
    return read


def ask(client: httpx.AsyncClient, headers: dict[str, str], question: str) -> Any:
    body = {"query": question, "idempotencyKey": f"bench-{uuid.uuid4()}"}
    return read_stream(client, "POST", "/v1/chat/messages", json=body, headers=headers)


def tokens_per_second(read: Read) -> float:
    tokens = read.output_tokens or read.deltas
    spent = (read.end or 0) - (read.first or 0)
    return tokens / spent if spent > 0 else float("inf")


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- leg 1: latency -----------------------------------------------------------------------------


async def latency(service: Service, floor_url: str, questions: int) -> None:
    headers = service.headers(f"org_bench_{uuid.uuid4().hex[:8]}")
    timeout = httpx.Timeout(120)
    async with httpx.AsyncClient(base_url=service.url, timeout=timeout) as client:
        chunks = await ingest(client, headers, 3)
        await ask(client, headers, QUESTIONS[0])  # warm-up
        reads = [
            await ask(client, headers, QUESTIONS[n % len(QUESTIONS)]) for n in range(questions)
        ]
    deltas = round(statistics.mean(r.deltas for r in reads))
    async with httpx.AsyncClient(base_url=floor_url, timeout=timeout) as client:
        await read_stream(client, "GET", "/events", params={"count": deltas})
        floors = [
            await read_stream(client, "GET", "/events", params={"count": deltas})
            for _ in range(questions)
        ]
    first = [r.first or 0 for r in reads]
    floor_first = [r.first or 0 for r in floors]
    rate = [tokens_per_second(r) for r in reads]
    floor_rate = [tokens_per_second(r) for r in floors]
    ended = Counter(t for r in reads for t in r.terminals)
    print(f"leg 1: {questions} questions, one at a time, offline provider, {chunks} chunks indexed")
    mean_deltas = statistics.mean(r.deltas for r in reads)
    print(f"  deltas per answer: mean {mean_deltas:.0f}; ends: {dict(ended)}")
    print(
        f"  time to first token: p50 {statistics.median(first) * 1000:.1f} ms, "
        f"p95 {p(first, 0.95) * 1000:.1f} ms  | floor (bare SSE route, first event) p50 "
        f"{statistics.median(floor_first) * 1000:.1f} ms -> "
        f"{statistics.median(first) / statistics.median(floor_first):.1f}x"
    )
    print(
        f"  tokens/s per answer: p50 {statistics.median(rate):.0f}  | floor (bare SSE route, "
        f"events/s) p50 {statistics.median(floor_rate):.0f} -> "
        f"{statistics.median(rate) / statistics.median(floor_rate):.2f} of the floor"
    )
    whole = [r.end or 0 for r in reads]
    print(
        f"  whole answer: p50 {statistics.median(whole) * 1000:.1f} ms, "
        f"p95 {p(whole, 0.95) * 1000:.1f} ms"
    )


# --- leg 2: open streams ------------------------------------------------------------------------


async def sample_peak(pid: int, stop: asyncio.Event) -> float:
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.1)
    return peak


async def at_once(
    count: int, pid: int, open_one: Any, url: str
) -> tuple[list[Read | BaseException], float, float, float]:
    """`count` streams opened at once and read to their ends: the reads, RSS before and at peak
    (MB), and the seconds it took."""
    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(300), limits=limits) as client:
        before = rss_mb(pid)
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_peak(pid, stop))
        started = time.perf_counter()
        reads = await asyncio.gather(
            *(open_one(client, n) for n in range(count)), return_exceptions=True
        )
        took = time.perf_counter() - started
        stop.set()
        peak = await sampler
    return reads, before, peak, took


def summary(reads: list[Read | BaseException]) -> str:
    failed = [r for r in reads if isinstance(r, BaseException)]
    done = [r for r in reads if isinstance(r, Read)]
    exactly_one = sum(1 for r in done if len(r.terminals) == 1)
    ends = Counter(t for r in done for t in r.terminals)
    text = f"{exactly_one}/{len(reads)} streams got exactly one terminal event {dict(ends)}"
    if failed:
        text += f"; {len(failed)} failed, e.g. {failed[0]!r}"
    return text


async def open_streams(service: Service, floor: tuple[str, int], args: argparse.Namespace) -> None:
    orgs = [f"org_bench_{uuid.uuid4().hex[:8]}" for _ in range(10)]
    headers = [service.headers(org) for org in orgs]
    async with httpx.AsyncClient(base_url=service.url, timeout=httpx.Timeout(120)) as client:
        for each in headers:
            await ingest(client, each, 1)
            await ask(client, each, QUESTIONS[0])  # warm-up, and the tenant exists

    async def ask_one(client: httpx.AsyncClient, n: int) -> Read:
        return await ask(client, headers[n % len(headers)], QUESTIONS[n % len(QUESTIONS)])

    reads, before, peak, took = await at_once(args.streams, service.pid, ask_one, service.url)
    if any(isinstance(read, BaseException) for read in reads):
        log = (service.directory / "service.log").read_text(errors="replace")
        print(f"the service's log ends:\n{log[-6000:]}", file=sys.stderr)
    floor_url, floor_pid = floor

    async def floor_one(client: httpx.AsyncClient, n: int) -> Read:
        params = {"count": args.tokens, "interval": args.token_interval}
        return await read_stream(client, "GET", "/events", params=params)

    floor_reads, floor_before, floor_peak, floor_took = await at_once(
        args.streams, floor_pid, floor_one, floor_url
    )
    per_stream = (peak - before) * 1024 / args.streams
    floor_per_stream = (floor_peak - floor_before) * 1024 / args.streams
    backend = "Redis" if args.redis_url else "the database (SQLite)"
    print(
        f"leg 2: {args.streams} streams at once on one process, each {args.tokens} tokens "
        f"{args.token_interval} s apart (stand-in model), event log in {backend}"
    )
    print(f"  service: {summary(reads)}; all read in {took:.1f} s")
    print(
        f"  service memory: {before:.0f} MB before, {peak:.0f} MB at peak -> "
        f"{per_stream:.0f} KB per open stream"
    )
    print(f"  floor (bare SSE route): {summary(floor_reads)}; all read in {floor_took:.1f} s")
    print(
        f"  floor memory: {floor_before:.0f} MB before, {floor_peak:.0f} MB at peak -> "
        f"{floor_per_stream:.0f} KB per open stream; service/floor "
        f"{per_stream / max(floor_per_stream, 1):.1f}x"
    )
    firsts = [r.first for r in reads if isinstance(r, Read) and r.first is not None]
    if firsts:
        print(
            f"  time to first token under that load: p50 {statistics.median(firsts):.2f} s, "
            f"p95 {p(firsts, 0.95):.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--token-interval", type=float, default=0.1)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--leg", choices=["latency", "streams", "all"], default="all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
        root = Path(tmp)
        with small_server(FLOOR_APP) as floor:
            if args.leg in ("latency", "all"):
                (root / "one").mkdir()
                with running_service(root / "one", llm_provider="offline") as service:
                    asyncio.run(latency(service, floor[0], args.questions))
            if args.leg in ("streams", "all"):
                (root / "two").mkdir()
                model_args = (str(args.tokens), str(args.token_interval))
                with small_server(SLOW_MODEL, *model_args) as (model_url, _):
                    settings = {
                        "llm_provider": "openai",
                        "llm_base_url": f"{model_url}/v1",
                        "llm_api_key": "bench",
                        "llm_model": "slow-model",
                    }
                    if args.redis_url:
                        settings["redis_url"] = args.redis_url
                        settings["redis_prefix"] = f"bench-chat-{uuid.uuid4().hex[:8]}:"
                    with running_service(root / "two", **settings) as service:
                        asyncio.run(open_streams(service, floor, args))


if __name__ == "__main__":
    main()
