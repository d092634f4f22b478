"""The embedded writer: every task done extractively from the request's sources, with no network.

`OfflineWriter` (provider "offline", model "offline-extractive-1") is the default model. It is fully
deterministic: the same request always gives the same text (no randomness, no clock; choices that
look varied, like the title's form, come from a hash of the input). It reads `request.brief` and
`request.sources` and ignores `messages`, except to count input tokens. `max_tokens` and
`temperature` are ignored. Usage is `count_tokens` over all message contents (input) and over the
output (output). An unknown task is `ProviderRejected`.

Sources are read into sentences and list items, and ranked against the brief, by `ranking.py`.

Citations are ` [n]` (a space, then n = `Source.ref`) after the sentence or run of sentences they
support. Output formats, per task:

- `outline` (brief: topic, keywords, instructions, max_sections): one JSON object
  `{"title": str, "intro": {"sources": [int], "points": [str]},
  "sections": [{"heading": str, "sources": [int], "points": [str]}, ...],
  "conclusion": {"heading": "Key takeaways", "points": [str]}}`.
  The title is the topic, title-cased (acronyms kept, shouting lowered), in one of a few forms
  ("X: A Practical Guide", "Understanding X", ...) picked by a hash of the topic; a long topic, a
  question or one with a colon is just title-cased. Sections group the sources by the last part
  of their heading path ("Pricing > Plans" -> "Plans"), or by document when they have none (such a
  section is named by the most frequent key phrase of its passages, else "Overview": never by its
  document's name, which is the tenant's private file name);
  groups with one name merge, keep the order of their best source, and there are 2..max_sections
  of them when there are at least two passages (one heading for all: split in two halves).
  `points` are the 1-3 best sentences a section will expand (intro: 1-2 from the best two
  sources; conclusion: the first point of each section, at most 5). Without any source, the
  sections are the keywords (or "Overview") with no sources and no points.
- `section` (brief: topic, keywords, instructions, title, heading (None: the introduction), points,
  index, count, previous_headings; optional `kind` and `used_sentences`): an HTML fragment without
  the heading. The introduction is one `<p>` of up to 3 sentences; a body section is 1-3 `<p>`
  (up to 6 sentences in all, in the sources' order) and, after the first, a `<ul>` of the best 2-5
  list items or table rows when the sources have at least two. Every `<p>` and `<li>` ends with a
  marker. Sentences are
  the sources' own (HTML-escaped); later paragraphs may open with a connective ("In practice,").
  `used_sentences` (texts already in the article) are avoided while other sentences remain, by
  the takeaways too.
  With `kind == "conclusion"` (sources: all of them): `<ul>` of 3-5 `<li>` one-sentence takeaways
  (fewer only when the sources hold fewer), at most two per source. Without sources: one `<p>`
  saying the knowledge base has no material on the heading, with no marker.
- `seo` (brief: topic, keywords, title, text, first_paragraph): one JSON object
  `{"seo_title": str, "meta_description": str, "slug": str, "focus_keywords": [str],
  "excerpt": str}`: seo_title <= 60 characters, holding the focus keyword when it fits;
  meta_description of 120-160 characters, from the first paragraph's sentences (then the text's),
  holding the focus keyword (prefixed as "Keyword — ..." when no sentence has it), cut at a word
  boundary with "…", padded with a generic sentence only when the text is too short;
  slug: lowercase ASCII words of the title without stop words, hyphenated, <= 75 characters
  (`^[a-z0-9]+(-[a-z0-9]+)*$`); focus_keywords: the brief's keywords (1-5), else a key phrase of
  the topic; excerpt: the first one or two sentences, <= 300 characters. Markers are removed.
- `answer` (brief: question): plain text, the 2-4 sentences most relevant to the question, best
  first, each followed by its marker; without sources a sentence saying the knowledge base has
  nothing on it. `stream` yields any task's text word by word (word plus following space), then a
  final empty chunk carrying the completion.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contentplatform.ai import ranking
from contentplatform.ai.base import (
    Completion,
    CompletionRequest,
    ProviderRejected,
    Source,
    StreamChunk,
    Usage,
)
from contentplatform.ai.tokens import count_tokens

KEY_TAKEAWAYS = "Key takeaways"
NO_ANSWER = "The knowledge base has nothing on this question yet."


# Typographic quotes and dashes, spelled as escapes so the source shows which is which.
_APOSTROPHES = "'\u2019"
_DASHES = "\u2013\u2014"

# Title-case keeps these lowercase unless they open the title.
_SMALL_WORDS = ranking.wordset(
    "a an and as at but by for from in into nor of on or per the to via vs with"
)
_TITLE_FORMS = (
    "{}: A Practical Guide",
    "Understanding {}",
    "{}: What You Need to Know",
    "A Practical Guide to {}",
    "{} Explained",
)
_QUESTION_WORDS = ranking.wordset("how what why when where which who is are can should do does")
_CONNECTIVES = ("In practice, ", "Beyond that, ", "On top of that, ", "Just as important, ")
# Letters NFKD does not decompose into ASCII.
_ASCII_FOLD = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "đ": "d"}
    | {"Đ": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D"}
)

_MARKER = re.compile(r"\s*\[\d+\]")
_NUMBERING = re.compile(r"^(?:chapter\s+|section\s+)?\d+(?:\.\d+)*[.):]?\s+", re.IGNORECASE)


@dataclass(slots=True)
class _Group:
    heading: str | None
    sources: list[Source]


class OfflineWriter:
    """Extractive, deterministic, network-free; see the module docstring for the formats."""

    provider = "offline"
    model = "offline-extractive-1"

    async def complete(self, request: CompletionRequest) -> Completion:
        if request.task == "outline":
            text = _outline(request.brief, request.sources)
        elif request.task == "section":
            text = _section(request.brief, request.sources)
        elif request.task == "seo":
            text = _seo(request.brief)
        elif request.task == "answer":
            text = _answer(request.brief, request.sources)
        else:
            raise ProviderRejected(f"The offline writer has no task {request.task!r}")
        input_tokens = sum(count_tokens(message.content) for message in request.messages)
        usage = Usage(input_tokens=input_tokens, output_tokens=count_tokens(text))
        return Completion(text=text, usage=usage, model=self.model, finish_reason="stop")

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        completion = await self.complete(request)
        for word in re.findall(r"\S+\s*", completion.text):
            yield StreamChunk(word)
        yield StreamChunk("", completion=completion)

    async def close(self) -> None:
        pass


# --- outline ---------------------------------------------------------------------------------


def _outline(brief: dict[str, Any], sources: Sequence[Source]) -> str:
    topic = _line(brief.get("topic"))
    keywords = _strings(brief.get("keywords"))
    max_sections = max(1, _int(brief.get("max_sections"), 5))
    query = ranking.query(
        (topic, 2.0), *((keyword, 2.0) for keyword in keywords), (brief.get("instructions"), 0.5)
    )
    chosen: list[ranking.Sentence] = []  # points already given, so no two points repeat each other

    intro_sources = list(sources[:2])
    intro_points = ranking.pick(
        ranking.sentences(intro_sources, sources), query, 2, per_source=1, prose=True
    )
    chosen += intro_points

    sections: list[dict[str, Any]] = []
    for group in _groups(sources, topic, max_sections):
        heading = group.heading or "Overview"
        candidates = ranking.sentences(group.sources, sources)
        points = ranking.pick(
            candidates, ranking.query((heading, 1.5), extend=query), 3, avoid=chosen, prose=True
        )
        chosen += points
        sections.append(
            {
                "heading": heading,
                "sources": [source.ref for source in group.sources],
                "points": [point.text for point in points],
            }
        )
    if not sections:
        headings = [_title_case(keyword) for keyword in keywords] or ["Overview"]
        sections = [
            {"heading": heading, "sources": [], "points": []}
            for heading in _unique(headings)[:max_sections]
        ]
    outline = {
        "title": _title(topic),
        "intro": {
            "sources": [source.ref for source in intro_sources],
            "points": [point.text for point in intro_points],
        },
        "sections": sections,
        "conclusion": {
            "heading": KEY_TAKEAWAYS,
            "points": [section["points"][0] for section in sections if section["points"]][:5],
        },
    }
    return json.dumps(outline, ensure_ascii=False)


def _groups(sources: Sequence[Source], topic: str, max_sections: int) -> list[_Group]:
    """Sources grouped by heading (else by document), best group first, headings unique."""
    by_key: dict[str, _Group] = {}
    for source in sources:
        heading = _heading(source.heading)
        key = heading.casefold() if heading else f"document:{source.document_id}"
        by_key.setdefault(key, _Group(heading, [])).sources.append(source)
    groups = list(by_key.values())
    if len(groups) == 1 and len(groups[0].sources) >= 2:
        # One heading or document for everything: two sections still read better than one.
        only = groups[0].sources
        half = (len(only) + 1) // 2
        groups = [_Group(groups[0].heading, only[:half]), _Group(None, only[half:])]

    named: dict[str, _Group] = {}
    for group in groups:
        heading = group.heading
        if heading is None:
            avoid = [topic, *(section.heading or "" for section in named.values())]
            passages = ranking.sentences(group.sources, sources)
            heading = _key_phrase(passages, avoid) or "Overview"
        existing = named.get(heading.casefold())
        if existing is not None:  # the same name: one section, not two with one heading
            existing.sources += group.sources
        elif len(named) < max_sections:
            named[heading.casefold()] = _Group(heading, group.sources)
    return list(named.values())


def _heading(path: str | None) -> str | None:
    """The last part of a heading path, cleaned: "Guide > 2.1 PRICING" -> "Pricing"."""
    if not path:
        return None
    last = ranking.inline(path.split(">")[-1]).strip(" #*:")
    last = _NUMBERING.sub("", last).strip()
    return _title_case(last) if last else None


def _key_phrase(sentences: Sequence[ranking.Sentence], avoid: Sequence[str]) -> str | None:
    """The most frequent two-word phrase of content words (else word), counted by stem so "draft"
    and "drafts" add up, that says something beyond `avoid` (the topic, other headings)."""
    avoided = {
        ranking.stem(word) for text in avoid for word in ranking.WORD.findall(text.casefold())
    }
    counts: Counter[tuple[str, ...]] = Counter()
    forms: dict[tuple[str, ...], str] = {}  # the first way each phrase was written
    for sentence in sentences:
        for fragment in re.split(rf"[^\w\s{_APOSTROPHES}-]+", sentence.text):
            words = re.findall(rf"[^\W\d_][\w{_APOSTROPHES}-]*", fragment)
            for index, word in enumerate(words):
                phrases = [words[index : index + 1]]
                if index and _content(words[index - 1]):
                    phrases.append(words[index - 1 : index + 1])
                for phrase in phrases if _content(word) else []:
                    key = tuple(ranking.stem(w.casefold()) for w in phrase)
                    if not set(key) <= avoided:
                        counts[key] += 1
                        forms.setdefault(key, " ".join(phrase))
    # Two-word phrases first, then single words; among equals, the first met.
    ranked = sorted(counts.items(), key=lambda entry: (-len(entry[0]), -entry[1]))
    for key, count in ranked:
        if count >= 2:
            form = forms[key]
            return _title_case(form if form[:1].isupper() and form.isupper() else form.lower())
    return None


def _content(word: str) -> bool:
    return len(word) > 2 and word.casefold() not in ranking.STOPWORDS


def _title(topic: str) -> str:
    if not topic:
        return "Overview"
    text = _title_case(topic.rstrip(" ."))
    if not text:
        return "Overview"
    first = text.split()[0].casefold()
    if len(text) > 45 or ":" in text or text.endswith("?") or first in _QUESTION_WORDS:
        return text
    # A stable hash: Python's own hash() of a str changes from one process to the next.
    form = _TITLE_FORMS[hashlib.sha256(topic.casefold().encode()).digest()[0] % len(_TITLE_FORMS)]
    return form.format(text)


def _title_case(text: str) -> str:
    """Title case that keeps acronyms and brand casing ("SaaS", "API") and does not shout."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) > 5 and all(c.isupper() for c in letters):
        text = text.lower()  # shouting
    words = text.split()
    result = []
    for index, word in enumerate(words):
        if any(c.isupper() for c in word[1:]):
            result.append(word)  # iPhone, SaaS, API
        elif index and word.casefold() in _SMALL_WORDS:
            result.append(word.lower())
        else:
            result.append(word[:1].upper() + word[1:])
    return " ".join(result)


