"""The article between the steps: its parts (one model call each), and the HTML they make once
put together, citations renumbered and linked to a Sources list. Deterministic: this runs in the
workflow itself, and again when the workflow is recovered.
"""

from __future__ import annotations

import html as html_escape
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from contentplatform.ai.base import Source
from contentplatform.drafts import html

SECTION_SOURCES = 4
CONCLUSION_SOURCES = 6
# A part whose outline cites none of the sources is written from the best ones.
FALLBACK_SOURCES = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


class Part(BaseModel):
    """What one model call writes: the introduction (no heading), a section or the conclusion."""

    kind: Literal["intro", "section", "conclusion"]
    heading: str | None
    sources: list[int]
    points: list[str]


class ArticleSection(BaseModel):
    """What a part of the article cites (in the draft's provenance)."""

    heading: str
    chunk_ids: list[str]
    document_ids: list[str]


class CitedSource(BaseModel):
    """A source the article cites, under its number in the article (in the provenance)."""

    number: int
    chunk_id: str
    document_id: str
    document_name: str
    heading: str | None


class Article(BaseModel):
    title: str
    content: str
    sections: list[ArticleSection]
    sources: list[CitedSource]


def plan_parts(outline: dict[str, Any]) -> list[Part]:
    """Introduction, sections, conclusion of the outline as make_outline checkpointed it.

    Not read as an answers.Outline again: a title or heading cut at its bound may end in a space,
    which a second reading would strip, changing a recovered run's article."""
    return [
        Part(kind="intro", heading=None, **outline["intro"]),
        *(Part(kind="section", **section) for section in outline["sections"]),
        Part(kind="conclusion", sources=[], **outline["conclusion"]),
    ]


def sentences_of(written: list[str]) -> list[str]:
    """The sentences already in the article, so later parts do not repeat them."""
    text = "\n".join(html.plain_text(part) for part in written)
    return [s for s in _SENTENCE_END.split(_MARKER.sub("", text)) if s.strip()]


def sources_for(part: Part, sources: Sequence[Source]) -> list[Source]:
    if part.kind == "conclusion":
        return list(sources[:CONCLUSION_SOURCES])
    chosen = [sources[ref - 1] for ref in part.sources if 1 <= ref <= len(sources)]
    return chosen[:SECTION_SOURCES] or list(sources[:FALLBACK_SOURCES])


def assemble(
    title: str, parts: Sequence[Part], written: Sequence[str], sources: Sequence[Source]
) -> Article:
    """The article's HTML: citations renumbered in order of first use and linked to a Sources
    list; citations of unknown sources dropped."""
    numbers: dict[int, int] = {}  # source ref -> number in this article
    used: list[int] = []  # source refs the part being linked cites

    def link(match: re.Match[str]) -> str:
        cited = []
        for ref in (int(r) for r in match.group(1).split(",")):
            if 1 <= ref <= len(sources):
                cited.append(numbers.setdefault(ref, len(numbers) + 1))
                used.append(ref)
        return "".join(
            f'<sup class="citation"><a href="#source-{n}">[{n}]</a></sup>'
            for n in dict.fromkeys(cited)
        )

    blocks: list[str] = []
    sections: list[ArticleSection] = []
    for part, text in zip(parts, written, strict=True):
        used.clear()
        if part.heading:
            anchor = html.slugify(part.heading)
            blocks.append(f'<h2 id="{anchor}">{html_escape.escape(part.heading)}</h2>')
        blocks.append(_MARKER.sub(link, text.strip()))
        used[:] = dict.fromkeys(used)
        sections.append(
            ArticleSection(
                heading=part.heading or "Introduction",
                chunk_ids=[sources[ref - 1].chunk_id for ref in used],
                document_ids=list(dict.fromkeys(sources[ref - 1].document_id for ref in used)),
            )
        )
    cited = sorted(numbers, key=numbers.__getitem__)
    if cited:
        items = "".join(
            f'<li id="source-{numbers[ref]}">{html_escape.escape(_source_label(sources[ref - 1]))}'
            "</li>"
            for ref in cited
        )
        blocks.append(f'<h2 id="sources">Sources</h2><ol>{items}</ol>')
    return Article(
        title=title,
        content="\n".join(blocks),
        sections=sections,
        sources=[_cited(numbers[ref], sources[ref - 1]) for ref in cited],
    )


def _cited(number: int, source: Source) -> CitedSource:
    return CitedSource(
        number=number,
        chunk_id=source.chunk_id,
        document_id=source.document_id,
        document_name=source.document_name,
        heading=source.heading,
    )


def _source_label(source: Source) -> str:
    return source.document_name + (f", {source.heading}" if source.heading else "")
