"""Every query the snapshot reads make (snapshots, pages, diffs, broken links); the tenant always
comes first. Only finished snapshots (`finished_at` set) and their pages are ever found: a
running crawl's snapshot is not there yet. Pages' content is read by one query only (the page's
content); lists and diffs select the columns they show."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Collection, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from contentplatform.kit.db import counts_by, page_of, plain
from contentplatform.website_scan.models import (
    CrawlBrokenLink,
    CrawlConfig,
    CrawlPage,
    CrawlSnapshot,
)

# Rows a streamed read holds at once, and keys an IN (...) names at once (far below any
# database's limit on bound parameters).
_BATCH = 500

# (url_hash, url, id, content_hash, title, meta_description, canonical_url, status_code,
# headings): what a diff compares of a page.
DiffRow = tuple[
    str, str, uuid.UUID, str | None, str | None, str | None, str | None, int | None, Any
]


def _chunks(values: Iterable[str]) -> Iterable[list[str]]:
    batch: list[str] = []
    for value in values:
        batch.append(value)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# --- snapshots --------------------------------------------------------------------------------


def _finished(tenant_id: uuid.UUID) -> Select[CrawlSnapshot]:
    return select(CrawlSnapshot).where(
        CrawlSnapshot.tenant_id == tenant_id, CrawlSnapshot.finished_at.is_not(None)
    )


async def finished_snapshot(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> CrawlSnapshot | None:
    """The tenant's snapshot, once its run has finished."""
    statement = _finished(tenant_id).where(CrawlSnapshot.id == snapshot_id)
    return (await session.execute(statement)).scalar_one_or_none()


async def page_snapshots(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    config_id: uuid.UUID | None,
    include_partial: bool,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Finished snapshots, newest first, as column dicts."""
    statement = _finished(tenant_id)
    if config_id is not None:
        statement = statement.where(CrawlSnapshot.config_id == config_id)
    if not include_partial:
        statement = statement.where(CrawlSnapshot.partial.is_(False))
    return await page_of(
        session,
        plain(statement),
        CrawlSnapshot.created_at.desc(),
        CrawlSnapshot.id.desc(),
        limit=limit,
        offset=offset,
    )


async def previous_snapshot_id(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot: CrawlSnapshot
) -> uuid.UUID | None:
    """The config's finished, non-partial snapshot just before `snapshot` (by created_at, then
    id, the order snapshots are listed in), if any."""
    earlier = or_(
        CrawlSnapshot.created_at < snapshot.created_at,
        and_(CrawlSnapshot.created_at == snapshot.created_at, CrawlSnapshot.id < snapshot.id),
    )
    statement = (
        select(CrawlSnapshot.id)
        .where(
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlSnapshot.config_id == snapshot.config_id,
            CrawlSnapshot.finished_at.is_not(None),
            CrawlSnapshot.partial.is_(False),
            earlier,
        )
        .order_by(CrawlSnapshot.created_at.desc(), CrawlSnapshot.id.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def finished_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[CrawlSnapshot]:
    """The newest `limit` finished, non-partial snapshots that finished in [start, end)."""
    statement = (
        _finished(tenant_id)
        .where(
            CrawlSnapshot.partial.is_(False),
            CrawlSnapshot.finished_at >= start,
            CrawlSnapshot.finished_at < end,
        )
        .order_by(CrawlSnapshot.finished_at.desc(), CrawlSnapshot.id.desc())
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


async def latest_complete(
    session: AsyncSession, tenant_id: uuid.UUID
) -> list[tuple[CrawlSnapshot, str]]:
    """Each live configuration's newest finished, non-partial snapshot, with the
    configuration's start URL."""
    newest = (
        select(
            CrawlSnapshot.id,
            func.row_number()
            .over(
                partition_by=CrawlSnapshot.config_id,
                order_by=(CrawlSnapshot.finished_at.desc(), CrawlSnapshot.id.desc()),
            )
            .label("rank"),
        )
        .where(
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlSnapshot.finished_at.is_not(None),
            CrawlSnapshot.partial.is_(False),
        )
        .subquery()
    )
    statement = (
        select(CrawlSnapshot, CrawlConfig.start_url)
        .join(newest, and_(newest.c.id == CrawlSnapshot.id, newest.c.rank == 1))
        .join(CrawlConfig, CrawlConfig.id == CrawlSnapshot.config_id)
        .where(
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlConfig.tenant_id == tenant_id,
            CrawlConfig.deleted_at.is_(None),
        )
        .order_by(CrawlSnapshot.finished_at.desc())
    )
    return [(snapshot, start) for snapshot, start in (await session.execute(statement)).tuples()]


