"""Ingestion throughput: text extraction alone (the floor) against the whole ingestion pipeline.

    .venv/bin/python bench/ingest.py [--per-type 20] [--pages 4] [--pipeline direct|service|all]
    .venv/bin/python bench/ingest.py --through-service [--concurrency 4]

Builds a mixed corpus in a temporary directory (PDF via fpdf2, DOCX via python-docx, HTML and
Markdown; generated prose, headings, lists and tables; nothing downloaded), then measures

- floor: `parsing.extract_text` over every file, in this process;
- pipeline `direct`: what ingestion does per document, each in its own transaction against a
  fresh, migrated SQLite database: extract, `chunking.chunk_text`,
  `search.replace_document_chunks` (no HTTP, storage or DBOS);
- pipeline `service` (`--through-service`): the real thing. Starts `contentplatform serve` on a
  free loopback port with a fresh data directory (SQLite, local storage), uploads every file
  through the HTTP API (createUploadUrl -> PUT -> confirmUpload, `--concurrency` uploads in
  flight at once) and waits until every document is `ready` (polling `documents.getStats`);
  timed from the first upload to the last `ready`, after a warm-up of one file of each type;

and prints documents/s, MB/s of input, each pipeline's ratio to the floor, the time split by
stage (direct) or the service's CPU time and upload and ingest latencies (service), and search
latency over the indexed corpus (direct). Prints figures; asserts nothing.

A pipeline is a function in PIPELINES taking the corpus, the settings and the options and
returning its timings.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import docx
import httpx
from fpdf import FPDF
from serving import free_port, service_env, supervised

from contentplatform.config import Settings
from contentplatform.documents import chunking, extraction, parsing
from contentplatform.documents import index as search
from contentplatform.documents.models import Document
from contentplatform.kit import migrations
from contentplatform.kit.db import Database
from contentplatform.tenants import repository as tenants

# --- corpus -------------------------------------------------------------------------------------

TOPICS = {
    "onboarding": (
        ["new hires", "the people team", "each manager", "a buddy", "the first week"],
        ["plans", "reviews", "shortens", "documents", "explains"],
        ["the laptop setup", "access to every tool", "the thirty-day goals", "team rituals"],
    ),
    "retention": (
        ["loyal customers", "the success team", "a renewal", "churn", "the quarterly survey"],
        ["predicts", "improves", "depends on", "reveals", "lowers"],
        ["the net revenue", "support response times", "product adoption", "the price change"],
    ),
    "logistics": (
        ["the warehouse", "each carrier", "late shipments", "the forecast", "inventory"],
        ["delays", "balances", "tracks", "reduces", "schedules"],
        ["the holiday peak", "returns processing", "safety stock", "last-mile delivery"],
    ),
    "gardening": (
        ["compost", "the raised bed", "tomato seedlings", "mulch", "a drip line"],
        ["feeds", "protects", "needs", "warms", "saves"],
        ["the soil structure", "water in July", "roots from frost", "the spring harvest"],
    ),
}
QUALIFIERS = [
    "in most cases",
    "according to last year's numbers",
    "when nobody is watching closely",
    "for a fraction of the usual cost",
    "as the pilot program showed",
    "",
]


def sentence(rng: random.Random, topic: str) -> str:
    subjects, verbs, objects = TOPICS[topic]
    words = [rng.choice(subjects), rng.choice(verbs), rng.choice(objects), rng.choice(QUALIFIERS)]
    text = " ".join(word for word in words if word)
    return text[0].upper() + text[1:] + "."


def paragraph(rng: random.Random, topic: str) -> str:
    return " ".join(sentence(rng, topic) for _ in range(rng.randint(4, 9)))


def table_rows(rng: random.Random, topic: str) -> list[list[str]]:
    _, _, objects = TOPICS[topic]
    header = ["Item", "Owner", "Quarter", "Budget"]
    owners = ["Ana", "Ben", "Chen", "Dara", "Eli"]
    rows = [
        [
            rng.choice(objects),
            rng.choice(owners),
            f"Q{rng.randint(1, 4)}",
            f"${rng.randint(1, 90)}k",
        ]
        for _ in range(rng.randint(4, 10))
    ]
    return [header, *rows]


@dataclass
class Outline:
    """One document's content, rendered into each format."""

    title: str
    sections: list[tuple[str, list[str], list[list[str]] | None]]


