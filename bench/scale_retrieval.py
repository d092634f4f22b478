"""Issue 36's `chat.retrieve` figures: does a tenant's retrieval cost follow its own chunks, and
only its own?

    .venv/bin/python bench/scale_retrieval.py                   # SQLite and PostgreSQL
    .venv/bin/python bench/scale_retrieval.py --sqlite          # one of them
    .venv/bin/python bench/scale_retrieval.py --postgres --quick
    # options: --small 1000 --large 100000 (chunks) --rounds 7
    #          --database-url postgresql://postgres@127.0.0.1:5432/test

Two databases per backend (SQLite files in a temporary directory; on PostgreSQL two new
databases on the `--database-url` server, dropped at the end):

- `alone`: tenant A, `--small` chunks;
- `shared`: the same tenant A (the same documents, the same text), beside tenant B holding
  `--large` chunks drawn from the same vocabulary (the same words, with the same frequencies).

Chunks are seeded through the index's own write path (`index.replace_chunks_of`, many documents
per transaction: the FTS5 triggers and the generated tsvector fill as ingestion fills them), in
documents of 20 chunks of about 70 words each, one document of each tenant primary (so
`chat.retrieve` searches twice, as it does for a tenant with a primary knowledge document). The
words follow a Zipf law over a vocabulary of made-up words; the queries mix the commonest words
(in most chunks), middling ones and rare ones, phrased as questions.

Each round asks every query of (1) A alone, (2) A beside B, (3) B, in an order that rotates from
round to round, through the service function behind `POST /v1/chat/retrieve`
(`chat.service.retrieve`, in its own unit of work, in this process: no HTTP). A round's figure
for each is the sum over the queries; the ratios are taken round by round:

- neighbour: A beside B / A alone (target at most 1.3x);
- growth: B (`--large` of its own) / A alone (`--small`) (target at most 2x).

Prints the medians with their spread (min-max over the rounds) and the load average. Asserts
nothing. `scale(sqlite=...)` returns the figures, for bench/scale.py to gather.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The repository root, for the test suite's throwaway PostgreSQL databases.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, text

from contentplatform.auth.context import TenantAccess
from contentplatform.chat import schemas
from contentplatform.chat import service as chat
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.documents import index
from contentplatform.documents.chunking import Chunk
from contentplatform.documents.models import Document
from contentplatform.kit import logs, migrations
from contentplatform.kit.db import Database
from contentplatform.tenants import repository as tenants
from tests.support.backends import postgres_databases

MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
NEIGHBOUR_TARGET = 1.3
GROWTH_TARGET = 2.0
CHUNKS_PER_DOCUMENT = 20
WORDS_PER_CHUNK = 70
VOCABULARY = 30_000
DOCUMENTS_PER_TRANSACTION = 250
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def vocabulary(rng: random.Random) -> list[str]:
    """Distinct made-up words of 2-4 syllables, the first the commonest (Zipf's rank 1)."""
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))] = None
    return list(words)


@dataclass
class Corpus:
    words: list[str]
    weights: list[float]

    @classmethod
    def make(cls) -> Corpus:
        rng = random.Random(36)
        words = vocabulary(rng)
        cumulative, total = [], 0.0
        for rank in range(1, len(words) + 1):
            total += 1 / rank**1.07
            cumulative.append(total)
        return cls(words, cumulative)

    def chunk_text(self, rng: random.Random) -> str:
        return " ".join(rng.choices(self.words, cum_weights=self.weights, k=WORDS_PER_CHUNK)) + "."

    def queries(self) -> list[str]:
        """Questions of common, middling and rare words (by rank in the Zipf law)."""
        w = self.words
        return [
            f"how do I {w[0]} the {w[2]}?",  # the two commonest words: in most chunks
            f"what is {w[4]} {w[30]} and {w[300]}",
            f"{w[150]} {w[1200]}",
            f"where does {w[2500]} meet {w[9000]}?",  # rare: a few chunks
            f"{w[20000]}",  # rarest: one or two chunks, or none
            f"why {w[10]} {w[60]} {w[600]} {w[6000]} {w[15]} {w[25000]} {w[1]}",  # a long one
        ]


# --- seeding ------------------------------------------------------------------------------------


