"""How quotable a page is for an AI answer: a deterministic rubric over what the scan kept of
it (main text as markdown, headings, JSON-LD, links), no model involved. 100 points:

| factor | points |
|---|---|
| answer_first: the first paragraph answers in at most two sentences and 60 words | 20 |
| question_headings: an H2 or H3 phrased as a question | 10 |
| faq_or_howto_schema: FAQPage or HowTo JSON-LD (an Article type: 8) | 15 |
| lists_or_tables: a list or a table in the main text | 10 |
| cites_sources_or_stats: a link to another site, or two figures in the text | 10 |
| freshness_days: dateModified (else datePublished) within a year of the scan (two: 5) | 10 |
| author_or_org_entity: a named author or publisher in the JSON-LD | 10 |
| word_count: 300 words or more | 5 |
| section_count: three H2 sections or more (two: 5) | 10 |

Each factor missing its points carries a recommendation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

_QUESTION = re.compile(
    r"^(who|what|when|where|why|how|which|can|does|do|is|are|should|will)\b", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_FIGURE = re.compile(r"\b\d+(?:[.,]\d+)?\s?%|\b\d{2,}(?:[.,]\d+)*\b")
_ARTICLE_TYPES = {"article", "blogposting", "newsarticle", "techarticle", "report"}


@dataclass(frozen=True)
class PageText:
    url: str
    title: str | None
    headings: list[list[str]]  # [[h1..h6, text], ...]
    json_ld: list[Any]
    content: str | None  # markdown; None when the scan kept none
    word_count: int
    external_links: int


@dataclass
class Citability:
    score: int
    factors: dict[str, Any]
    recommendations: list[str] = field(default_factory=list)


def score(page: PageText, scanned_at: datetime) -> Citability:
    found = list(nodes(page.json_ld))
    types = {kind.lower() for node in found for kind in types_of(node)}
    text = page.content or ""
    h2 = [heading for tag, heading in page.headings if tag == "h2"]
    questions = [t for tag, t in page.headings if tag in ("h2", "h3") and _is_question(t)]
    freshness = _freshness_days(found, scanned_at)
    factors: dict[str, Any] = {
        "answer_first": _answers_first(text),
        "question_headings": len(questions),
        "faq_or_howto_schema": bool(types & {"faqpage", "howto"}),
        "lists_or_tables": bool(re.search(r"^\s*(?:[-*+]|\d+\.)\s+\S|^\s*\|", text, re.M)),
        "cites_sources_or_stats": page.external_links > 0 or len(_FIGURE.findall(text)) >= 2,
        "freshness_days": freshness,
        "author_or_org_entity": any(_entity(node) for node in found),
        "word_count": page.word_count,
        "section_count": len(h2),
    }
    points = 0
    advice: list[str] = []

    def earn(got: int, best: int, hint: str) -> None:
        nonlocal points
        points += got
        if got < best:
            advice.append(hint)

    earn(
        20 if factors["answer_first"] else 0,
        20,
        "Answer the page's question in its first two sentences, then explain.",
    )
    earn(10 if questions else 0, 10, "Phrase some H2/H3 headings as the questions people ask.")
    schema = 15 if factors["faq_or_howto_schema"] else 8 if types & _ARTICLE_TYPES else 0
    earn(schema, 15, "Add FAQPage or HowTo structured data (JSON-LD) where the page fits it.")
    listed = 10 if factors["lists_or_tables"] else 0
    earn(listed, 10, "Put steps or comparisons in a list or a table.")
    earn(
        10 if factors["cites_sources_or_stats"] else 0,
        10,
        "Cite sources (links to other sites) or give concrete figures.",
    )
    fresh = 0 if freshness is None else 10 if freshness <= 365 else 5 if freshness <= 730 else 0
    earn(fresh, 10, "Keep the page current and say when (dateModified in its JSON-LD).")
    earn(
        10 if factors["author_or_org_entity"] else 0,
        10,
        "Name the author or the publishing organization in the page's JSON-LD.",
    )
    earn(5 if page.word_count >= 300 else 0, 5, "Write at least 300 words of substance.")
    sections = 10 if len(h2) >= 3 else 5 if len(h2) == 2 else 0
    earn(sections, 10, "Split the page into self-contained H2 sections (three or more).")
    return Citability(points, factors, advice)


def nodes(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON-LD object, @graph and nesting included (bounded by what the crawl kept)."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from nodes(item)
    elif isinstance(value, list):
        for item in value:
            yield from nodes(item)


def types_of(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    if isinstance(kind, str):
        return [kind]
    return [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []


def _entity(node: dict[str, Any]) -> bool:
    for key in ("author", "publisher"):
        found = node.get(key)
        for item in found if isinstance(found, list) else [found]:
            if isinstance(item, str) and item.strip():
                return True
            if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
                return True
    return False


def _freshness_days(nodes: list[dict[str, Any]], scanned_at: datetime) -> int | None:
    for key in ("dateModified", "datePublished"):
        for node in nodes:
            value = node.get(key)
            if isinstance(value, str):
                try:
                    when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
                except ValueError:
                    continue
                if when.tzinfo is None:
                    when = when.replace(tzinfo=scanned_at.tzinfo)
                return max(0, (scanned_at - when).days)
    return None


def _is_question(heading: str) -> bool:
    text = heading.strip()
    return text.endswith("?") or bool(_QUESTION.match(text))


def _answers_first(markdown: str) -> bool:
    """The first paragraph (not a heading, a list or a table) in at most two sentences and
    60 words."""
    for block in re.split(r"\n\s*\n", markdown):
        paragraph = " ".join(block.split())
        if not paragraph or paragraph.startswith(("#", "-", "*", "+", "|", ">")):
            continue
        sentences = len(_SENTENCE_END.findall(paragraph)) or 1
        return sentences <= 2 and len(paragraph.split()) <= 60
    return False
