"""Issue 39's Search Console figures: `seo.queryPerformance` over millions of stored query rows
beside a bare indexed aggregate over the same table, and (the other half) the backfill's pace.

    .venv/bin/python bench/seo_sync.py                     # SQLite and PostgreSQL, 10,000,000 rows
    .venv/bin/python bench/seo_sync.py --sqlite --rows 1000000
    .venv/bin/python bench/seo_sync.py --postgres [URL]
    .venv/bin/python bench/seo_sync.py --backfill [-- seo_backfill.py's options]
    # options: --rows 10000000 --per-day 25000 --neighbours 2 --neighbour-days 20
    #          --requests 20 --rounds 2

**queryPerformance**: starts `contentplatform serve` on a database of its own (a SQLite file;
on PostgreSQL, databases it makes on the server of --postgres and drops after) and seeds one
tenant's property in bulk (executemany on SQLite, COPY on PostgreSQL): --rows query rows,
--per-day a day (so --rows / --per-day days up to yesterday; 25,000 a day is the issue's large
property), queries drawn from a Zipf-like vocabulary of 50,000 over 2,000 pages, 5 countries and
3 devices; the page totals (3,000 rows a day) and the site's totals; beside --neighbours other
tenants with --neighbour-days days each. Then, round after round, each typical read is asked
--requests times over HTTP, one at a time, interleaved with the same number of its bare SQL
aggregate (the same GROUP BY over the same index range: tenant, property, search type, days),
run by this process on its own connection. Prints each p95 beside the floor's and their ratio:
HTTP, authentication, the hidden share, totals and the JSON answer are in the read's figure,
not in the floor's.

The reads, over the last 90 days: `by date` (the site's totals by day), `top 100 queries` (query
rows grouped by query, the hidden share beside), `pages containing /blog/` (page totals grouped
by page, a contains filter), `queries matching a regex` (RE2 over the window's distinct queries,
then grouped).

**backfill** (`--backfill`): rows/s of the sync's 16-month backfill against the Google stand-in
serving alone; written by the sync's engineer in bench/seo_backfill.py, which this runs with the
options after `--`.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from analytics import sync_engine
from scale_lists import analyze
from serving import dev_headers, interleaved_p95, own_service
from sqlalchemy import text
from sqlalchemy.engine import Engine

from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoConnection, SeoProperty
from contentplatform.tenants import repository as tenants

MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
ORG = "bench"
SITE = "https://bench.example/"
QUERIES = 50_000
PAGES = 2_000
COUNTRIES = ("usa", "gbr", "deu", "fra", "ind")
DEVICES = ("desktop", "mobile", "tablet")
PAGE_ROWS = 3_000  # page totals a day: 1,000 pages x 3 devices
BATCH = 50_000
WINDOW = 90
COLUMNS = (
    "tenant_id, property_id, search_type, day, query, page, country, device, clicks, "
    "impressions, position_sum"
)
PAGE_COLUMNS = (
    "tenant_id, property_id, search_type, day, page, country, device, clicks, impressions, "
    "position_sum"
)
SITE_COLUMNS = "tenant_id, property_id, search_type, day, clicks, impressions, position_sum"
# The bare aggregate under each read: the same index range and GROUP BY, nothing else.
RANGE = (
    "tenant_id = :tenant AND property_id = :property AND search_type = 'web' "
    "AND day >= :first AND day <= :last"
)
READS = [
    (
        "by date",
        {"dimensions": "date", "sortBy": "date"},
        f"SELECT day, sum(clicks), sum(impressions), sum(position_sum) FROM seo_site_days "
        f"WHERE {RANGE} GROUP BY day ORDER BY day DESC LIMIT 100",
    ),
    (
        "top 100 queries",
        {"dimensions": "query", "limit": "100"},
        f"SELECT query, sum(clicks) AS c, sum(impressions), sum(position_sum) "
        f"FROM seo_query_days WHERE {RANGE} GROUP BY query ORDER BY c DESC LIMIT 100",
    ),
    (
        "pages containing /blog/",
        {"dimensions": "page", "pageFilter": "/blog/", "limit": "100"},
        f"SELECT page, sum(clicks) AS c, sum(impressions), sum(position_sum) "
        f"FROM seo_page_days WHERE {RANGE} AND page LIKE '%/blog/%' GROUP BY page "
        f"ORDER BY c DESC LIMIT 100",
    ),
    (
        "queries matching a regex",
        {
            "dimensions": "query",
            "queryFilter": "^(best|how) .*widget",
            "queryOperator": "regex",
            "limit": "100",
        },
        f"SELECT query, sum(clicks) AS c, sum(impressions), sum(position_sum) "
        f"FROM seo_query_days WHERE {RANGE} AND (query LIKE 'best %widget%' "
        f"OR query LIKE 'how %widget%') GROUP BY query ORDER BY c DESC LIMIT 100",
    ),
]
WORDS = ("best", "how", "buy", "cheap", "red", "blue", "widget", "gadget", "review", "guide")


# --- the data -----------------------------------------------------------------------------------


def vocabulary(rng: random.Random) -> list[str]:
    """QUERIES distinct queries of two to four words."""
    seen: dict[str, None] = {}
    while len(seen) < QUERIES:
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 4))]
        seen[" ".join(words) + f" {rng.randint(0, 9999)}"] = None
    return list(seen)


def _day_rows(
    rng: random.Random, queries: list[str], per_day: int
) -> Iterator[tuple[str, str, str, str, int, int, float]]:
    """One day's query rows: (query, page, country, device, clicks, impressions, position_sum),
    popular queries more often (a Zipf-like draw), each key once."""
    seen: set[tuple[str, str, str, str]] = set()
    while len(seen) < per_day:
        query = queries[
            min(int(rng.paretovariate(1.1)) - 1, QUERIES - 1)
            if rng.random() < 0.5
            else rng.randrange(QUERIES)
        ]
        key = (
            query,
            f"{SITE}{'blog/' if rng.random() < 0.3 else 'p/'}{rng.randrange(PAGES)}",
            rng.choice(COUNTRIES),
            rng.choice(DEVICES),
        )
        if key in seen:
            continue
        seen.add(key)
        impressions = rng.randint(1, 200)
        position = rng.uniform(1, 40)
        yield (*key, rng.randint(0, impressions // 5), impressions, position * impressions)


def days_of(count: int) -> list[date]:
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    return [yesterday - timedelta(days=offset) for offset in range(count - 1, -1, -1)]


class Writer:
    """Bulk rows into one table: executemany on SQLite, COPY on PostgreSQL."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"

    def key(self, value: uuid.UUID) -> Any:
        return value.hex if self.sqlite else value

    def day(self, value: date) -> Any:
        return value.isoformat() if self.sqlite else value

    def write(self, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            if self.sqlite:
                marks = ", ".join("?" for _ in columns.split(","))
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
            else:
                with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:  # type: ignore[attr-defined]
                    for row in rows:
                        copy.write_row(row)
            raw.commit()
        finally:
            raw.close()


def seed_property(
    writer: Writer,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    days: list[date],
    per_day: int,
    seed: int,
) -> int:
    rng = random.Random(seed)
    queries = vocabulary(rng)
    tenant, prop = writer.key(tenant_id), writer.key(property_id)
    batch: list[tuple[Any, ...]] = []
    pages: list[tuple[Any, ...]] = []
    sites: list[tuple[Any, ...]] = []
    written = 0
    for day in days:
        stored = writer.day(day)
        clicks = impressions = 0
        position_sum = 0.0
        for row in _day_rows(rng, queries, per_day):
            batch.append((tenant, prop, "web", stored, *row))
            clicks += row[4]
            impressions += row[5]
            position_sum += row[6]
        for n in range(PAGE_ROWS):
            page = f"{SITE}{'blog/' if n % 3 == 0 else 'p/'}{n // 3}"
            shown = rng.randint(10, 400)
            pages.append(
                (
                    tenant,
                    prop,
                    "web",
                    stored,
                    page,
                    rng.choice(COUNTRIES),
                    DEVICES[n % 3],
                    shown // 10,
                    shown,
                    shown * 9.5,
                )
            )
        # The site's totals hold the anonymized queries the rows miss.
        sites.append(
            (
                tenant,
                prop,
                "web",
                stored,
                int(clicks * 1.4),
                int(impressions * 1.4),
                position_sum * 1.4,
            )
        )
        if len(batch) >= BATCH:
            writer.write("seo_query_days", COLUMNS, batch)
            written += len(batch)
            batch = []
        if len(pages) >= BATCH:
            writer.write("seo_page_days", PAGE_COLUMNS, pages)
            pages = []
    for table, columns, rows in (
        ("seo_query_days", COLUMNS, batch),
        ("seo_page_days", PAGE_COLUMNS, pages),
        ("seo_site_days", SITE_COLUMNS, sites),
    ):
        if rows:
            writer.write(table, columns, rows)
    return written + len(batch)


async def make_property(database_url: str, tenant_id: uuid.UUID, last: date) -> uuid.UUID:
    db = Database(database_url)
    try:
        async with db.unit_of_work() as session:
            prop = SeoProperty(
                tenant_id=tenant_id,
                site_url=SITE,
                final_through=last,
                fresh_through=last,
                last_synced_at=datetime.now(UTC),
            )
            session.add(prop)
            await session.flush()
            session.add(
                SeoConnection(
                    tenant_id=tenant_id,
                    provider="google_search_console",
                    status="connected",
                    property_id=prop.id,
                )
            )
            return prop.id
    finally:
        await db.dispose()


async def neighbour(database_url: str, n: int) -> uuid.UUID:
    db = Database(database_url)
    try:
        async with db.unit_of_work() as session:
            org = f"org_neighbour_{n:03d}"
            return (await tenants.ensure_tenant(session, org, org)).id
    finally:
        await db.dispose()


async def finish_seed(database_url: str) -> None:
    db = Database(database_url)
    try:
        await analyze(db)
    finally:
        await db.dispose()


# --- the measures -------------------------------------------------------------------------------


def query_performance(
    client: httpx.Client,
    base: str,
    headers: dict[str, str],
    engine: Engine,
    writer: Writer,
    tenant_id: uuid.UUID,
    property_id: uuid.UUID,
    last: date,
    args: argparse.Namespace,
) -> None:
    first = last - timedelta(days=WINDOW - 1)
    window = {"startDate": first.isoformat(), "endDate": last.isoformat()}
    params = {
        "tenant": writer.key(tenant_id),
        "property": writer.key(property_id),
        "first": writer.day(first),
        "last": writer.day(last),
    }
    with engine.connect() as connection:
        rows = connection.execute(
            text(f"SELECT count(*) FROM seo_query_days WHERE {RANGE}"), params
        ).scalar_one()
    print(f"  last {WINDOW} days: {rows:,} query rows of the tenant")
    url = f"{base}/v1/seo/search-console/performance"
    for name, asked, floor_sql in READS:
        asked = {**window, **asked}
        first_answer = client.get(url, params=asked, headers=headers)
        first_answer.raise_for_status()

        def served(asked: dict[str, Any] = asked) -> None:
            client.get(url, params=asked, headers=headers).raise_for_status()

        def aggregated(floor_sql: str = floor_sql) -> None:
            with engine.connect() as connection:
                connection.execute(text(floor_sql), params).all()

        read, floor = interleaved_p95(served, aggregated, args.rounds, args.requests)
        body = first_answer.json()
        print(
            f"    {name:<26} p95 {read:9.1f} ms   floor p95 {floor:9.1f} ms   "
            f"ratio {read / floor:5.2f}x   ({body['total']:,} rows, {body['source']})",
            flush=True,
        )


def bench(sqlite: bool, postgres: str, args: argparse.Namespace) -> None:
    backend = "SQLite" if sqlite else "PostgreSQL"
    days = days_of(max(args.rows // args.per_day, WINDOW))
    print(
        f"bench/seo_sync.py queryPerformance on {backend}: {len(days) * args.per_day:,} query rows "
        f"({len(days)} days x {args.per_day:,}), {args.neighbours} neighbours of "
        f"{args.neighbour_days} days",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as scratch_dir, ExitStack() as stack:
        directory = Path(scratch_dir)
        service = own_service(stack, directory, None if sqlite else postgres, "cp_bench_seo")
        headers = dev_headers(service.env, directory, ORG, role="member")
        client = stack.enter_context(httpx.Client(timeout=600))
        me = client.get(f"{service.url}/v1/system/whoami", headers=headers)
        me.raise_for_status()
        tenant_id = uuid.UUID(me.json()["tenant_id"])
        engine = sync_engine(service.database_url)
        stack.callback(engine.dispose)
        writer = Writer(engine)
        started = time.monotonic()
        property_id = asyncio.run(make_property(service.database_url, tenant_id, days[-1]))
        written = seed_property(writer, tenant_id, property_id, days, args.per_day, seed=39)
        for n in range(args.neighbours):
            other = asyncio.run(neighbour(service.database_url, n))
            other_property = asyncio.run(make_property(service.database_url, other, days[-1]))
            seed_property(
                writer, other, other_property, days[-args.neighbour_days :], args.per_day, seed=n
            )
        asyncio.run(finish_seed(service.database_url))
        elapsed = time.monotonic() - started
        print(
            f"  seeded {written:,} query rows in {elapsed:.0f} s "
            f"({written / elapsed:,.0f} rows/s); "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        query_performance(
            client, service.url, headers, engine, writer, tenant_id, property_id, days[-1], args
        )


def backfill_half(options: list[str]) -> None:
    """The backfill's rows/s against the Google stand-in serving alone: bench/seo_backfill.py
    (the sync's own day loop and its floor), run with `options`."""
    script = Path(__file__).resolve().parent / "seo_backfill.py"
    subprocess.run([sys.executable, str(script), *options], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sqlite", action="store_true")
    parser.add_argument("--postgres", nargs="?", const=MAINTENANCE_URL, default=None)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--per-day", type=int, default=25_000)
    parser.add_argument("--neighbours", type=int, default=2)
    parser.add_argument("--neighbour-days", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--backfill", nargs=argparse.REMAINDER, default=None)
    args = parser.parse_args()
    if args.backfill is not None:
        backfill_half([option for option in args.backfill if option != "--"])
        return
    backends = []
    if args.sqlite or not args.postgres:
        backends.append(True)
    if args.postgres or not args.sqlite:
        backends.append(False)
    for sqlite in backends:
        bench(sqlite, args.postgres or MAINTENANCE_URL, args)


if __name__ == "__main__":
    main()
