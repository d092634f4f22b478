"""Article generation throughput on the offline provider, and our overhead beside the model's time.

    .venv/bin/python bench/generate.py [--drafts 20] [--concurrency 4] [--documents 3]

Starts `contentplatform serve` on a free loopback port with a fresh data directory (SQLite, local
storage, the offline extractive writer), ingests `--documents` knowledge documents through the
HTTP API (createUploadUrl -> PUT -> confirmUpload), warms up with one article in another tenant,
then asks for `--drafts` articles with `generation.blog`, keeping `--concurrency` of them in
flight (a new one starts when one leaves `generating`), and waits until every draft is in
review. Prints drafts per minute and, per draft, the latency and how it splits between the
model and everything else (retrieval, prompts, DBOS checkpoints, progress and credit
transactions, assembling, sanitizing, scoring, the draft's revision). Prints figures; asserts
nothing.

How it measures:

- wall time: from the first `generation.blog` request to the poll that sees the last draft leave
  `generating` (one `drafts.list?status=generating` every 50 ms, so polling costs the service
  little);
- latency per draft: the run's own `created_at` -> `finished_at`, as the service recorded them
  (the request's commit to the finalize step's);
- time in the provider: measured inside the service process. The service is started through a
  small launcher (`LAUNCHER` below) that wraps the configured model in `Timed`, which times every
  `await model.complete(request)` with `perf_counter` and attributes it to the DBOS workflow
  making the call (`generation:<run id>`), then runs the ordinary `contentplatform serve`. The
  offline writer computes on the event loop without awaiting, so this is its compute time;
- outside the provider (our overhead) per draft: latency - time in the provider. At concurrency
  1 this is exact. Above it, drafts share one process, so a draft's latency also holds the time it
  waited while others were served; the service time per draft (wall time / drafts, split the same
  way) is then the fairer figure for what a draft costs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from dbos import DBOSClient
from serving import dev_headers, free_port, service_env, supervised

SERVICE_TIMEOUT = 600.0  # for all the drafts to be written
POLL_SECONDS = 0.05
TOPIC = "Running a community garden"
KEYWORDS = ["community garden", "volunteers"]

# Runs `contentplatform serve` with the model wrapped in a timer; argv: sink path, then serve's.
LAUNCHER = """
import sys, time
from dbos import DBOS
from contentplatform import cli
from contentplatform.core import runtime

sink = open(sys.argv[1], "a", buffering=1)


class Timed:
    def __init__(self, inner):
        self.inner, self.provider, self.model = inner, inner.provider, inner.model

    async def complete(self, request):
        started = time.perf_counter()
        try:
            return await self.inner.complete(request)
        finally:
            spent = time.perf_counter() - started
            sink.write(f"{DBOS.workflow_id}\\t{request.task}\\t{spent:.9f}\\n")

    def stream(self, request):
        return self.inner.stream(request)

    async def close(self):
        await self.inner.close()


