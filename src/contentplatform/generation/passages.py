"""From retrieved chunks to the passages an article is written from.

A chunk packs several small Markdown sections together, and its `heading` is only the heading
path where it starts. Split at the heading lines inside it, each passage carries its own heading,
so a section named after a heading is written from the text under that heading. Passages that
share too few words with the topic and keywords are dropped: a chunk found by one common word
("test") should not become a section of its own. A keyword of several words ("basic plan") held
whole is enough; a keyword of one word is one word like the topic's: a broad one (a guide's
subject, "coffee") is in every passage of every guide on it, and would keep them all.

A section's passages (`about`) must hold a word of its heading: a chunk packs several sections,
all scored as one, so the topic's words alone (in every passage of a guide on the topic) would
let a section on pricing be written from the passage on installation next to it. Those under a
heading sharing a word with the section's come first, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contentplatform.documents.index import ChunkHit, query_terms

_HEADING_LINE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_WORD = re.compile(r"\w+")
# Words are compared by their first letters, a cheap stand-in for stemming
# ("scheduling" ~ "schedules"), as the full-text index stems its matches.
_STEM = 5


@dataclass(frozen=True, slots=True)
class Passage:
    hit: ChunkHit
    heading: str | None
    text: str


def split(hit: ChunkHit) -> list[Passage]:
    """The chunk's text cut at its heading lines; each part under its full heading path."""
    path = hit.heading.split(" > ") if hit.heading else []
    passages: list[Passage] = []
    lines: list[str] = []

    def flush() -> None:
        text = "\n".join(lines).strip()
        if text:
            passages.append(Passage(hit, " > ".join(path) or None, text))
        lines.clear()

    for line in hit.content.splitlines():
        found = _HEADING_LINE.match(line)
        if found is None:
            lines.append(line)
            continue
        flush()
        level = len(found[1])
        path = [*path[: level - 1], found[2].strip()]
    flush()
    return passages


def _stems(text: str) -> set[str]:
    return {word.casefold()[:_STEM] for word in _WORD.findall(text)}


def relevant(
    hits: Sequence[ChunkHit],
    topic: str,
    keywords: Sequence[str] = (),
    *,
    at_least_one: bool = True,
) -> list[Passage]:
    """The passages of `hits` (best first) that hold one of the `keywords` of several words (all
    its words) or at least two words of topic and keywords (the only word, when there is one);
    with `at_least_one`, the best passage when none does."""
    terms = _terms(" ".join([topic, *keywords]))
    phrases = [phrase for keyword in keywords if len(phrase := _terms(keyword)) > 1]
    needed = min(2, len(terms))

    def matches(passage: Passage) -> int:
        words = _stems(f"{passage.heading or ''} {passage.text}")
        if any(phrase <= words for phrase in phrases):
            return len(terms) + 1
        return len(terms & words)

    found = [passage for hit in hits for passage in split(hit)]
    kept = [passage for passage in found if matches(passage) >= needed]
    if kept or not found or not at_least_one:
        return kept
    return [max(found, key=matches)]


def about(hits: Sequence[ChunkHit], heading: str, topic: str) -> list[tuple[Passage, bool]]:
    """The passages of a section's `hits` (best first) that hold a word of its `heading`, each
    with whether its own heading has one: those first, else in the hits' order. A heading of stop
    words alone: the passages `relevant` to heading and topic, none under it."""
    wanted = _terms(heading)
    if not wanted:
        return [(p, False) for p in relevant(hits, f"{heading} {topic}", at_least_one=False)]
    found = [
        (passage, bool(wanted & _stems((passage.heading or "").rsplit(" > ", 1)[-1])))
        for hit in hits
        for passage in split(hit)
        if wanted & _stems(f"{passage.heading or ''} {passage.text}")
    ]
    # A stable sort: among equals, the hits' order.
    return sorted(found, key=lambda item: not item[1])


def _terms(text: str) -> set[str]:
    return {term.casefold()[:_STEM] for term in query_terms(text)}


def every(hits: Iterable[ChunkHit]) -> list[Passage]:
    """All passages of `hits`, relevant or not (for documents the caller chose explicitly)."""
    return [passage for hit in hits for passage in split(hit)]
