"""The chunk index: what ingestion writes and what generation and chat read.

Never commits: callers own the unit of work. Every function is scoped to one tenant.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents import index_repository as repository
from contentplatform.documents.chunking import Chunk
from contentplatform.documents.errors import DocumentNotFound

# The most distinct terms of a query that are searched for; a pasted paragraph would otherwise
# become a very long OR query.
MAX_QUERY_TERMS = 32
MAX_LIMIT = 100
_TERM = re.compile(r"\w+")
# PostgreSQL's English stop words (its 'english' configuration drops them from queries); dropped
# on SQLite too, whose FTS5 has none, so that a question's "how" and "are" do not match everything
# and both databases answer alike.
STOP_WORDS = frozenset(
    {
        "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
        "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers",
        "herself", "it", "its", "itself", "they", "them", "their", "theirs", "themselves",
        "what", "which", "who", "whom", "this", "that", "these", "those", "am", "is", "are",
        "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does",
        "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until",
        "while", "of", "at", "by", "for", "with", "about", "against", "between", "into",
        "through", "during", "before", "after", "above", "below", "to", "from", "up", "down",
        "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here",
        "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more",
        "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so",
        "than", "too", "very", "s", "t", "can", "will", "just", "don", "should", "now",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ChunkHit:
    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_name: str
    ordinal: int
    content: str
    heading: str | None
    score: float  # in [0, 1), higher is better; comparable within one query on one database
    char_start: int
    char_end: int


@dataclass(frozen=True, slots=True)
class Indexing:
    """A document's chunks to index. `first`: the document never had chunks (its first
    version's first ingestion), so there are none to delete."""

    tenant_id: uuid.UUID
    document_id: uuid.UUID
    chunks: Sequence[Chunk]
    first: bool = False


async def replace_document_chunks(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_id: uuid.UUID,
    chunks: Sequence[Chunk],
) -> int:
    """Make `chunks` the document's only chunks (in the index too); returns how many."""
    if not await repository.document_exists(session, tenant_id, document_id):
        raise DocumentNotFound(document_id)
    await replace_chunks_of(session, [Indexing(tenant_id, document_id, chunks)])
    return len(chunks)


async def replace_chunks_of(session: AsyncSession, documents: Sequence[Indexing]) -> None:
    """Make each document's chunks its only ones, all in one insert. The caller found each
    document among its tenant's in this transaction already (ingestion writes many documents
    at once; each lookup would be a round trip)."""
    for document in documents:
        if not document.first:
            await repository.delete_chunks(session, document.tenant_id, document.document_id)
    await repository.insert_chunks(
        session,
        [
            {
                "id": uuid.uuid4(),
                "tenant_id": document.tenant_id,
                "document_id": document.document_id,
                "ordinal": chunk.ordinal,
                "content": chunk.text,
                "token_count": chunk.token_count,
                "char_start": chunk.char_start,
                "char_end": chunk.char_end,
                "heading": chunk.heading,
            }
            for document in documents
            for chunk in document.chunks
        ],
    )


async def remove_document_chunks(
    session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID
) -> None:
    await repository.delete_chunks(session, tenant_id, document_id)


def query_terms(query: str) -> list[str]:
    """The words of a user's query but stop words, distinct (ignoring case), in order, at most
    MAX_QUERY_TERMS.

    Only runs of letters, digits and underscores survive, so quotes, `*`, `:`, parentheses,
    `-` and `^` can never reach the full-text syntax of either database."""
    terms: dict[str, str] = {}
    for term in _TERM.findall(query):
        if (key := term.casefold()) not in STOP_WORDS:
            terms.setdefault(key, term)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return list(terms.values())


async def search_chunks(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    query: str,
    *,
    document_ids: Sequence[uuid.UUID] | None = None,
    limit: int = 8,
) -> list[ChunkHit]:
    """The chunks best matching `query` among the tenant's ready, live, unarchived documents
    (only those in `document_ids` when given; an empty list finds nothing).

    A chunk matches when it holds any of the query's words (stemmed: "pricing" finds "prices");
    chunks holding more of them, and rarer ones, rank higher. Each word is quoted, so AND, OR,
    NOT and NEAR are plain words here."""
    terms = query_terms(query)
    limit = min(limit, MAX_LIMIT)
    if not terms or limit < 1 or (document_ids is not None and not document_ids):
        return []
    quoted = [f'"{term}"' for term in terms]
    if session.get_bind().dialect.name == "sqlite":
        match = "{content heading} : (" + " OR ".join(quoted) + ")"
        rows = await repository.search_sqlite(session, tenant_id, match, document_ids, limit)
    else:
        websearch = " or ".join(quoted)
        rows = await repository.search_postgresql(
            session, tenant_id, websearch, document_ids, limit
        )
    return _chunk_hits(rows)


async def leading_chunks(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    document_ids: Sequence[uuid.UUID],
    *,
    per_document: int = 2,
) -> list[ChunkHit]:
    """The opening chunks of the given searchable documents (score 0): what grounds an article
    in documents the caller chose when none of their chunks matches the topic's words."""
    if not document_ids:
        return []
    return _chunk_hits(await repository.leading(session, tenant_id, document_ids, per_document))


def _chunk_hits(rows: Sequence[repository.Hit]) -> list[ChunkHit]:
    return [ChunkHit(**{**row._asdict(), "score": float(row.score)}) for row in rows]


async def document_text(session: AsyncSession, tenant_id: uuid.UUID, document_id: uuid.UUID) -> str:
    """The document's text rebuilt from its chunks, each overlap once (by the chunks' offsets).

    Exact but for the whitespace between chunks that did not touch, which the chunker trimmed:
    it comes back as one line break, or a blank line when more than one character was lost."""
    parts: list[str] = []
    covered = 0  # end offset of the text rebuilt so far
    for content, start, end in await repository.spans(session, tenant_id, document_id):
        # A split table's continuation carries its repeated header before its span.
        span = content[len(content) - (end - start) :]
        if end <= covered:
            continue
        if start < covered:
            span = span[covered - start :]
        elif parts and start > covered:
            parts.append("\n\n" if start - covered > 1 else "\n")
        parts.append(span)
        covered = end
    return "".join(parts)