def outline(rng: random.Random, sections: int) -> Outline:
    topic = rng.choice(sorted(TOPICS))
    parts = []
    for n in range(sections):
        paragraphs = [paragraph(rng, topic) for _ in range(rng.randint(2, 5))]
        table = table_rows(rng, topic) if rng.random() < 0.4 else None
        parts.append((f"{topic.title()} part {n + 1}", paragraphs, table))
    return Outline(f"{topic.title()} handbook {rng.randint(100, 999)}", parts)


def to_pdf(doc: Outline) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", "B", 18)
    pdf.multi_cell(0, 10, doc.title, new_x="LMARGIN", new_y="NEXT")
    for heading, paragraphs, table in doc.sections:
        pdf.set_font("helvetica", "B", 14)
        pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=11)
        for text in paragraphs:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
        if table:
            with pdf.table() as grid:
                for row in table:
                    cells = grid.row()
                    for value in row:
                        cells.cell(value)
    return bytes(pdf.output())


def to_docx(doc: Outline) -> bytes:
    document = docx.Document()
    document.add_heading(doc.title, 0)
    for heading, paragraphs, table in doc.sections:
        document.add_heading(heading, 1)
        for text in paragraphs:
            document.add_paragraph(text)
        if table:
            grid = document.add_table(rows=len(table), cols=len(table[0]))
            for r, row in enumerate(table):
                for c, value in enumerate(row):
                    grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def to_html(doc: Outline) -> bytes:
    body = [f"<h1>{doc.title}</h1>"]
    for heading, paragraphs, table in doc.sections:
        body.append(f"<h2>{heading}</h2>")
        body += [f"<p>{text}</p>" for text in paragraphs]
        if table:
            rows = "".join(
                "<tr>" + "".join(f"<td>{value}</td>" for value in row) + "</tr>" for row in table
            )
            body.append(f"<table>{rows}</table>")
    return (
        (
            "<!doctype html><html><head><meta charset='utf-8'><title>{}</title>"
            "<style>body {{ font: 16px sans-serif }}</style><script>var analytics = 1;</script>"
            "</head><body><header><a href='/'>Home</a></header><nav><ul><li>Docs</li><li>Blog</li>"
            "</ul></nav><main><article>{}</article></main><aside>Subscribe!</aside>"
            "<footer>(c) Example</footer></body></html>"
        )
        .format(doc.title, "\n".join(body))
        .encode()
    )


def to_markdown(doc: Outline) -> bytes:
    blocks = [f"# {doc.title}"]
    for heading, paragraphs, table in doc.sections:
        blocks.append(f"## {heading}")
        blocks += paragraphs
        if table:
            blocks.append(extraction.markdown_table(table))
    return "\n\n".join(blocks).encode()


