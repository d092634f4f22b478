"""Every query on document chunks; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Row,
    Select,
    Text,
    cast,
    column,
    delete,
    exists,
    func,
    insert,
    literal,
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


Hit = Row[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float, bool]


def _hits(
    tenant_id: uuid.UUID, score: ColumnElement[Any]
) -> Select[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float, bool]:
    """Chunks of this tenant's searchable documents: ready, not archived, not deleted."""
    return (
        # Labelled as ChunkHit names its fields (but `is_primary`, which ranking reads).
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
            Document.is_primary,
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
    heading_weight: float,
) -> Sequence[Hit]:
    """`match` is an FTS5 query. bm25() is negative, lower is better: `score` is -bm25, >= 0,
    higher is better. The heading's terms weigh `heading_weight` times the content's."""
    fts = table(FTS_TABLE, column("chunk_id"))
    # Column weights: content, heading, document_key (never matched by user queries).
    bm25 = func.bm25(literal_column(FTS_TABLE), 1.0, heading_weight, 0.0)
    # The full-text index is read once, first: left to itself, SQLite 3.51's planner walks the
    # tenant's chunks and runs the whole MATCH again for each (time growing with every tenant's
    # chunks), where 3.40's started from the index. A materialized CTE fixes the order on both.
    matched = (
        select(fts.c.chunk_id, (-bm25).label("rank"))
        .where(literal_column(FTS_TABLE).op("MATCH")(match))
        .cte("matched")
        .prefix_with("MATERIALIZED")
    )
    query = (
        _hits(tenant_id, matched.c.rank)
        .join(matched, matched.c.chunk_id == DocumentChunk.id)
        .order_by(matched.c.rank.desc(), DocumentChunk.document_id, DocumentChunk.ordinal)
        .limit(limit)
    )
    if document_ids is not None:
        query = query.where(DocumentChunk.document_id.in_(document_ids))
    return (await session.execute(query)).all()


def _vector() -> ColumnElement[Any]:
    return literal_column(f"{DocumentChunk.__tablename__}.{SEARCH_VECTOR}")


def _tsquery(websearch: str) -> ColumnElement[Any]:
    return func.websearch_to_tsquery(literal_column("'english'::regconfig"), websearch)


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """What BM25 needs of the tenant's chunks, which ts_rank lacks: how many there are, their
    mean length (characters), and per query word its lexemes (as a tsvector's text) and how
    many chunks match it."""

    chunks: int
    mean_length: float
    lexemes: list[str]
    frequencies: list[int]


async def term_statistics(
    session: AsyncSession, tenant_id: uuid.UUID, websearches: Sequence[str]
) -> TermStatistics:
    """One round trip; each count is read from the GIN index (and the tenant's index)."""
    vector = _vector()

    def count(*conditions: ColumnElement[bool]) -> Any:
        return (
            select(func.count())
            .select_from(DocumentChunk)
            .where(DocumentChunk.tenant_id == tenant_id, *conditions)
            .scalar_subquery()
        )

    mean = (
        select(func.avg(DocumentChunk.char_end - DocumentChunk.char_start))
        .where(DocumentChunk.tenant_id == tenant_id)
        .scalar_subquery()
    )
    english: ColumnElement[Any] = literal_column("'english'::regconfig")
    query = select(
        count(),
        mean,
        *(cast(func.to_tsvector(english, w), Text) for w in websearches),
        *(count(vector.op("@@")(_tsquery(w))) for w in websearches),
    )
    total, average, *rest = (await session.execute(query)).one()
    n = len(websearches)
    return TermStatistics(
        int(total),
        float(average or 0.0),
        [str(text_) for text_ in rest[:n]],
        [int(frequency) for frequency in rest[n:]],
    )


async def sqlite_term_statistics(
    session: AsyncSession, tenant_id: uuid.UUID, matches: Sequence[str]
) -> TermStatistics:
    """TermStatistics on SQLite, in one round trip: `matches` are FTS5 queries, one per query
    word, each counted among the tenant's chunks (no lexemes: the caller stems as FTS5 does)."""
    fts = table(FTS_TABLE, column("chunk_id"))

    def count(match: str) -> Any:
        return (
            select(func.count())
            .select_from(fts)
            .join(DocumentChunk, DocumentChunk.id == fts.c.chunk_id)
            .where(
                literal_column(FTS_TABLE).op("MATCH")(match), DocumentChunk.tenant_id == tenant_id
            )
            .scalar_subquery()
        )

    query = select(
        func.count(),
        func.avg(DocumentChunk.char_end - DocumentChunk.char_start),
        *(count(match) for match in matches),
    ).where(DocumentChunk.tenant_id == tenant_id)
    total, average, *frequencies = (await session.execute(query)).one()
    return TermStatistics(
        int(total), float(average or 0.0), [], [int(frequency) for frequency in frequencies]
    )


Candidate = Row[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float, bool, str]


async def search_postgresql(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    websearch: str,
    terms: Sequence[tuple[str, float]],
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
    weights: Sequence[float],
) -> Sequence[Candidate]:
    """`websearch` (websearch_to_tsquery input, which never raises on any text) selects the
    chunks; `terms` rank them: each term's ts_rank (with `weights` for the labels D, C, B, A,
    and normalization 1, divided by the log of the chunk's length), times the term's IDF, summed.
    `score` is >= 0, higher is better; `vector` is the chunk's tsvector as text."""
    vector = _vector()
    labels = ",".join(f"{float(weight):.6f}" for weight in weights)
    weighting: ColumnElement[Any] = literal_column(f"'{{{labels}}}'::float4[]")
    score: ColumnElement[Any] = literal(0.0, Float)
    for term, idf in terms:
        score = score + func.ts_rank(weighting, vector, _tsquery(term), 1) * literal(idf, Float)
    query = (
        _hits(tenant_id, score)
        .add_columns(cast(vector, Text).label("vector"))
        .where(vector.op("@@")(_tsquery(websearch)))
        .order_by(score.desc(), DocumentChunk.document_id, DocumentChunk.ordinal)
        .limit(limit)
    )
    if document_ids is not None:
        query = query.where(DocumentChunk.document_id.in_(document_ids))
    return (await session.execute(query)).all()


async def by_ids(
    session: AsyncSession, tenant_id: uuid.UUID, chunk_ids: Sequence[uuid.UUID]
) -> Sequence[Hit]:
    """These chunks of the tenant's searchable documents (score 0), in no particular order."""
    if not chunk_ids:
        return []
    query = _hits(tenant_id, literal_column("0.0")).where(DocumentChunk.id.in_(chunk_ids))
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
