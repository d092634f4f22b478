"""Every query on documents; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents.models import Document
from contentplatform.documents.schemas import ListDocumentsInput
from contentplatform.kit.db import Owned, counts_by, page_of


def _live(tenant_id: uuid.UUID) -> Select[Document]:
    return select(Document).where(Document.tenant_id == tenant_id, Document.deleted_at.is_(None))


get = Owned(Document)


async def by_content_hash(
    session: AsyncSession, tenant_id: uuid.UUID, content_hash: str
) -> Document | None:
    result = await session.execute(
        _live(tenant_id)
        .where(Document.content_hash == content_hash)
        .order_by(Document.created_at)
        .limit(1)
    )
    return result.scalar_one_or_none()


async def by_storage_path(
    session: AsyncSession, tenant_id: uuid.UUID, storage_path: str
) -> Document | None:
    result = await session.execute(_live(tenant_id).where(Document.storage_path == storage_path))
    return result.scalar_one_or_none()


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
        statement = statement.where(
            func.lower(Document.filename).contains(query.search.lower(), autoescape=True)
        )
    column = Document.filename if query.sort_by == "filename" else Document.created_at
    ordering = column.asc() if query.sort_order == "asc" else column.desc()
    return await page_of(
        session, statement, ordering, Document.id, limit=query.limit, offset=query.offset
    )


async def count_by_status(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, int]:
    return await counts_by(
        session,
        Document.status,
        Document.tenant_id == tenant_id,
        Document.deleted_at.is_(None),
        Document.archived_at.is_(None),
    )


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
