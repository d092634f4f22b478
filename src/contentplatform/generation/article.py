"""The article between the steps: its parts (one model call each), and the HTML they make once
put together. Deterministic: this runs in the workflow itself, and again when the workflow is
recovered.

Citations name the tenant's knowledge only in the draft's provenance: the HTML, which is what
gets published, cites public sources alone (a passage with a `url`, e.g. a scanned web page) as
links; a citation of the tenant's own files becomes a `Citation` in the provenance (the passage
and the sources it draws on) and leaves no mark in the text.
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
# A marker with the spaces before it, which go with it when nothing of it is published.
_CITED = re.compile(r"([ \t]*)\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
# Where a passage may begin: the opening tag of the block it is in.
_BLOCK_START = re.compile(r"<(?:p|li|dd|dt|td|th|blockquote|h[1-6])\b[^>]*>", re.IGNORECASE)
PASSAGE_CHARACTERS = 1000


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
    """A source the article cites (in the provenance), numbered in order of first use.
    `published_as` is its number in the article's HTML, where only public sources are cited."""

    number: int
    chunk_id: str
    document_id: str
    document_name: str
    heading: str | None
    url: str | None = None
    published_as: int | None = None


class Citation(BaseModel):
    """A passage of the article and the numbers of the sources it draws on (in the provenance):
    what a citation marker in the text said, kept where only the tenant's users read it."""

    section: str
    text: str
    sources: list[int]


class Article(BaseModel):
    title: str
    content: str
    sections: list[ArticleSection]
    sources: list[CitedSource]
    citations: list[Citation] = []


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
    """The article's HTML and what it cites. Every citation is numbered in order of first use
    and kept as a `Citation` of the passage it ends; in the HTML only public sources are cited,
    as linked markers numbered among themselves and a Sources list of their links. Citations of
    unknown sources are dropped."""
    citer = _Citer(sources)
    blocks: list[str] = []
    sections: list[ArticleSection] = []
    for part, text in zip(parts, written, strict=True):
        section = part.heading or "Introduction"
        if part.heading:
            anchor = html.slugify(part.heading)
            blocks.append(f'<h2 id="{anchor}">{html_escape.escape(part.heading)}</h2>')
        block, used = citer.cite(section, text.strip())
        blocks.append(block)
        sections.append(
            ArticleSection(
                heading=section,
                chunk_ids=[sources[ref - 1].chunk_id for ref in used],
                document_ids=list(dict.fromkeys(sources[ref - 1].document_id for ref in used)),
            )
        )
    if citer.published:
        items = "".join(
            f'<li id="source-{number}"><a href="{html_escape.escape(url)}">'
            f"{html_escape.escape(_link_text(url))}</a></li>"
            for url, number in citer.published.items()
        )
        blocks.append(f'<h2 id="sources">Sources</h2><ol>{items}</ol>')
    cited = sorted(citer.numbers, key=citer.numbers.__getitem__)
    return Article(
        title=title,
        content="\n".join(blocks),
        sections=sections,
        sources=[_cited(citer.numbers[ref], sources[ref - 1], citer.published) for ref in cited],
        citations=citer.citations,
    )


class _Citer:
    """The citations of an article, part by part."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = sources
        self.numbers: dict[int, int] = {}  # source ref -> its number in the provenance
        self.published: dict[str, int] = {}  # public URL -> its number in the HTML
        self.citations: list[Citation] = []

    def cite(self, section: str, text: str) -> tuple[str, list[int]]:
        """The part's HTML with its markers replaced, and the refs it cites (first use first)."""
        used: list[int] = []
        passage_start = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal passage_start
            passage = _passage(text, passage_start, match.start())
            passage_start = match.end()
            refs = [int(ref) for ref in match.group(2).split(",")]
            cited = list(dict.fromkeys(r for r in refs if 1 <= r <= len(self.sources)))
            for ref in cited:
                self.numbers.setdefault(ref, len(self.numbers) + 1)
                used.append(ref)
            if cited and passage:
                numbers = [self.numbers[ref] for ref in cited]
                self.citations.append(Citation(section=section, text=passage, sources=numbers))
            urls = dict.fromkeys(url for ref in cited if (url := self.sources[ref - 1].url))
            shown = [self.published.setdefault(url, len(self.published) + 1) for url in urls]
            if not shown:  # nothing public: the marker goes, with the space before it
                return ""
            links = (f'<sup class="citation"><a href="#source-{n}">[{n}]</a></sup>' for n in shown)
            return match.group(1) + "".join(links)

        return _CITED.sub(replace, text), list(dict.fromkeys(used))


def _passage(text: str, start: int, end: int) -> str:
    """The plain text a marker at `end` follows: back to the previous marker (`start`) or the
    start of its block, whichever is nearer."""
    segment = text[start:end]
    openings = list(_BLOCK_START.finditer(segment))
    if openings:
        segment = segment[openings[-1].end() :]
    passage = " ".join(html.plain_text(segment).split())
    if len(passage) > PASSAGE_CHARACTERS:
        passage = passage[:PASSAGE_CHARACTERS].rsplit(" ", 1)[0] + "…"
    return passage


def _cited(number: int, source: Source, published: dict[str, int]) -> CitedSource:
    return CitedSource(
        number=number,
        chunk_id=source.chunk_id,
        document_id=source.document_id,
        document_name=source.document_name,
        heading=source.heading,
        url=source.url,
        published_as=published.get(source.url) if source.url else None,
    )


def _link_text(url: str) -> str:
    """A public source as its list item reads: its address without the scheme."""
    return re.sub(r"^https?://", "", url, flags=re.IGNORECASE).rstrip("/")