# --- section ---------------------------------------------------------------------------------


def _section(brief: dict[str, Any], sources: Sequence[Source]) -> str:
    heading = _line(brief.get("heading")) or None
    topic = _line(brief.get("topic"))
    points = _strings(brief.get("points"))
    sentences = ranking.sentences(sources, sources)
    if not sentences:
        conclusion = brief.get("kind") == "conclusion"
        subject = (topic if conclusion else heading) or topic or "this topic"
        return f"<p>{_escape(f'The knowledge base has no material on {subject} yet.')}</p>"
    query = ranking.query(
        (topic, 2.0),
        *((keyword, 2.0) for keyword in _strings(brief.get("keywords"))),
        (heading, 1.5),
        *((point, 1.0) for point in points),
        (brief.get("instructions"), 0.5),
    )
    preferred = _matching(sentences, points)
    used = [
        ranking.sentence(text, 0, 0, 0, False) for text in _strings(brief.get("used_sentences"))
    ]
    if brief.get("kind") == "conclusion":
        # Takeaways the sections have not said already (the article drops a repeated sentence).
        takeaways = ranking.pick(
            sentences, query, 5, avoid=used, preferred=preferred, per_source=2, prose=True
        )
        if len(takeaways) < 3:  # few sources: variety matters less than having three
            takeaways = _choose(sentences, query, 3, used, preferred)
        return "<ul>" + "".join(f"<li>{_cited(s.text, s.ref)}</li>" for s in takeaways) + "</ul>"

    # List items and table rows make a <ul> of their own (never of the introduction); prose
    # sentences make the paragraphs, in the sources' own order, which reads best.
    listed = [s for s in sentences if s.item] if heading is not None else []
    items = _choose(listed, query, 5, used, preferred)
    items = sorted(items, key=_order) if len(items) >= 2 else []
    rest = [s for s in sentences if s not in items]
    prose = sorted(_choose(rest, query, 3 if heading is None else 6, used, preferred), key=_order)
    paragraphs = _paragraphs(prose, 1 if heading is None else 3)
    offset = _int(brief.get("index"), 0)
    lowercase = frozenset(w for s in sources for w in ranking.WORD.findall(s.text) if w.islower())
    blocks = []
    for number, paragraph in enumerate(paragraphs):
        # The first paragraph opens plainly; later ones may take a connective, varied by section.
        connective = _CONNECTIVES[(offset + number) % len(_CONNECTIVES)] if number else ""
        blocks.append(f"<p>{_paragraph(paragraph, connective, lowercase)}</p>")
    if items:
        entries = "".join(f"<li>{_cited(s.text, s.ref)}</li>" for s in items)
        blocks.insert(min(1, len(blocks)), f"<ul>{entries}</ul>")
    return "\n".join(blocks)


