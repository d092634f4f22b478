"""Issue 38's analytics figures: what a report costs beside the bare count under it, and an
export's pace beside the stdlib `csv` alone; and issue 43's content reads over --content-rows
daily page rows beside the bare aggregate under them.

    .venv/bin/python bench/analytics.py                  # SQLite and PostgreSQL
    .venv/bin/python bench/analytics.py --sqlite         # one of them
    .venv/bin/python bench/analytics.py --postgres [URL]
    .venv/bin/python bench/analytics.py --quick          # 100,000 rows, 10 neighbours
    # options: --rows 1000000 --neighbours 100 --neighbour-rows 1000 --requests 40 --rounds 3
    #          --content-rows 1000000 (0: no content reads)

Starts `contentplatform serve` on a database of its own (a SQLite file; on PostgreSQL, databases
it creates on the server of --postgres and drops after), and seeds in bulk one tenant with
--rows job runs (job instances of 50 jobs: 85% completed, 10% failed at one of four steps, 5%
skipped, finished over the last 365 days, each 20-600 s long) and --rows usage line items
(credit ledger debits of three kinds and three models, with tokens), beside --neighbours other
tenants holding --neighbour-rows of each; each written in the order of its time, as the service
writes them.

Then, round after round, each report is asked --requests times over HTTP, one at a time, for the
default period (the last 30 days) and for the last 365 days, interleaved with the same number of
bare `SELECT count(*)` over the rows the report reads (the tenant's runs finished in the period,
or its debits made in it), run by this process on its own connection through the index the
report uses. Prints the p95 of each beside the count's p95 and their ratio (issue 38 aims at
3x or less; HTTP, authentication and the answer's JSON are in the report's figure, not the
count's).

Last, the export: `analytics.createExport` of the automation runs over 365 days (the runs that
started in it: nearly every seeded run), timed from the request to `succeeded`, in MB/s of the
file it wrote, against this process selecting the same rows and writing them with `csv.writer`
alone.
Then content analytics (issue 43): --content-rows daily page rows of one Plausible source
(connected, synced through yesterday) over the last 365 days, four rows a page a day (its totals,
and one per channel, country and device), for CONTENT_DRAFTS published drafts and as many pages
again that are not ours; each content read (overview, day series, breakdown by channel, top
content, one draft's performance) asked as the reports are, beside a bare `sum(views)` over the
page totals of the period.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import os
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from scale_lists import analyze
from serving import dev_headers, interleaved_p95, own_service
from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import Engine, make_url

from contentplatform.analytics.models import AnalyticsPageDay, AnalyticsSource
from contentplatform.credits.models import CreditLedgerEntry as CreditLedger
from contentplatform.drafts.models import Draft
from contentplatform.job_instances.models import JobInstance
from contentplatform.jobs.models import Job
from contentplatform.kit.db import Database, utcnow
from contentplatform.publishers.models import PublishAttempt, PublisherConnection
from contentplatform.tenants import repository as tenants

MAINTENANCE_URL = "postgresql://postgres@127.0.0.1:5432/test"
TARGET = 3.0  # issue 38's aim: a report at most 3x the bare count under it
ORG = "bench"
JOBS = 50
MS = timedelta(milliseconds=1)
BATCH = 5000
STEPS = ("research", "outline", "write", "publish")
KINDS = ("generation.blog", "chat.message", "website_scan.profile")
MODELS = ("offline-writer", "gpt-4o-mini", "llama-3.1-8b")

# (name, path) of each report; `{period}` is the period's query string.
REPORTS = [
    ("automationOverview", "/v1/analytics/automation/overview?{period}"),
    ("automationTimeseries", "/v1/analytics/automation/timeseries?{period}"),
    ("failureBreakdown", "/v1/analytics/automation/failures?{period}"),
    ("jobPerformance", "/v1/analytics/automation/jobs?{period}"),
    ("aiUsageOverview", "/v1/analytics/ai-usage/overview?{period}"),
    ("aiUsageTimeseries", "/v1/analytics/ai-usage/timeseries?{period}"),
    ("aiUsageBreakdown", "/v1/analytics/ai-usage/breakdown?groupBy=model&{period}"),
]
# The bare count each report is held against: runs finished, or debits made, in [start, end).
RUNS_COUNT = (
    "SELECT count(*) FROM job_instances WHERE tenant_id = :tenant "
    "AND finished_at >= :start AND finished_at < :end"
)
USAGE_COUNT = (
    "SELECT count(*) FROM credit_ledger WHERE tenant_id = :tenant AND entry_type = 'debit' "
    "AND created_at >= :start AND created_at < :end"
)


# --- the data -----------------------------------------------------------------------------------


def _oldest_first(rng: random.Random, rows: int) -> list[float]:
    """Seconds before now over the last 365 days, oldest first: rows are written as they happen
    (a debit when it is made, a run when it finishes), so a table's order follows their time,
    as an index range read on PostgreSQL assumes (random order made each row a random read)."""
    return sorted((rng.uniform(60, 365 * 86400 - 3600) for _ in range(rows)), reverse=True)


def _runs(
    rng: random.Random, tenant_id: uuid.UUID, jobs: list[uuid.UUID], rows: int, now: datetime
) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for n, ago in enumerate(_oldest_first(rng, rows)):
        finished = now - timedelta(seconds=ago)
        started = finished - timedelta(seconds=rng.uniform(20, 600))
        roll = rng.random()
        status = "completed" if roll < 0.85 else "failed" if roll < 0.95 else "skipped"
        step = rng.choice(STEPS) if status == "failed" else None
        batch.append(
            {
                "id": uuid.uuid4(),
                "tenant_id": tenant_id,
                "job_id": jobs[n % len(jobs)],
                "scheduled_date": started,
                "day_mode": "generate",
                "images": [],
                "status": status,
                "step": step,
                "percent": 100 if status == "completed" else 50,
                "error": f"The {step} step failed: the model timed out." if step else None,
                "attempts": 1,
                "started_at": started if status != "skipped" else None,
                "finished_at": finished,
                # What the model keeps on every write of an instance (job_instances/models.py).
                "duration_ms": None if status == "skipped" else round((finished - started) / MS),
                "created_at": started,
                "updated_at": finished,
            }
        )
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _debits(
    rng: random.Random, tenant_id: uuid.UUID, rows: int, now: datetime
) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for ago in _oldest_first(rng, rows):
        made = now - timedelta(seconds=ago)
        tokens_in, tokens_out = rng.randint(200, 4000), rng.randint(100, 2000)
        batch.append(
            {
                "id": uuid.uuid4(),
                "tenant_id": tenant_id,
                "entry_type": "debit",
                "amount": -max(1, (tokens_in + tokens_out) // 1000),
                "balance_after": 0,
                "kind": rng.choice(KINDS),
                "model": rng.choice(MODELS),
                "actor_type": "system",
                "description": "bench",
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "created_at": made,
            }
        )
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def seed(database_url: str, tenant_id: uuid.UUID, rows: int, others: int, each: int) -> None:
    """The tenant's runs and debits, and `others` neighbours with `each` of both."""
    rng = random.Random(38)
    now = utcnow()
    db = Database(database_url)
    try:
        owners: list[tuple[uuid.UUID, int]] = [(tenant_id, rows)]
        async with db.unit_of_work() as session:
            for n in range(others):
                org = f"org_neighbour_{n:03d}"
                owners.append(((await tenants.ensure_tenant(session, org, org)).id, each))
        for owner, count in owners:
            jobs = [uuid.uuid4() for _ in range(JOBS)]
            async with db.unit_of_work() as session:
                await session.execute(
                    insert(Job.__table__),
                    [
                        {
                            "id": job_id,
                            "tenant_id": owner,
                            "name": f"Job {n}",
                            "job_type": "recurring",
                            "status": "active",
                            "cron_expression": "0 9 * * *",
                            "scheduled_dates": [],
                            "topics": [],
                            "topic_source": "manual",
                            "topic_cursor": 0,
                            "keywords": [],
                            "document_ids": [],
                            "auto_publish": False,
                            "created_at": now,
                            "updated_at": now,
                        }
                        for n, job_id in enumerate(jobs)
                    ],
                )
            for batch in _runs(rng, owner, jobs, count, now):
                async with db.unit_of_work() as session:
                    await session.execute(insert(JobInstance.__table__), batch)
            for batch in _debits(rng, owner, count, now):
                async with db.unit_of_work() as session:
                    await session.execute(insert(CreditLedger.__table__), batch)
        await analyze(db)
    finally:
        await db.dispose()


