"""Events fanned out to outbound webhook endpoints: how many per second, and how long from the
commit of a change to the first delivery attempt of its event.

    .venv/bin/python bench/events.py [--endpoints 100] [--events 100] [--paced 30]
                                     [--database-url postgresql://postgres@127.0.0.1:5432/test]
    .venv/bin/python bench/events.py --sqlite

Starts `contentplatform serve` on two fresh databases of the PostgreSQL server `--database-url`
names (ours and DBOS's, dropped at the end; `--sqlite`: the embedded default), and beside it, in
this process, a loopback receiver (a bare asyncio HTTP/1.1 server answering 204 to every POST,
recording when each `webhook-id` first arrived). One organization subscribes `--endpoints`
endpoints, each its own URL on the receiver, to `draft.created`.

- **floor**: this process posts as many signed-size bodies straight to the receiver with httpx
  (the client the service sends with), as many at once as the service's delivery queue runs:
  what the receiver and the loopback take without the service.
- **paced**: `--paced` drafts created one at a time, 200 ms apart; for each event, the delay from
  the moment its `drafts.createDraft` answered (its transaction committed just before) to each
  endpoint's first attempt: p50 and p99 over every (event, endpoint), and of the first endpoint
  reached per event.
- **burst**: `--events` drafts created 10 at a time as fast as the service takes them; events
  fanned out per second (each to every endpoint) from the first answer to the last delivery, and
  deliveries per second beside the floor's posts per second, as a ratio.

Prints figures only; asserts nothing timed. Exits 1 when a delivery is missing or arrives twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.serving import dev_headers, free_port, service_env, serving
from tests.support.backends import postgres_databases

SUBSCRIBED = "draft.created"


@dataclass
class Receiver:
    """Every POST answered 204; the first arrival of each (webhook-id, path) kept."""

    port: int = field(default_factory=free_port)
    # (webhook-id, path) -> (the draft the event is about, first arrival)
    first: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    repeats: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, webhook_id: str, path: str, body: bytes) -> None:
        now = time.perf_counter()
        subject = webhook_id
        if not webhook_id.startswith("floor_"):
            subject = str(json.loads(body)["data"].get("draft_id", webhook_id))
        with self.lock:
            if (webhook_id, path) in self.first:
                self.repeats += 1
            else:
                self.first[(webhook_id, path)] = (subject, now)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if "webhook-id" in headers:
                    self.record(headers["webhook-id"], path, body)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @contextmanager
    def running(self) -> Iterator[None]:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        serving: list[asyncio.Task[None]] = []

        async def serve() -> None:
            server = await asyncio.start_server(self.handle, "127.0.0.1", self.port, backlog=512)
            serving.append(asyncio.current_task())  # type: ignore[arg-type]
            started.set()
            async with server:
                await server.serve_forever()

        def run() -> None:
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(serve())

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        started.wait(10)
        try:
            yield
        finally:
            loop.call_soon_threadsafe(serving[0].cancel)
            thread.join(10)

    def arrivals(self) -> dict[str, list[float]]:
        """Per event (the draft it is about), the first arrival at each endpoint."""
        by_event: dict[str, list[float]] = defaultdict(list)
        with self.lock:
            for subject, at in self.first.values():
                by_event[subject].append(at)
        return by_event


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def floor(receiver: Receiver, requests: int, concurrency: int) -> float:
    """Posts per second straight to the receiver, `concurrency` at a time."""
    body = json.dumps({"type": SUBSCRIBED, "timestamp": "", "data": {"x": "y" * 600}})
    url = f"http://127.0.0.1:{receiver.port}/floor"
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(requests):
        queue.put_nowait(n)
    async with httpx.AsyncClient(timeout=15) as client:

        async def worker() -> None:
            while not queue.empty():
                n = queue.get_nowait()
                await client.post(url, content=body, headers={"webhook-id": f"floor_{n}"})

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return requests / (time.perf_counter() - started)


async def create_draft(client: httpx.AsyncClient, headers: dict[str, str], n: int) -> float:
    answer = await client.post(
        "/v1/drafts",
        json={"title": f"Bench draft {n}", "content": f"<p>Draft {n}.</p>"},
        headers=headers,
    )
    answer.raise_for_status()
    return time.perf_counter()


def wait_for(receiver: Receiver, expected: int, seconds: float) -> float:
    deadline = time.perf_counter() + seconds
    while True:
        with receiver.lock:
            arrived = sum(1 for key in receiver.first if not key[0].startswith("floor_"))
        if arrived >= expected or time.perf_counter() > deadline:
            return time.perf_counter()
        time.sleep(0.01)


def event_ids_since(receiver: Receiver, known: set[str]) -> set[str]:
    return {
        webhook_id for webhook_id in receiver.arrivals() if not webhook_id.startswith("floor_")
    } - known


async def run(
    args: argparse.Namespace, url: str, headers: dict[str, str], receiver: Receiver
) -> int:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for n in range(args.endpoints):
            created = await client.post(
                "/v1/webhooks/endpoints",
                json={
                    "url": f"http://127.0.0.1:{receiver.port}/ep/{n}",
                    "events": [SUBSCRIBED],
                    "description": f"bench endpoint {n}",
                },
                headers=headers,
            )
            created.raise_for_status()

        posts_per_second = await floor(receiver, 2000, args.concurrency)

        # Paced: one event at a time, its delay from commit to each endpoint's first attempt.
        known: set[str] = set()
        delays: list[float] = []
        firsts: list[float] = []
        for n in range(args.paced):
            committed = await create_draft(client, headers, n)
            wait_for(receiver, (len(known) + 1) * args.endpoints, 60)
            new = event_ids_since(receiver, known)
            for webhook_id in new:
                arrivals = receiver.arrivals()[webhook_id]
                delays += [at - committed for at in arrivals]
                firsts.append(min(arrivals) - committed)
            known |= new
            await asyncio.sleep(0.2)

        # Burst: events as fast as the service takes them, 10 requests in flight.
        before = len(known)
        started = time.perf_counter()
        pending = iter(range(args.paced, args.paced + args.events))

        async def creator() -> None:
            for n in pending:
                await create_draft(client, headers, n)

        await asyncio.gather(*(creator() for _ in range(10)))
        answered = time.perf_counter()
        expected = (before + args.events) * args.endpoints
        ended = wait_for(receiver, expected, 600)

    arrived = sum(
        len(at)
        for webhook_id, at in receiver.arrivals().items()
        if not webhook_id.startswith("floor_")
    )
    burst_seconds = ended - started
    deliveries = args.events * args.endpoints
    ms = [d * 1000 for d in delays]
    first_ms = [d * 1000 for d in firsts]
    print(f"endpoints {args.endpoints}, subscribed to {SUBSCRIBED}")
    print(
        f"floor: {posts_per_second:,.0f} posts/s straight to the receiver "
        f"({args.concurrency} at once)"
    )
    if ms:
        print(
            f"paced ({args.paced} events): commit -> attempt at an endpoint "
            f"p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms; "
            "at the first endpoint p50 "
            f"{percentile(first_ms, 0.5):.0f} ms, p99 {percentile(first_ms, 0.99):.0f} ms"
        )
    print(
        f"burst ({args.events} events, created in {answered - started:.1f} s): "
        f"{args.events / burst_seconds:,.1f} events fanned out/s, "
        f"{deliveries / burst_seconds:,.0f} deliveries/s = "
        f"{deliveries / burst_seconds / posts_per_second:.2f}x the floor's posts/s"
    )
    missing = (args.paced + args.events) * args.endpoints - arrived
    print(f"deliveries: {arrived:,} arrived, {missing:,} missing, {receiver.repeats:,} repeated")
    if statistics.fmean(ms or [0]) < 0:
        print("note: a delay below zero means an attempt arrived before the answer left")
    return 1 if missing or receiver.repeats else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--paced", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=16, help="the floor's posts at once")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--sqlite", action="store_true")
    args = parser.parse_args()
    receiver = Receiver()
    with tempfile.TemporaryDirectory() as scratch, receiver.running():
        directory = Path(scratch)
        settings = {
            "outbound_allow_http": "true",
            "outbound_allow_loopback": "true",
            "credits_monthly_grant": "1000000",
        }
        if args.sqlite:
            env = service_env(directory, **settings)
            sys.exit(serve_and_run(args, directory, env, receiver))
        with postgres_databases(args.database_url, f"cp_bench_{uuid.uuid4().hex[:10]}") as urls:
            env = service_env(
                directory, database_url=urls[0], dbos_database_url=urls[1], **settings
            )
            sys.exit(serve_and_run(args, directory, env, receiver))


def serve_and_run(
    args: argparse.Namespace, directory: Path, env: dict[str, str], receiver: Receiver
) -> int:
    with serving(directory, env) as (url, _):
        headers = dev_headers(env, directory, f"org_bench_{uuid.uuid4().hex[:8]}", role="admin")
        return asyncio.run(run(args, url, headers, receiver))


if __name__ == "__main__":
    main()