def _choose(
    sentences: Sequence[ranking.Sentence],
    query: dict[str, float],
    count: int,
    used: Sequence[ranking.Sentence],
    preferred: Sequence[ranking.Sentence],
) -> list[ranking.Sentence]:
    """The best prose (else items) not already used; used ones only if too few remain."""
    chosen = ranking.pick(sentences, query, count, avoid=used, preferred=preferred, prose=True)
    if len(chosen) < min(count, 2):  # repeating the article beats saying nothing
        chosen = ranking.pick(sentences, query, count, preferred=preferred, prose=True)
    return chosen


def _order(sentence: ranking.Sentence) -> tuple[int, int]:
    return sentence.rank, sentence.position


def _paragraphs(sentences: list[ranking.Sentence], limit: int) -> list[list[ranking.Sentence]]:
    """Up to `limit` paragraphs of about 3 sentences, keeping a source's run together."""
    paragraphs: list[list[ranking.Sentence]] = []
    for sentence in sentences:
        current = paragraphs[-1] if paragraphs else None
        same_source = current is not None and current[-1].rank == sentence.rank
        if current is not None and len(current) < 3 and (same_source or len(current) < 2):
            current.append(sentence)
        elif len(paragraphs) < limit:
            paragraphs.append([sentence])
        else:  # no room for another paragraph: a longer last one keeps every chosen sentence
            paragraphs[-1].append(sentence)
    return paragraphs


