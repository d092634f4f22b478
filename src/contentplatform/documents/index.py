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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import snowballstemmer
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import runtime
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
# A search costs about the same whatever the tenant's size, and nothing of other tenants': a
# word's chunks are counted up to COUNT_CAP (beyond it, its share of the tenant's first SAMPLE
# chunks stands for its share of all), and at most CANDIDATES chunks are read and ranked: first
# every chunk of the rarest words while they have CANDIDATES together (exact: the words that
# weigh most), then chunks holding all of the commoner words, then any of them.
COUNT_CAP = 1000
SAMPLE = 1000
CANDIDATES = 200
# On PostgreSQL, candidates of words held by at least one chunk in COMMON_SHARE are found by
# reading the tenant's chunks in turn (about CANDIDATES * COMMON_SHARE at most), not its index.
COMMON_SHARE = 10
# BM25's parameters.
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

    With embeddings configured (and `embeddings_weight` above 0), the query's vector finds the
    nearest chunks too, and the two rankings are combined (`_fused`); when the embeddings server
    fails, full text answers alone."""
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
    weight = runtime.current().settings.embeddings_weight
    query_vector = await vectors.embed_query(query) if weight > 0 else None
    if query_vector is None:
        return text_hits[:limit]
    nearest = await vectors.nearest(
        session, tenant_id, query_vector, document_ids=document_ids, limit=fetch
    )
    return await _fused(session, tenant_id, text_hits, nearest, limit, relative_cut, weight)


async def _fused(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    text_hits: list[ChunkHit],
    nearest: list[tuple[uuid.UUID, float]],
    limit: int,
    relative_cut: float,
    weight: float,
) -> list[ChunkHit]:
    """Hybrid search: the full-text hits and the nearest vectors, each cut relative to its own
    best, combined by score (`vectors.combine`), the vectors counting `weight` times full text
    (`embeddings_weight`). Cosine similarities sit in a narrow band (a real model's unrelated
    passages are not near 0), so the vectors' cut is VECTOR_CUT of the best similarity whenever
    a cut is asked for, and they are scaled min-max over what is left. `score` becomes the
    combined score, in (0, 1]: 1 is first in both."""
    if nearest and relative_cut > 0:
        best = nearest[0][1]
        nearest = [
            (chunk_id, similarity)
            for chunk_id, similarity in nearest
            if similarity >= best * VECTOR_CUT
        ]
    # Full text's BM25 back from its (0, 1) mapping, so the combination sees its margins.
    bm25 = [(hit.chunk_id, hit.score / (1 - hit.score)) for hit in text_hits]
    fused = vectors.combine(bm25, nearest, weight)
    known = {hit.chunk_id: hit for hit in text_hits}
    missing = [chunk_id for chunk_id, _ in fused if chunk_id not in known]
    for row in await repository.by_ids(session, tenant_id, missing):
        known[row.chunk_id] = _chunk_hit(row, 0.0)
    hits: list[ChunkHit] = []
    seen: set[str] = set()
    for chunk_id, score in fused:
        hit = known.get(chunk_id)
        if hit is None or (text := _normalized(hit.content)) in seen:
            continue
        seen.add(text)
        hits.append(dataclasses.replace(hit, score=min(score, 1.0)))
        if len(hits) == limit:
            break
    return hits


_Row = repository.Hit | repository.Candidate


@dataclass(frozen=True, slots=True)
class _Word:
    quoted: str
    frequency: int  # the tenant's chunks holding it (estimated beyond COUNT_CAP)
    idf: float
    stems: list[str]  # as the database's stemmer has it


def _frequencies(frequencies: repository.Frequencies, chunks: int) -> list[int]:
    """Each word's chunk count: the count when it stayed below the cap, otherwise at least the
    cap and its share of the sample scaled to the tenant's chunks."""
    if frequencies.sampled is None:
        return frequencies.capped
    return [
        capped if capped < COUNT_CAP else max(capped, round(sampled * chunks / SAMPLE))
        for capped, sampled in zip(frequencies.capped, frequencies.sampled, strict=True)
    ]


def _pools(words: Sequence[_Word]) -> list[tuple[list[str], bool]]:
    """The candidates' queries, in turn, as (quoted words, whether all of them must be held):
    the rarest words while their chunks are at most CANDIDATES together, then chunks holding
    all the others, then any of them."""
    ordered = sorted(words, key=lambda word: word.frequency)
    rare: list[str] = []
    total = 0
    for word in ordered:
        if total + word.frequency > CANDIDATES:
            break
        rare.append(word.quoted)
        total += word.frequency
    commoner = ordered[len(rare) :]
    common = [word.quoted for word in commoner]
    pools: list[tuple[list[str], bool]] = [(rare, False)] if rare else []
    # Finding the chunks that hold all of them reads the rarest one's chunks: only when those
    # were counted (below the cap), so that its cost stays the counts'.
    if len(common) > 1 and commoner[0].frequency < COUNT_CAP:
        pools.append((common, True))
    if common:
        pools.append((common, False))
    return pools