def build_corpus(directory: Path, per_type: int, pages: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    renderers = {"pdf": to_pdf, "docx": to_docx, "html": to_html, "md": to_markdown}
    files = []
    for n in range(per_type):
        for extension, render in renderers.items():
            # Roughly `pages` printed pages: about two sections per page.
            path = directory / f"doc{n:03}.{extension}"
            path.write_bytes(render(outline(rng, sections=2 * pages)))
            files.append(path)
    return files


# --- measurements -------------------------------------------------------------------------------


@dataclass
class Timings:
    elapsed: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    chunks: int = 0

    def add(self, stage: str, seconds: float) -> None:
        self.stages[stage] = self.stages.get(stage, 0.0) + seconds


def measure_floor(files: list[Path]) -> Timings:
    timings = Timings()
    started = time.perf_counter()
    for path in files:
        t0 = time.perf_counter()
        parsing.extract_text(path.read_bytes(), path.suffix)
        timings.add(path.suffix.lstrip("."), time.perf_counter() - t0)
    timings.elapsed = time.perf_counter() - started
    return timings


async def run_direct(files: list[Path], settings: Settings) -> Timings:
    """What the ingest workflow does per document, minus storage and DBOS: each document in its
    own transaction, extraction and chunking on the event loop's thread (no thread hop)."""
    db = Database(settings.resolved_database_url)
    timings = Timings()
    try:
        async with db.unit_of_work() as session:
            tenant_id = (await tenants.ensure_tenant(session, "bench", "bench")).id
        started = time.perf_counter()
        for path in files:
            t0 = time.perf_counter()
            text = parsing.extract_text(path.read_bytes(), path.suffix)
            t1 = time.perf_counter()
            chunks = chunking.chunk_text(
                text, max_tokens=settings.chunk_tokens, overlap_tokens=settings.chunk_overlap_tokens
            )
            t2 = time.perf_counter()
            async with db.unit_of_work() as session:
                document = Document(
                    id=uuid.uuid4(),
                    tenant_id=tenant_id,
                    filename=path.name,
                    file_type=path.suffix.lstrip("."),
                    storage_path=f"bench/{path.name}",
                    status="ready",
                )
                session.add(document)
                await session.flush()
                document.chunk_count = await search.replace_document_chunks(
                    session, tenant_id, document.id, chunks
                )
            t3 = time.perf_counter()
            timings.add("extract", t1 - t0)
            timings.add("chunk", t2 - t1)
            timings.add("index", t3 - t2)
            timings.chunks += len(chunks)
        timings.elapsed = time.perf_counter() - started
        timings.stages["search p50 ms"], timings.stages["search p95 ms"] = await search_latency(
            db, tenant_id
        )
    finally:
        await db.dispose()
    return timings


async def search_latency(db: Database, tenant_id: uuid.UUID) -> tuple[float, float]:
    rng = random.Random(3)
    queries = [
        " ".join(rng.choice(objects).split()[-1] for _ in range(3))
        for _, _, objects in TOPICS.values()
        for _ in range(25)
    ]
    latencies = []
    for query in queries:
        started = time.perf_counter()
        async with db.unit_of_work() as session:
            await search.search_chunks(session, tenant_id, query)
        latencies.append(time.perf_counter() - started)
    quantiles = statistics.quantiles(latencies, n=100)
    return quantiles[49] * 1000, quantiles[94] * 1000


# --- through the service -----------------------------------------------------------------------

BIN = Path(sys.executable).parent
FILE_TYPES = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".md": "md"}
SERVICE_TIMEOUT = 600.0  # for the whole corpus to be ingested


@dataclass
class Options:
    concurrency: int = 4


@dataclass
class Service:
    url: str
    env: dict[str, str]
    log: Path
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time the service and its child processes (ingestion workers) have used so far
        (Linux: /proc); a figure the other loads of a shared machine barely move."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in [self.pid, *_children(self.pid)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        return total

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def token(self, org: str) -> dict[str, str]:
        token = subprocess.run(
            [
                BIN / "contentplatform",
                "dev-token",
                "--org",
                org,
                "--user",
                "bench",
                "--role=editor",
            ],
            env=self.env,
            cwd=self.log.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {"Authorization": f"Bearer {token}", "x-idp-org-id": org}


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in task.read_text().split()]
    return found


@contextmanager
def running_service(directory: Path) -> Iterator[Service]:
    """`contentplatform serve` on a free loopback port with a fresh data directory (SQLite)."""
    port = free_port()
    env = service_env(directory)
    log = directory / "service.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [BIN / "contentplatform", "serve", "--port", str(port)],
            env=env,
            cwd=directory,  # no stray .env file
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    service = Service(f"http://127.0.0.1:{port}", env, log, process.pid)
    with supervised(process, service.url, service.tail):
        yield service


