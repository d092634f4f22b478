"""Retrieval quality: recall@1, recall@5 and MRR of `chat.retrieve`, per document type, beside a
plain BM25 baseline over the same chunks.

    .venv/bin/python bench/retrieval.py                       # SQLite, every question, all types
    .venv/bin/python bench/retrieval.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/retrieval.py --embeddings stand-in  # full text, then hybrid
    # options: --kinds md,html,docx,pdf  --questions 115  --limit 10  --concurrency 4
    #          --embeddings URL --embeddings-model NAME  (any OpenAI-compatible /v1/embeddings)

The corpus (`retrieval_corpus.py`) is CPython's documentation topics (`pydoc_data.topics`, 78
topics, about 465,000 characters): one document per topic, written as Markdown, HTML, DOCX and
PDF from the same text. The questions (`retrieval_questions.json`) each name the exact sentence of
the corpus that answers them. Starts `contentplatform serve` on a free loopback port with a fresh
data directory (SQLite; with `--database-url`, two new databases on that PostgreSQL server, ours
and DBOS's, dropped at the end), ingests each type into a tenant of its own through the HTTP API
(createUploadUrl -> PUT -> confirmUpload, until `documents.getStats` says all are ready), then
asks every question with `POST /v1/chat/retrieve` (`limit` 10).

In hybrid mode "ingest" includes the wait until every chunk has its vector.

A hit is a returned chunk whose content holds the answer sentence, both compared after
`retrieval_corpus.normalize` (NFKC, typographic quotes and dashes as ASCII, case folded, only
letters and digits kept: wrapping, reflow, hyphenation and the PDF's Latin-1 substitutions do
not matter). recall@k: the share of questions with a hit among the first k; MRR: the mean of
1/rank of the first hit (0 when none of the `limit` has one). "in a chunk" is the ceiling: the
questions whose sentence lies whole inside at least one chunk the service made.

The baseline is BM25 (rank-bm25's BM25Okapi, k1 1.5, b 0.75) over the same chunks, read from the
service's database: heading and content, lower-cased runs of letters and digits, without the
index's stop words, no stemming. Targets (issue 17): recall@5 >= 0.9, MRR >= 0.75, and better
than the baseline on every type. Prints figures; asserts nothing.

With `--embeddings`, everything runs twice: full text alone, then hybrid (a second service with
embeddings configured: vectors filled at ingest, results fused by reciprocal rank), and the two
are printed side by side. `stand-in` is the test suite's local `/v1/embeddings` server
(tests/support/embeddings.py: hashed words and character trigrams, no model), started here; any
other value is the base URL of a real one (Ollama, vLLM, llama.cpp, a hosted API), with
`--embeddings-model` and CONTENTPLATFORM_EMBEDDINGS_API_KEY from the environment if it needs one.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import retrieval_corpus as corpus
from rank_bm25 import BM25Okapi
from serving import dev_headers, service_env, serving
from sqlalchemy import create_engine, text

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contentplatform.documents.index import STOP_WORDS
from tests.support.backends import postgres_databases
from tests.support.embeddings import EmbeddingsServer

INGEST_TIMEOUT = 900.0
_WORD = re.compile(r"[0-9a-z]+")


# --- scoring ------------------------------------------------------------------------------------


@dataclass
class Scores:
    ranks: list[int | None]  # per question, 1-based rank of the first hit, None: no hit

    def recall(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / len(self.ranks)

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r is not None) / len(self.ranks)


def first_hit(contents: Sequence[str], answer: str) -> int | None:
    wanted = corpus.normalize(answer)
    for position, content in enumerate(contents, 1):
        if wanted in corpus.normalize(content):
            return position
    return None


def tokens(text_: str) -> list[str]:
    return [t for t in _WORD.findall(text_.casefold()) if t not in STOP_WORDS]


@dataclass
class Chunk:
    heading: str
    content: str


class Baseline:
    """BM25 over one type's chunks."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.bm25 = BM25Okapi([tokens(f"{c.heading}\n{c.content}") for c in chunks])

    def search(self, query: str, limit: int) -> list[str]:
        scores = self.bm25.get_scores(tokens(query))
        best = sorted(range(len(scores)), key=lambda i: -scores[i])[:limit]
        return [self.chunks[i].content for i in best]


