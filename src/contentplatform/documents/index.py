"""The chunk index: what ingestion writes and what generation and chat read.

Never commits: callers own the unit of work. Every function is scoped to one tenant.
"""

from __future__ import annotations

import math
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
# How much more a query word counts in a chunk's heading path than in its text.
HEADING_WEIGHT = 3.0
# Hits scoring below this share of the best hit's score are dropped.
RELATIVE_CUT = 0.3
# PostgreSQL: how many chunks ts_rank picks for BM25 to rank again, and BM25's parameters.
CANDIDATES = 100
BM25_K1 = 1.2
BM25_B = 0.75
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
    relative_cut: float = RELATIVE_CUT,
) -> list[ChunkHit]:
    """The chunks best matching `query` among the tenant's ready, live, unarchived documents
    (only those in `document_ids` when given; an empty list finds nothing).

    A chunk matches when it holds any of the query's words (stemmed: "pricing" finds "prices").
    Ranking is BM25 on both databases: rarer words count more, words in a chunk's heading path
    HEADING_WEIGHT times more than in its text, short chunks more than long ones. Then chunks
    below `relative_cut` of the best are dropped (a query matching everything weakly returns few),
    a chunk whose text is the same as a better one's (ignoring case, punctuation and spacing) is
    left out, and on equal scores the primary knowledge document's come first. Each word is
    quoted, so AND, OR, NOT and NEAR are plain words here."""
    terms = query_terms(query)
    limit = min(limit, MAX_LIMIT)
    if not terms or limit < 1 or (document_ids is not None and not document_ids):
        return []
    quoted = [f'"{term}"' for term in terms]
    # Room for the duplicates and ties that ranking sets aside.
    fetch = limit * 2 + 10
    rows: Sequence[repository.Hit] | list[_Scored]
    if session.get_bind().dialect.name == "sqlite":
        match = "{content heading} : (" + " OR ".join(quoted) + ")"
        rows = await repository.search_sqlite(
            session, tenant_id, match, document_ids, fetch, HEADING_WEIGHT
        )
    else:
        rows = await _search_postgresql(session, tenant_id, quoted, document_ids, fetch)
    return _ranked(rows, limit, relative_cut)


async def _search_postgresql(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    quoted: list[str],
    document_ids: Sequence[uuid.UUID] | None,
    fetch: int,
) -> list[_Scored]:
    """BM25 on PostgreSQL, whose ts_rank has no IDF: the best CANDIDATES chunks by each word's
    ts_rank times its IDF (from the tenant's per-word chunk counts), then scored again by
    BM25 proper from the words' occurrences in each candidate's tsvector."""
    stats = await repository.term_statistics(session, tenant_id, quoted)
    words = [
        (term, _idf(stats.chunks, frequency), _LEXEME.findall(lexemes))
        for term, lexemes, frequency in zip(quoted, stats.lexemes, stats.frequencies, strict=True)
        if frequency
    ]
    if not words:
        return []
    candidates = await repository.search_postgresql(
        session,
        tenant_id,
        " or ".join(quoted),
        [(term, idf) for term, idf, _ in words],
        document_ids,
        max(fetch, CANDIDATES),
        # ts_rank's weights of the labels D, C, B (heading), A (content), each in [0, 1].
        (0.0, 0.0, 1.0, 1.0 / HEADING_WEIGHT),
    )
    mean_length = stats.mean_length or 1.0
    scored: list[_Scored] = []
    for row in candidates:
        occurrences = _occurrences(row.vector)
        length = max(row.char_end - row.char_start, 1)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean_length)
        score = 0.0
        for _, idf, lexemes in words:
            # A word stemmed to several lexemes (`foo_bar`) counts as often as its rarest.
            tf = min(
                (
                    occurrences.get(lexeme, (0, 0))[0]
                    + HEADING_WEIGHT * occurrences.get(lexeme, (0, 0))[1]
                    for lexeme in lexemes
                ),
                default=0.0,
            )
            if tf:
                score += idf * tf * (BM25_K1 + 1) / (tf + norm)
        scored.append(_Scored(row, score))
    return scored


# A lexeme and its positions in a tsvector's text: 'word':1A,7,12B ('' is a quote).
_VECTOR_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")
_LEXEME = re.compile(r"'((?:[^']|'')*)'")


def _occurrences(vector: str) -> dict[str, tuple[int, int]]:
    """Per lexeme of a chunk's tsvector text: its occurrences in the text (label A) and in the
    heading path (label B)."""
    found: dict[str, tuple[int, int]] = {}
    for lexeme, positions in _VECTOR_ENTRY.findall(vector):
        labels = [position[-1] for position in positions.split(",")] if positions else []
        found[lexeme] = (labels.count("A"), labels.count("B"))
    return found


def _idf(total: int, frequency: int) -> float:
    """BM25's inverse document frequency, never negative (as Lucene's)."""
    return math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))


@dataclass(frozen=True, slots=True)
class _Scored:
    row: repository.Hit | repository.Candidate
    score: float


def _ranked(
    found: Sequence[repository.Hit] | Sequence[_Scored], limit: int, relative_cut: float
) -> list[ChunkHit]:
    """`rows` scored >= 0 (higher is better) as the best `limit` hits: the relative cut, the
    near-duplicates merged, the primary document first on ties, scores mapped to [0, 1)."""
    scored = [
        item if isinstance(item, _Scored) else _Scored(item, float(item.score)) for item in found
    ]
    if not scored:
        return []
    best = max(item.score for item in scored)
    ordered = sorted(
        (item for item in scored if item.score > 0 and item.score >= best * relative_cut),
        # Scores equal but for rounding are ties; then the primary document; then the order
        # of the text.
        key=lambda item: (
            -round(item.score, 6),
            not item.row.is_primary,
            str(item.row.document_id),
            item.row.ordinal,
        ),
    )
    hits: list[ChunkHit] = []
    seen: set[str] = set()
    for item in ordered:
        if (text := _normalized(item.row.content)) in seen:
            continue
        seen.add(text)
        hits.append(_chunk_hit(item.row, item.score / (1 + item.score)))
        if len(hits) == limit:
            break
    return hits


def _normalized(content: str) -> str:
    return " ".join(_TERM.findall(content.casefold()))


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
    return [_chunk_hit(row, float(row.score)) for row in rows]


def _chunk_hit(row: repository.Hit | repository.Candidate, score: float) -> ChunkHit:
    return ChunkHit(
        chunk_id=row.chunk_id,
        document_id=row.document_id,
        document_name=row.document_name,
        ordinal=row.ordinal,
        content=row.content,
        heading=row.heading,
        score=score,
        char_start=row.char_start,
        char_end=row.char_end,
    )


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