from_settings = runtime.from_settings
runtime.from_settings = lambda settings: Timed(from_settings(settings))
sys.argv = ["contentplatform", *sys.argv[2:]]
cli.main()
"""

SUBJECTS = {
    "Choosing the site": [
        "A community garden needs at least six hours of direct sun on most days of the growing "
        "season.",
        "Test the soil for lead before the first planting, because old city lots often hide "
        "painted rubble.",
        "A water tap within fifty metres saves volunteers from carrying heavy cans across the "
        "site.",
        "Raised beds solve poor soil and let gardeners in wheelchairs reach every plant.",
    ],
    "Recruiting volunteers": [
        "Volunteers stay when every task has a clear owner and a short, friendly checklist.",
        "A monthly work day with food and music brings in neighbours who never gardened before.",
        "Pair each new volunteer with an experienced gardener for their first three visits.",
        "Post the watering rota by the gate so volunteers can swap shifts without a meeting.",
    ],
    "Sharing plots and tools": [
        "Plot agreements set out who waters, weeds and harvests, and what happens to abandoned "
        "beds.",
        "A shared tool shed with a sign-out sheet keeps spades and hoes from wandering home.",
        "Keep a few plots for the local school so children learn where food comes from.",
        "Surplus vegetables go to the food bank every Saturday morning during the harvest.",
    ],
    "Funding the garden": [
        "Small plot fees cover water and seeds, while local grants pay for fences and sheds.",
        "A plant sale in spring raises money and introduces the garden to the neighbourhood.",
        "Local businesses often donate compost, timber or tools in exchange for a thank-you sign.",
        "Keep a simple ledger of every expense so the committee can report to members each year.",
    ],
}


def document(number: int) -> bytes:
    """A handbook in Markdown: a section per subject, its sentences rotated per document."""
    blocks = [f"# Community garden handbook, part {number + 1}"]
    for heading, sentences in SUBJECTS.items():
        shift = number % len(sentences)
        rotated = sentences[shift:] + sentences[:shift]
        blocks.append(f"## {heading}")
        blocks.append(" ".join(rotated * 2))
    return "\n\n".join(blocks).encode()


# --- the service --------------------------------------------------------------------------------


@dataclass
class Service:
    url: str
    env: dict[str, str]
    directory: Path
    sink: Path

    @property
    def log(self) -> Path:
        return self.directory / "service.log"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def headers(self, org: str) -> dict[str, str]:
        return dev_headers(self.env, self.directory, org)

    def step_seconds(self, workflow_ids: list[str]) -> dict[str, list[tuple[str, float]]]:
        """Each workflow's steps as DBOS recorded them: (name, seconds), in order."""
        client = DBOSClient(system_database_url=f"sqlite:///{self.directory / 'data/dbos.sqlite'}")
        try:
            return {
                workflow_id: [
                    (
                        step["function_name"].removeprefix("generation."),
                        ((step["completed_at_epoch_ms"] or 0) - (step["started_at_epoch_ms"] or 0))
                        / 1000,
                    )
                    for step in client.list_workflow_steps(workflow_id, load_output=False)
                ]
                for workflow_id in workflow_ids
            }
        finally:
            client.destroy()

    def provider_seconds(self) -> dict[str, list[float]]:
        """Seconds spent in the model, per workflow: one entry per call."""
        spent: dict[str, list[float]] = defaultdict(list)
        for line in self.sink.read_text().splitlines():
            workflow, _, seconds = line.split("\t")
            spent[workflow].append(float(seconds))
        return spent


@contextmanager
def running_service(directory: Path) -> Iterator[Service]:
    """`contentplatform serve` (through LAUNCHER) on a free loopback port, fresh data directory."""
    port = free_port()
    env = service_env(directory, llm_provider="offline")
    service = Service(f"http://127.0.0.1:{port}", env, directory, directory / "provider.tsv")
    service.sink.touch()
    with service.log.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(service.sink), "serve", "--port", str(port)],
            env=env,
            cwd=directory,  # no stray .env file
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    with supervised(process, service.url, service.tail):
        yield service


# --- the client ---------------------------------------------------------------------------------


async def ingest(client: httpx.AsyncClient, headers: dict[str, str], count: int) -> int:
    """`count` handbooks through the upload flow, until every one is ready; their chunks."""
    for number in range(count):
        content = document(number)
        name = f"handbook-{number + 1}.md"
        target = await client.post(
            "/v1/documents/upload-url",
            json={"filename": name, "fileType": "md", "contentLength": len(content)},
            headers=headers,
        )
        target.raise_for_status()
        where = target.json()
        put = await client.put(where["upload_url"], content=content, headers=where["headers"])
        put.raise_for_status()
        confirmed = await client.post(
            "/v1/documents/confirm-upload",
            json={"filename": name, "fileType": "md", "storagePath": where["storage_path"]},
            headers=headers,
        )
        confirmed.raise_for_status()
    deadline = time.monotonic() + 120
    while True:
        stats = (await client.get("/v1/documents/stats", headers=headers)).json()
        if stats["error"]:
            raise SystemExit(f"ingestion failed: {stats}")
        if stats["ready"] >= count:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"documents not ready: {stats}")
        await asyncio.sleep(0.05)
    page = (await client.get("/v1/documents", headers=headers)).json()
    return sum(d["chunk_count"] for d in page["data"])


@dataclass
class Outcome:
    wall: float = 0.0
    runs: list[dict[str, Any]] = field(default_factory=list)


