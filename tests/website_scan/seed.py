"""Snapshots written straight to the database, as a finished crawl leaves them: for the tests of
what reads snapshots (pages, content, diffs, broken links, imports, the site profile) without
crawling a site first. `crawled(...)` makes a page as the crawler records one."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from contentplatform.kit.db import Database, utcnow
from contentplatform.website_scan.crawling.pages import Link, PageRecord, content_hash
from contentplatform.website_scan.crawls import repository
from contentplatform.website_scan.models import CrawlPage, CrawlRun, CrawlSnapshot


def crawled(
    url: str,
    *,
    status: int | None = 200,
    error: str | None = None,
    title: str | None = "A page",
    text: str = "Some words about compost and soil.",
    depth: int = 1,
    links: list[tuple[str, str, bool]] = (),  # type: ignore[assignment]
    headings: list[tuple[str, str]] = (),  # type: ignore[assignment]
    **fields: Any,
) -> PageRecord:
    """A page record as pages.record makes one (main text as markdown)."""
    ok = status is not None and 200 <= status < 300 and error is None
    page = PageRecord(
        url=url,
        final_url=url,
        depth=depth,
        status=status,
        error=error,
        redirect_chain=[],
        content_type="text/html; charset=utf-8",
        title=title if ok else None,
        headings=list(headings),
        links=[Link(url=u, text=t, rel="", internal=i) for u, t, i in links],
        main_text=text if ok else "",
        word_count=len(text.split()) if ok else 0,
        content_hash=content_hash(text) if ok else None,
    )
    for name, value in fields.items():
        setattr(page, name, value)
    return page


@dataclass
class Seeded:
    run_id: uuid.UUID
    snapshot_id: uuid.UUID
    page_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # url -> page id


async def seed_snapshot(
    db: Database,
    tenant_id: uuid.UUID,
    config_id: uuid.UUID,
    pages: list[PageRecord],
    *,
    partial: bool = False,
    broken: list[dict[str, Any]] = (),  # type: ignore[assignment]
    created_at: datetime | None = None,
) -> Seeded:
    """A finished run of the config and its snapshot holding `pages` (and `broken` links:
    {target_url, status_code, error, internal, occurrences: [{source_url, link_text}]})."""
    now = created_at or utcnow()
    run_id, snapshot_id = uuid.uuid4(), uuid.uuid4()
    async with db.unit_of_work() as session:
        session.add(
            CrawlRun(
                id=run_id,
                tenant_id=tenant_id,
                config_id=config_id,
                status="cancelled" if partial else "completed",
                trigger="manual",
                settings={},
                pages_discovered=len(pages),
                pages_crawled=len(pages),
                snapshot_id=snapshot_id,
                started_at=now - timedelta(seconds=5),
                finished_at=now,
                created_at=now - timedelta(seconds=5),
                updated_at=now,
            )
        )
        await session.flush()
        session.add(
            CrawlSnapshot(
                id=snapshot_id,
                tenant_id=tenant_id,
                config_id=config_id,
                crawl_run_id=run_id,
                partial=partial,
                created_at=now,
                updated_at=now,
                finished_at=now,
            )
        )
        await session.flush()
        await repository.add_pages(session, tenant_id, snapshot_id, pages, now)
        await repository.add_broken_links(session, tenant_id, snapshot_id, broken)
        snapshot = await session.get(CrawlSnapshot, snapshot_id)
        assert snapshot is not None
        pages_count, words, counts = await repository.snapshot_totals(
            session, tenant_id, snapshot_id
        )
        snapshot.page_count, snapshot.total_words, snapshot.status_counts = (
            pages_count,
            words,
            counts,
        )
        snapshot.broken_link_count = len(broken)
        rows = await repository.page_links(session, tenant_id, snapshot_id)
    seeded = Seeded(run_id, snapshot_id)
    async with db.unit_of_work() as session:
        result = await session.execute(
            select(CrawlPage.url, CrawlPage.id).where(CrawlPage.snapshot_id == snapshot_id)
        )
        seeded.page_ids = {url: page_id for url, page_id in result.tuples()}
    assert len(rows) == len(pages)
    return seeded
