"""Search Console backfill throughput: the sync storing a large property's days against a floor
that reads the same pages from the same stand-in without storing them.

    .venv/bin/python bench/seo_backfill.py [--days 14] [--rows 25000] [--rounds 2]
        [--postgres [URL]]

The Google stand-in (bench/seo_google.py) serves, from a process of its own, `--days` days of
a property with `--rows` query rows a day (2,000 pages x 5 countries x 3 devices: 6,000 page
rows) and an anonymized query. Legs, interleaved `--rounds` times on fresh tenants:

- **floor**: the same searchAnalytics.query requests the sync sends (the window's site totals
  by date in one request, then per day the pages' and the query rows, each paged by 25,000
  rows), through the same client (SearchConsoleClient, the guarded client), the answers
  parsed, nothing stored: what the stand-in and the transport cost alone;
- **backfill**: the sync's own loop (seo/search_console/durable.py `_Sync.run`), each day
  stored by repository.replace_day in its own transaction with the run's progress, on SQLite
  (a migrated temporary file) or, with `--postgres`, on a database made for the bench on that
  server (dropped after).

Rows are every row stored (site + pages + queries); rows/s and the backfill's time as a
multiple of the floor's. A full 16-month backfill of 25,000 rows a day is 486 days and ~15
million rows: pass `--days 486` for it; the default runs a fortnight and extrapolates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from contentplatform.config import Settings
from contentplatform.kit import migrations
from contentplatform.kit.db import Database
from contentplatform.seo.connections.access import SearchConsoleAccess
from contentplatform.seo.connections.google import SearchConsoleClient
from contentplatform.seo.models import SeoProperty
from contentplatform.seo.search_console import durable
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.tenants import repository as tenants
from tests.support.backends import postgres_databases

ROOT = Path(__file__).resolve().parent.parent


def serve_google(
    first: date, last: date, rows: int
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "seo_google.py"),
            "--rows",
            str(rows),
            "--first",
            first.isoformat(),
            "--last",
            last.isoformat(),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def settings_of(google: dict[str, str], database_url: str, data_dir: Path) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        database_url=database_url,
        outbound_allow_http=True,
        outbound_allow_loopback=True,
        google_webmasters_api_base=f"{google['url']}/webmasters/v3",
    )


async def floor(settings: Settings, google: dict[str, str], days: list[date]) -> int:
    """Every page the sync asks for, read and parsed, nothing stored: rows read."""
    client = SearchConsoleClient(settings, google["token"])
    read = await _read(client, google["site"], days[0], days[-1], durable.SITE)
    for day in days:
        for dimensions in (durable.PAGES, durable.QUERIES):
            read += await _read(client, google["site"], day, day, dimensions)
    return read


async def _read(
    client: SearchConsoleClient, site: str, first: date, last: date, dimensions: list[str]
) -> int:
    """One query's rows, page after page: how many."""
    read = 0
    while True:
        answer = await client.query(
            site,
            {
                "startDate": first.isoformat(),
                "endDate": last.isoformat(),
                "dimensions": dimensions,
                "type": "web",
                "dataState": "all",
                "rowLimit": durable.ROW_LIMIT,
                "startRow": read,
            },
        )
        page = answer.get("rows") or []
        read += len(page)
        if len(page) < durable.ROW_LIMIT:
            return read


async def backfill(
    db: Database, settings: Settings, google: dict[str, str], first: date, last: date
) -> int:
    """The sync's loop over the window for a new tenant and property: rows written."""
    org = f"org_bench_{uuid.uuid4().hex[:10]}"
    async with db.unit_of_work() as session:
        tenant_id = (await tenants.ensure_tenant(session, org, org)).id
        prop = SeoProperty(
            tenant_id=tenant_id, site_url=google["site"], permission_level="siteOwner"
        )
        session.add(prop)
        await session.flush()
        run, _ = await sync_runs.open_run(
            session,
            tenant_id,
            kind="search_console",
            provider="google_search_console",
            run_key=f"search_console:{prop.id}:{first}:{last}",
            trigger="manual",
            params={"start_date": first.isoformat(), "end_date": last.isoformat()},
            property_id=prop.id,
        )
        await sync_runs.mark_running(session, tenant_id, run.id)
        property_id, run_id = prop.id, run.id
    plan = durable._Plan(property_id, first, last, ["web"], ["search_analytics"])
    sync = durable._Sync(db, settings, tenant_id, run_id, plan, durable._Outcome())
    access = SearchConsoleAccess(
        client=SearchConsoleClient(settings, google["token"]),
        provider="google_search_console",
        property_id=property_id,
        site_url=google["site"],
        permission_level="siteOwner",
        read_only=False,
    )

    async def same_access() -> SearchConsoleAccess:
        return access  # the token lives for the whole bench: no connection row to refresh

    sync._access = same_access  # type: ignore[method-assign]
    await sync.run()
    async with db.unit_of_work() as session:
        return (await sync_runs.get(session, tenant_id, run_id)).rows_written


async def legs(
    options: argparse.Namespace, google: dict[str, str], first: date, last: date
) -> None:
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    with ExitStack() as stack, tempfile.TemporaryDirectory() as directory:
        data_dir = Path(directory)
        if options.postgres:
            name = f"cp_bench_seo_{uuid.uuid4().hex[:8]}"
            url, _ = stack.enter_context(postgres_databases(options.postgres, name))
        else:
            url = f"sqlite:///{data_dir / 'bench.db'}"
        settings = settings_of(google, url, data_dir)
        migrations.upgrade(settings)
        db = Database(settings.resolved_database_url)
        results: dict[str, list[tuple[int, float]]] = {"floor": [], "backfill": []}
        try:
            for _ in range(options.rounds):
                began = time.perf_counter()
                rows = await floor(settings, google, days)
                results["floor"].append((rows, time.perf_counter() - began))
                began = time.perf_counter()
                rows = await backfill(db, settings, google, first, last)
                results["backfill"].append((rows, time.perf_counter() - began))
        finally:
            await db.dispose()
    backend = "PostgreSQL" if options.postgres else "SQLite"
    print(
        f"{len(days)} days x {options.rows:,} query rows a day, {backend}, best of {options.rounds}"
    )
    best_floor = min(seconds for _, seconds in results["floor"])
    for name, runs in results.items():
        rows, seconds = min(runs, key=lambda run: run[1])
        print(
            f"  {name:9} {rows:>11,} rows  {seconds:8.2f} s  {rows / seconds:>9,.0f} rows/s  "
            f"x{seconds / best_floor:.2f} of the floor"
        )
    rows, seconds = min(results["backfill"], key=lambda run: run[1])
    full = 486 * seconds / len(days)
    print(f"  16 months (486 days) at this rate: {full / 60:.1f} min")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--days", type=int, default=14)
    args.add_argument("--rows", type=int, default=25_000, help="query rows a day")
    args.add_argument("--rounds", type=int, default=2)
    args.add_argument(
        "--postgres",
        nargs="?",
        const="postgresql://postgres@127.0.0.1:5432/test",
        default=None,
        help="a PostgreSQL server to make the bench's database on (default: a SQLite file)",
    )
    options = args.parse_args()
    last = datetime.now(UTC).date() - timedelta(days=3)
    first = last - timedelta(days=options.days - 1)
    process, google = serve_google(first, last, options.rows)
    try:
        asyncio.run(legs(options, google, first, last))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)


if __name__ == "__main__":
    main()
