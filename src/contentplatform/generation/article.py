"""The article between the steps: its parts (one model call each), and the HTML they make once
put together. Deterministic: this runs in the workflow itself, and again when the workflow is
recovered.

Citations name the tenant's knowledge only in the draft's provenance: the HTML, which is what
gets published, cites public sources alone (a passage with a `url`, e.g. a scanned web page) as
links; a citation of the tenant's own files becomes a `Citation` in the provenance (the passage
and the sources it draws on) and leaves no mark in the text.

No sentence twice: the prompts ask each part not to repeat the article (and the offline writer
avoids the sentences already written), and assembly makes sure of it. A sentence is compared
normalized (its words only, case folded: spacing, punctuation, markup and citation markers do not
count), also without a lead-in of up to four words and a comma ("In practice, " as the offline
writer joins its paragraphs, "However, "), and dropped from a later part when an earlier one has
it; a sentence that is merely similar stays. A dropped sentence's citation markers stay when the
sentence before it has none (a marker after a run of sentences cites the run). A part left with
no sentence at all is left out, heading and all (regenerating a section: the section keeps its
body as it was).

Each part's provenance (`ArticleSection`) says what it was written from (`Ground`, from
generation/grounding.py): the search `query` and the `passages` handed to it, each with its
`score` and whether the part `cited` it; `chunk_ids` and `document_ids` are what it cited.
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
_WORDS = re.compile(r"\w+")


class Part(BaseModel):
    """What one model call writes: the introduction (no heading), a section or the conclusion."""

    kind: Literal["intro", "section", "conclusion"]
    heading: str | None
    sources: list[int]
    points: list[str]


class SectionPassage(BaseModel):
    """A passage a part of the article was given to write from (in the draft's provenance), with
    its search score (in [0, 1), comparable within its section's query) and whether it cited it."""

    chunk_id: str
    document_id: str
    document_name: str
    heading: str | None
    score: float
    cited: bool


class ArticleSection(BaseModel):
    """What a part of the article cites, and what it was written from (in the draft's
    provenance). `query` and `passages` are absent (None, []) in provenance written before them."""

    heading: str
    chunk_ids: list[str]
    document_ids: list[str]
    query: str | None = None
    passages: list[SectionPassage] = []


class Ground(BaseModel):
    """What one part is written from: the query its passages were found with, and those passages
    (refs into the article's sources, best first) with their scores."""

    query: str
    refs: list[int]
    scores: list[float]


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
    title: str,
    parts: Sequence[Part],
    written: Sequence[str],
    sources: Sequence[Source],
    grounds: Sequence[Ground | None] | None = None,
) -> Article:
    """The article's HTML and what it cites. Every citation is numbered in order of first use
    and kept as a `Citation` of the passage it ends; in the HTML only public sources are cited,
    as linked markers numbered among themselves and a Sources list of their links. Citations of
    unknown sources are dropped. A sentence an earlier part has is dropped (the module); a part
    left with none is left out. `grounds`: what each part was written from, for its provenance."""
    citer = _Citer(sources)
    blocks: list[str] = []
    sections: list[ArticleSection] = []
    seen: set[str] = set()
    for index, (part, text, ground) in enumerate(
        zip(parts, written, grounds or [None] * len(parts), strict=True)
    ):
        kept = without_repeats(text.strip(), seen)
        if index and not has_sentence(kept):
            continue
        section = part.heading or "Introduction"
        if part.heading:
            anchor = html.slugify(part.heading)
            blocks.append(f'<h2 id="{anchor}">{html_escape.escape(part.heading)}</h2>')
        block, used = citer.cite(section, kept)
        blocks.append(block)
        sections.append(_section_record(section, used, sources, ground))
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


def _section_record(
    heading: str, used: Sequence[int], sources: Sequence[Source], ground: Ground | None
) -> ArticleSection:
    """A part's provenance: the chunks and documents it cited, and what it was written from."""
    record = ArticleSection(
        heading=heading,
        chunk_ids=[sources[ref - 1].chunk_id for ref in used],
        document_ids=list(dict.fromkeys(sources[ref - 1].document_id for ref in used)),
    )
    if ground is None:
        return record
    record.query = ground.query
    record.passages = [
        SectionPassage(
            chunk_id=sources[ref - 1].chunk_id,
            document_id=sources[ref - 1].document_id,
            document_name=sources[ref - 1].document_name,
            heading=sources[ref - 1].heading,
            score=round(score, 4),
            cited=ref in used,
        )
        for ref, score in zip(ground.refs, ground.scores, strict=True)
        if 1 <= ref <= len(sources)
    ]
    return record


# --- no sentence twice ----------------------------------------------------------------------

_TOKEN = re.compile(r"(<[^>]*>)")
_TAG_NAME = re.compile(r"<\s*(/?)\s*([a-zA-Z][a-zA-Z0-9]*)")
# Where a sentence cannot run on: the blocks a part is made of (and a line break).
_BLOCKS = frozenset(
    {"p", "li", "ul", "ol", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "td", "th"}
    | {"blockquote", "div", "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "section"}
)
# A sentence's end: its stop, then closing quotes or brackets.
_STOPPED = re.compile(r"[.!?][\"')\]\u201d\u2019]*$")
_LEADING_MARKER = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_WHITESPACE = re.compile(r"\s+")
# A connective opening a sentence: up to four words (no figures) and a comma.
_LEAD_IN = re.compile(r"\s*(?:[^\W\d_][\w'\u2019-]*\s+){0,3}[^\W\d_][\w'\u2019-]*\s*,\s*")
_ENDS_MARKED = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\][^\w\[\]]*$")
_SPACE_BEFORE_END = re.compile(r"\s+(</(?:p|li|dd|dt|td|th|blockquote)\s*>)", re.IGNORECASE)
_EMPTY_BLOCK = re.compile(r"\s*<(p|li|ul|ol)\b[^>]*>\s*</\1\s*>", re.IGNORECASE)


def sentence_key(text: str) -> str:
    """A sentence as it is compared for repeats: its words, case folded, without markup,
    citation markers, punctuation or spacing."""
    return " ".join(_WORDS.findall(_MARKER.sub(" ", _plain(text)).casefold()))


def _keys(text: str) -> list[str]:
    """The sentence's key, and its key without a lead-in ("In practice, ...") when it has one."""
    plain = _plain(text)
    keys = [sentence_key(plain)]
    if (lead_in := _LEAD_IN.match(plain)) and (rest := sentence_key(plain[lead_in.end() :])):
        keys.append(rest)
    return keys


def _plain(fragment: str) -> str:
    return html_escape.unescape("".join(_TOKEN.split(fragment)[::2]))


def has_sentence(fragment: str) -> bool:
    return bool(sentence_key(fragment))


def without_repeats(fragment: str, seen: set[str]) -> str:
    """The HTML fragment without the sentences in `seen` (by `sentence_key`), nor those it
    repeats itself; `seen` gains the sentences kept. Unchanged (byte for byte) when nothing is
    dropped. Sentences end at a stop followed by a space (a citation marker after the stop goes
    with the sentence) outside inline markup, and at every block."""
    out: list[str] = []
    sentence: list[str] = []
    depth = 0  # inline elements open in the sentence
    marked: bool | None = None  # whether the block's last kept sentence ends in a marker
    dropped = False

    def flush() -> None:
        nonlocal marked, dropped
        text = "".join(sentence)
        sentence.clear()
        keys = _keys(text)
        if not keys[0]:  # space, punctuation or markers alone
            out.append(text)
            return
        markers = _MARKER.findall(text)
        if not seen.intersection(keys):
            seen.update(keys)
            out.append(text)
            marked = bool(markers) and _ends_marked(text)
            return
        dropped = True
        if markers and marked is False:
            # The sentence before it was cited by this marker (a run of sentences, one marker).
            out.append(" ".join(f"[{refs}]" for refs in markers) + _trailing_space(text))
            marked = True

    for token in _TOKEN.split(fragment):
        if not token:
            continue
        tag = _TAG_NAME.match(token) if token.startswith("<") else None
        if token.startswith("<"):
            name = tag.group(2).lower() if tag else ""
            if name in _BLOCKS:
                flush()
                out.append(token)
                depth, marked = 0, None
                continue
            sentence.append(token)
            if tag and not token.endswith("/>"):
                depth = max(0, depth - 1) if tag.group(1) else depth + 1
            continue
        start = 0
        for space in _WHITESPACE.finditer(token):
            sentence.append(token[start : space.end()])
            start = space.end()
            rest = token[start:]
            if depth == 0 and not _LEADING_MARKER.match(rest) and _ends_sentence(sentence):
                flush()
        sentence.append(token[start:])
    flush()
    kept = "".join(out)
    if not dropped:
        return fragment
    while (emptied := _EMPTY_BLOCK.sub("", kept)) != kept:
        kept = emptied
    # The space before a sentence dropped at the end of its block.
    return _SPACE_BEFORE_END.sub(r"\1", kept).strip()


def _ends_sentence(sentence: list[str]) -> bool:
    return bool(_STOPPED.search(_MARKER.sub("", _plain("".join(sentence))).rstrip()))


def _ends_marked(text: str) -> bool:
    return bool(_ENDS_MARKED.search("".join(_TOKEN.split(text)[::2])))


def _trailing_space(text: str) -> str:
    return text[len(text.rstrip()) :]


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
    grounds: Sequence[Ground | None] | None = None,
) -> Article:
    """The article with each given section's body replaced by its new text (its heading kept),
    the rest as it was; the provenance's sources, sections and citations carried over, those of
    the rewritten sections replaced. New citations go on with the article's numbering: a source it
    cites already keeps its number, a new one takes the next; a new public source is added to
    the Sources list (made when there is none). A rewritten section drops the sentences the rest
    of the article (and the sections rewritten before it) has; left with none, it keeps its body.
    `grounds`: what each rewrite was written from, in the order of `rewrites`."""
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

    ordered = sorted(
        zip(rewrites, grounds or [None] * len(rewrites), strict=True),
        key=lambda item: item[0][0].start,
    )
    # The sentences of the article the rewrites leave as it is.
    seen: set[str] = set()
    rest, done = [], 0
    for (section, _), _ in ordered:
        rest.append(content[done : section.body_start])
        done = section.end
    without_repeats("\n".join([*rest, content[done:]]), seen)

    pieces: list[str] = []
    done = 0
    rewritten: dict[str, ArticleSection] = {}
    for (section, text), ground in ordered:
        kept = without_repeats(text.strip(), seen)
        if not has_sentence(kept):
            continue
        block, used = citer.cite(section.heading, kept)
        pieces += [content[done : section.body_start], "\n", block, "\n"]
        done = section.end
        rewritten[section.heading] = _section_record(section.heading, used, sources, ground)
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
    citations = [
        citation
        for citation in _valid(Citation, provenance.get("citations"))
        if citation.section not in rewritten
    ]
    sections = [
        rewritten.pop(section.heading, section)
        for section in _valid(ArticleSection, provenance.get("sections"))
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
