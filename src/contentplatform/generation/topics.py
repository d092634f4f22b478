"""Topics worth an article, proposed from the knowledge index (generation.suggestTopics).

Deterministic and extractive: no model is called (so nothing is metered). The candidates are
the passages' own section headings (the last part of a chunk's heading path, "Handbook >
Watering schedules" -> "Watering schedules") and the key phrases of their text (runs of two or
three words that are not stop words, found at least twice). A candidate scores by how much of
the knowledge it stands for (a heading: 3 per passage under it; either: 1 per other passage
holding it and 0.5 per further mention), times (1 + 2 x the seed keywords it shares a word with)
and (1 + the share of its passages holding a whole seed keyword). The best are taken in turn,
each unlike those before it (a topic whose words mostly repeat a better one's is left out).

A topic is covered when its words and those of a draft's title (or the topic its generation was
asked), or of a job's topic, mostly agree: all of the topic's words are among the other's, or the
Jaccard similarity of their word sets is at least COVERED_JACCARD, or the smaller set (of at
least two words) lies at least COVERED_CONTAINED within the other. Words are compared folded
(case, a plural's final "s").

The content strategy (settings.getStrategy) steers them: a candidate sharing a word with a
pillar's keywords scores (1 + PILLAR_WEIGHT x the pillar's weight) times more and names the
pillar (the best such, by weight); a candidate the strategy excludes is never proposed.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from contentplatform.documents.index import STOP_WORDS
from contentplatform.generation.schemas import SourceDocument, TopicSuggestion

HEADING_WEIGHT = 3.0
PHRASE_WEIGHT = 1.0
REPEAT_WEIGHT = 0.5
SEED_WEIGHT = 2.0
PILLAR_WEIGHT = 2.0
MIN_MENTIONS = 2
MAX_HEADING_WORDS = 12
MAX_TOPIC = 500
MAX_KEYWORDS = 5
MAX_CHUNKS_PER_DOCUMENT = 10
SIMILAR_JACCARD = 0.5
COVERED_JACCARD = 0.6
COVERED_CONTAINED = 0.75
# Words a key phrase neither starts nor ends with, beside the stop words.
WEAK_WORDS = frozenset(
    {
        "also", "every", "one", "two", "three", "may", "might", "must", "like", "use", "used",
        "using", "get", "gets", "make", "makes", "takes", "take", "within", "without", "per",
        "need", "needs", "many", "much", "well", "even", "still", "first", "last", "next",
        "new", "way", "ways", "would", "could", "shall", "yet", "via", "etc", "let", "lets",
    }
)  # fmt: skip
_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*[^\W_]|[^\W\d_]")
_BREAK = re.compile(r"[.!?;:()\[\]\n|]+")


@dataclass(frozen=True)
class Passage:
    """A passage of the index to draw from: a chunk's text under one heading (passages.split)."""

    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_name: str
    heading: str | None
    content: str


@dataclass(frozen=True)
class Covering:
    """What already covers a subject: a draft (its id) or a job (no draft), and its words."""

    text: str
    draft_id: uuid.UUID | None
    what: str  # "a draft", "the job “Garden”"


@dataclass
class _Candidate:
    text: str
    words: frozenset[str]
    heading: bool
    passages: list[Passage] = field(default_factory=list)  # holding it, under it or in its text
    under: int = 0  # passages under it as their heading
    mentions: int = 0  # in the passages' text

    def score(self, seeds: Sequence[frozenset[str]], seeded: set[int]) -> float:
        in_text = len(self.passages) - self.under
        base = (
            HEADING_WEIGHT * self.under
            + PHRASE_WEIGHT * in_text
            + REPEAT_WEIGHT * max(0, self.mentions - in_text)
        )
        held = sum(1 for seed in seeds if seed & self.words)
        share = sum(1 for passage in self.passages if id(passage) in seeded) / len(self.passages)
        return base * (1 + SEED_WEIGHT * held) * (1 + share)


def folded(text: str) -> frozenset[str]:
    """The words of `text` that say something, folded: lowercase, a final "s" dropped."""
    return frozenset(
        _fold(word) for word in _WORD.findall(text.casefold()) if not _weak(word.casefold())
    )


def _fold(word: str) -> str:
    word = word.replace("\u2019", "'")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _weak(word: str) -> bool:
    return word in STOP_WORDS or word in WEAK_WORDS or len(word) < 3


def _heading_of(passage: Passage) -> str | None:
    if not passage.heading:
        return None
    last = " ".join(passage.heading.split(" > ")[-1].split())
    count = len(_WORD.findall(last))
    return last if 1 <= count <= MAX_HEADING_WORDS else None


def _phrases(text: str) -> Iterable[str]:
    """Runs of two or three words that are not stop words, within a sentence, as written."""
    for sentence in _BREAK.split(text):
        run: list[str] = []
        for word in [*_WORD.findall(sentence), ""]:
            if word and not _weak(word.casefold()):
                run.append(word)
                continue
            for size in (2, 3):
                for start in range(len(run) - size + 1):
                    yield " ".join(run[start : start + size])
            run = []