# --- the service --------------------------------------------------------------------------------


@dataclass
class Service:
    url: str
    env: dict[str, str]
    directory: Path
    database_url: str  # a synchronous SQLAlchemy URL of its database

    def headers(self, org: str) -> dict[str, str]:
        return dev_headers(self.env, self.directory, org)


@contextmanager
def databases(server_url: str | None) -> Iterator[dict[str, str]]:
    if not server_url:
        yield {}
        return
    name = f"cp_bench_retrieval_{uuid.uuid4().hex[:8]}"
    with postgres_databases(server_url, name) as (database_url, dbos_url):
        yield {"database_url": database_url, "dbos_database_url": dbos_url}


@contextmanager
def running_service(
    directory: Path, server_url: str | None, settings: dict[str, str]
) -> Iterator[Service]:
    with databases(server_url) as urls:
        env = service_env(directory, credits_monthly_grant="100000000", **urls, **settings)
        sync_url = urls.get("database_url") or f"sqlite:///{directory / 'data/contentplatform.db'}"
        sync_url = sync_url.replace("postgresql://", "postgresql+psycopg://", 1)
        with serving(directory, env) as (url, _):
            yield Service(url, env, directory, sync_url)


async def upload(
    client: httpx.AsyncClient, headers: dict[str, str], path: Path, kind: str
) -> dict[str, Any]:
    data = await asyncio.to_thread(path.read_bytes)
    body = {"filename": path.name, "fileType": kind, "contentLength": len(data)}
    target = (await client.post("/v1/documents/upload-url", json=body, headers=headers)).json()
    put = await client.request(
        target.get("method", "PUT"), target["uploadUrl"], content=data, headers=target["headers"]
    )
    put.raise_for_status()
    confirm = {"filename": path.name, "fileType": kind, "storagePath": target["storagePath"]}
    confirmed = await client.post("/v1/documents/confirm-upload", json=confirm, headers=headers)
    confirmed.raise_for_status()
    return dict(confirmed.json())


async def ingest(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    files: list[Path],
    kind: str,
    concurrency: int,
) -> float:
    """Upload every file and wait until all are ready; the seconds it took."""
    started = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)

    async def one(path: Path) -> str:
        async with gate:
            return str((await upload(client, headers, path, kind))["id"])

    documents = set(await asyncio.gather(*(one(path) for path in files)))
    while True:
        stats = (await client.get("/v1/documents/stats", headers=headers)).json()
        if stats["error"]:
            raise SystemExit(f"{stats['error']} {kind} documents failed to ingest: {stats}")
        if stats["ready"] >= len(documents):
            return time.perf_counter() - started
        if time.perf_counter() - started > INGEST_TIMEOUT:
            raise SystemExit(f"{kind}: not ready after {INGEST_TIMEOUT:.0f} s: {stats}")
        await asyncio.sleep(0.2)


async def ask_service(
    client: httpx.AsyncClient, headers: dict[str, str], question: str, limit: int
) -> tuple[list[str], float]:
    started = time.perf_counter()
    response = await client.post(
        "/v1/chat/retrieve", json={"query": question, "limit": limit}, headers=headers
    )
    took = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"chat.retrieve: {response.status_code} {response.text[:300]}")
    return [hit["content"] for hit in response.json()["data"]], took


