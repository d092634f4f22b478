"""Every query on document chunks; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Row,
    Select,
    column,
    delete,
    exists,
    func,
    insert,
    literal_column,
    select,
    table,
    type_coerce,
)
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents.models import FTS_TABLE, SEARCH_VECTOR, Document, DocumentChunk


async def document_exists(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID
) -> bool:
    query = select(exists().where(Document.tenant_id == tenant_id, Document.id == document_id))
    return bool(await session.scalar(query))


async def delete_chunks(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID
) -> None:
    # On SQLite a trigger removes the FTS rows too; on PostgreSQL the vector is in the row.
    await session.execute(
        delete(DocumentChunk).where(
            DocumentChunk.tenant_id == tenant_id, DocumentChunk.document_id == document_id
        )
    )


async def insert_chunks(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(DocumentChunk), list(rows))


async def spans(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID
) -> Sequence[Row[str, int, int]]:
    result = await session.execute(
        select(DocumentChunk.content, DocumentChunk.char_start, DocumentChunk.char_end)
        .where(DocumentChunk.tenant_id == tenant_id, DocumentChunk.document_id == document_id)
        .order_by(DocumentChunk.ordinal)
    )
    return result.all()


Hit = Row[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float]


def _hits(
    tenant_id: uuid.UUID, score: ColumnElement[Any]
) -> Select[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float]:
    """Chunks of this tenant's searchable documents: ready, not archived, not deleted."""
    return (
        # Labelled as ChunkHit names its fields.
        select(
            DocumentChunk.id.label("chunk_id"),
            DocumentChunk.document_id,
            Document.filename.label("document_name"),
            DocumentChunk.ordinal,
            DocumentChunk.content,
            DocumentChunk.heading,
            DocumentChunk.char_start,
            DocumentChunk.char_end,
            type_coerce(score, Float).label("score"),
        )
        .join(Document, Document.id == DocumentChunk.document_id)
        .where(
            DocumentChunk.tenant_id == tenant_id,
            Document.tenant_id == tenant_id,
            Document.status == "ready",
            Document.archived_at.is_(None),
            Document.deleted_at.is_(None),
        )
    )


async def search_sqlite(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    match: str,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
) -> Sequence[Hit]:
    """`match` is an FTS5 query. bm25() is negative, lower is better: score = -bm25 / (1 - bm25)
    maps it to [0, 1), higher is better, like ts_rank_cd's normalization 32 on PostgreSQL."""
    fts = table(FTS_TABLE, column("chunk_id"))
    # Column weights: content, heading, document_key (never matched by user queries).
    bm25 = func.bm25(literal_column(FTS_TABLE), 1.0, 0.5, 0.0)
    query = (
        _hits(tenant_id, -bm25 / (1 - bm25))
        .join(fts, fts.c.chunk_id == DocumentChunk.id)
        .where(literal_column(FTS_TABLE).op("MATCH")(match))
        .order_by(bm25, DocumentChunk.document_id, DocumentChunk.ordinal)
        .limit(limit)
    )
    if document_ids is not None:
        query = query.where(DocumentChunk.document_id.in_(document_ids))
    return (await session.execute(query)).all()


async def search_postgresql(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    websearch: str,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
) -> Sequence[Hit]:
    """`websearch` is websearch_to_tsquery input (which never raises on any text). ts_rank_cd
    with normalization 32 is rank / (rank + 1): [0, 1), higher is better."""
    vector: ColumnElement[Any] = literal_column(f"{DocumentChunk.__tablename__}.{SEARCH_VECTOR}")
    tsquery = func.websearch_to_tsquery(literal_column("'english'::regconfig"), websearch)
    rank = func.ts_rank_cd(vector, tsquery, 32)
    query = (
        _hits(tenant_id, rank)
        .where(vector.op("@@")(tsquery))
        .order_by(rank.desc(), DocumentChunk.document_id, DocumentChunk.ordinal)
        .limit(limit)
    )
    if document_ids is not None:
        query = query.where(DocumentChunk.document_id.in_(document_ids))
    return (await session.execute(query)).all()


async def leading(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_ids: Sequence[uuid.UUID],
    per_document: int,
) -> Sequence[Hit]:
    """The first `per_document` chunks of each searchable document in `document_ids`."""
    query = (
        _hits(tenant_id, literal_column("0.0"))
        .where(
            DocumentChunk.document_id.in_(document_ids),
            DocumentChunk.ordinal < per_document,
        )
        .order_by(DocumentChunk.document_id, DocumentChunk.ordinal)
    )
    return (await session.execute(query)).all()