def _candidates(passages: Sequence[Passage]) -> list[_Candidate]:
    found: dict[frozenset[str], _Candidate] = {}
    for passage in passages:
        heading = _heading_of(passage)
        if heading is not None and (words := folded(heading)):
            candidate = found.setdefault(words, _Candidate(heading, words, heading=True))
            if not candidate.heading:  # found in text first: the heading names it
                candidate.heading, candidate.text = True, heading
            candidate.under += 1
            candidate.passages.append(passage)
        for phrase in _phrases(passage.content):
            words = folded(phrase)
            if len(words) < 2:
                continue
            candidate = found.setdefault(words, _Candidate(phrase, words, heading=False))
            candidate.mentions += 1
            if not any(held is passage for held in candidate.passages):
                candidate.passages.append(passage)
    return [c for c in found.values() if c.heading or c.mentions >= MIN_MENTIONS]


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a & b) and (len(a & b) / len(a | b) >= SIMILAR_JACCARD or a <= b or b <= a)


def covers(covering: frozenset[str], topic: frozenset[str]) -> bool:
    shared = len(covering & topic)
    if not shared:
        return False
    if topic <= covering or shared / len(covering | topic) >= COVERED_JACCARD:
        return True
    smaller = min(len(covering), len(topic))
    return smaller >= 2 and shared / smaller >= COVERED_CONTAINED


def propose(
    passages: Sequence[Passage],
    *,
    seed_keywords: Sequence[str],
    count: int,
    covered: Sequence[Covering],
    exclude_covered: bool,
    pillars: Sequence[tuple[str, Sequence[str], float]] = (),
    excluded: Callable[[str], bool] | None = None,
) -> list[TopicSuggestion]:
    """Up to `count` topics from `passages`, best first (see the module). `pillars`: the
    strategy's (name, keywords, weight); `excluded`: whether the strategy excludes a topic."""
    seeds = [words for keyword in seed_keywords if (words := folded(keyword))]
    pillar_words = [
        (name, frozenset().union(*(folded(k) for k in keywords)), weight)
        for name, keywords, weight in pillars
    ]

    def pillar_of(candidate: _Candidate) -> tuple[str | None, float]:
        """The pillar the candidate serves (the heaviest sharing a word) and its boost."""
        near = [(weight, name) for name, words, weight in pillar_words if words & candidate.words]
        if not near:
            return None, 1.0
        weight, name = max(near, key=lambda pair: pair[0])
        return name, 1 + PILLAR_WEIGHT * weight

    # The passages holding every word of a seed keyword.
    seeded = {
        id(passage)
        for passage in passages
        if any(seed <= folded(f"{passage.heading or ''} {passage.content}") for seed in seeds)
    }
    ranked = sorted(
        (c for c in _candidates(passages) if excluded is None or not excluded(c.text)),
        key=lambda c: (
            -c.score(seeds, seeded) * pillar_of(c)[1],
            -len(c.words),
            c.text.casefold(),
        ),
    )
    coverings = [(folded(c.text), c) for c in covered]
    chosen: list[_Candidate] = []
    suggestions: list[TopicSuggestion] = []
    for candidate in ranked:
        if len(suggestions) == count:
            break
        if any(_similar(candidate.words, other.words) for other in chosen):
            continue
        chosen.append(candidate)
        covering = next((c for words, c in coverings if covers(words, candidate.words)), None)
        if covering is not None and exclude_covered:
            continue
        suggestion = _suggestion(candidate, ranked, seed_keywords, seeds, covering)
        suggestions.append(suggestion.model_copy(update={"pillar": pillar_of(candidate)[0]}))
    return suggestions


def _suggestion(
    candidate: _Candidate,
    ranked: Sequence[_Candidate],
    seed_keywords: Sequence[str],
    seeds: Sequence[frozenset[str]],
    covering: Covering | None,
) -> TopicSuggestion:
    text = candidate.text[:MAX_TOPIC]
    topic = text[:1].upper() + text[1:]
    held = [
        keyword
        for keyword, words in zip(seed_keywords, seeds, strict=False)
        if words & candidate.words
    ]
    nearby = [
        other.text.casefold()
        for other in ranked
        if not other.heading
        and other is not candidate
        and not (other.words & candidate.words)
        and any(p is q for p in other.passages for q in candidate.passages)
    ]
    keywords: list[str] = []
    taken: list[frozenset[str]] = []
    for keyword in [text.casefold(), *held, *nearby]:
        words = folded(keyword)
        if len(keywords) < MAX_KEYWORDS and not any(_similar(words, other) for other in taken):
            keywords.append(keyword)
            taken.append(words)
    documents: dict[uuid.UUID, list[uuid.UUID]] = {}
    for passage in candidate.passages:
        chunks = documents.setdefault(passage.document_id, [])
        if len(chunks) < MAX_CHUNKS_PER_DOCUMENT and passage.chunk_id not in chunks:
            chunks.append(passage.chunk_id)
    passages = len({passage.chunk_id for passage in candidate.passages})
    what = "a section heading" if candidate.heading else "a key phrase"
    rationale = (
        f"{what.capitalize()} of {passages} passage{'s' if passages != 1 else ''} in "
        f"{len(documents)} document{'s' if len(documents) != 1 else ''}"
    )
    if held:
        rationale += f", close to the seed keywords {', '.join(held)}"
    if covering is not None:
        rationale += f"; already covered by {covering.what}"
    return TopicSuggestion(
        topic=topic,
        keywords=keywords,
        pillar=None,
        rationale=rationale + ".",
        source_documents=[
            SourceDocument(document_id=document_id, chunk_ids=chunk_ids)
            for document_id, chunk_ids in documents.items()
        ],
        covered_by_draft_id=covering.draft_id if covering is not None else None,
    )
