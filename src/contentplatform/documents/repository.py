"""Every query on documents; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import ColumnElement, Select, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents.models import Document, DocumentCount
from contentplatform.documents.schemas import ListDocumentsInput
from contentplatform.kit.db import Owned, cross_tenant, page_of


def _live(tenant_id: uuid.UUID) -> Select[Document]:
    return select(Document).where(Document.tenant_id == tenant_id, Document.deleted_at.is_(None))


get = Owned(Document)


async def by_storage_path(
    session: AsyncSession, tenant_id: uuid.UUID, storage_path: str
) -> Document | None:
    result = await session.execute(_live(tenant_id).where(Document.storage_path == storage_path))
    return result.scalar_one_or_none()


async def by_content_hash_or_storage_path(
    session: AsyncSession, tenant_id: uuid.UUID, content_hash: str, storage_path: str
) -> tuple[Document | None, Document | None]:
    """In one query (confirming an upload asks both): the earliest live document with this
    content, and the live document at this storagePath."""
    result = await session.execute(
        _live(tenant_id)
        .where(or_(Document.content_hash == content_hash, Document.storage_path == storage_path))
        .order_by(Document.created_at)
    )
    found = list(result.scalars())
    same_content = next((d for d in found if d.content_hash == content_hash), None)
    at_path = next((d for d in found if d.storage_path == storage_path), None)
    return same_content, at_path


async def imported_from(
    session: AsyncSession, tenant_id: uuid.UUID, source: str, url: str
) -> Document | None:
    """The live document of `source` imported from the page at `url` (`source_metadata.url`),
    the newest when there are several."""
    statement = (
        _live(tenant_id)
        .where(Document.source == source, Document.source_metadata["url"].as_string() == url)
        .order_by(Document.created_at.desc(), Document.id)
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def imported_hashes(
    session: AsyncSession, tenant_id: uuid.UUID, source: str
) -> dict[str, str | None]:
    """The content hash of each live document of `source`, by the URL it was imported from."""
    url = Document.source_metadata["url"].as_string()
    statement = select(url, Document.content_hash).where(
        Document.tenant_id == tenant_id,
        Document.deleted_at.is_(None),
        Document.source == source,
    )
    return {found: digest for found, digest in (await session.execute(statement)).tuples() if found}


async def imported_under_key(
    session: AsyncSession, tenant_id: uuid.UUID, source: str, key: str
) -> list[Document]:
    """The live documents of `source` whose latest import had the idempotency key `key`
    (`source_metadata.import_key`)."""
    statement = _live(tenant_id).where(
        Document.source == source, Document.source_metadata["import_key"].as_string() == key
    )
    return list((await session.execute(statement)).scalars())


async def web_pages(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> list[Document]:
    """The tenant's newest ready pages imported by the website scan."""
    statement = (
        _live(tenant_id)
        .where(Document.source == "website_scan", Document.status == "ready")
        .order_by(Document.created_at.desc(), Document.id)
        .limit(limit)
    )
    return list((await session.scalars(statement)).all())


async def ready_knowledge(
    session: AsyncSession, tenant_id: uuid.UUID, document_ids: list[uuid.UUID] | None, limit: int
) -> list[Document]:
    """The tenant's ready documents that are not archived (of `document_ids` when given), the
    primary first, then the newest."""
    statement = _live(tenant_id).where(Document.status == "ready", Document.archived_at.is_(None))
    if document_ids is not None:
        statement = statement.where(Document.id.in_(document_ids))
    statement = statement.order_by(
        Document.is_primary.desc(), Document.created_at.desc(), Document.id
    ).limit(limit)
    return list((await session.scalars(statement)).all())


async def primary(session: AsyncSession, tenant_id: uuid.UUID) -> Document | None:
    result = await session.execute(_live(tenant_id).where(Document.is_primary.is_(True)))
    return result.scalar_one_or_none()


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, query: ListDocumentsInput
) -> tuple[list[Document], int]:
    statement = _live(tenant_id)
    if query.status != "all":
        statement = statement.where(Document.status == query.status)
    if query.file_type != "all":
        statement = statement.where(Document.file_type == query.file_type)
    if query.source != "all":
        statement = statement.where(Document.source == query.source)
    if query.archived == "exclude":
        statement = statement.where(Document.archived_at.is_(None))
    elif query.archived == "only":
        statement = statement.where(Document.archived_at.is_not(None))
    if query.search:
        statement = statement.where(_matches(session, query.search))
    column = Document.filename if query.sort_by == "filename" else Document.created_at
    ordering = column.asc() if query.sort_order == "asc" else column.desc()
    return await page_of(
        session,
        statement,
        ordering,
        Document.id,
        limit=query.limit,
        offset=query.offset,
        total=_counted(tenant_id, query),
    )


def _counted(tenant_id: uuid.UUID, query: ListDocumentsInput) -> Select[int] | None:
    """The list's total from the maintained counts, when its filters are the counts' buckets
    (status, archived); None when it must be counted."""
    if query.search or query.file_type != "all" or query.source != "all":
        return None
    total = select(func.coalesce(func.sum(DocumentCount.live), 0)).where(
        DocumentCount.tenant_id == tenant_id
    )
    if query.status != "all":
        total = total.where(DocumentCount.status == query.status)
    if query.archived != "include":
        total = total.where(DocumentCount.archived.is_(query.archived == "only"))
    return total


