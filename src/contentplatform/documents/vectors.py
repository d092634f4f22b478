"""Chunk vectors for hybrid search, when embeddings are configured: filled at ingest (and by a
pass over what is missing, documents/durable.py), compared at query time, combined with full text.

One vector per chunk (`document_chunk_vectors`, keyed by the chunk, which takes it along when it
goes), tagged with the model and dimensions that made it: only vectors of the configured model and
of the query vector's length are compared, so after a change of `embeddings_model` the old ones
are never mixed with the new query vectors, and are replaced as the fill pass reaches them.

Brute force, per tenant: cosine distance over every vector of the tenant's searchable documents
(pgvector's `<=>` on `real[]` cast to `vector`, sqlite-vec's `vec_distance_cosine`), no ANN index.
Exact, and fast enough for a tenant's knowledge base up to some 100k chunks
(docs/guides/documents.md, docs/decisions/0006-hybrid-search-by-score-weight-zero-by-default.md).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlite_vec
from cachetools import LRUCache
from sqlalchemy import (
    ColumnElement,
    Float,
    LargeBinary,
    String,
    and_,
    cast,
    delete,
    func,
    literal,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import UserDefinedType

from contentplatform.ai.base import ProviderError
from contentplatform.core import runtime
from contentplatform.documents.models import Document, DocumentChunk, DocumentChunkVector
from contentplatform.kit.db import Database, utcnow

if TYPE_CHECKING:
    # Made only when configured (ai/providers.py): its `openai` import is slow.
    from contentplatform.ai.embeddings import Embeddings

log = logging.getLogger(__name__)


class _PgVector(UserDefinedType[Any]):
    """pgvector's `vector`, only ever the target of a CAST (the column itself is `real[]`)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


def _searchable(tenant_id: uuid.UUID) -> list[ColumnElement[bool]]:
    """The chunks of the tenant's searchable documents: ready, not archived, not deleted (as
    documents/index_repository.py `_hits`), joined on Document."""
    return [
        DocumentChunk.tenant_id == tenant_id,
        Document.tenant_id == tenant_id,
        Document.status == "ready",
        Document.archived_at.is_(None),
        Document.deleted_at.is_(None),
    ]


def _current(model: str, dimensions: int | None) -> ColumnElement[bool]:
    """The stored vector is of this model (and of these dimensions, when they are set)."""
    condition = DocumentChunkVector.model == model
    if dimensions is not None:
        condition = and_(condition, DocumentChunkVector.dimensions == dimensions)
    return condition


# --- query side ------------------------------------------------------------------------------


async def nearest(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    query_vector: Sequence[float],
    *,
    document_ids: Sequence[uuid.UUID] | None,
    limit: int,
    model: str | None = None,
) -> list[tuple[uuid.UUID, float]]:
    """The tenant's `limit` chunks nearest `query_vector` as (chunk id, cosine similarity), most
    similar first; of `document_ids` only when given. Only vectors of `model` (the configured
    one by default) and of the query's length count. [] when embeddings are off."""
    if model is None:
        embedder = runtime.current().embedder
        model = embedder.model if embedder is not None else None
    if model is None or not query_vector or limit <= 0:
        return []
    vector = DocumentChunkVector.embedding
    if session.get_bind().dialect.name == "postgresql":
        literal_vector = "[" + ",".join(repr(float(x)) for x in query_vector) + "]"
        distance: ColumnElement[float] = cast(vector, _PgVector()).op("<=>", return_type=Float())(
            cast(literal(literal_vector, String), _PgVector())
        )
    else:
        distance = func.vec_distance_cosine(
            vector, literal(sqlite_vec.serialize_float32(list(query_vector)), LargeBinary)
        )
    query = (
        select(DocumentChunkVector.chunk_id, distance.label("distance"))
        .join(DocumentChunk, DocumentChunk.id == DocumentChunkVector.chunk_id)
        .join(Document, Document.id == DocumentChunk.document_id)
        .where(
            DocumentChunkVector.tenant_id == tenant_id,
            DocumentChunkVector.model == model,
            DocumentChunkVector.dimensions == len(query_vector),
            *_searchable(tenant_id),
        )
        .order_by(distance, DocumentChunk.document_id, DocumentChunk.ordinal)
        .limit(limit)
    )
    if document_ids is not None:
        query = query.where(DocumentChunk.document_id.in_(document_ids))
    rows = (await session.execute(query)).tuples()
    return [(chunk_id, 1.0 - float(found)) for chunk_id, found in rows if not math.isnan(found)]


