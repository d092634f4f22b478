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

from contentplatform.documents.models import (
    FTS_TABLE,
    SEARCH_VECTOR,
    TENANT_KEY_PREFIX,
    Document,
    DocumentChunk,
    DocumentChunkStats,
)
from contentplatform.kit.db import cross_tenant


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


@cross_tenant("the rows carry their tenant")
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


def tenant_key(tenant_id: uuid.UUID) -> str:
    """The FTS5 query for every chunk of the tenant: its token in the `tenant_key` column."""
    return f'tenant_key:"{TENANT_KEY_PREFIX}{tenant_id.hex}"'


def _fts_match(match: str) -> ColumnElement[bool]:
    return literal_column(FTS_TABLE).op("MATCH")(match)


async def candidates_sqlite(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    match: str,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
) -> Sequence[Hit]:
    """At most `limit` of the tenant's searchable chunks matching `match` (an FTS5 query), in
    no particular order (score 0): FTS5 intersects `match` with the tenant's token, so neither
    the time nor the rows depend on other tenants' chunks; the documents' own keys narrow it to
    `document_ids` in the index too. Unranked: FTS5's bm25() would count each word among every
    tenant's chunks (its statistics are the whole table's), and sorting by it reads every match."""
    fts = table(FTS_TABLE, column("chunk_id"))
    scope = tenant_key(tenant_id)
    if document_ids is not None:
        keys = " OR ".join(f'"{document_id.hex}"' for document_id in document_ids)
        scope = f"{scope} AND document_key:({keys})"
    # The index is read first and only `limit` of its rows at a time are joined: left to
    # itself, SQLite's planner may walk the tenant's chunks and run the MATCH again for each.
    # The index also holds the chunks of documents not searchable now (archived, not ready),
    # which the join leaves out: while a window of `limit` loses some, the next one is read.
    found: list[Hit] = []
    offset = 0
    while True:
        window = (
            select(fts.c.chunk_id)
            .where(_fts_match(f"{scope} AND ({match})"))
            .limit(limit)
            .offset(offset)
            .subquery()
        )
        query = _hits(tenant_id, literal_column("0.0")).join(
            window, window.c.chunk_id == DocumentChunk.id
        )
        if document_ids is not None:
            query = query.where(DocumentChunk.document_id.in_(document_ids))
        found += (await session.execute(query)).all()
        if len(found) >= limit:
            return found[:limit]
        read = await session.scalar(select(func.count()).select_from(window))
        if (read or 0) < limit:
            return found
        offset += limit


@dataclass(frozen=True, slots=True)
class ChunkStatistics:
    chunks: int
    mean_length: float  # characters


async def chunk_statistics(session: AsyncSession, tenant_id: uuid.UUID) -> ChunkStatistics:
    """How many chunks the tenant has and their mean length, from its maintained row."""
    row = (
        await session.execute(
            select(DocumentChunkStats.chunks, DocumentChunkStats.total_length).where(
                DocumentChunkStats.tenant_id == tenant_id
            )
        )
    ).one_or_none()
    if row is None or row.chunks <= 0:
        return ChunkStatistics(0, 0.0)
    return ChunkStatistics(int(row.chunks), int(row.total_length) / int(row.chunks))


@dataclass(frozen=True, slots=True)
class Frequencies:
    """Per query word: how many of the tenant's chunks hold it, counted up to a cap, and (when
    asked) how many of a sample of the tenant's chunks hold it."""

    capped: list[int]
    sampled: list[int] | None


