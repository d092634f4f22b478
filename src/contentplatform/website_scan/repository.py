"""Every query on crawl configurations, schedules, runs, snapshots and pages; the tenant always
comes first (the reconciler's and the scheduler's cross-tenant reads say so in their names)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, exists, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, page_of
from contentplatform.website_scan.models import (
    ACTIVE_STATUSES,
    CrawlBrokenLink,
    CrawlConfig,
    CrawlPage,
    CrawlRun,
    CrawlSchedule,
    CrawlSnapshot,
)
from contentplatform.website_scan.pages import PageRecord

NEWEST_FIRST = (CrawlConfig.created_at.desc(), CrawlConfig.id)

get_config = Owned(CrawlConfig)


def _live(tenant_id: uuid.UUID) -> Select[CrawlConfig]:
    return select(CrawlConfig).where(
        CrawlConfig.tenant_id == tenant_id, CrawlConfig.deleted_at.is_(None)
    )


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    scheduled: bool | None,
    limit: int,
    offset: int,
) -> tuple[list[CrawlConfig], int]:
    statement = _live(tenant_id)
    if search:
        needle = search.lower()
        statement = statement.where(
            or_(
                func.lower(CrawlConfig.name).contains(needle, autoescape=True),
                func.lower(CrawlConfig.start_url).contains(needle, autoescape=True),
            )
        )
    if scheduled is not None:
        enabled = exists().where(
            CrawlSchedule.tenant_id == tenant_id,
            CrawlSchedule.config_id == CrawlConfig.id,
            CrawlSchedule.deleted_at.is_(None),
            CrawlSchedule.enabled.is_(True),
        )
        statement = statement.where(enabled if scheduled else ~enabled)
    return await page_of(session, statement, *NEWEST_FIRST, limit=limit, offset=offset)


async def config_at(
    session: AsyncSession, tenant_id: uuid.UUID, start_url: str
) -> CrawlConfig | None:
    """The tenant's live config starting at `start_url` (normalized), if any."""
    statement = _live(tenant_id).where(CrawlConfig.start_url == start_url)
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def schedule_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> CrawlSchedule | None:
    """The config's live schedule, if any."""
    statement = select(CrawlSchedule).where(
        CrawlSchedule.tenant_id == tenant_id,
        CrawlSchedule.config_id == config_id,
        CrawlSchedule.deleted_at.is_(None),
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def schedules_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CrawlSchedule]:
    """The live schedules of these configs, by config id."""
    if not config_ids:
        return {}
    statement = select(CrawlSchedule).where(
        CrawlSchedule.tenant_id == tenant_id,
        CrawlSchedule.config_id.in_(config_ids),
        CrawlSchedule.deleted_at.is_(None),
    )
    return {row.config_id: row for row in (await session.execute(statement)).scalars()}


async def remove_schedule(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> bool:
    """Delete the config's live schedule; False when it had none."""
    result = await session.execute(
        delete(CrawlSchedule)
        .where(
            CrawlSchedule.tenant_id == tenant_id,
            CrawlSchedule.config_id == config_id,
            CrawlSchedule.deleted_at.is_(None),
        )
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


# --- runs -------------------------------------------------------------------------------------

get_run = Owned(CrawlRun)
get_snapshot = Owned(CrawlSnapshot)
get_page = Owned(CrawlPage)


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


async def last_runs(
    session: AsyncSession, tenant_id: uuid.UUID, config_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CrawlRun]:
    """The newest run of each of these configs, by config id."""
    if not config_ids:
        return {}
    newest = (
        select(CrawlRun.config_id, func.max(CrawlRun.created_at).label("created_at"))
        .where(CrawlRun.tenant_id == tenant_id, CrawlRun.config_id.in_(config_ids))
        .group_by(CrawlRun.config_id)
        .subquery()
    )
    statement = select(CrawlRun).join(
        newest,
        (CrawlRun.config_id == newest.c.config_id) & (CrawlRun.created_at == newest.c.created_at),
    )
    return {run.config_id: run for run in (await session.execute(statement)).scalars()}


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


async def due_schedules(session: AsyncSession, now: datetime, limit: int) -> list[CrawlSchedule]:
    """Every tenant's schedules due by `now`, oldest first, locked (others skip them)."""
    statement = (
        select(CrawlSchedule)
        .where(
            CrawlSchedule.deleted_at.is_(None),
            CrawlSchedule.next_run_at.is_not(None),
            CrawlSchedule.next_run_at <= now,
        )
        .order_by(CrawlSchedule.next_run_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(statement)).scalars())


# --- snapshots and pages -------------------------------------------------------------------------


def url_hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()


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


IDEMPOTENCY_WINDOW = timedelta(hours=24)