def vectors_pending(database_url: str, kind: str) -> int:
    """How many chunks of the documents of `kind` have no vector yet (hybrid mode)."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    text(
                        "SELECT count(*) FROM document_chunks c "
                        "JOIN documents d ON d.id = c.document_id "
                        "LEFT JOIN document_chunk_vectors v ON v.chunk_id = c.id "
                        "WHERE d.filename LIKE :suffix AND d.deleted_at IS NULL "
                        "AND v.chunk_id IS NULL"
                    ),
                    {"suffix": f"%.{kind}"},
                ).scalar_one()
            )
    finally:
        engine.dispose()


async def vectors_filled(database_url: str, kind: str) -> float:
    """Wait until every chunk of `kind` has its vector; how long it took."""
    started = time.perf_counter()
    while vectors_pending(database_url, kind):
        if time.perf_counter() - started > INGEST_TIMEOUT:
            raise SystemExit(f"{kind}: vectors still missing after {INGEST_TIMEOUT:.0f} s")
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


def chunks_of(database_url: str, kind: str) -> list[Chunk]:
    """The chunks the service made of every document of `kind` (their filenames end in it)."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT c.heading, c.content FROM document_chunks c "
                    "JOIN documents d ON d.id = c.document_id "
                    "WHERE d.filename LIKE :suffix AND d.deleted_at IS NULL "
                    "ORDER BY d.filename, c.ordinal"
                ),
                {"suffix": f"%.{kind}"},
            ).all()
    finally:
        engine.dispose()
    return [Chunk(row.heading or "", row.content) for row in rows]


# --- one run ------------------------------------------------------------------------------------


@dataclass
class Result:
    kind: str
    documents: int
    chunks: int
    ingest_seconds: float
    reachable: int
    service: Scores
    baseline: Scores
    p50_ms: float
    misses: list[tuple[corpus.Question, int | None]]