async def sqlite_frequencies(
    session: AsyncSession, tenant_id: uuid.UUID, matches: Sequence[str], cap: int, sample: int
) -> Frequencies:
    """`matches` are FTS5 queries, one per word; each is counted among the tenant's chunks up to
    `cap`, and, when `sample` > 0, among the tenant's first `sample` chunks (by rowid: those it
    indexed first). One round trip; each count reads the index only."""
    fts = table(FTS_TABLE, column("rowid"))
    scope = tenant_key(tenant_id)

    def capped(match: str) -> Any:
        found = select(literal(1)).select_from(fts).where(_fts_match(f"{scope} AND ({match})"))
        return select(func.count()).select_from(found.limit(cap).subquery()).scalar_subquery()

    # The tenant's `sample`-th chunk, found once.
    last = (
        select(fts.c.rowid.label("rowid"))
        .where(_fts_match(scope))
        .order_by(fts.c.rowid)
        .limit(1)
        .offset(sample - 1)
        .cte("last")
        .prefix_with("MATERIALIZED")
    )

    def sampled(match: str) -> Any:
        return (
            select(func.count())
            .select_from(fts)
            .where(
                _fts_match(f"{scope} AND ({match})"),
                fts.c.rowid <= select(last.c.rowid).scalar_subquery(),
            )
            .scalar_subquery()
        )

    columns = [capped(match) for match in matches]
    if sample > 0:
        columns += [sampled(match) for match in matches]
    counts = [int(count or 0) for count in (await session.execute(select(*columns))).one()]
    n = len(matches)
    return Frequencies(counts[:n], counts[n:] if sample > 0 else None)


def _vector() -> ColumnElement[Any]:
    return literal_column(f"{DocumentChunk.__tablename__}.{SEARCH_VECTOR}")


def _tsquery(websearch: str) -> ColumnElement[Any]:
    return func.websearch_to_tsquery(literal_column("'english'::regconfig"), websearch)


async def postgresql_sample(
    session: AsyncSession, tenant_id: uuid.UUID, websearches: Sequence[str], sample: int
) -> tuple[list[str], list[int] | None]:
    """Each word's lexemes (a tsvector's text; `websearches` are websearch_to_tsquery inputs, one
    per word) and, when `sample` > 0, how many of `sample` of the tenant's chunks (whichever its
    tenant index gives first) hold it. One round trip that reads at most `sample` chunks."""
    english: ColumnElement[Any] = literal_column("'english'::regconfig")
    lexemes = [cast(func.to_tsvector(english, w), Text) for w in websearches]
    if sample <= 0:
        return [str(text_) for text_ in (await session.execute(select(*lexemes))).one()], None
    chunks = (
        select(_vector().label("vector"))
        .select_from(DocumentChunk)
        .where(DocumentChunk.tenant_id == tenant_id)
        .limit(sample)
        .subquery()
    )
    held = [func.count().filter(chunks.c.vector.op("@@")(_tsquery(w))) for w in websearches]
    row = (await session.execute(select(*lexemes, *held).select_from(chunks))).one()
    n = len(websearches)
    return [str(text_) for text_ in row[:n]], [int(count) for count in row[n:]]


async def postgresql_counts(
    session: AsyncSession, tenant_id: uuid.UUID, websearches: Sequence[str], cap: int
) -> list[int]:
    """How many of the tenant's chunks hold each word, counted up to `cap`. The GIN index on
    (tenant_id, vector) finds a word among the tenant's entries only, but makes the whole list
    of them before the count stops: the caller counts the words it expects to be rare."""
    if not websearches:
        return []
    vector = _vector()

    def capped(websearch: str) -> Any:
        found = select(literal(1)).where(
            DocumentChunk.tenant_id == tenant_id, vector.op("@@")(_tsquery(websearch))
        )
        return select(func.count()).select_from(found.limit(cap).subquery()).scalar_subquery()

    row = (await session.execute(select(*(capped(w) for w in websearches)))).one()
    return [int(count) for count in row]


Candidate = Row[uuid.UUID, uuid.UUID, str, int, str, str | None, int, int, float, bool, str]


async def candidates_postgresql(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    websearch: str,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
    *,
    common: bool = False,
) -> Sequence[Candidate]:
    """At most `limit` of the tenant's searchable chunks matching `websearch`
    (websearch_to_tsquery input, which never raises on any text), in no particular order
    (score 0), with their tsvector as text (`vector`). Unranked: ranking in SQL reads every
    match's vector; the caller ranks these. `common`: the words are in many of the tenant's
    chunks."""
    vector = _vector()
    # For common words, the tenant's chunks read in turn until `limit` match: the GIN index
    # would list every match first. The index cannot serve the coalesce, so it is not used.
    searched = func.coalesce(vector, literal_column("''::tsvector")) if common else vector
    query = (
        _hits(tenant_id, literal_column("0.0"))
        .add_columns(cast(vector, Text).label("vector"))
        .where(searched.op("@@")(_tsquery(websearch)))
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