async def seed_tenant(db: Database, corpus: Corpus, org: str, chunks: int, seed: int) -> uuid.UUID:
    """A tenant with `chunks` chunks in ready documents of CHUNKS_PER_DOCUMENT (the first one
    primary)."""
    async with db.unit_of_work() as session:
        tenant_id = (await tenants.ensure_tenant(session, org, org)).id
    rng = random.Random(seed)
    documents = max(1, chunks // CHUNKS_PER_DOCUMENT)
    for first in range(0, documents, DOCUMENTS_PER_TRANSACTION):
        batch = range(first, min(first + DOCUMENTS_PER_TRANSACTION, documents))
        rows, indexing = [], []
        for number in batch:
            document_id = uuid.uuid4()
            rows.append(
                {
                    "id": document_id,
                    "tenant_id": tenant_id,
                    "filename": f"handbook-{number}.md",
                    "file_type": "md",
                    "storage_path": f"bench/{document_id}/handbook-{number}.md",
                    "status": "ready",
                    "is_primary": number == 0,
                    "chunk_count": CHUNKS_PER_DOCUMENT,
                }
            )
            built, position = [], 0
            for ordinal in range(CHUNKS_PER_DOCUMENT):
                text = corpus.chunk_text(rng)
                built.append(
                    Chunk(ordinal, text, WORDS_PER_CHUNK, position, position + len(text), None)
                )
                position += len(text) + 2
            indexing.append(index.Indexing(tenant_id, document_id, built, first=True))
        async with db.unit_of_work() as session:
            await session.execute(insert(Document), rows)
            await index.replace_chunks_of(session, indexing)
    return tenant_id


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Target:
    label: str
    db: Database
    tenant_id: uuid.UUID


async def retrieve(target: Target, query: str) -> tuple[float, float]:
    """Seconds one `chat.retrieve` took, in its own unit of work: wall time, and the CPU time of
    this process meanwhile (SQLite's work included, PostgreSQL's not)."""
    access = TenantAccess(target.tenant_id, "bench", "bench", uuid.uuid4(), "member")  # type: ignore[arg-type]
    started, cpu = time.perf_counter(), time.process_time()
    async with target.db.unit_of_work() as session:
        await chat.retrieve(session, access, schemas.RetrieveInput(query=query, limit=8))
    return time.perf_counter() - started, time.process_time() - cpu


@dataclass
class Figures:
    """One ratio of round sums: `over` / `under`, round by round."""

    name: str
    backend: str
    measure: str
    target: float
    under: list[float] = field(default_factory=list)  # seconds per round
    over: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)
    per_query: dict[str, float] = field(default_factory=dict)  # ratio of medians per query
    cpu_under: list[float] = field(default_factory=list)  # this process's CPU seconds per round
    cpu_over: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [o / u for o, u in zip(self.over, self.under, strict=True)]

    @property
    def ratio(self) -> float:
        return float(statistics.median(self.ratios))

    @property
    def cpu_ratio(self) -> float:
        """The same of this process's CPU time: steadier on a loaded machine, and on SQLite
        (in this process) the whole of the work."""
        return float(statistics.median(self.cpu_over) / statistics.median(self.cpu_under))

    def summary(self) -> dict[str, Any]:
        """What bench/scale.py gathers."""
        return {
            "name": self.name,
            "backend": self.backend,
            "measure": self.measure,
            "ratio": round(self.ratio, 2),
            "target": self.target,
            "met": self.ratio <= self.target,
            "spread": [round(min(self.ratios), 2), round(max(self.ratios), 2)],
            "cpu_ratio": round(self.cpu_ratio, 2),
            "under_ms": round(statistics.median(self.under) * 1000, 1),
            "over_ms": round(statistics.median(self.over) * 1000, 1),
            "load_average": self.load,
            "per_query": {query: round(ratio, 2) for query, ratio in self.per_query.items()},
        }


@asynccontextmanager
async def backend(sqlite: bool, scratch: Path, database_url: str) -> AsyncIterator[list[Settings]]:
    """Settings of two fresh, migrated databases."""
    common: dict[str, Any] = {"log_level": "WARNING", "embeddings_base_url": None}
    if sqlite:
        made = [
            Settings(_env_file=None, data_dir=scratch / name, **common)  # type: ignore[call-arg]
            for name in ("alone", "shared")
        ]
        for settings in made:
            await asyncio.to_thread(migrations.upgrade, settings)
        yield made
        return
    tag = uuid.uuid4().hex[:8]
    with (
        postgres_databases(database_url, f"cp_scale_retrieval_{tag}_a") as alone,
        postgres_databases(database_url, f"cp_scale_retrieval_{tag}_s") as shared,
    ):
        made = [
            Settings(
                _env_file=None,  # type: ignore[call-arg]
                data_dir=scratch / name,
                database_url=urls[0],
                dbos_database_url=urls[1],
                **common,
            )
            for name, urls in (("alone", alone), ("shared", shared))
        ]
        for settings in made:
            await asyncio.to_thread(migrations.upgrade, settings)
        yield made