# Query vectors of this process, by model, dimensions and text: one search often embeds the same
# query twice (chat searches its scope and the primary document; a retried question), and a
# model's vector of a text never changes.
_query_vectors: LRUCache[tuple[str, int | None, str], list[float]] = LRUCache(maxsize=1024)


async def embed_query(text: str) -> list[float] | None:
    """The query's vector; None when embeddings are off, the query is blank, or the server
    fails (logged): search then goes on with full text alone."""
    embedder = runtime.current().embedder
    if embedder is None:
        return None
    key = (embedder.model, embedder.dimensions, text)
    if (found := _query_vectors.get(key)) is not None:
        return found
    found = await query_vector(embedder, text)
    if found is not None:
        _query_vectors[key] = found
    return found


async def query_vector(embedder: Embeddings | None, text: str) -> list[float] | None:
    """`embed_query` with the embeddings server given."""
    if embedder is None or not text.strip():
        return None
    try:
        return (await embedder.embed([text]))[0]
    except ProviderError as error:
        log.warning("search goes on without vectors: %s", error.message)
        return None


def combine(
    text: Sequence[tuple[uuid.UUID, float]],
    near: Sequence[tuple[uuid.UUID, float]],
    weight: float,
) -> list[tuple[uuid.UUID, float]]:
    """Hybrid search's fusion: a convex combination of the two rankings' scores, each scaled to
    [0, 1] over its own list (full text's BM25 over its best, the vectors' cosine similarity
    min-max over theirs): (text + weight * vector) / (1 + weight), an id missing from a list
    counting 0 there; best first, ties in full text's order, then the vectors'. Each list comes
    best first; an id twice in one counts at its first place. Ids scoring 0 are left out.

    Scores rather than ranks (reciprocal rank fusion) so that full text's margins hold: a
    clear BM25 winner stays first unless the vectors are weighted to overrule it, and a weak
    vector ranking only reorders near-ties (Bruch et al., "An Analysis of Fusion Functions for
    Hybrid Retrieval", 2023)."""
    scores: dict[uuid.UUID, float] = {}
    text_best = max((score for _, score in text), default=0.0)
    for item, score in text:
        if text_best > 0 and item not in scores:
            scores[item] = score / text_best
    if near:
        top = max(similarity for _, similarity in near)
        bottom = min(similarity for _, similarity in near)
        seen: set[uuid.UUID] = set()
        for item, similarity in near:
            if item in seen:
                continue
            seen.add(item)
            scaled = (similarity - bottom) / (top - bottom) if top > bottom else 1.0
            scores[item] = scores.get(item, 0.0) + weight * scaled
    # dicts keep insertion order and sorted() is stable: ties keep their first appearance.
    return [
        (item, score / (1 + weight))
        for item, score in sorted(scores.items(), key=lambda pair: -pair[1])
        if score > 0
    ]


# --- filling ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Missing:
    """A chunk without a vector of the configured model."""

    chunk_id: uuid.UUID
    text: str


def _text(heading: str | None, content: str) -> str:
    # The heading path says what the passage is about; embedded with it, as it is searched.
    return f"{heading}\n\n{content}" if heading else content


async def missing(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    model: str,
    dimensions: int | None,
) -> list[Missing]:
    """The document's chunks without a vector of `model` (and `dimensions`), in order."""
    query = (
        select(DocumentChunk.id, DocumentChunk.heading, DocumentChunk.content)
        .outerjoin(
            DocumentChunkVector,
            and_(
                DocumentChunkVector.chunk_id == DocumentChunk.id,
                _current(model, dimensions),
            ),
        )
        .where(
            DocumentChunk.tenant_id == tenant_id,
            DocumentChunk.document_id == document_id,
            DocumentChunkVector.chunk_id.is_(None),
        )
        .order_by(DocumentChunk.ordinal)
    )
    rows = (await session.execute(query)).tuples()
    return [Missing(chunk_id, _text(heading, content)) for chunk_id, heading, content in rows]


