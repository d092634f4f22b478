"""Which passages each part of an article is written from, and the one list they are cited from.

Retrieval per section. The article is planned (outlined) from a topic-level retrieval: the topic
and the keywords, in the chosen documents when the brief names them, plus the best of the primary
knowledge document (workflows.retrieve). Then each section is retrieved for on its own
(workflows.retrieve_sections, all sections' searches in one read-only transaction): its heading
and the topic together, in the chosen documents (and the primary one) when named, with the
search's relative cut. So a section is written from the passages about its heading, and a word
that matches everything weakly (a guide's subject, "coffee", in every other document too) brings
in nothing: those passages score far below the best and are cut.

Decisions:

- A section's query is its heading and the topic, not the keywords. Keywords are the same for
  every section and are often broad (search phrases, the issue's "coffee"): in every section's
  query they make the sections' retrievals alike and let a broad word decide what they find.
  They shape the topic-level retrieval, which plans the article and so names the sections.
- The introduction is written from the passages the outline chose for it (else the topic-level
  best), the conclusion from the topic-level best: both speak for the whole article. A section
  whose retrieval keeps nothing (everything below the cut, or sharing too few words with heading
  and topic) is written from what the outline planned for it, found by the topic-level query, as
  before retrieval per section; its provenance then names that query.
- A section's passages hold a word of its heading (passages.about): a chunk packs several
  sections of a document and is scored as one, so its passage on installation would otherwise
  ride along with a section on pricing. When some are under a heading sharing a word with the
  section's, only those are used (at most SECTION_SOURCES).
- Distinct passages: sections take their passages in order, each only those no earlier section
  was given (and, regenerating, that the rest of the draft does not cite) while there are such;
  when there are none, its best passage, even though given before: a section is written from
  what is about it, and a sentence repeated from an earlier part is dropped at assembly
  (article.py). The introduction's and conclusion's passages do not count: they speak for the
  whole article in a few sentences, and a section has first claim on the passages about it.
- The article's sources are numbered once: the topic-level passages first (1..n, as the outline
  saw them, so its numbers stay valid), then the sections' new passages in order. A passage is
  in the list once, compared by its words (the same text found twice, from two overlapping
  chunks or by two queries, is one source).

Pure and deterministic: it runs in the workflow, and again from the checkpointed retrievals when a
run is recovered, which so writes the same article; the same goes for a regeneration.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from contentplatform.ai.base import Source
from contentplatform.generation.article import SECTION_SOURCES, Ground, Part, sources_for

_WORD = re.compile(r"\w+")


class Found(TypedDict):
    """A passage a retrieval found, with the score of the chunk it was cut from for that
    retrieval's query."""

    chunk_id: str
    document_id: str
    document_name: str
    heading: str | None
    text: str
    url: str | None
    score: float
    # A section's passage under a heading sharing a word with the section's (passages.about).
    under_heading: bool


class Retrieval(TypedDict):
    """One search's passages, best first, and the query it was."""

    query: str
    passages: list[Found]


def section_query(heading: str, topic: str) -> str:
    return f"{heading} {topic}"


def passage_key(text: str) -> str:
    """A passage as it is compared with others: its words, case folded."""
    return " ".join(_WORD.findall(text.casefold()))


@dataclass(slots=True)
class _Pool:
    """The article's sources, each passage once, numbered as added."""

    sources: list[Source] = field(default_factory=list)
    refs: dict[str, int] = field(default_factory=dict)

    def add(self, found: Found) -> int:
        key = passage_key(found["text"])
        if key not in self.refs:
            self.refs[key] = len(self.sources) + 1
            self.sources.append(
                Source(
                    ref=len(self.sources) + 1,
                    chunk_id=found["chunk_id"],
                    document_id=found["document_id"],
                    document_name=found["document_name"],
                    heading=found["heading"],
                    text=found["text"],
                    url=found["url"],
                )
            )
        return self.refs[key]


@dataclass(frozen=True, slots=True)
class Grounded:
    """The article's sources and, per part, what it is written from."""

    sources: list[Source]
    grounds: list[Ground]

    def given(self, index: int) -> list[Source]:
        """The sources part `index` is written from, best first."""
        return [self.sources[ref - 1] for ref in self.grounds[index].refs]


def outline_sources(topic: Retrieval) -> list[Source]:
    """The topic-level passages as the outline is given them, numbered from 1."""
    pool = _Pool()
    for found in topic["passages"]:
        pool.add(found)
    return pool.sources


def ground(
    topic: Retrieval,
    parts: Sequence[Part],
    sections: Sequence[Retrieval],
    *,
    cited_elsewhere: Collection[str] = (),
) -> Grounded:
    """Each part's passages (the module): `sections` are the retrievals of the parts of kind
    `section`, in order; `cited_elsewhere`, the chunks the rest of a draft cites (a section
    regenerated prefers others)."""
    if len(sections) != sum(part.kind == "section" for part in parts):
        raise ValueError("one retrieval per section")
    pool = _Pool()
    topic_scores: dict[int, float] = {}
    for found in topic["passages"]:
        topic_scores.setdefault(pool.add(found), found["score"])
    planned_from = list(pool.sources)
    given: set[int] = set()
    retrievals = iter(sections)
    grounds: list[Ground] = []
    for part in parts:
        chosen = None
        if part.kind == "section":
            chosen = _section(pool, next(retrievals), given, set(cited_elsewhere))
        if chosen is None:
            refs = [source.ref for source in sources_for(part, planned_from)]
            chosen = Ground(
                query=topic["query"], refs=refs, scores=[topic_scores[ref] for ref in refs]
            )
        if part.kind == "section":
            given.update(chosen.refs)
        grounds.append(chosen)
    return Grounded(sources=pool.sources, grounds=grounds)


def _section(
    pool: _Pool, retrieval: Retrieval, given: set[int], cited_elsewhere: set[str]
) -> Ground | None:
    """A section's passages from its own retrieval (the module); None when it found none."""
    unique: list[Found] = []
    seen: set[str] = set()
    for found in retrieval["passages"]:
        if (key := passage_key(found["text"])) not in seen:
            seen.add(key)
            unique.append(found)
    under = [found for found in unique if found["under_heading"]]
    candidates = under or unique
    if not candidates:
        return None
    fresh = [
        found
        for found in candidates
        if pool.refs.get(passage_key(found["text"])) not in given
        and found["chunk_id"] not in cited_elsewhere
    ]
    chosen = fresh[:SECTION_SOURCES] or candidates[:1]
    return Ground(
        query=retrieval["query"],
        refs=[pool.add(found) for found in chosen],
        scores=[found["score"] for found in chosen],
    )