def _matches(session: AsyncSession, search: str) -> ColumnElement[bool]:
    """The filename, the knowledge description or one of the tags holds `search`, ignoring
    case. Each tag is read on its own from the JSON, so nothing matches its punctuation."""
    needle = search.lower()
    description = Document.source_metadata[("knowledge", "description")].as_string()
    tag: ColumnElement[str]
    if session.get_bind().dialect.name == "sqlite":
        tag = (
            func.json_each(Document.source_metadata, "$.knowledge.tags")
            .table_valued("value")
            .c.value
        )
    else:
        tags = Document.source_metadata[("knowledge", "tags")]
        tag = func.json_array_elements_text(tags).column_valued("tag")
    return or_(
        func.lower(Document.filename).contains(needle, autoescape=True),
        func.lower(description).contains(needle, autoescape=True),
        exists().where(func.lower(tag).contains(needle, autoescape=True)),
    )


async def footprint(session: AsyncSession, tenant_id: uuid.UUID) -> tuple[int, int]:
    """How many live documents the tenant has (archived ones too), and their bytes."""
    row = (
        await session.execute(
            select(func.count(), func.coalesce(func.sum(Document.size_bytes), 0)).where(
                Document.tenant_id == tenant_id, Document.deleted_at.is_(None)
            )
        )
    ).one()
    return int(row[0]), int(row[1] or 0)


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    """The tenant's live documents that are not archived, by status."""
    result = await session.execute(
        select(DocumentCount.status, DocumentCount.live).where(
            DocumentCount.tenant_id == tenant_id, DocumentCount.archived.is_(False)
        )
    )
    return {status: count for status, count in result.tuples()}


async def soft_delete_many(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID], now: datetime
) -> list[uuid.UUID]:
    result = await session.execute(
        update(Document)
        .where(
            Document.tenant_id == tenant_id,
            Document.id.in_(ids),
            Document.deleted_at.is_(None),
        )
        .values(deleted_at=now, is_primary=False, updated_at=now)
        .returning(Document.id)
    )
    return list(result.scalars())


class Ingestion(NamedTuple):
    """Where a document's ingestion stands, and where its uploaded file is."""

    status: str
    document_version: int
    ingest_attempt: int
    storage_path: str
    file_type: str


async def ingestion(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID
) -> Ingestion | None:
    """The live document's ingestion, read without loading the document."""
    result = await session.execute(
        select(*(getattr(Document, name) for name in Ingestion._fields)).where(
            Document.tenant_id == tenant_id,
            Document.id == document_id,
            Document.deleted_at.is_(None),
        )
    )
    row = result.one_or_none()
    return None if row is None else Ingestion(*row)


def _ingesting(
    tenant_id: uuid.UUID, document_id: uuid.UUID, version: int, attempt: int
) -> tuple[ColumnElement[bool], ...]:
    """The live document at this version and ingestion attempt."""
    return (
        Document.tenant_id == tenant_id,
        Document.id == document_id,
        Document.deleted_at.is_(None),
        Document.document_version == version,
        Document.ingest_attempt == attempt,
    )


async def mark_processing(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    now: datetime,
) -> bool:
    """The document, pending at this version and attempt, is processing from `now`; whether
    it was."""
    result = await session.execute(
        update(Document)
        .where(*_ingesting(tenant_id, document_id, version, attempt), Document.status == "pending")
        .values(status="processing", error=None, ingest_started_at=now)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def mark_ready(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    attempt: int,
    *,
    chunk_count: int,
    text_path: str,
) -> str | None:
    """The document, still processing at this version and attempt, is ready: its filename (for
    the event that says so), or None when it was not processing (nothing was written)."""
    result = await session.execute(
        update(Document)
        .where(
            *_ingesting(tenant_id, document_id, version, attempt), Document.status == "processing"
        )
        .values(status="ready", error=None, chunk_count=chunk_count, text_path=text_path)
        .returning(Document.filename)
        .execution_options(synchronize_session=False)
    )
    return result.scalar_one_or_none()


@cross_tenant("the reconciler's sweep of every tenant's unfinished work")
async def unfinished_ingestions(session: AsyncSession) -> list[Document]:
    """Confirmed documents whose ingestion has not ended, across tenants (for the reconciler)."""
    result = await session.execute(
        select(Document).where(
            Document.deleted_at.is_(None),
            Document.status.in_(("pending", "processing")),
            Document.ingest_reservation_id.is_not(None),
        )
    )
    return list(result.scalars())


async def record_use(
    session: AsyncSession, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID], now: datetime
) -> None:
    if not ids:
        return
    await session.execute(
        update(Document)
        .where(Document.tenant_id == tenant_id, Document.id.in_(ids))
        .values(generation_count=Document.generation_count + 1, last_used_at=now)
    )


@cross_tenant("the sweep of every tenant's uploads never made")
async def fail_never_uploaded(
    session: AsyncSession, registered_before: datetime, reason: str, now: datetime
) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
    """Across tenants: fail with `reason` the live documents registered before
    `registered_before` whose upload was never confirmed (pending, no content). (tenant id,
    document id, filename) of each one failed."""
    result = await session.execute(
        update(Document)
        .where(
            Document.deleted_at.is_(None),
            Document.status == "pending",
            Document.content_hash.is_(None),
            Document.created_at < registered_before,
        )
        .values(status="error", error=reason, updated_at=now)
        .returning(Document.tenant_id, Document.id, Document.filename)
        .execution_options(synchronize_session=False)
    )
    return [(tenant_id, document_id, filename) for tenant_id, document_id, filename in result]
