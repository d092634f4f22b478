"""Retrieval quality: recall@1, recall@5 and MRR of `chat.retrieve` on two corpora, per document
type, beside a plain BM25 baseline over the same chunks; with embeddings, hybrid search at
several vector weights beside full text alone.

    .venv/bin/python bench/retrieval.py                       # SQLite, both corpora, full text
    .venv/bin/python bench/retrieval.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/retrieval.py --embeddings wordllama --weights 0,0.05,0.1,0.2
    # options: --corpus generated,real  --kinds md,html,docx,pdf,txt  --questions 115
    #          --limit 10  --concurrency 4  --misses
    #          --embeddings stand-in|wordllama|URL --embeddings-model NAME

Two corpora:

- **generated** (`retrieval_corpus.py`): CPython's documentation topics (`pydoc_data.topics`, 78
  topics, about 465,000 characters), one document per topic, written as Markdown, HTML, DOCX and
  PDF from the same text, each type in a tenant of its own; the questions
  (`retrieval_questions.json`) are asked of every type.
- **real** (`retrieval_real.py`, `real_corpus/`): 34 documents as Debian packages ship them,
  Markdown, HTML, DOCX, PDF and plain text, all in one tenant; each of the 109 questions names
  its document, and the figures per type are those of the questions on that type's documents.

Starts `contentplatform serve` on a free loopback port with a fresh data directory (SQLite; with
`--database-url`, two new databases on that PostgreSQL server, ours and DBOS's, dropped at the
end), ingests through the HTTP API (createUploadUrl -> PUT -> confirmUpload, until
`documents.getStats` says all are ready), then asks every question with `POST /v1/chat/retrieve`
(`limit` 10).

A hit is a returned chunk whose content holds the answer passage, both compared after
`retrieval_corpus.normalize` (NFKC, typographic quotes and dashes as ASCII, case folded, only
letters and digits kept: wrapping, reflow, hyphenation, ligatures and the PDF's Latin-1
substitutions do not matter). recall@k: the share of questions with a hit among the first k;
MRR: the mean of 1/rank of the first hit (0 when none of the `limit` has one). "in a chunk" is
the ceiling: the questions whose passage lies whole inside at least one chunk the service made.

The baseline is BM25 (rank-bm25's BM25Okapi, k1 1.5, b 0.75) over the same chunks, read from the
service's database: heading and content, lower-cased runs of letters and digits, without the
index's stop words, no stemming. Targets (issue 17): recall@5 >= 0.9, MRR >= 0.75, and better
than the baseline on every type. Prints figures; asserts nothing.

With `--embeddings`, a second service with embeddings configured ingests the same documents
(its "ingest" includes the wait until every chunk has its vector) and is asked at the first of
`--weights` (`EMBEDDINGS_WEIGHT`: the vector ranking's weight in the fusion, full text's being
1), then started again on the same data at each other weight and asked again; every weight is
printed beside full text alone. `stand-in` is the test suite's local `/v1/embeddings` server
(tests/support/embeddings.py: hashed words and character trigrams, no model); `wordllama` is the
same server serving the small model the `wordllama` package ships inside it (`pip install
-e .[bench]`); any other value is the base URL of a real server (Ollama, vLLM, llama.cpp, a
hosted API), with `--embeddings-model` and CONTENTPLATFORM_EMBEDDINGS_API_KEY from the
environment if it needs one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import retrieval_corpus as corpus
import retrieval_real as real
from rank_bm25 import BM25Okapi
from serving import dev_headers, service_env, serving
from sqlalchemy import bindparam, create_engine, text

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contentplatform.config import EMBEDDINGS_WEIGHT
from contentplatform.documents.index import STOP_WORDS
from tests.support.backends import postgres_databases
from tests.support.embeddings import EmbeddingsServer, wordllama_encoder

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


# --- what is asked of whom ----------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    kind: str  # the type of the document the figures count it under
    question: str
    answer: str
    source: str  # the topic or document it was written from, for --misses


@dataclass
class Tenant:
    """Documents ingested into one tenant, and the questions asked of them."""

    corpus: str
    name: str
    files: list[tuple[Path, str]]  # (path, type)
    questions: list[Asked]

    @property
    def filenames(self) -> list[str]:
        return [path.name for path, _ in self.files]


def generated_tenants(root: Path, kinds: list[str], limit: int) -> list[Tenant]:
    every = corpus.load_questions()
    questions = corpus.answerable(every)
    if len(questions) < len(every):
        print(
            f"{len(every) - len(questions)} answers are not in this Python's pydoc topics "
            f"({sys.version.split()[0]}); asking the other {len(questions)}",
            file=sys.stderr,
        )
    questions = questions[: limit or None]
    wanted = tuple(k for k in kinds if k in corpus.KINDS)
    files = corpus.build(root / "generated", wanted)
    return [
        Tenant(
            "generated",
            kind,
            [(path, kind) for path in files[kind]],
            [Asked(kind, q.question, q.answer, q.topic) for q in questions],
        )
        for kind in wanted
    ]


def real_tenant(kinds: list[str]) -> Tenant:
    wanted = tuple(k for k in kinds if k in real.KINDS)
    return Tenant(
        "real",
        "all",
        [(path, path.suffix[1:]) for path in real.files(wanted)],
        [Asked(q.kind, q.question, q.answer, q.document) for q in real.load_questions(wanted)],
    )


# --- the service --------------------------------------------------------------------------------


@contextmanager
def databases(server_url: str | None) -> Iterator[dict[str, str]]:
    if not server_url:
        yield {}
        return
    name = f"cp_bench_retrieval_{uuid.uuid4().hex[:8]}"
    with postgres_databases(server_url, name) as (database_url, dbos_url):
        yield {"database_url": database_url, "dbos_database_url": dbos_url}


@dataclass
class Service:
    url: str
    env: dict[str, str]
    directory: Path
    database_url: str  # a synchronous SQLAlchemy URL of its database

    def headers(self, org: str) -> dict[str, str]:
        return dev_headers(self.env, self.directory, org)


@contextmanager
def running_service(
    directory: Path, urls: dict[str, str], settings: dict[str, str]
) -> Iterator[Service]:
    """A service on `directory`'s data (and `urls`' databases): a second one started on the
    same finds what the first ingested."""
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
        target.get("method", "PUT"), target["upload_url"], content=data, headers=target["headers"]
    )
    put.raise_for_status()
    confirm = {"filename": path.name, "fileType": kind, "storagePath": target["storage_path"]}
    confirmed = await client.post("/v1/documents/confirm-upload", json=confirm, headers=headers)
    confirmed.raise_for_status()
    return dict(confirmed.json())


async def ingest(
    client: httpx.AsyncClient, headers: dict[str, str], tenant: Tenant, concurrency: int
) -> float:
    """Upload every file and wait until all are ready; the seconds it took."""
    started = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)

    async def one(path: Path, kind: str) -> str:
        async with gate:
            return str((await upload(client, headers, path, kind))["id"])

    documents = set(await asyncio.gather(*(one(path, kind) for path, kind in tenant.files)))
    while True:
        stats = (await client.get("/v1/documents/stats", headers=headers)).json()
        if stats["error"]:
            raise SystemExit(f"{stats['error']} documents of {tenant.name} failed: {stats}")
        if stats["ready"] >= len(documents):
            return time.perf_counter() - started
        if time.perf_counter() - started > INGEST_TIMEOUT:
            raise SystemExit(f"{tenant.name}: not ready after {INGEST_TIMEOUT:.0f} s: {stats}")
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


def _query(database_url: str, sql: str, filenames: list[str]) -> list[Any]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            statement = text(sql).bindparams(bindparam("names", expanding=True))
            return list(connection.execute(statement, {"names": filenames}).all())
    finally:
        engine.dispose()


def vectors_pending(database_url: str, filenames: list[str]) -> int:
    """How many chunks of these documents have no vector yet (hybrid mode)."""
    rows = _query(
        database_url,
        "SELECT count(*) FROM document_chunks c JOIN documents d ON d.id = c.document_id "
        "LEFT JOIN document_chunk_vectors v ON v.chunk_id = c.id "
        "WHERE d.filename IN :names AND d.deleted_at IS NULL AND v.chunk_id IS NULL",
        filenames,
    )
    return int(rows[0][0])


async def vectors_filled(database_url: str, filenames: list[str]) -> float:
    """Wait until every chunk of these documents has its vector; how long it took."""
    started = time.perf_counter()
    while vectors_pending(database_url, filenames):
        if time.perf_counter() - started > INGEST_TIMEOUT:
            raise SystemExit(f"vectors still missing after {INGEST_TIMEOUT:.0f} s")
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


def chunks_of(database_url: str, filenames: list[str]) -> list[Chunk]:
    """The chunks the service made of these documents."""
    rows = _query(
        database_url,
        "SELECT c.heading, c.content FROM document_chunks c "
        "JOIN documents d ON d.id = c.document_id "
        "WHERE d.filename IN :names AND d.deleted_at IS NULL ORDER BY d.filename, c.ordinal",
        filenames,
    )
    return [Chunk(row.heading or "", row.content) for row in rows]


# --- one run ------------------------------------------------------------------------------------


@dataclass
class Run:
    """One tenant's answers in one mode: the rank of the first hit of each question."""

    ranks: list[int | None]
    latencies: list[float]
    ingest_seconds: float = 0.0

    @property
    def p50_ms(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[len(ordered) // 2] * 1000 if ordered else 0.0


@dataclass
class Measured:
    """A tenant's fixed facts (chunks, the ceiling, the baseline) and its runs by mode."""

    tenant: Tenant
    chunks: int = 0
    reachable: list[bool] = field(default_factory=list)
    baseline: list[int | None] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)


async def ask_all(service: Service, tenant: Tenant, limit: int) -> Run:
    headers = service.headers(f"org_retrieval_{tenant.corpus}_{tenant.name}")
    async with httpx.AsyncClient(base_url=service.url, timeout=httpx.Timeout(120)) as client:
        await ask_service(client, headers, tenant.questions[0].question, limit)  # warm-up
        ranks: list[int | None] = []
        latencies: list[float] = []
        for q in tenant.questions:
            contents, seconds = await ask_service(client, headers, q.question, limit)
            ranks.append(first_hit(contents, q.answer))
            latencies.append(seconds)
    return Run(ranks, latencies)


async def ingest_tenant(service: Service, tenant: Tenant, concurrency: int, hybrid: bool) -> float:
    headers = service.headers(f"org_retrieval_{tenant.corpus}_{tenant.name}")
    async with httpx.AsyncClient(base_url=service.url, timeout=httpx.Timeout(120)) as client:
        took = await ingest(client, headers, tenant, concurrency)
    if hybrid:
        took += await vectors_filled(service.database_url, tenant.filenames)
    return took


def settle(measured: Measured, service: Service, limit: int) -> None:
    """The tenant's chunks as the service made them: the ceiling and the BM25 baseline."""
    chunks = chunks_of(service.database_url, measured.tenant.filenames)
    baseline = Baseline(chunks)
    normalized = [corpus.normalize(c.content) for c in chunks]
    measured.chunks = len(chunks)
    measured.reachable = [
        any(corpus.normalize(q.answer) in n for n in normalized) for q in measured.tenant.questions
    ]
    measured.baseline = [
        first_hit(baseline.search(q.question, limit), q.answer) for q in measured.tenant.questions
    ]


def by_kind(measured: Measured, ranks: Sequence[Any]) -> dict[str, list[Any]]:
    """`ranks` (one per question) grouped by the questions' types; "all" too for a tenant of
    several types."""
    groups: dict[str, list[Any]] = {}
    for q, rank in zip(measured.tenant.questions, ranks, strict=True):
        groups.setdefault(q.kind, []).append(rank)
    if len(groups) > 1:
        groups["all"] = list(ranks)
    return groups


def report(measured: list[Measured], backend: str, mode: str, limit: int) -> None:
    print(
        f"\nretrieval on {backend}, {mode}: chat.retrieve limit {limit}; "
        "targets recall@5 >= 0.90, MRR >= 0.75, above BM25"
    )
    header = (
        f"{'corpus':<9} {'type':<5} {'docs':>4} {'chunks':>6} {'ingest':>7} {'in a chunk':>10} | "
        f"{'R@1':>6} {'R@5':>6} {'MRR':>6} {'p50 ms':>6} | {'BM25 R@1':>8} {'R@5':>6} {'MRR':>6} "
        "| targets"
    )
    print(header)
    print("-" * len(header))
    for m in measured:
        run = m.runs[mode]
        ranks = by_kind(m, run.ranks)
        base = by_kind(m, m.baseline)
        reach = by_kind(m, m.reachable)
        for kind, kind_ranks in ranks.items():
            s, b = Scores(kind_ranks), Scores(base[kind])
            docs = sum(1 for _, k in m.tenant.files if kind in (k, "all"))
            met = {
                "R@5": s.recall(5) >= 0.9,
                "MRR": s.mrr >= 0.75,
                ">BM25": s.recall(5) > b.recall(5) and s.mrr > b.mrr,
            }
            verdict = " ".join(f"{name} {'ok' if ok else 'MISSED'}" for name, ok in met.items())
            chunks = f"{m.chunks:>6}" if kind in ("all", m.tenant.name) else f"{'':>6}"
            ingest = (
                f"{run.ingest_seconds:>6.1f}s" if kind in ("all", m.tenant.name) else f"{'':>7}"
            )
            print(
                f"{m.tenant.corpus:<9} {kind:<5} {docs:>4} {chunks} {ingest} "
                f"{sum(reach[kind]):>4}/{len(kind_ranks):<5} | {s.recall(1):>6.3f} "
                f"{s.recall(5):>6.3f} {s.mrr:>6.3f} {run.p50_ms:>6.1f} | {b.recall(1):>8.3f} "
                f"{b.recall(5):>6.3f} {b.mrr:>6.3f} | {verdict}"
            )


def compare(measured: list[Measured], modes: list[str], backend: str) -> None:
    """Full text beside hybrid at each weight; "ok" where hybrid's recall@5 and MRR are both at
    least full text's."""
    print(f"\nfull text beside hybrid on {backend} (R@1 R@5 MRR; ok: R@5 and MRR >= full text's):")
    header = f"{'corpus':<9} {'type':<5} | " + " | ".join(f"{mode:<22}" for mode in modes)
    print(header)
    print("-" * len(header))
    for m in measured:
        text_scores = {k: Scores(r) for k, r in by_kind(m, m.runs[modes[0]].ranks).items()}
        for kind, plain in text_scores.items():
            cells = []
            for mode in modes:
                s = Scores(by_kind(m, m.runs[mode].ranks)[kind])
                verdict = ""
                if mode != modes[0]:
                    ok = s.recall(5) >= plain.recall(5) - 1e-9 and s.mrr >= plain.mrr - 1e-9
                    verdict = "ok" if ok else "BELOW"
                cells.append(f"{s.recall(1):.3f} {s.recall(5):.3f} {s.mrr:.3f} {verdict:<5}")
            print(f"{m.tenant.corpus:<9} {kind:<5} | " + " | ".join(cells))


def misses(measured: list[Measured], mode: str) -> None:
    for m in measured:
        print(f"\nmissed at 5 ({mode}, {m.tenant.corpus} {m.tenant.name}):")
        for q, rank in zip(m.tenant.questions, m.runs[mode].ranks, strict=True):
            if rank is None or rank > 5:
                print(f"  [{rank or '-'}] {q.kind} {q.source}: {q.question}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="generated,real")
    parser.add_argument("--kinds", default=",".join(real.KINDS))
    parser.add_argument("--questions", type=int, default=0, help="the first N (generated)")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--database-url",
        default=None,
        help="a PostgreSQL server's maintenance database; default: SQLite in a temporary directory",
    )
    parser.add_argument("--misses", action="store_true", help="list the questions missed at 5")
    parser.add_argument(
        "--save-ranks", metavar="FILE", help="write each question's rank, by mode, as JSON"
    )
    parser.add_argument(
        "--embeddings",
        default=None,
        help="also measure hybrid search: `stand-in`, `wordllama` or an OpenAI-compatible base URL",
    )
    parser.add_argument("--embeddings-model", default="nomic-embed-text")
    parser.add_argument(
        "--weights",
        default=f"{EMBEDDINGS_WEIGHT:g},0.05,0.1,0.2",
        help="the vector weights hybrid is measured at (comma-separated; the service's default "
        "is marked)",
    )
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := set(kinds) - set(real.KINDS):
        raise SystemExit(f"unknown kinds: {sorted(unknown)}")
    weights = [float(w) for w in args.weights.split(",") if w]
    corpora = [c for c in args.corpus.split(",") if c]
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        root = Path(tmp)
        tenants: list[Tenant] = []
        if "generated" in corpora:
            tenants += generated_tenants(root / "corpus", kinds, args.questions)
        if "real" in corpora:
            tenants.append(real_tenant(kinds))
        measured = [Measured(tenant) for tenant in tenants]
        backend = "PostgreSQL" if args.database_url else "SQLite"
        modes = ["full text"]
        (root / "full-text").mkdir()
        with (
            databases(args.database_url) as urls,
            running_service(root / "full-text", urls, {}) as service,
        ):
            for m in measured:
                took = asyncio.run(ingest_tenant(service, m.tenant, args.concurrency, False))
                run = m.runs["full text"] = asyncio.run(ask_all(service, m.tenant, args.limit))
                run.ingest_seconds = took
                settle(m, service, args.limit)
                progress(m, "full text")
        report(measured, backend, "full text", args.limit)
        if args.misses:
            misses(measured, "full text")
        if args.embeddings:
            with embeddings_settings(args) as settings, databases(args.database_url) as urls:
                directory = root / "hybrid"
                directory.mkdir()
                for number, weight in enumerate(weights):
                    mode = f"hybrid {weight:g}" + (
                        " (default)" if weight == EMBEDDINGS_WEIGHT else ""
                    )
                    modes.append(mode)
                    weighted = {**settings, "embeddings_weight": str(weight)}
                    with running_service(directory, urls, weighted) as service:
                        for m in measured:
                            took = (
                                asyncio.run(
                                    ingest_tenant(service, m.tenant, args.concurrency, True)
                                )
                                if number == 0
                                else 0.0
                            )
                            run = m.runs[mode] = asyncio.run(ask_all(service, m.tenant, args.limit))
                            run.ingest_seconds = took
                            progress(m, mode)
                    if args.misses:
                        misses(measured, mode)
            compare(measured, modes, backend)
        if args.save_ranks:
            Path(args.save_ranks).write_text(json.dumps(ranks_by_mode(measured), indent=1))


def ranks_by_mode(measured: list[Measured]) -> dict[str, dict[str, Any]]:
    """{mode: {question: rank}} with each question named by its tenant and source."""
    out: dict[str, dict[str, Any]] = {}
    for m in measured:
        for mode, run in m.runs.items():
            for q, rank in zip(m.tenant.questions, run.ranks, strict=True):
                key = f"{m.tenant.corpus}/{m.tenant.name}/{q.source}: {q.question}"
                out.setdefault(mode, {})[key] = rank
        for q, rank in zip(m.tenant.questions, m.baseline, strict=True):
            key = f"{m.tenant.corpus}/{m.tenant.name}/{q.source}: {q.question}"
            out.setdefault("bm25", {})[key] = rank
    return out


def progress(m: Measured, mode: str) -> None:
    s = Scores(m.runs[mode].ranks)
    print(
        f"{mode}, {m.tenant.corpus} {m.tenant.name}: R@5 {s.recall(5):.3f}, MRR {s.mrr:.3f}",
        flush=True,
    )


@contextmanager
def embeddings_settings(args: argparse.Namespace) -> Iterator[dict[str, str]]:
    """The service's embeddings settings: the stand-in or wordllama (served here), or the
    server named by --embeddings."""
    if args.embeddings in ("stand-in", "wordllama"):
        encoder = wordllama_encoder() if args.embeddings == "wordllama" else None
        with EmbeddingsServer(encoder=encoder) as server:
            yield {"embeddings_base_url": server.base_url, "embeddings_model": args.embeddings}
    else:
        yield {"embeddings_base_url": args.embeddings, "embeddings_model": args.embeddings_model}


if __name__ == "__main__":
    main()