def _paragraph(
    sentences: list[ranking.Sentence], connective: str, lowercase: frozenset[str]
) -> str:
    """Sentences joined, a marker after each run from one source (so the paragraph ends in one)."""
    parts = []
    for index, sentence in enumerate(sentences):
        text = _terminated(sentence.text)
        if index == 0 and connective:
            text = _connect(connective, text, lowercase)
        last_of_run = index == len(sentences) - 1 or sentences[index + 1].ref != sentence.ref
        parts.append(_cited(text, sentence.ref) if last_of_run else _escape(text))
    return " ".join(parts)


def _connect(connective: str, text: str, lowercase: frozenset[str]) -> str:
    """Prefix a connective, only where lowercasing the first word cannot harm a proper noun: it
    is a stop word, or the sources also write it in lowercase ("Customers" -> "customers")."""
    first = text.split(maxsplit=1)[0]
    plain_word = first[:1].isupper() and (len(first) == 1 or first[1:].islower())
    common = first.lower() in ranking.STOPWORDS or first.lower() in lowercase
    if common and first != "I" and plain_word:
        return connective + first.lower() + text[len(first) :]
    return text


def _matching(
    sentences: Sequence[ranking.Sentence], points: Sequence[str]
) -> list[ranking.Sentence]:
    """The sentences an outline's points name (a point is one of the sources' sentences)."""
    wanted = [ranking.sentence(point, 0, 0, 0, False) for point in points]
    return [s for s in sentences if any(ranking.similar(s, point) for point in wanted)]