# --- the measures -------------------------------------------------------------------------------


def sync_engine(database_url: str) -> Engine:
    url = make_url(database_url)
    driver = "sqlite" if url.drivername.startswith("sqlite") else "postgresql+psycopg"
    return create_engine(url.set(drivername=driver))


def period_bounds(days: int) -> tuple[str, datetime, datetime]:
    """The query string of the last `days` days (the tenant's zone is UTC here) and its
    [start, end) instants."""
    today = datetime.now(UTC).date()
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(today + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return f"dateFrom={first}&dateTo={today}", start, end


def reports(
    client: httpx.Client,
    base: str,
    headers: dict[str, str],
    engine: Engine,
    tenant_id: uuid.UUID,
    rounds: int,
    requests: int,
) -> None:
    sqlite = engine.dialect.name == "sqlite"
    tenant: Any = tenant_id.hex if sqlite else tenant_id
    for days in (30, 365):
        query, start, end = period_bounds(days)
        params = {"tenant": tenant, "start": start, "end": end}
        if sqlite:  # stored as naive UTC text by the service's type
            params |= {
                "start": start.replace(tzinfo=None).isoformat(sep=" "),
                "end": end.replace(tzinfo=None).isoformat(sep=" "),
            }
        with engine.connect() as connection:
            counts = {
                "runs": connection.execute(text(RUNS_COUNT), params).scalar_one(),
                "usage": connection.execute(text(USAGE_COUNT), params).scalar_one(),
            }
        print(f"  last {days} days: {counts['runs']:,} runs, {counts['usage']:,} debits")
        for name, path in REPORTS:
            sql = RUNS_COUNT if name.startswith(("automation", "failure", "job")) else USAGE_COUNT
            url = f"{base}{path.format(period=query)}"
            if name.endswith("Timeseries") and days == 365:
                url += "&granularity=week"
            client.get(url, headers=headers).raise_for_status()  # warm

            def served(url: str = url) -> None:
                client.get(url, headers=headers).raise_for_status()

            def counted(sql: str = sql, params: dict[str, Any] = params) -> None:
                with engine.connect() as connection:
                    connection.execute(text(sql), params).scalar_one()

            report, floor = interleaved_p95(served, counted, rounds, requests)
            print(
                f"    {name:<22} p95 {report:8.2f} ms   count(*) p95 {floor:7.2f} ms   "
                f"ratio {report / floor:6.2f}x (aim {TARGET:g}x)",
                flush=True,
            )


# --- content analytics (issue 43) ---------------------------------------------------------------

CONTENT_DRAFTS = 400
CONTENT_ROWS_A_PAGE_DAY = 4
CHANNELS = ("search", "ai_assistant", "social", "direct", "referral")
COUNTRIES = ("US", "GB", "DE", "FR", "IN")
DEVICES = ("desktop", "mobile", "tablet")
CONTENT_REPORTS = [
    ("contentOverview", "/v1/analytics/content/overview?{period}"),
    ("contentTimeseries", "/v1/analytics/content/timeseries?metrics=views,visitors&{period}"),
    ("contentBreakdown", "/v1/analytics/content/breakdown?groupBy=channel&{period}"),
    ("topContent", "/v1/analytics/content/top?{period}"),
    ("draftPerformance", "/v1/analytics/content/drafts/{draft}?{period}"),
]
PAGE_SUM = (
    "SELECT sum(views) FROM analytics_page_days WHERE tenant_id = :tenant AND dimension = '' "
    "AND draft_id IS NOT NULL AND day >= :first AND day <= :last"
)


async def seed_content(database_url: str, tenant_id: uuid.UUID, rows: int) -> uuid.UUID:
    """A Plausible source, CONTENT_DRAFTS published drafts and about `rows` page rows over the
    last 365 days: the id of the first draft."""
    rng = random.Random(43)
    now = utcnow()
    today = now.date()
    pages = max(2, rows // (365 * CONTENT_ROWS_A_PAGE_DAY))
    ours = min(CONTENT_DRAFTS, pages // 2)
    db = Database(database_url)
    try:
        source_id, connection_id = uuid.uuid4(), uuid.uuid4()
        drafts = [uuid.uuid4() for _ in range(ours)]
        async with db.unit_of_work() as session:
            await session.execute(
                insert(AnalyticsSource.__table__),
                [
                    {
                        "id": source_id,
                        "tenant_id": tenant_id,
                        "provider": "plausible",
                        "property": "bench.example",
                        "status": "connected",
                        "config": {},
                        "lag_days": 0,
                        "data_through": today - timedelta(days=1),
                        "sync_status": "succeeded",
                        "missing_days": [],
                        "created_at": now,
                        "updated_at": now,
                    }
                ],
            )
            await session.execute(
                insert(PublisherConnection.__table__),
                [
                    {
                        "id": connection_id,
                        "tenant_id": tenant_id,
                        "name": "Bench blog",
                        "type": "wordpress",
                        "config": {},
                        "status": "active",
                        "is_default": False,
                        "capabilities": [],
                        "created_at": now,
                        "updated_at": now,
                    }
                ],
            )
            published = now - timedelta(days=400)
            await session.execute(
                insert(Draft.__table__),
                [
                    {
                        "id": draft_id,
                        "tenant_id": tenant_id,
                        "title": f"Post {n}",
                        "content": "<p>bench</p>",
                        "content_text": "bench",
                        "seo_meta": {},
                        "seo_score": rng.randint(40, 95),
                        "status": "published",
                        "provenance": {},
                        "version": 1,
                        "published_at": published,
                        "published_url": f"https://bench.example/post-{n}",
                        "created_at": published,
                        "updated_at": published,
                    }
                    for n, draft_id in enumerate(drafts)
                ],
            )
            await session.execute(
                insert(PublishAttempt.__table__),
                [
                    {
                        "id": uuid.uuid4(),
                        "tenant_id": tenant_id,
                        "draft_id": draft_id,
                        "connection_id": connection_id,
                        "mode": "publish",
                        "status": "succeeded",
                        "tries": 1,
                        "draft_version": 1,
                        "external_url": f"https://bench.example/post-{n}",
                        "triggered_by": "user",
                        "finished_at": published,
                        "created_at": published,
                        "updated_at": published,
                    }
                    for n, draft_id in enumerate(drafts)
                ],
            )
        batch: list[dict[str, Any]] = []
        for ago in range(365, 0, -1):
            day = today - timedelta(days=ago)
            for page in range(pages):
                draft = drafts[page] if page < ours else None
                url = f"https://bench.example/{'post' if draft else 'other'}-{page}"
                views = rng.randint(0, 200)
                common = {
                    "tenant_id": tenant_id,
                    "source_id": source_id,
                    "day": day,
                    "url": url,
                    "draft_id": draft,
                    "visitors": views * 4 // 5,
                }
                for dimension, value in (
                    ("", ""),
                    ("channel", rng.choice(CHANNELS)),
                    ("country", rng.choice(COUNTRIES)),
                    ("device", rng.choice(DEVICES)),
                ):
                    batch.append({**common, "dimension": dimension, "value": value, "views": views})
                if len(batch) >= BATCH:
                    async with db.unit_of_work() as session:
                        await session.execute(insert(AnalyticsPageDay.__table__), batch)
                    batch = []
        if batch:
            async with db.unit_of_work() as session:
                await session.execute(insert(AnalyticsPageDay.__table__), batch)
        await analyze(db)
        return drafts[0]
    finally:
        await db.dispose()


def content_reports(
    client: httpx.Client,
    base: str,
    headers: dict[str, str],
    engine: Engine,
    tenant_id: uuid.UUID,
    draft_id: uuid.UUID,
    rounds: int,
    requests: int,
) -> None:
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT count(*) FROM analytics_page_days")).scalar_one()
    print(f"  content: {rows:,} daily page rows")
    for days in (30, 365):
        query, start, end = period_bounds(days)
        first, last = start.date(), end.date() - timedelta(days=1)
        params: dict[str, Any] = {
            "tenant": tenant_id.hex if sqlite else tenant_id,
            "first": first.isoformat() if sqlite else first,
            "last": last.isoformat() if sqlite else last,
        }
        print(f"  last {days} days:")
        for name, path in CONTENT_REPORTS:
            url = f"{base}{path.format(period=query, draft=draft_id)}"
            if days == 365 and name in ("contentTimeseries", "draftPerformance"):
                url += "&granularity=week"
            client.get(url, headers=headers).raise_for_status()  # warm

            def served(url: str = url) -> None:
                client.get(url, headers=headers).raise_for_status()

            def summed(params: dict[str, Any] = params) -> None:
                with engine.connect() as connection:
                    connection.execute(text(PAGE_SUM), params).scalar_one()

            report, floor = interleaved_p95(served, summed, rounds, requests)
            print(
                f"    {name:<22} p95 {report:8.2f} ms   sum(views) p95 {floor:7.2f} ms   "
                f"ratio {report / floor:6.2f}x",
                flush=True,
            )


def export(
    client: httpx.Client, base: str, headers: dict[str, str], engine: Engine, tenant_id: uuid.UUID
) -> None:
    today = datetime.now(UTC).date()
    first = today - timedelta(days=364)
    started = time.perf_counter()
    made = client.post(
        f"{base}/v1/analytics/exports",
        headers=headers,
        json={"report": "automation_runs", "dateFrom": str(first), "dateTo": str(today)},
    )
    made.raise_for_status()
    export_id = made.json()["id"]
    while True:
        job = client.get(f"{base}/v1/analytics/exports/{export_id}", headers=headers).json()
        if job["status"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    elapsed = time.perf_counter() - started
    if job["status"] != "succeeded":
        print(f"  export {job['status']}: {job.get('error')}")
        return
    megabytes = job["bytes"] / 1e6
    print(
        f"  export: {job['row_count']:,} rows, {megabytes:.1f} MB in {elapsed:.1f} s: "
        f"{megabytes / elapsed:.2f} MB/s"
    )
    sqlite = engine.dialect.name == "sqlite"
    start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(today + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    params: dict[str, Any] = {"tenant": tenant_id.hex if sqlite else tenant_id}
    params |= (
        {
            "start": start.replace(tzinfo=None).isoformat(sep=" "),
            "end": end.replace(tzinfo=None).isoformat(sep=" "),
        }
        if sqlite
        else {"start": start, "end": end}
    )
    started = time.perf_counter()
    sink = io.StringIO()
    writer = csv.writer(sink)
    written = 0
    with engine.connect() as connection:
        result = connection.execution_options(stream_results=True).execute(
            text(
                "SELECT id, job_id, status, step, started_at, finished_at, error "
                "FROM job_instances WHERE tenant_id = :tenant AND started_at >= :start "
                "AND started_at < :end ORDER BY started_at, id"
            ),
            params,
        )
        for partition in result.partitions(BATCH):
            writer.writerows(partition)
            written += len(partition)
            sink.seek(0)
            sink.truncate()
    floor = time.perf_counter() - started
    print(
        f"  floor (SELECT + csv.writer): {written:,} rows in {floor:.1f} s; the export took "
        f"{elapsed / floor:.2f}x its time"
    )


def bench(sqlite: bool, postgres: str, args: argparse.Namespace) -> None:
    backend = "SQLite" if sqlite else "PostgreSQL"
    print(
        f"bench/analytics.py on {backend}: {args.rows:,} runs and debits, "
        f"{args.neighbours} neighbours of {args.neighbour_rows:,}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as scratch_dir, ExitStack() as stack:
        directory = Path(scratch_dir)
        service = own_service(stack, directory, None if sqlite else postgres, "cp_bench_analytics")
        base, env, database_url = service.url, service.env, service.database_url
        headers = dev_headers(env, directory, ORG, role="admin")
        client = stack.enter_context(httpx.Client(timeout=600))
        me = client.get(f"{base}/v1/system/whoami", headers=headers)
        me.raise_for_status()
        tenant_id = uuid.UUID(me.json()["tenant_id"])
        started = time.monotonic()
        asyncio.run(seed(database_url, tenant_id, args.rows, args.neighbours, args.neighbour_rows))
        print(f"  seeded in {time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.2f}")
        engine = sync_engine(database_url)
        try:
            reports(client, base, headers, engine, tenant_id, args.rounds, args.requests)
            export(client, base, headers, engine, tenant_id)
            if args.content_rows:
                started = time.monotonic()
                draft_id = asyncio.run(seed_content(database_url, tenant_id, args.content_rows))
                print(f"  content seeded in {time.monotonic() - started:.0f} s")
                content_reports(
                    client, base, headers, engine, tenant_id, draft_id, args.rounds, args.requests
                )
        finally:
            engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sqlite", action="store_true")
    parser.add_argument("--postgres", nargs="?", const=MAINTENANCE_URL, default=None)
    parser.add_argument("--quick", action="store_true", help="100,000 rows, 10 neighbours")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--neighbours", type=int, default=100)
    parser.add_argument("--neighbour-rows", type=int, default=1000)
    parser.add_argument("--content-rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    if args.quick:
        args.rows, args.neighbours, args.rounds = 100_000, 10, 2
        args.content_rows = 100_000
    backends = []
    if args.sqlite or not args.postgres:
        backends.append(True)
    if args.postgres or not args.sqlite:
        backends.append(False)
    for sqlite in backends:
        bench(sqlite, args.postgres or MAINTENANCE_URL, args)


if __name__ == "__main__":
    main()