async def upload(
    client: httpx.AsyncClient, headers: dict[str, str], path: Path, content: bytes
) -> dict[str, float]:
    """createUploadUrl -> PUT -> confirmUpload; how long each took."""
    file_type = FILE_TYPES[path.suffix]
    took: dict[str, float] = {}
    started = time.perf_counter()
    target = await client.post(
        "/v1/documents/upload-url",
        json={"filename": path.name, "fileType": file_type, "contentLength": len(content)},
        headers=headers,
    )
    target.raise_for_status()
    where = target.json()
    took["createUploadUrl"], started = time.perf_counter() - started, time.perf_counter()
    put = await client.put(where["upload_url"], content=content, headers=where["headers"])
    put.raise_for_status()
    took["PUT"], started = time.perf_counter() - started, time.perf_counter()
    confirmed = await client.post(
        "/v1/documents/confirm-upload",
        json={"filename": path.name, "fileType": file_type, "storagePath": where["storage_path"]},
        headers=headers,
    )
    confirmed.raise_for_status()
    took["confirmUpload"] = time.perf_counter() - started
    if confirmed.json()["unchanged"]:
        raise SystemExit(f"{path.name} duplicates another file of the corpus")
    return took


async def upload_all(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    files: dict[Path, bytes],
    concurrency: int,
) -> list[dict[str, float]]:
    """Upload every file, `concurrency` at once; how long each request of each upload took."""
    gate = asyncio.Semaphore(concurrency)
    timings: list[dict[str, float]] = []

    async def one(path: Path, content: bytes) -> None:
        async with gate:
            timings.append(await upload(client, headers, path, content))

    await asyncio.gather(*(one(path, content) for path, content in files.items()))
    return timings


async def wait_ready(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, service: Service
) -> None:
    deadline = time.monotonic() + SERVICE_TIMEOUT
    while True:
        response = await client.get("/v1/documents/stats", headers=headers)
        response.raise_for_status()
        stats = response.json()
        if stats["error"]:
            failed = await client.get("/v1/documents", params={"status": "error"}, headers=headers)
            reasons = {d["filename"]: d["error"] for d in failed.json()["data"]}
            raise SystemExit(f"ingestion failed: {reasons}")
        if stats["ready"] >= count:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"not ready after {SERVICE_TIMEOUT:.0f} s: {stats}\n{service.tail()}")
        await asyncio.sleep(0.05)


async def all_documents(client: httpx.AsyncClient, headers: dict[str, str]) -> list[Any]:
    found: list[Any] = []
    while True:
        page = await client.get(
            "/v1/documents", params={"limit": 100, "offset": len(found)}, headers=headers
        )
        page.raise_for_status()
        data = page.json()["data"]
        found += data
        if len(data) < 100:
            return found


def percentiles_ms(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0] * 1000, values[0] * 1000
    quantiles = statistics.quantiles(values, n=100)
    return quantiles[49] * 1000, quantiles[94] * 1000


def run_service(files: list[Path], settings: Settings, options: Options) -> Timings:
    """Every file through the running service's HTTP API, until every document is ready."""
    directory = settings.data_dir.parent / "service"
    directory.mkdir()
    contents = {path: path.read_bytes() for path in files}
    warm_up = {
        path: contents[path]
        for path in (next(path for path in files if path.suffix == s) for s in FILE_TYPES)
    }
    with running_service(directory) as service:
        warm_up_headers = service.token("bench-warmup")
        headers = service.token("bench")
        return asyncio.run(
            measure_service(service, contents, warm_up, headers, warm_up_headers, options)
        )