async def generate(
    client: httpx.AsyncClient, headers: dict[str, str], total: int, concurrency: int
) -> Outcome:
    """`total` articles, `concurrency` in flight at once, until none is generating."""
    outcome = Outcome()
    in_flight: dict[str, str] = {}  # draft id -> run id
    run_ids: list[str] = []
    started = time.perf_counter()
    deadline = time.monotonic() + SERVICE_TIMEOUT
    while len(run_ids) < total or in_flight:
        while len(run_ids) < total and len(in_flight) < concurrency:
            response = await client.post(
                "/v1/generation/blog",
                json={"topic": TOPIC, "keywords": KEYWORDS},
                headers=headers,
            )
            response.raise_for_status()
            draft = response.json()
            in_flight[draft["id"]] = draft["run"]["id"]
            run_ids.append(draft["run"]["id"])
        await asyncio.sleep(POLL_SECONDS)
        page = await client.get(
            "/v1/drafts", params={"status": "generating", "limit": 100}, headers=headers
        )
        page.raise_for_status()
        generating = {draft["id"] for draft in page.json()["data"]}
        for draft_id in [d for d in in_flight if d not in generating]:
            del in_flight[draft_id]
        if time.monotonic() > deadline:
            raise SystemExit(f"still generating after {SERVICE_TIMEOUT:.0f} s: {in_flight}")
    outcome.wall = time.perf_counter() - started
    for run_id in run_ids:
        run = (await client.get(f"/v1/generation/runs/{run_id}", headers=headers)).json()
        if run["status"] != "succeeded":
            raise SystemExit(f"run {run_id} ended {run['status']}: {run['error']}")
        outcome.runs.append(run)
    return outcome


async def measure(service: Service, args: argparse.Namespace) -> tuple[Outcome, int]:
    warm_up, headers = service.headers("bench-warmup"), service.headers("bench")
    async with httpx.AsyncClient(base_url=service.url, timeout=60) as client:
        # A tenant of its own: provisions it and runs every code path once.
        await ingest(client, warm_up, 1)
        await generate(client, warm_up, 1, 1)
        chunks = await ingest(client, headers, args.documents)
        return await generate(client, headers, args.drafts, args.concurrency), chunks


# --- figures ------------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94] if len(values) > 1 else values[0]


def seconds_between(run: dict[str, Any], start: str, end: str) -> float:
    return (datetime.fromisoformat(run[end]) - datetime.fromisoformat(run[start])).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--drafts", type=int, default=20, help="articles to generate")
    parser.add_argument("--concurrency", type=int, default=4, help="articles in flight at once")
    parser.add_argument("--documents", type=int, default=3, help="knowledge documents")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        with running_service(Path(scratch)) as service:
            outcome, chunks = asyncio.run(measure(service, args))
        spent = service.provider_seconds()
        steps = service.step_seconds([f"generation:{run['id']}" for run in outcome.runs])

    drafts = len(outcome.runs)
    latency = [seconds_between(run, "created_at", "finished_at") for run in outcome.runs]
    provider = [sum(spent[f"generation:{run['id']}"]) for run in outcome.runs]
    calls = [len(spent[f"generation:{run['id']}"]) for run in outcome.runs]
    outside = [total - model for total, model in zip(latency, provider, strict=True)]
    per_draft = outcome.wall / drafts
    print(
        f"generation.blog, offline provider: {drafts} drafts, concurrency {args.concurrency}, "
        f"{args.documents} knowledge documents ({chunks} chunks)"
    )
    print(f"  wall time: {outcome.wall:.2f} s, {drafts / outcome.wall * 60:,.1f} drafts/minute")
    print(
        f"  latency per draft (run created -> finished): mean {statistics.mean(latency) * 1000:.0f}"
        f" ms, p95 {p95(latency) * 1000:.0f} ms"
    )
    print(
        f"  in the provider per draft: mean {statistics.mean(provider) * 1000:.1f} ms "
        f"({statistics.mean(calls):.1f} calls)"
    )
    print(
        f"  outside the provider per draft (latency - provider): mean "
        f"{statistics.mean(outside) * 1000:.0f} ms, p95 {p95(outside) * 1000:.0f} ms"
    )
    print(
        f"  service time per draft (wall / drafts): {per_draft * 1000:.0f} ms, of which provider "
        f"{statistics.mean(provider) * 1000:.1f} ms, outside "
        f"{(per_draft - statistics.mean(provider)) * 1000:.0f} ms "
        f"({(1 - statistics.mean(provider) / per_draft) * 100:.0f}%)"
    )
    by_step: dict[str, list[float]] = defaultdict(list)
    for recorded in steps.values():
        for name, seconds in recorded:
            by_step[name].append(seconds)
    in_steps = [sum(seconds for _, seconds in recorded) for recorded in steps.values()]
    shown = ", ".join(
        f"{name} {statistics.mean(values) * 1000:.1f}"
        + (f" (x{len(values) / drafts:g})" if len(values) > drafts else "")
        for name, values in by_step.items()
    )
    print(f"  DBOS steps per draft, mean ms: {shown}")
    print(
        f"  outside the steps per draft (latency - steps): mean "
        f"{(statistics.mean(latency) - statistics.mean(in_steps)) * 1000:.0f} ms "
        "(the workflow's start after the request, its checkpoints, its own code)"
    )


if __name__ == "__main__":
    main()
