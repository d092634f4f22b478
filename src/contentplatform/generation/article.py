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
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

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


def words_in(text: str) -> int:
    """The words a reader sees in a part as the model wrote it (its citation markers are none)."""
    return html.word_count(_MARKER.sub(" ", text))


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
        # The numbers the next new source and the next new public URL get.
        self.next_number = 1
        self.next_published = 1

    def _number(self, ref: int) -> int:
        if ref not in self.numbers:
            self.numbers[ref] = self.next_number
            self.next_number += 1
        return self.numbers[ref]

    def _publish(self, url: str) -> int:
        if url not in self.published:
            self.published[url] = self.next_published
            self.next_published += 1
        return self.published[url]

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
                self._number(ref)
                used.append(ref)
            if cited and passage:
                numbers = [self.numbers[ref] for ref in cited]
                self.citations.append(Citation(section=section, text=passage, sources=numbers))
            urls = dict.fromkeys(url for ref in cited if (url := self.sources[ref - 1].url))
            shown = [self._publish(url) for url in urls]
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


# --- rewriting some sections of an article (generation.regenerateDraft) ------------------------

_H2 = re.compile(r"<h2\b([^>]*)>(.*?)</h2>", re.IGNORECASE | re.DOTALL)
_ID = re.compile(r"""\bid\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_SOURCES_LIST = re.compile(
    r"""(<h2\b[^>]*\bid\s*=\s*["']sources["'][^>]*>.*?</h2>\s*<ol\b[^>]*>)(.*?)(</ol>)""",
    re.IGNORECASE | re.DOTALL,
)
_PUBLISHED_ITEM = re.compile(r"""\bid\s*=\s*["']source-(\d+)["']""", re.IGNORECASE)
SOURCES_ANCHOR = "sources"
_WORDS = re.compile(r"\w+")
_SHORT = 3  # words this long or shorter say little about what a passage is on


class Section(BaseModel):
    """A section of an article's HTML: its `<h2>` (the anchor is its `id`, else the slug of its
    text), and where it and its body are (offsets into the content)."""

    anchor: str
    heading: str
    start: int
    body_start: int
    end: int


def sections_of(content: str) -> list[Section]:
    """The article's sections, one per `<h2>`, in order (the Sources list is one too)."""
    matches = list(_H2.finditer(content))
    found = []
    for index, match in enumerate(matches):
        heading = " ".join(html.plain_text(match.group(2)).split())
        named = _ID.search(match.group(1))
        anchor = html_escape.unescape(named.group(1) or named.group(2)) if named else ""
        end = matches[index + 1].start() if index + 1 < len(matches) else len(content)
        found.append(
            Section(
                anchor=anchor or html.slugify(heading),
                heading=heading,
                start=match.start(),
                body_start=match.end(),
                end=end,
            )
        )
    return found


def refs_for(heading: str, sources: Sequence[Source]) -> list[int]:
    """The refs of the sources most about `heading` (its words in their heading and text), best
    first, at most SECTION_SOURCES; none when no source shares a word with it."""
    wanted = {w for w in _WORDS.findall(heading.casefold()) if len(w) > _SHORT}
    scored = []
    for source in sources:
        words = _WORDS.findall(f"{source.heading or ''} {source.text}".casefold())
        score = sum(1 for word in words if word in wanted)
        if score:
            scored.append((-score, source.ref))
    return [ref for _, ref in sorted(scored)[:SECTION_SOURCES]]


def rewrite_sections(
    title: str,
    content: str,
    provenance: dict[str, Any],
    rewrites: Sequence[tuple[Section, str]],
    sources: Sequence[Source],
) -> Article:
    """The article with each given section's body replaced by its new text (its heading kept),
    the rest as it was; the provenance's sources, sections and citations carried over, those of
    the rewritten sections replaced. New citations go on with the article's numbering: a source it
    cites already keeps its number, a new one takes the next; a new public source is added to
    the Sources list (made when there is none)."""
    old_sources = _valid(CitedSource, provenance.get("sources"))
    citer = _Citer(sources)
    numbered = {source.chunk_id: source.number for source in old_sources}
    citer.next_number = max(numbered.values(), default=0) + 1
    for source in sources:
        if source.chunk_id in numbered:
            citer.numbers[source.ref] = numbered[source.chunk_id]
    for cited in old_sources:
        if cited.url and cited.published_as:
            citer.published.setdefault(cited.url, cited.published_as)
    listed = [int(n) for n in _PUBLISHED_ITEM.findall(content)]
    citer.next_published = max([*listed, *citer.published.values()], default=0) + 1
    first_new_published = citer.next_published

    pieces: list[str] = []
    done = 0
    rewritten: dict[str, ArticleSection] = {}
    for section, text in sorted(rewrites, key=lambda rewrite: rewrite[0].start):
        block, used = citer.cite(section.heading, text.strip())
        pieces += [content[done : section.body_start], "\n", block, "\n"]
        done = section.end
        rewritten[section.heading] = ArticleSection(
            heading=section.heading,
            chunk_ids=[sources[ref - 1].chunk_id for ref in used],
            document_ids=list(dict.fromkeys(sources[ref - 1].document_id for ref in used)),
        )
    pieces.append(content[done:])
    rewritten_content = "".join(pieces)

    fresh = [(url, n) for url, n in citer.published.items() if n >= first_new_published]
    if fresh:
        items = "".join(
            f'<li id="source-{number}"><a href="{html_escape.escape(url)}">'
            f"{html_escape.escape(_link_text(url))}</a></li>"
            for url, number in sorted(fresh, key=lambda item: item[1])
        )
        if _SOURCES_LIST.search(rewritten_content):
            rewritten_content = _SOURCES_LIST.sub(
                lambda m: m.group(1) + m.group(2) + items + m.group(3), rewritten_content, count=1
            )
        else:
            rewritten_content += f'\n<h2 id="{SOURCES_ANCHOR}">Sources</h2><ol>{items}</ol>'

    known = {source.number for source in old_sources}
    added = [
        _cited(number, sources[ref - 1], citer.published)
        for ref, number in sorted(citer.numbers.items(), key=lambda item: item[1])
        if number not in known
    ]
    sections = [
        rewritten.pop(section.heading, section)
        for section in _valid(ArticleSection, provenance.get("sections"))
    ]
    citations = [
        citation
        for citation in _valid(Citation, provenance.get("citations"))
        if citation.section not in {section.heading for section, _ in rewrites}
    ]
    return Article(
        title=title,
        content=rewritten_content,
        sections=[*sections, *rewritten.values()],
        sources=[*old_sources, *added],
        citations=[*citations, *citer.citations],
    )


ModelT = TypeVar("ModelT", bound=BaseModel)


def _valid(model: type[ModelT], items: Any) -> list[ModelT]:
    """The items of a stored list that read as `model` (a provenance written by an older version
    may lack some); the others are left out."""
    found = []
    for item in items if isinstance(items, list) else []:
        try:
            found.append(model.model_validate(item))
        except ValidationError:
            continue
    return found