# --- seo -------------------------------------------------------------------------------------


def _seo(brief: dict[str, Any]) -> str:
    topic = _line(brief.get("topic"))
    title = _plain(_line(brief.get("title"))) or _title_case(topic) or "Overview"
    first = _plain(str(brief.get("first_paragraph") or ""))
    text = _plain(str(brief.get("text") or ""))
    focus = _unique(_strings(brief.get("keywords")))[:5] or [_topic_phrase(topic or title)]
    keyword = focus[0]
    sentences = _unique([*ranking.split_sentences(first), *ranking.split_sentences(text)])
    seo = {
        "seo_title": _seo_title(title, keyword),
        "meta_description": _description(sentences, keyword),
        "slug": _slug(title) or _slug(keyword) or "article",
        "focus_keywords": focus,
        "excerpt": _excerpt(ranking.split_sentences(first) or sentences, title),
    }
    return json.dumps(seo, ensure_ascii=False)


def _topic_phrase(topic: str) -> str:
    """A focus keyword from a topic: at most 5 words, lowercase, no stop words at the edges."""
    words = [w.strip(".,;:!?\"'()") for w in topic.casefold().split()]
    words = [w for w in words if w]
    while words and words[0] in ranking.STOPWORDS:
        words.pop(0)
    words = words[:5]
    while words and words[-1] in ranking.STOPWORDS:
        words.pop()
    return " ".join(words) or topic.casefold().strip() or "article"