async def _candidates(
    words: Sequence[_Word],
    fetch: int,
    find: Callable[[list[str], bool, int], Awaitable[Sequence[_Row]]],
) -> list[_Row]:
    """Up to max(fetch, CANDIDATES) distinct chunks from `find(words, all, limit)`, by _pools."""
    budget = max(fetch, CANDIDATES)
    found: dict[uuid.UUID, _Row] = {}
    for quoted, conjunctive in _pools(words):
        if len(found) >= budget:
            break
        for row in await find(quoted, conjunctive, budget - len(found)):
            found.setdefault(row.chunk_id, row)
    return list(found.values())


async def _search_sqlite(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    quoted: list[str],
    document_ids: Sequence[uuid.UUID] | None,
    fetch: int,
) -> list[_Scored]:
    """BM25 on SQLite from the tenant's own statistics, read from FTS5 within the tenant's
    token (FTS5's bm25() counts every tenant's chunks: another organization's documents would
    move this one's scores, and its time). The candidates are scored from the words'
    occurrences in each, stemmed as FTS5's porter tokenizer stems them."""
    stats = await repository.chunk_statistics(session, tenant_id)
    if not stats.chunks:
        return []
    sample = SAMPLE if stats.chunks > COUNT_CAP else 0
    counted = await repository.sqlite_frequencies(
        session, tenant_id, [_fts_match([term]) for term in quoted], COUNT_CAP, sample
    )
    words = [
        _Word(term, frequency, _idf(stats.chunks, frequency), stems)
        for term, frequency in zip(quoted, _frequencies(counted, stats.chunks), strict=True)
        if frequency and (stems := _stems(term))
    ]
    if not words:
        return []

    async def find(terms: list[str], conjunctive: bool, limit: int) -> Sequence[_Row]:
        match = " AND ".join(_fts_match([term]) for term in terms) if conjunctive else None
        return await repository.candidates_sqlite(
            session, tenant_id, match or _fts_match(terms), document_ids, limit
        )

    wanted = {stem for word in words for stem in word.stems}
    weighted = [(word.idf, word.stems) for word in words]
    return [
        _Scored(
            row,
            _bm25(
                weighted, _occurrences_in(row.content, row.heading, wanted), row, stats.mean_length
            ),
        )
        for row in await _candidates(words, fetch, find)
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
    """BM25 on PostgreSQL (whose ts_rank has no IDF) from the tenant's own statistics: the
    candidates are scored from the words' occurrences in each one's tsvector."""
    stats = await repository.chunk_statistics(session, tenant_id)
    if not stats.chunks:
        return []
    sample = SAMPLE if stats.chunks > COUNT_CAP else 0
    lexemes, sampled = await repository.postgresql_sample(session, tenant_id, quoted, sample)
    # The sample first: the words it finds common are not counted (the GIN index would list
    # all their chunks to count the first COUNT_CAP).
    estimates = [
        round(held * stats.chunks / SAMPLE) if sampled is not None else 0
        for held in sampled or [0] * len(quoted)
    ]
    rare = [position for position, estimate in enumerate(estimates) if estimate < COUNT_CAP]
    counts = await repository.postgresql_counts(
        session, tenant_id, [quoted[position] for position in rare], COUNT_CAP
    )
    frequencies = list(estimates)
    for position, count in zip(rare, counts, strict=True):
        frequencies[position] = count if count < COUNT_CAP else max(count, estimates[position])
    words = [
        _Word(term, frequency, _idf(stats.chunks, frequency), _LEXEME.findall(lexeme))
        for term, lexeme, frequency in zip(quoted, lexemes, frequencies, strict=True)
        if frequency
    ]
    if not words:
        return []
    frequency_of = {word.quoted: word.frequency for word in words}

    async def find(terms: list[str], conjunctive: bool, limit: int) -> Sequence[_Row]:
        websearch = " ".join(terms) if conjunctive else " or ".join(terms)
        # Read the chunks in turn when about one in COMMON_SHARE holds the words, or more.
        common = sum(frequency_of[term] for term in terms) * COMMON_SHARE >= stats.chunks
        return await repository.candidates_postgresql(
            session, tenant_id, websearch, document_ids, limit, common=common and not conjunctive
        )

    weighted = [(word.idf, word.stems) for word in words]
    return [
        _Scored(row, _bm25(weighted, _occurrences(row.vector), row, stats.mean_length))
        for row in await _candidates(words, fetch, find)
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


@functools.lru_cache(maxsize=256)
def _starting(wanted: frozenset[str]) -> re.Pattern[str] | None:
    """The ASCII tokens that may stem to one of `wanted`: the porter stem of an ASCII word is
    the word's own beginning but for its last letter (`roughly` -> `roughli`). None when a stem
    is too short to tell."""
    prefixes = sorted({stem[:-1] for stem in wanted}, key=len, reverse=True)
    if not all(prefixes):
        return None
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, prefixes)) + r")[^\W_]*")


def _counts(text: str, wanted: set[str]) -> dict[str, int]:
    """How often each of the `wanted` stems occurs in `text`. The text's distinct words are
    counted first and each is stemmed once (a chunk repeats its words; stemming is the cost);
    in ASCII text, only the words that begin as a wanted stem does."""
    folded = text.casefold()
    starting = _starting(frozenset(wanted)) if folded.isascii() else None
    tokens = (starting or _TOKEN).findall(folded)
    found: dict[str, int] = {}
    for token, count in Counter(tokens).items():
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
