"""Ingestion throughput: text extraction alone (the floor) against extraction + chunking + indexing.

    .venv/bin/python bench/ingest.py [--per-type 20] [--pages 4] [--pipeline direct]

Builds a mixed corpus in a temporary directory (PDF via fpdf2, DOCX via python-docx, HTML and
Markdown; generated prose, headings, lists and tables; nothing downloaded), then measures

- floor: `parsing.extract_text` over every file, in this process;
- pipeline: what ingestion does per document, each in its own transaction against a fresh,
  migrated SQLite database: extract, `chunking.chunk_text`, `search.replace_document_chunks`;

and prints documents/s, MB/s of input, the pipeline's time split by stage, its ratio to the floor,
and search latency over the indexed corpus. Prints figures; asserts nothing.

A pipeline is an async function in PIPELINES taking the corpus and returning its timings; a
`service` pipeline (upload each file through the HTTP API, confirm it, wait for `ready`) slots in
beside `direct`.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path

import docx
from fpdf import FPDF

from contentplatform.config import Settings
from contentplatform.documents import chunking, parsing
from contentplatform.documents.models import Document
from contentplatform.kit import migrations
from contentplatform.kit.db import Database
from contentplatform.search import service as search
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
            blocks.append(parsing.markdown_table(table))
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


PIPELINES: dict[str, Callable[[list[Path], Settings], Coroutine[None, None, Timings]]] = {
    "direct": run_direct,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-type", type=int, default=20, help="documents of each type")
    parser.add_argument("--pages", type=int, default=4, help="about this many pages each")
    parser.add_argument("--pipeline", choices=sorted(PIPELINES), default="direct")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        files = build_corpus(corpus, args.per_type, args.pages)
        size_mb = sum(path.stat().st_size for path in files) / 1e6
        settings = Settings(_env_file=None, data_dir=Path(scratch) / "data")
        migrations.upgrade(settings)
        measure_floor(files[:8])  # warm-up: imports, caches
        floor = measure_floor(files)
        pipeline = asyncio.run(PIPELINES[args.pipeline](files, settings))
    count = len(files)
    print(
        f"corpus: {count} documents ({args.per_type} each of pdf, docx, html, md), {size_mb:.1f} MB"
    )
    for name, timings in [
        ("floor (extract only)", floor),
        (f"pipeline ({args.pipeline})", pipeline),
    ]:
        print(
            f"  {name}: {timings.elapsed:.2f} s, {count / timings.elapsed:,.1f} documents/s, "
            f"{size_mb / timings.elapsed:.2f} MB/s"
        )
    by_type = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in floor.stages.items())
    print(f"  floor by type: {by_type}")
    stages = ", ".join(
        f"{stage} {seconds:.2f} s" if "ms" not in stage else f"{stage} {seconds:.1f}"
        for stage, seconds in pipeline.stages.items()
    )
    print(f"  pipeline stages: {stages}")
    print(
        f"  chunks: {pipeline.chunks} ({pipeline.chunks / count:.1f} per document, "
        f"{settings.chunk_tokens} tokens max, {settings.chunk_overlap_tokens} overlap)"
    )
    print(f"  pipeline / floor: {pipeline.elapsed / floor.elapsed:.2f}x the time")


if __name__ == "__main__":
    main()
