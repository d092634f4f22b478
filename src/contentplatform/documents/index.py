"""The chunk index: what ingestion writes and what generation and chat read.

Never commits: callers own the unit of work. Every function is scoped to one tenant.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import unicodedata
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import snowballstemmer
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.documents import index_repository as repository
from contentplatform.documents import vectors
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
# Hybrid search: nearest vectors below this share of the best cosine similarity are dropped.
VECTOR_CUT = 0.8
# How many chunks the database's own ranking picks for BM25 to rank again, and BM25's
# parameters.
CANDIDATES = 50
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
    quoted, so AND, OR, NOT and NEAR are plain words here.

    With embeddings configured, the query's vector finds the nearest chunks too, and the two
    rankings are fused (`_fused`); when the embeddings server fails, full text answers alone."""
    limit = min(limit, MAX_LIMIT)
    if not query.strip() or limit < 1 or (document_ids is not None and not document_ids):
        return []
    # Room for the duplicates and ties that ranking sets aside.
    fetch = limit * 2 + 10
    found: list[_Scored] = []
    if quoted := [f'"{term}"' for term in query_terms(query)]:
        if session.get_bind().dialect.name == "sqlite":
            found = await _search_sqlite(session, tenant_id, quoted, document_ids, fetch)
        else:
            found = await _search_postgresql(session, tenant_id, quoted, document_ids, fetch)
    text_hits = _ranked(found, fetch, relative_cut)
    query_vector = await vectors.embed_query(query)
    if query_vector is None:
        return text_hits[:limit]
    nearest = await vectors.nearest(
        session, tenant_id, query_vector, document_ids=document_ids, limit=fetch
    )
    return await _fused(session, tenant_id, text_hits, nearest, limit, relative_cut)


async def _fused(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    text_hits: list[ChunkHit],
    nearest: list[tuple[uuid.UUID, float]],
    limit: int,
    relative_cut: float,
) -> list[ChunkHit]:
    """Hybrid search: the full-text hits and the nearest vectors, each cut relative to its own
    best, fused by reciprocal rank. Cosine similarities sit in a narrow band (a real model's
    unrelated passages are not near 0), so the vectors' cut is VECTOR_CUT of the best similarity
    whenever a cut is asked for. `score` becomes the fused score scaled to (0, 1]: 1 is first in
    both rankings."""
    if nearest and relative_cut > 0:
        best = nearest[0][1]
        nearest = [
            (chunk_id, similarity)
            for chunk_id, similarity in nearest
            if similarity >= best * VECTOR_CUT
        ]
    fused = vectors.fuse(
        [[hit.chunk_id for hit in text_hits], [chunk_id for chunk_id, _ in nearest]]
    )
    known = {hit.chunk_id: hit for hit in text_hits}
    missing = [chunk_id for chunk_id, _ in fused if chunk_id not in known]
    for row in await repository.by_ids(session, tenant_id, missing):
        known[row.chunk_id] = _chunk_hit(row, 0.0)
    scale = (vectors.RRF_K + 1) / 2
    hits: list[ChunkHit] = []
    seen: set[str] = set()
    for chunk_id, score in fused:
        hit = known.get(chunk_id)
        if hit is None or (text := _normalized(hit.content)) in seen:
            continue
        seen.add(text)
        hits.append(dataclasses.replace(hit, score=min(score * scale, 1.0)))
        if len(hits) == limit:
            break
    return hits


async def _search_sqlite(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    quoted: list[str],
    document_ids: Sequence[uuid.UUID] | None,
    fetch: int,
) -> list[_Scored]:
    """BM25 on SQLite from the tenant's own statistics. FTS5's bm25() counts every tenant's
    chunks (one index for all), so another organization's documents would move this one's
    scores, its relative cut and its heading weight. FTS5 picks the best CANDIDATES, which are
    then scored again from the tenant's per-word chunk counts and the words' occurrences in
    each candidate, stemmed as FTS5's porter tokenizer stems them."""
    matches = [_fts_match([term]) for term in quoted]
    stats = await repository.sqlite_term_statistics(session, tenant_id, matches)
    words = [
        (_idf(stats.chunks, frequency), stems)
        for term, frequency in zip(quoted, stats.frequencies, strict=True)
        if frequency and (stems := _stems(term))
    ]
    if not words:
        return []
    candidates = await repository.search_sqlite(
        session, tenant_id, _fts_match(quoted), document_ids, max(fetch, CANDIDATES), HEADING_WEIGHT
    )
    wanted = {stem for _, stems in words for stem in stems}
    return [
        _Scored(
            row,
            _bm25(words, _occurrences_in(row.content, row.heading, wanted), row, stats.mean_length),
        )
        for row in candidates
    ]


def _fts_match(quoted: Sequence[str]) -> str:
    """An FTS5 query for chunks holding any of the quoted words in their text or heading path."""
    return "{content heading} : (" + " OR ".join(quoted) + ")"


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
    weighted = [(idf, lexemes) for _, idf, lexemes in words]
    return [
        _Scored(row, _bm25(weighted, _occurrences(row.vector), row, stats.mean_length))
        for row in candidates
    ]


def _bm25(
    words: Sequence[tuple[float, Sequence[str]]],
    occurrences: dict[str, tuple[int, int]],
    row: repository.Hit | repository.Candidate,
    mean_length: float,
) -> float:
    """BM25 of a chunk: `words` are the query's (IDF, the word's stems), `occurrences` each
    stem's count in the chunk's text and in its heading path."""
    length = max(row.char_end - row.char_start, 1)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / (mean_length or 1.0))
    score = 0.0
    for idf, stems in words:
        # A word made of several stems (`foo_bar`) counts as often as its rarest.
        tf = min(
            (
                occurrences.get(stem, (0, 0))[0] + HEADING_WEIGHT * occurrences.get(stem, (0, 0))[1]
                for stem in stems
            ),
            default=0.0,
        )
        if tf:
            score += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return score


# FTS5's unicode61 tokenizer: runs of letters and digits (the rest separates), case and
# diacritics folded; then its porter stemmer.
_TOKEN = re.compile(r"[^\W_]+")
_PORTER = snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    """The stem of a case-folded token."""
    folded = unicodedata.normalize("NFKD", token)
    return str(_PORTER.stemWord("".join(c for c in folded if not unicodedata.combining(c))))


def _stems(text: str) -> list[str]:
    return [_stem(token) for token in _TOKEN.findall(text.casefold())]


def _counts(text: str, wanted: set[str]) -> dict[str, int]:
    """How often each of the `wanted` stems occurs in `text`. The text's distinct words are
    counted first and each is stemmed once (a chunk repeats its words; stemming is the cost)."""
    found: dict[str, int] = {}
    for token, count in Counter(_TOKEN.findall(text.casefold())).items():
        if (stem := _stem(token)) in wanted:
            found[stem] = found.get(stem, 0) + count
    return found


def _occurrences_in(
    content: str, heading: str | None, wanted: set[str]
) -> dict[str, tuple[int, int]]:
    """Per wanted stem: its occurrences in a chunk's text and in its heading path."""
    text, path = _counts(content, wanted), _counts(heading or "", wanted)
    return {stem: (text.get(stem, 0), path.get(stem, 0)) for stem in text.keys() | path.keys()}


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