async def start_url_of(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> str | None:
    """The configuration's start URL (a deleted configuration's too: its snapshots remain)."""
    statement = select(CrawlConfig.start_url).where(
        CrawlConfig.tenant_id == tenant_id, CrawlConfig.id == config_id
    )
    return (await session.execute(statement)).scalar_one_or_none()


# --- pages ------------------------------------------------------------------------------------

# Typed loosely: `page_of` then returns the rows as dicts.
_SUMMARY_COLUMNS: tuple[Any, ...] = (
    CrawlPage.id,
    CrawlPage.url,
    CrawlPage.status_code,
    CrawlPage.title,
    CrawlPage.meta_description,
    CrawlPage.canonical_url,
    CrawlPage.word_count,
    CrawlPage.depth,
    CrawlPage.content_hash,
    CrawlPage.document_id,
)
_SORTS = {
    "url": CrawlPage.url,
    "word_count": CrawlPage.word_count,
    "status_code": CrawlPage.status_code,
    "depth": CrawlPage.depth,
}


def _status_class(status_class: str) -> ColumnElement[bool]:
    """The pages of a status class, as the snapshot's `status_counts` counts them: a page with
    an error or no status is `error`; below 300 is 2xx, 500 and above 5xx."""
    if status_class == "error":
        return or_(CrawlPage.error.is_not(None), CrawlPage.status_code.is_(None))
    answered = and_(CrawlPage.error.is_(None), CrawlPage.status_code.is_not(None))
    hundreds = int(status_class[0]) * 100
    if hundreds > 200:
        answered = and_(answered, CrawlPage.status_code >= hundreds)
    if hundreds < 500:
        answered = and_(answered, CrawlPage.status_code < hundreds + 100)
    return answered


async def page_pages(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    *,
    search: str | None,
    status_class: str | None,
    imported: bool | None,
    min_words: int | None,
    sort_by: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """The snapshot's pages (summary columns only) in the order asked, then by URL; pages
    without a status come last either way."""
    statement = select(*_SUMMARY_COLUMNS).where(
        CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id == snapshot_id
    )
    if search:
        needle = search.lower()
        statement = statement.where(
            or_(
                func.lower(CrawlPage.url).contains(needle, autoescape=True),
                func.lower(func.coalesce(CrawlPage.title, "")).contains(needle, autoescape=True),
            )
        )
    if status_class is not None:
        statement = statement.where(_status_class(status_class))
    if imported is not None:
        statement = statement.where(
            CrawlPage.document_id.is_not(None) if imported else CrawlPage.document_id.is_(None)
        )
    if min_words is not None:
        statement = statement.where(CrawlPage.word_count >= min_words)
    column = _SORTS[sort_by]
    order = (column.desc() if descending else column.asc()).nulls_last()
    return await page_of(
        session, statement, order, CrawlPage.url, CrawlPage.id, limit=limit, offset=offset
    )


async def finished_page(
    session: AsyncSession, tenant_id: uuid.UUID, page_id: uuid.UUID, *, content: bool = False
) -> tuple[CrawlPage, CrawlSnapshot] | None:
    """The tenant's page and its snapshot, once the snapshot is finished; its content is read
    only when asked for (`content`)."""
    statement = (
        select(CrawlPage, CrawlSnapshot)
        .join(CrawlSnapshot, CrawlSnapshot.id == CrawlPage.snapshot_id)
        .where(
            CrawlPage.tenant_id == tenant_id,
            CrawlPage.id == page_id,
            CrawlSnapshot.tenant_id == tenant_id,
            CrawlSnapshot.finished_at.is_not(None),
        )
    )
    if not content:
        statement = statement.options(defer(CrawlPage.content, raiseload=True))
    row = (await session.execute(statement)).tuples().one_or_none()
    return None if row is None else (row[0], row[1])


async def pages_by_hash(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID, hashes: Collection[str]
) -> dict[str, tuple[uuid.UUID, int | None]]:
    """(id, status_code) of the snapshot's pages with these URL hashes, by hash."""
    found: dict[str, tuple[uuid.UUID, int | None]] = {}
    for batch in _chunks(set(hashes)):
        statement = select(CrawlPage.url_hash, CrawlPage.id, CrawlPage.status_code).where(
            CrawlPage.tenant_id == tenant_id,
            CrawlPage.snapshot_id == snapshot_id,
            CrawlPage.url_hash.in_(batch),
        )
        for url_hash, page_id, status in (await session.execute(statement)).tuples():
            found[url_hash] = (page_id, status)
    return found


async def text_rows(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> AsyncIterator[Any]:
    """What reading a page's text needs, with its indexability, of each of the snapshot's
    pages, streamed (the content included: the only read of many pages' content)."""
    async for row in _streamed(
        session,
        tenant_id,
        snapshot_id,
        CrawlPage.id,
        CrawlPage.url,
        CrawlPage.title,
        CrawlPage.meta_description,
        CrawlPage.status_code,
        CrawlPage.noindex,
        CrawlPage.canonical_url,
        CrawlPage.content_type,
        CrawlPage.depth,
        CrawlPage.headings,
        CrawlPage.json_ld,
        CrawlPage.links,
        CrawlPage.content,
        CrawlPage.word_count,
    ):
        yield row


async def indexing_rows(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> AsyncIterator[tuple[str, int | None, bool, str | None, str | None]]:
    """(url, status, noindex, canonical, content type) of each of the snapshot's pages."""
    async for row in _streamed(
        session,
        tenant_id,
        snapshot_id,
        CrawlPage.url,
        CrawlPage.status_code,
        CrawlPage.noindex,
        CrawlPage.canonical_url,
        CrawlPage.content_type,
    ):
        yield row.tuple()


async def diff_rows(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    hashes: Collection[str] | None = None,
) -> AsyncIterator[DiffRow]:
    """What a diff compares of each of the snapshot's pages (of those with these URL hashes
    when given), streamed (never the content)."""
    async for row in _streamed(
        session,
        tenant_id,
        snapshot_id,
        CrawlPage.url_hash,
        CrawlPage.url,
        CrawlPage.id,
        CrawlPage.content_hash,
        CrawlPage.title,
        CrawlPage.meta_description,
        CrawlPage.canonical_url,
        CrawlPage.status_code,
        CrawlPage.headings,
        where=None if hashes is None else CrawlPage.url_hash.in_(sorted(hashes)),
    ):
        yield row.tuple()


async def _streamed(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    *columns: Any,
    where: ColumnElement[bool] | None = None,
) -> AsyncIterator[Any]:
    """These columns of the snapshot's pages (those `where` keeps), _BATCH rows at a time."""
    statement = select(*columns).where(
        CrawlPage.tenant_id == tenant_id, CrawlPage.snapshot_id == snapshot_id
    )
    if where is not None:
        statement = statement.where(where)
    result = await session.stream(statement.execution_options(yield_per=_BATCH))
    async for row in result:
        yield row


# --- broken links -----------------------------------------------------------------------------


async def broken_statuses(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    targets: Collection[str],
    *,
    internal: bool,
) -> dict[str, int | None]:
    """The status of each of these targets the snapshot found broken, by target URL."""
    found: dict[str, int | None] = {}
    for batch in _chunks(set(targets)):
        statement = select(CrawlBrokenLink.target_url, CrawlBrokenLink.status_code).where(
            CrawlBrokenLink.tenant_id == tenant_id,
            CrawlBrokenLink.snapshot_id == snapshot_id,
            CrawlBrokenLink.internal.is_(internal),
            CrawlBrokenLink.target_url.in_(batch),
        )
        for target, status in (await session.execute(statement)).tuples():
            found[target] = status
    return found


async def page_broken_links(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    snapshot_id: uuid.UUID,
    *,
    internal: bool | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """The snapshot's broken links (internal, external or both) by target URL."""
    statement = select(CrawlBrokenLink).where(
        CrawlBrokenLink.tenant_id == tenant_id, CrawlBrokenLink.snapshot_id == snapshot_id
    )
    if internal is not None:
        statement = statement.where(CrawlBrokenLink.internal.is_(internal))
    return await page_of(
        session,
        plain(statement),
        CrawlBrokenLink.target_url,
        CrawlBrokenLink.id,
        limit=limit,
        offset=offset,
    )


async def broken_link_counts(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> dict[bool, int]:
    """How many of the snapshot's broken links are internal (True) and external (False)."""
    counts: dict[Any, int] = await counts_by(
        session,
        CrawlBrokenLink.internal,
        CrawlBrokenLink.tenant_id == tenant_id,
        CrawlBrokenLink.snapshot_id == snapshot_id,
    )
    return {bool(internal): count for internal, count in counts.items()}


async def broken_link_occurrences(
    session: AsyncSession, tenant_id: uuid.UUID, snapshot_id: uuid.UUID
) -> AsyncIterator[list[dict[str, str]]]:
    """The occurrences ({source_url, link_text} each) of every broken link of the snapshot,
    streamed."""
    statement = select(CrawlBrokenLink.occurrences).where(
        CrawlBrokenLink.tenant_id == tenant_id, CrawlBrokenLink.snapshot_id == snapshot_id
    )
    result = await session.stream(statement.execution_options(yield_per=_BATCH))
    async for occurrences in result.scalars():
        yield occurrences
