"""A technical SEO audit of a large snapshot against reading the same pages' rows alone.

    .venv/bin/python bench/seo_audit.py [--pages 5000] [--rounds 2] [--sqlite | --postgres [URL]]

One tenant's website-scan snapshot of `--pages` pages is written in bulk as a crawl leaves it
(crawls/repository.add_pages): each page with a title, a description, headings, 20 internal
links (a site's navigation and related pages), JSON-LD, audit facts (images, Open Graph, Twitter,
viewport, security headers) and a time to first byte, a few in ten with something to report
(no title, a duplicate, a 404, a missing alt). Legs, interleaved `--rounds` times:

- **floor**: the audit's own streamed read of the snapshot's pages (audits/repository.py
  `snapshot_pages`, the same columns, 500 rows at a time), nothing judged;
- **audit**: the audit's work as its workflow runs it (audits/work.py: begin, evaluate every
  check while streaming, then store findings, issues and totals in one transaction), each round
  a new audit of the same snapshot (from the second on, compared with the one before: every
  finding `persisting`).

Each is printed in seconds and pages/s, the audit also as a multiple of the floor. SQLite (a
migrated temporary file) and PostgreSQL (a database made for the bench on that server, dropped
after) by default; `--sqlite` or `--postgres` for one.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, select

from contentplatform.config import Settings
from contentplatform.kit import migrations
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.audits import checks, repository, work
from contentplatform.seo.models import SeoAuditFinding, SeoAuditRun
from contentplatform.tenants import repository as tenants
from contentplatform.website_scan.crawling.pages import AuditFacts, Image, Link, PageRecord
from contentplatform.website_scan.crawls import repository as crawls
from contentplatform.website_scan.models import CrawlConfig, CrawlRun, CrawlSnapshot
from tests.support.backends import postgres_databases

SITE = "https://shop.example"
WORDS = [
    "soil",
    "compost",
    "seed",
    "spade",
    "rake",
    "mulch",
    "bloom",
    "root",
    "leaf",
    "water",
    "season",
    "harvest",
]
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def page(n: int, count: int) -> PageRecord:
    url = f"{SITE}/" if n == 0 else f"{SITE}/p/{n}"
    status = 404 if n and n % 97 == 0 else 200
    text = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(300)) + f" page {n}"
    links = [
        Link(f"{SITE}/p/{(n * 7 + k) % count or 1}", f"Related {k}", "", True) for k in range(20)
    ]
    links.append(Link(f"{SITE}/", "Home", "", True))
    record = PageRecord(
        url=url,
        final_url=url,
        depth=min(n, 1) + n % 4,
        status=status,
        error=None,
        redirect_chain=[],
        content_type="text/html; charset=utf-8",
        size=40_000,
        ttfb_ms=120 + n % 900,
    )
    if status != 200:
        return record
    record.title = None if n % 53 == 0 else f"Garden shop: a careful guide to item {n % 4000}"
    record.meta_description = f"Everything about item {n} at the garden shop: tools and seeds."
    record.canonical_url = url
    record.language = "en"
    record.headings = [("h1", f"Item {n}"), ("h2", "Care"), ("h2", "Sizes")]
    record.json_ld = [{"@context": "https://schema.org", "@type": "Product", "name": f"Item {n}"}]
    record.links = links
    record.main_text = text
    record.word_count = 301
    record.content_hash = f"{n:064x}"
    record.audit = AuditFacts(
        images=[Image(f"{SITE}/img/{n}.png", None if n % 11 == 0 else "A tool")],
        open_graph={"og:title": "x", "og:type": "product", "og:image": "x", "og:url": url},
        twitter={"twitter:card": "summary"},
        viewport="width=device-width",
        security_headers={"strict-transport-security": "max-age=1", "x-frame-options": "DENY"},
    )
    return record


async def seed(db: Database, count: int) -> tuple[uuid.UUID, uuid.UUID]:
    """(tenant, snapshot) of a finished scan of `count` pages."""
    org = f"org_bench_{uuid.uuid4().hex[:10]}"
    now = utcnow()
    async with db.unit_of_work() as session:
        tenant_id = (await tenants.ensure_tenant(session, org, org)).id
        config = CrawlConfig(
            tenant_id=tenant_id,
            name="Shop",
            start_url=f"{SITE}/",
            host="shop.example",
            include_patterns=[],
            exclude_patterns=[],
            max_pages=count,
            max_depth=10,
            respect_robots_txt=True,
            requests_per_second=2.0,
            concurrency=2,
            sitemap_mode="include",
            allow_subdomains=False,
            check_external_links=False,
            render_javascript=False,
        )
        session.add(config)
        await session.flush()
        run = CrawlRun(
            tenant_id=tenant_id,
            config_id=config.id,
            status="completed",
            trigger="manual",
            settings={},
            started_at=now - timedelta(minutes=5),
            finished_at=now,
        )
        session.add(run)
        await session.flush()
        snapshot = CrawlSnapshot(
            tenant_id=tenant_id,
            config_id=config.id,
            crawl_run_id=run.id,
            finished_at=now,
            robots_txt={"status": 200, "body": "User-agent: *\nAllow: /\n"},
            llms_txt={"status": 404},
            sitemaps={"read": [{"url": f"{SITE}/sitemap.xml", "type": "urlset"}], "listed": {}},
        )
        session.add(snapshot)
        await session.flush()
        tenant, snapshot_id = tenant_id, snapshot.id
    for start in range(0, count, 500):
        async with db.unit_of_work() as session:
            batch = [page(n, count) for n in range(start, min(count, start + 500))]
            await crawls.add_pages(session, tenant, snapshot_id, batch, now)
    return tenant, snapshot_id


async def floor(db: Database, tenant_id: uuid.UUID, snapshot_id: uuid.UUID) -> int:
    read = 0
    async with db.unit_of_work() as session:
        async for _ in repository.snapshot_pages(session, tenant_id, snapshot_id):
            read += 1
    return read


async def audit(db: Database, tenant_id: uuid.UUID, snapshot_id: uuid.UUID) -> tuple[int, int]:
    """(pages analysed, findings) of a new audit of the snapshot, run as its workflow runs it."""
    config = checks.effective({})
    async with db.unit_of_work() as session:
        snapshot = await session.get(CrawlSnapshot, snapshot_id)
        assert snapshot is not None
        row = SeoAuditRun(
            tenant_id=tenant_id,
            config_id=snapshot.config_id,
            snapshot_id=snapshot_id,
            status="queued",
            trigger="manual",
            checks_version=checks.version(config),
            checks=config,
        )
        session.add(row)
        await session.flush()
        audit_id = row.id
    async with db.unit_of_work() as session:
        assert await work.begin(session, tenant_id, audit_id)
    result = await work.evaluate(db, tenant_id, audit_id)
    async with db.unit_of_work() as session:
        await work.store(session, tenant_id, audit_id, result)
    async with db.unit_of_work() as session:
        done = await session.get(SeoAuditRun, audit_id)
        assert done is not None and done.status == "completed", done and done.status
        findings = await session.scalar(
            select(func.count()).where(SeoAuditFinding.audit_id == audit_id)
        )
        return done.pages_analyzed, int(findings or 0)


async def legs(options: argparse.Namespace, backend: str) -> None:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as directory:
        data_dir = Path(directory)
        if backend == "PostgreSQL":
            name = f"cp_bench_audit_{uuid.uuid4().hex[:8]}"
            url, _ = stack.enter_context(postgres_databases(options.postgres, name))
        else:
            url = f"sqlite:///{data_dir / 'bench.db'}"
        settings = Settings(_env_file=None, data_dir=data_dir, database_url=url)
        migrations.upgrade(settings)
        db = Database(settings.resolved_database_url)
        try:
            began = time.perf_counter()
            tenant_id, snapshot_id = await seed(db, options.pages)
            seeded = time.perf_counter() - began
            floors: list[float] = []
            audits: list[tuple[float, int, int]] = []
            for _ in range(options.rounds):
                began = time.perf_counter()
                read = await floor(db, tenant_id, snapshot_id)
                floors.append(time.perf_counter() - began)
                began = time.perf_counter()
                analysed, findings = await audit(db, tenant_id, snapshot_id)
                audits.append((time.perf_counter() - began, analysed, findings))
        finally:
            await db.dispose()
    best_floor = min(floors)
    seconds, analysed, findings = min(audits)
    print(
        f"{backend}: {options.pages:,} pages (seeded in {seeded:.1f} s), best of {options.rounds}"
    )
    print(f"  floor  {read:>7,} rows     {best_floor:7.2f} s  {read / best_floor:>9,.0f} pages/s")
    print(
        f"  audit  {analysed:>7,} pages    {seconds:7.2f} s  {analysed / seconds:>9,.0f} pages/s  "
        f"x{seconds / best_floor:.1f} of the floor  ({findings:,} findings)"
    )


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--pages", type=int, default=5000)
    args.add_argument("--rounds", type=int, default=2)
    args.add_argument("--sqlite", action="store_true", help="SQLite only")
    args.add_argument(
        "--postgres",
        nargs="?",
        const=POSTGRES,
        default=None,
        help="PostgreSQL only (a server to make the bench's database on)",
    )
    options = args.parse_args()
    backends = ["SQLite", "PostgreSQL"]
    if options.sqlite:
        backends = ["SQLite"]
    elif options.postgres:
        backends = ["PostgreSQL"]
    options.postgres = options.postgres or POSTGRES
    for backend in backends:
        asyncio.run(legs(options, backend))


if __name__ == "__main__":
    main()