def _seo_title(title: str, keyword: str) -> str:
    head = re.split(rf"\s*[:|{_DASHES}]\s*|\s+-\s+", title, maxsplit=1)[0]
    label = _title_case(keyword)
    candidates = [title, head, f"{label}: {head}", f"{label}: A Practical Guide", label]
    for candidate in candidates:
        if len(candidate) <= 60 and keyword.casefold() in candidate.casefold():
            return candidate
    return _trim(label, 60)  # only a keyword over 60 characters gets here


def _description(sentences: Sequence[str], keyword: str) -> str:
    description = ""
    for sentence in sentences:
        joined = f"{description} {sentence}".strip()
        if len(joined) <= 160:
            description = joined
        else:
            if len(description) < 120:
                description = _trim(joined, 160, "…", minimum=120)
            break
    if description and keyword.casefold() not in description.casefold():
        description = f"{keyword[:1].upper()}{keyword[1:]} — {description}"
    if len(description) < 120:
        # Too little text to describe: generic but true sentences about the article.
        fillers = (
            f"This article covers {keyword} in plain terms.",
            "It brings together the key facts, the practical steps and the common questions.",
            "Read on for the details that matter most.",
        )
        for filler in fillers:
            if len(description) >= 120:
                break
            description = f"{description} {filler}".strip()
    return _trim(description, 160, "…", minimum=120)


def _excerpt(sentences: Sequence[str], title: str) -> str:
    if not sentences:
        return _trim(title, 300, "…")
    two = " ".join(sentences[:2])
    return two if len(two) <= 300 else _trim(sentences[0], 300, "…")


def _slug(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.translate(_ASCII_FOLD))
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").casefold()
    words = re.findall(r"[a-z0-9]+", re.sub(f"[{_APOSTROPHES}]", "", ascii_text))
    content = [w for w in words if w not in ranking.STOPWORDS]
    words = content if len(content) >= 2 else words
    slug = ""
    for word in words:
        joined = f"{slug}-{word}" if slug else word
        if len(joined) > 75:
            break
        slug = joined
    return slug or "-".join(words)[:75].strip("-")


def _trim(text: str, limit: int, ellipsis: str = "", minimum: int = 0) -> str:
    """`text` cut to at most `limit` characters at a word boundary, or mid-word when a boundary
    would leave fewer than `minimum` (or no) characters."""
    if len(text) <= limit:
        return text
    room = limit - len(ellipsis)
    head = text[: room + 1]  # a space right after the room still makes a boundary
    cut = head[: head.rfind(" ")].rstrip(f" ,;:-{_DASHES}") if " " in head else ""
    if len(cut) + len(ellipsis) < max(minimum, 1) or not cut:
        cut = text[:room].rstrip()
    return cut + ellipsis


# --- answer ----------------------------------------------------------------------------------


def _answer(brief: dict[str, Any], sources: Sequence[Source]) -> str:
    sentences = ranking.sentences(sources, sources)
    if not sentences:
        return NO_ANSWER
    query = ranking.query((brief.get("question"), 1.0))
    chosen = ranking.pick(sentences, query, 4, prose=True)
    relevant = [s for s in chosen if any(word in query for word in s.words)]
    # 2-4 sentences: the relevant ones, or the best two when none shares a word with the question.
    answer = relevant if len(relevant) >= 2 else chosen[:2]
    return " ".join(f"{_terminated(s.text)} [{s.ref}]" for s in answer)


# --- small helpers ---------------------------------------------------------------------------


def _cited(text: str, ref: int) -> str:
    return f"{_escape(text)} [{ref}]"


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _terminated(text: str) -> str:
    return text if text[-1:] in f".!?…{ranking.CLOSING}" else f"{text}."


def _plain(text: str) -> str:
    """Article text without citation markers, on one line."""
    return " ".join(_MARKER.sub("", text).split())


def _line(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _strings(value: object) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    return [text for text in (_line(item) for item in value) if text]


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _unique(texts: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for text in texts:
        seen.setdefault(text.casefold(), text)
    return list(seen.values())


__all__ = ["KEY_TAKEAWAYS", "NO_ANSWER", "OfflineWriter"]
