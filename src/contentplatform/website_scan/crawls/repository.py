"""Every query on crawl runs and what they store (snapshots, pages, broken links); the tenant
always comes first (the reconciler's cross-tenant read says so in its name)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, cross_tenant, page_of
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.crawling.urls import url_hash
from contentplatform.website_scan.models import (
    ACTIVE_STATUSES,
    CrawlBrokenLink,
    CrawlPage,
    CrawlRun,
    CrawlSnapshot,
)

get_run = Owned(CrawlRun)


async def active_runs(session: AsyncSession, tenant_id: uuid.UUID) -> list[CrawlRun]:
    """The tenant's queued, running and cancelling runs."""
    statement = select(CrawlRun).where(
        CrawlRun.tenant_id == tenant_id, CrawlRun.status.in_(ACTIVE_STATUSES)
    )
    return list((await session.execute(statement)).scalars())


async def run_by_idempotency_key(
    session: AsyncSession, tenant_id: uuid.UUID, key: str, since: datetime
) -> CrawlRun | None:
    statement = (
        select(CrawlRun)
        .where(
            CrawlRun.tenant_id == tenant_id,
            CrawlRun.idempotency_key == key,
            CrawlRun.created_at >= since,
        )
        .order_by(CrawlRun.created_at.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def page_runs(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    config_id: uuid.UUID | None,
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[CrawlRun], int]:
    statement = select(CrawlRun).where(CrawlRun.tenant_id == tenant_id)
    if config_id is not None:
        statement = statement.where(CrawlRun.config_id == config_id)
    if status is not None:
        statement = statement.where(CrawlRun.status == status)
    return await page_of(
        session, statement, CrawlRun.created_at.desc(), CrawlRun.id, limit=limit, offset=offset
    )


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def unfinished_runs(session: AsyncSession) -> list[CrawlRun]:
    """Every tenant's active runs: what the reconciler checks."""
    statement = select(CrawlRun).where(CrawlRun.status.in_(ACTIVE_STATUSES))
    return list((await session.execute(statement)).scalars())


async def active_runs_of_config(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> list[CrawlRun]:
    statement = select(CrawlRun).where(
        CrawlRun.tenant_id == tenant_id,
        CrawlRun.config_id == config_id,
        CrawlRun.status.in_(ACTIVE_STATUSES),
    )
    return list((await session.execute(statement)).scalars())


# --- snapshots and pages -------------------------------------------------------------------------


def headings_of(page: PageRecord) -> list[list[str]]:
    return [[tag, text] for tag, text in page.headings]


def page_row(
    tenant_id: uuid.UUID, snapshot_id: uuid.UUID, page: PageRecord, fetched_at: datetime
) -> dict[str, Any]:
    """The crawl_pages row of a crawled page."""
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "snapshot_id": snapshot_id,
        "url": page.url,
        "url_hash": url_hash(page.url),
        "final_url": page.final_url,
        "status_code": page.status,
        "error": page.error,
        "error_message": None,
        "redirect_chain": list(page.redirect_chain),
        "content_type": (page.content_type or "")[:255] or None,
        "language": (page.language or "")[:35] or None,
        "title": page.title,
        "meta_description": page.meta_description,
        "canonical_url": page.canonical_url,
        "robots_meta": page.robots_meta,
        "x_robots_tag": page.x_robots_tag,
        "noindex": page.noindex,
        "headings": headings_of(page),
        "hreflang": dict(page.hreflang),
        "json_ld": list(page.json_ld),
        "links": [
            {"url": link.url, "text": link.text, "rel": link.rel, "internal": link.internal}
            for link in page.links
        ],
        "word_count": page.word_count,
        "content_hash": page.content_hash,
        "content": page.main_text or None,
        "depth": page.depth,
        "load_ms": page.load_ms,
        "ttfb_ms": page.ttfb_ms,
        "audit": None if page.audit is None else dataclasses.asdict(page.audit),
        "size_bytes": page.size,
        "fetched_at": fetched_at,
        "document_id": None,
    }


async def add_pages(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    records: Iterable[PageRecord],
    fetched_at: datetime,
) -> int:
    """Store crawled pages in the snapshot (one statement); how many."""
    rows = [page_row(tenant_id, snapshot_id, page, fetched_at) for page in records]
    if rows:
        await session.execute(insert(CrawlPage), rows)
    return len(rows)


async def page_links(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> list[tuple[str, int | None, str | None, list[dict[str, Any]]]]:
    """(url, status, error, links) of every page of the snapshot: what broken links and the
    snapshot's summary are computed from."""
    statement = select(
        CrawlPage.url, CrawlPage.status_code, CrawlPage.error, CrawlPage.links
    ).where(CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id == snapshot_id)
    return [tuple(row) for row in (await session.execute(statement)).all()]


async def snapshot_totals(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> tuple[int, int, dict[str, int]]:
    """(pages, words, pages by status class) of the snapshot."""
    statement = select(CrawlPage.status_code, CrawlPage.error, CrawlPage.word_count).where(
        CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id == snapshot_id
    )
    counts = {"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "error": 0}
    pages = words = 0
    for status, error, word_count in (await session.execute(statement)).tuples():
        pages += 1
        words += word_count
        if error is not None or status is None:
            counts["error"] += 1
        else:
            counts[f"{min(max(status // 100, 2), 5)}xx"] += 1
    return pages, words, counts


async def add_broken_links(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    links: Iterable[dict[str, Any]],
) -> int:
    """Store the snapshot's broken links ({target_url, status_code, error, internal,
    occurrences}); how many."""
    rows = [
        {"id": uuid.uuid4(), "tenant_id": tenant_id, "snapshot_id": snapshot_id, **link}
        for link in links
    ]
    if rows:
        await session.execute(insert(CrawlBrokenLink), rows)
    return len(rows)


async def purge_old_content(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID, keep: int
) -> int:
    """Drop the page content of the config's finished snapshots older than the latest `keep`
    (their metadata stays); how many snapshots were purged."""
    kept = (
        select(CrawlSnapshot.id)
        .where(
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlSnapshot.config_id == config_id,
            CrawlSnapshot.finished_at.is_not(None),
        )
        .order_by(CrawlSnapshot.created_at.desc(), CrawlSnapshot.id.desc())
        .limit(keep)
    )
    stale = select(CrawlSnapshot.id).where(
        CrawlSnapshot.tenant_id == tenant_id,
        CrawlSnapshot.config_id == config_id,
        CrawlSnapshot.finished_at.is_not(None),
        CrawlSnapshot.content_purged.is_(False),
        CrawlSnapshot.id.not_in(kept.scalar_subquery()),
    )
    ids = list((await session.execute(stale)).scalars())
    if not ids:
        return 0
    await session.execute(
        update(CrawlPage)
        .where(CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id.in_(ids))
        .values(content=None)
        .execution_options(synchronize_session=False)
    )
    await session.execute(
        update(CrawlSnapshot)
        .where(CrawlSnapshot.tenant_id == tenant_id, CrawlSnapshot.id.in_(ids))
        .values(content_purged=True)
        .execution_options(synchronize_session=False)
    )
    return len(ids)


async def keep_site_files(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    *,
    robots_txt: dict[str, Any],
    llms_txt: dict[str, Any] | None,
    sitemaps: dict[str, Any] | None,
) -> None:
    """The site's files in the snapshot; its sitemaps only when read (kept otherwise)."""
    values: dict[str, Any] = {"robots_txt": robots_txt, "llms_txt": llms_txt}
    if sitemaps is not None:
        values["sitemaps"] = sitemaps
    await session.execute(
        update(CrawlSnapshot)
        .where(CrawlSnapshot.tenant_id == tenant_id, CrawlSnapshot.id == snapshot_id)
        .values(**values)
    )