async def measure(
    service: Service,
    kind: str,
    files: list[Path],
    questions: list[corpus.Question],
    limit: int,
    concurrency: int,
    hybrid: bool,
) -> Result:
    headers = service.headers(f"org_retrieval_{kind}")
    async with httpx.AsyncClient(base_url=service.url, timeout=httpx.Timeout(120)) as client:
        took = await ingest(client, headers, files, kind, concurrency)
        if hybrid:
            took += await vectors_filled(service.database_url, kind)
        await ask_service(client, headers, questions[0].question, limit)  # warm-up
        ranks: list[int | None] = []
        latencies: list[float] = []
        for q in questions:
            contents, seconds = await ask_service(client, headers, q.question, limit)
            ranks.append(first_hit(contents, q.answer))
            latencies.append(seconds)
    chunks = chunks_of(service.database_url, kind)
    baseline = Baseline(chunks)
    normalized = [corpus.normalize(c.content) for c in chunks]
    reachable = sum(
        1 for q in questions if any(corpus.normalize(q.answer) in n for n in normalized)
    )
    base_ranks = [first_hit(baseline.search(q.question, limit), q.answer) for q in questions]
    misses = [(q, r) for q, r in zip(questions, ranks, strict=True) if r is None or r > 5]
    latencies.sort()
    return Result(
        kind,
        len(files),
        len(chunks),
        took,
        reachable,
        Scores(ranks),
        Scores(base_ranks),
        latencies[len(latencies) // 2] * 1000,
        misses,
    )


def report(results: list[Result], backend: str, questions: int, limit: int) -> None:
    print(
        f"\nretrieval on {backend}: {questions} questions per type, chat.retrieve limit {limit}; "
        "targets recall@5 >= 0.90, MRR >= 0.75, above BM25"
    )
    header = (
        f"{'type':<5} {'docs':>4} {'chunks':>6} {'ingest':>7} {'in a chunk':>10} | "
        f"{'R@1':>6} {'R@5':>6} {'MRR':>6} {'p50 ms':>6} | {'BM25 R@1':>8} {'R@5':>6} {'MRR':>6} "
        "| targets"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        s, b = r.service, r.baseline
        met = {
            "R@5": s.recall(5) >= 0.9,
            "MRR": s.mrr >= 0.75,
            ">BM25": s.recall(5) > b.recall(5) and s.mrr > b.mrr,
        }
        verdict = " ".join(f"{name} {'ok' if ok else 'MISSED'}" for name, ok in met.items())
        print(
            f"{r.kind:<5} {r.documents:>4} {r.chunks:>6} {r.ingest_seconds:>6.1f}s "
            f"{r.reachable:>4}/{questions:<5} | {s.recall(1):>6.3f} {s.recall(5):>6.3f} "
            f"{s.mrr:>6.3f} {r.p50_ms:>6.1f} | {b.recall(1):>8.3f} {b.recall(5):>6.3f} "
            f"{b.mrr:>6.3f} | {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default=",".join(corpus.KINDS))
    parser.add_argument("--questions", type=int, default=0, help="the first N (default: all)")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--database-url",
        default=None,
        help="a PostgreSQL server's maintenance database; default: SQLite in a temporary directory",
    )
    parser.add_argument("--misses", action="store_true", help="list the questions missed at 5")
    parser.add_argument(
        "--embeddings",
        default=None,
        help="also measure hybrid search: `stand-in` or an OpenAI-compatible base URL",
    )
    parser.add_argument("--embeddings-model", default="nomic-embed-text")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := set(kinds) - set(corpus.KINDS):
        raise SystemExit(f"unknown kinds: {sorted(unknown)}")
    every = corpus.load_questions()
    questions = corpus.answerable(every)
    if len(questions) < len(every):
        print(
            f"{len(every) - len(questions)} answers are not in this Python's pydoc topics "
            f"({sys.version.split()[0]}); asking the other {len(questions)}",
            file=sys.stderr,
        )
    questions = questions[: args.questions or None]
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        files = corpus.build(root / "corpus", tuple(kinds))
        print(f"corpus: {len(corpus.topic_names())} topics x {len(kinds)} types in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        backend = "PostgreSQL" if args.database_url else "SQLite"
        by_mode: dict[str, list[Result]] = {}
        for mode in ["full text", *(["hybrid"] if args.embeddings else [])]:
            with embeddings_settings(args, mode) as settings:
                directory = root / mode.replace(" ", "-")
                directory.mkdir()
                results = by_mode[mode] = []
                with running_service(directory, args.database_url, settings) as service:
                    for kind in kinds:
                        result = asyncio.run(
                            measure(
                                service,
                                kind,
                                files[kind],
                                questions,
                                args.limit,
                                args.concurrency,
                                mode == "hybrid",
                            )
                        )
                        results.append(result)
                        print(
                            f"{mode}, {kind}: {result.chunks} chunks, "
                            f"R@5 {result.service.recall(5):.3f}, MRR {result.service.mrr:.3f} "
                            f"(BM25 {result.baseline.recall(5):.3f}, {result.baseline.mrr:.3f})",
                            flush=True,
                        )
            report(results, f"{backend}, {mode}", len(questions), args.limit)
            if args.misses:
                for r in results:
                    print(f"\nmissed at 5 ({mode}, {r.kind}):")
                    for q, rank in r.misses:
                        print(f"  [{rank or '-'}] {q.topic}: {q.question}")
        if "hybrid" in by_mode:
            compare(by_mode["full text"], by_mode["hybrid"], backend)


@contextmanager
def embeddings_settings(args: argparse.Namespace, mode: str) -> Iterator[dict[str, str]]:
    """The service's embeddings settings for `mode`: none for full text; for hybrid, the
    stand-in (started here) or the server named by --embeddings."""
    if mode != "hybrid":
        yield {}
    elif args.embeddings == "stand-in":
        with EmbeddingsServer() as server:
            yield {"embeddings_base_url": server.base_url, "embeddings_model": "stand-in"}
    else:
        yield {"embeddings_base_url": args.embeddings, "embeddings_model": args.embeddings_model}


def compare(text_only: list[Result], hybrid: list[Result], backend: str) -> None:
    print(f"\nfull text beside hybrid on {backend}:")
    header = (
        f"{'type':<5} | {'text R@1':>8} {'R@5':>6} {'MRR':>6} {'p50 ms':>6} | "
        f"{'hybrid R@1':>10} {'R@5':>6} {'MRR':>6} {'p50 ms':>6}"
    )
    print(header)
    print("-" * len(header))
    for t, h in zip(text_only, hybrid, strict=True):
        print(
            f"{t.kind:<5} | {t.service.recall(1):>8.3f} {t.service.recall(5):>6.3f} "
            f"{t.service.mrr:>6.3f} {t.p50_ms:>6.1f} | {h.service.recall(1):>10.3f} "
            f"{h.service.recall(5):>6.3f} {h.service.mrr:>6.3f} {h.p50_ms:>6.1f}"
        )


if __name__ == "__main__":
    main()