async def measure_service(
    service: Service,
    files: dict[Path, bytes],
    warm_up: dict[Path, bytes],
    headers: dict[str, str],
    warm_up_headers: dict[str, str],
    options: Options,
) -> Timings:
    timings = Timings()
    limits = httpx.Limits(max_connections=options.concurrency + 2)
    async with httpx.AsyncClient(base_url=service.url, timeout=60, limits=limits) as client:
        # A tenant of its own: provisions it, and runs every code path once.
        await upload_all(client, warm_up_headers, warm_up, options.concurrency)
        await wait_ready(client, warm_up_headers, len(warm_up), service)

        started, cpu = time.perf_counter(), service.cpu_seconds()
        requests = await upload_all(client, headers, files, options.concurrency)
        timings.stages["uploads done"] = time.perf_counter() - started
        await wait_ready(client, headers, len(files), service)
        timings.elapsed = time.perf_counter() - started
        timings.stages["service CPU"] = service.cpu_seconds() - cpu

        documents = await all_documents(client, headers)
    timings.chunks = sum(document["chunk_count"] for document in documents)
    # From the confirm's commit to the workflow's last step, as the service recorded them.
    ingest = [
        (
            datetime.fromisoformat(document["updated_at"])
            - datetime.fromisoformat(document["created_at"])
        ).total_seconds()
        for document in documents
    ]
    for request in requests[0]:
        timings.stages[f"{request} p50 ms"] = percentiles_ms([r[request] for r in requests])[0]
    timings.stages["upload+confirm p50 ms"], timings.stages["upload+confirm p95 ms"] = (
        percentiles_ms([sum(r.values()) for r in requests])
    )
    timings.stages["confirm->ready p50 ms"], timings.stages["confirm->ready p95 ms"] = (
        percentiles_ms(ingest)
    )
    return timings


# --- main ---------------------------------------------------------------------------------------


def run_direct_pipeline(files: list[Path], settings: Settings, options: Options) -> Timings:
    return asyncio.run(run_direct(files, settings))


PIPELINES: dict[str, Callable[[list[Path], Settings, Options], Timings]] = {
    "direct": run_direct_pipeline,
    "service": run_service,
}


def show_stage(stage: str, value: float) -> str:
    if stage.endswith(" ms"):
        return f"{stage.removesuffix(' ms')} {value:.1f} ms"
    return f"{stage} {value:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-type", type=int, default=20, help="documents of each type")
    parser.add_argument("--pages", type=int, default=4, help="about this many pages each")
    parser.add_argument("--pipeline", choices=[*sorted(PIPELINES), "all"], default="direct")
    parser.add_argument(
        "--through-service",
        action="store_const",
        const="service",
        dest="pipeline",
        help="the same as --pipeline service: upload through a running service's HTTP API",
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="uploads in flight at once (service)"
    )
    args = parser.parse_args()
    chosen = sorted(PIPELINES) if args.pipeline == "all" else [args.pipeline]
    options = Options(concurrency=args.concurrency)
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        files = build_corpus(corpus, args.per_type, args.pages)
        size_mb = sum(path.stat().st_size for path in files) / 1e6
        settings = Settings(_env_file=None, data_dir=Path(scratch) / "data")
        migrations.upgrade(settings)
        measure_floor(files[:8])  # warm-up: imports, caches
        floor = measure_floor(files)
        results = {name: PIPELINES[name](files, settings, options) for name in chosen}
    count = len(files)
    print(
        f"corpus: {count} documents ({args.per_type} each of pdf, docx, html, md), {size_mb:.1f} MB"
    )
    for name, timings in [
        ("floor (extract only)", floor),
        *((f"pipeline ({name})", timings) for name, timings in results.items()),
    ]:
        print(
            f"  {name}: {timings.elapsed:.2f} s, {count / timings.elapsed:,.1f} documents/s, "
            f"{size_mb / timings.elapsed:.2f} MB/s"
        )
    by_type = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in floor.stages.items())
    print(f"  floor by type: {by_type}")
    for name, pipeline in results.items():
        stages = ", ".join(show_stage(stage, value) for stage, value in pipeline.stages.items())
        print(f"  {name}: {stages}")
        print(
            f"  {name} chunks: {pipeline.chunks} ({pipeline.chunks / count:.1f} per document, "
            f"{settings.chunk_tokens} tokens max, {settings.chunk_overlap_tokens} overlap)"
        )
    for name, pipeline in results.items():
        concurrency = f", {options.concurrency} uploads in flight" if name == "service" else ""
        print(
            f"  pipeline ({name}) / floor: {pipeline.elapsed / floor.elapsed:.2f}x the time"
            f"{concurrency}"
        )


if __name__ == "__main__":
    main()