async def measure(
    sqlite: bool, small: int, large: int, rounds: int, database_url: str
) -> list[Figures]:
    corpus = Corpus.make()
    queries = corpus.queries()
    name = "SQLite" if sqlite else "PostgreSQL"
    with tempfile.TemporaryDirectory() as scratch:
        async with backend(sqlite, Path(scratch), database_url) as (
            alone_settings,
            shared_settings,
        ):
            current = runtime.Runtime.create(alone_settings)
            runtime.install(current)
            shared_db = Database(shared_settings.resolved_database_url)
            try:
                started = time.perf_counter()
                a_alone = await seed_tenant(current.db, corpus, "org_a", small, seed=1)
                a_shared = await seed_tenant(shared_db, corpus, "org_a", small, seed=1)
                b = await seed_tenant(shared_db, corpus, "org_b", large, seed=2)
                if not sqlite:
                    # The planner's statistics, as autovacuum would gather them after a bulk
                    # load: without them it joins each document to every chunk of the tenant.
                    for db in (current.db, shared_db):
                        async with db.engine.connect() as connection:
                            await connection.execute(text("COMMIT"))
                            await connection.execute(text("ANALYZE"))
                print(
                    f"{name}: seeded {small:,} + {small:,} + {large:,} chunks in "
                    f"{time.perf_counter() - started:.0f} s",
                    flush=True,
                )
                targets = [
                    Target("A alone", current.db, a_alone),
                    Target("A beside B", shared_db, a_shared),
                    Target("B", shared_db, b),
                ]
                return await _rounds(name, targets, queries, small, large, rounds)
            finally:
                await shared_db.dispose()
                await current.close()
                runtime.install(None)


async def _rounds(
    backend_name: str,
    targets: Sequence[Target],
    queries: Sequence[str],
    small: int,
    large: int,
    rounds: int,
) -> list[Figures]:
    # A warm-up round: connections, caches, the stemmer's.
    for target in targets:
        for query in queries:
            await retrieve(target, query)
    times: dict[tuple[str, str], list[float]] = {}
    sums: dict[str, list[float]] = {target.label: [] for target in targets}
    cpus: dict[str, list[float]] = {target.label: [] for target in targets}
    loads: list[float] = []
    for number in range(rounds):
        loads.append(round(os.getloadavg()[0], 2))
        turn = [*targets[number % 3 :], *targets[: number % 3]]
        spent, busy = dict.fromkeys(sums, 0.0), dict.fromkeys(sums, 0.0)
        for query in queries:
            for target in turn:
                seconds, cpu = await retrieve(target, query)
                times.setdefault((target.label, query), []).append(seconds)
                spent[target.label] += seconds
                busy[target.label] += cpu
        for label in sums:
            sums[label].append(spent[label])
            cpus[label].append(busy[label])

    def figures(name: str, measure: str, target: float, under: str, over: str) -> Figures:
        return Figures(
            name,
            backend_name,
            measure,
            target,
            sums[under],
            sums[over],
            loads,
            {
                query: statistics.median(times[(over, query)])
                / statistics.median(times[(under, query)])
                for query in queries
            },
            cpus[under],
            cpus[over],
        )

    return [
        figures(
            "chat.retrieve neighbour",
            f"{small:,}-chunk tenant beside a {large:,}-chunk neighbour / alone",
            NEIGHBOUR_TARGET,
            "A alone",
            "A beside B",
        ),
        figures(
            "chat.retrieve growth",
            f"tenant with {large:,} chunks / with {small:,}",
            GROWTH_TARGET,
            "A alone",
            "B",
        ),
    ]


def scale(
    sqlite: bool,
    *,
    small: int = 1000,
    large: int = 100_000,
    rounds: int = 7,
    database_url: str = MAINTENANCE_URL,
) -> list[Figures]:
    """Both figures of one backend, measured in interleaved rounds."""
    logs.configure("WARNING", False)
    return asyncio.run(measure(sqlite, small, large, rounds, database_url))


def print_figures(figures: Figures) -> None:
    summary = figures.summary()
    low, high = summary["spread"]
    verdict = "met" if summary["met"] else "NOT met"
    print(
        f"  {figures.name} on {figures.backend}: {figures.measure}: {summary['ratio']:.2f}x "
        f"({low:.2f}-{high:.2f}x over {len(figures.ratios)} rounds; target at most "
        f"{figures.target:g}x: {verdict}); a round of {len(figures.per_query)} queries "
        f"{summary['under_ms']:.1f} ms against {summary['over_ms']:.1f} ms; this process's "
        f"CPU {figures.cpu_ratio:.2f}x"
    )
    for query, ratio in figures.per_query.items():
        print(f"      {ratio:6.2f}x  {query}")
    print(f"    load average at each round: {', '.join(f'{load:.2f}' for load in figures.load)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite", action="store_true", help="SQLite only")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL only")
    parser.add_argument("--quick", action="store_true", help="10x fewer chunks, 3 rounds")
    parser.add_argument("--small", type=int, default=1000, help="chunks of tenant A")
    parser.add_argument("--large", type=int, default=100_000, help="chunks of tenant B")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--database-url", default=MAINTENANCE_URL)
    args = parser.parse_args()
    if args.quick:
        args.large, args.rounds = args.large // 10, 3
    backends = [True, False]
    if args.sqlite != args.postgres:
        backends = [args.sqlite]
    for sqlite in backends:
        for figures in scale(
            sqlite,
            small=args.small,
            large=args.large,
            rounds=args.rounds,
            database_url=args.database_url,
        ):
            print_figures(figures)


if __name__ == "__main__":
    main()