async def store(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    model: str,
    vectors: Sequence[tuple[uuid.UUID, Sequence[float]]],
) -> int:
    """Keep the vectors of the chunks that still exist (one superseded meanwhile is gone, and
    so is its vector), replacing a vector of another model; how many were kept."""
    ids = [chunk_id for chunk_id, _ in vectors]
    existing = set(
        (
            await session.execute(
                select(DocumentChunk.id).where(
                    DocumentChunk.tenant_id == tenant_id, DocumentChunk.id.in_(ids)
                )
            )
        ).scalars()
    )
    now = utcnow()
    rows = [
        {
            "chunk_id": chunk_id,
            "tenant_id": tenant_id,
            "model": model,
            "dimensions": len(vector),
            "embedding": list(vector),
            "created_at": now,
        }
        for chunk_id, vector in vectors
        if chunk_id in existing
    ]
    if not rows:
        return 0
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = insert(DocumentChunkVector)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[DocumentChunkVector.chunk_id],
            set_={
                name: statement.excluded[name]
                for name in ("model", "dimensions", "embedding", "created_at")
            },
        ),
        rows,
    )
    return len(rows)


async def fill_document(
    db: Database,
    embedder: Embeddings,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    *,
    limit: int | None = None,
) -> int:
    """Embed the document's chunks that have no vector of the configured model yet, a batch at
    a time, each batch stored in a transaction of its own (what one stored stays when a later one
    fails, and is not asked again); at most `limit` chunks. How many vectors it stored."""
    async with db.unit_of_work() as session:
        pending = await missing(
            session, tenant_id, document_id, embedder.model, embedder.dimensions
        )
    pending = pending[:limit] if limit is not None else pending
    stored = 0
    for start in range(0, len(pending), embedder.batch_size):
        batch = pending[start : start + embedder.batch_size]
        found = await embedder.embed([chunk.text for chunk in batch])
        async with db.unit_of_work() as session:
            stored += await store(
                session,
                tenant_id,
                embedder.model,
                [(chunk.chunk_id, vector) for chunk, vector in zip(batch, found, strict=True)],
            )
    return stored


@dataclass(frozen=True)
class Unfilled:
    """A ready document some chunks of which have no vector of the configured model."""

    tenant_id: uuid.UUID
    document_id: uuid.UUID
    document_version: int
    ingest_attempt: int


async def unfilled(
    session: AsyncSession, model: str, dimensions: int | None, *, limit: int
) -> list[Unfilled]:
    """Live ready documents (of every tenant, archived ones too: they may come back) with chunks
    lacking a vector of `model`, oldest first: the fill pass's work."""
    query = (
        select(Document.tenant_id, Document.id, Document.document_version, Document.ingest_attempt)
        .join(DocumentChunk, DocumentChunk.document_id == Document.id)
        .outerjoin(
            DocumentChunkVector,
            and_(
                DocumentChunkVector.chunk_id == DocumentChunk.id,
                _current(model, dimensions),
            ),
        )
        .where(
            Document.status == "ready",
            Document.deleted_at.is_(None),
            DocumentChunkVector.chunk_id.is_(None),
        )
        .group_by(
            Document.tenant_id,
            Document.id,
            Document.document_version,
            Document.ingest_attempt,
            Document.created_at,
        )
        .order_by(Document.created_at, Document.id)
        .limit(limit)
    )
    return [Unfilled(*row) for row in (await session.execute(query)).tuples()]


async def drop_deleted(session: AsyncSession) -> int:
    """Drop the vectors of deleted documents' chunks (the chunks stay with the soft-deleted
    document; their vectors would only take room). How many."""
    deleted_chunks = (
        select(DocumentChunk.id)
        .join(Document, Document.id == DocumentChunk.document_id)
        .where(Document.deleted_at.is_not(None))
    )
    result: Any = await session.execute(
        delete(DocumentChunkVector).where(DocumentChunkVector.chunk_id.in_(deleted_chunks))
    )
    return int(result.rowcount or 0)


__all__ = [
    "Missing",
    "Unfilled",
    "combine",
    "drop_deleted",
    "embed_query",
    "fill_document",
    "missing",
    "nearest",
    "query_vector",
    "store",
    "unfilled",
]
