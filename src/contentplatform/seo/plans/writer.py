"""The offline writer: each item's title, rationale and brief from its own evidence and the
knowledge documents' text, extractive and deterministic (no model is asked, so the same
signals write the same plan). Knowledge documents give seed terms through YAKE! (`key_terms`),
unsupervised keyword extraction from a text's own statistics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yake

from contentplatform.seo.plans.planner import Candidate, monthly, squeeze, stems

PROVIDER = "offline"
MODEL = "extractive-v1"
QUESTION_WORDS = ("how", "what", "why", "when", "where", "which", "who", "can", "does", "is")
WORDS_BY_KIND = {"new": 1500, "refresh": 1200, "geo": 1000}
MAX_TEXT = 50_000  # characters of a document YAKE reads
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Knowledge:
    document_id: str
    filename: str
    text: str
    terms: tuple[str, ...]


def key_terms(text: str, top: int = 8) -> list[str]:
    """The text's key phrases of two words, best first (YAKE!: a lower score is better),
    normalized; repeats dropped. A single word is too broad a topic to plan."""
    if not text.strip():
        return []
    extractor = yake.KeywordExtractor(lan="en", n=2, top=top * 2, dedupLim=0.7)
    found: list[str] = []
    ranked = sorted(
        extractor.extract_keywords(text[:MAX_TEXT]), key=lambda pair: (pair[1], pair[0])
    )
    for phrase, _ in ranked:
        term = " ".join(re.findall(r"[^\W_]+", phrase.lower()))
        if " " in term and not any(part.isdigit() for part in term.split()) and term not in found:
            found.append(term)
    return found[:top]


def _cap(text: str) -> str:
    return " ".join(word[:1].upper() + word[1:] for word in text.split())


def is_question(keyword: str) -> bool:
    return keyword.split(" ", 1)[0] in QUESTION_WORDS


def title(head: Candidate, month_name: str) -> str:
    keyword = head.keyword
    if is_question(keyword):
        made = keyword[:1].upper() + keyword[1:] + "?"
    elif head.kind == "refresh":
        made = f"{_cap(keyword)}: Updated for {month_name}"
    elif head.kind == "geo":
        made = f"{_cap(keyword)}: Clear Answers"
    elif head.intent == "transactional":
        made = f"{_cap(keyword)}: What to Know Before You Buy"
    elif head.intent == "commercial":
        made = f"{_cap(keyword)}: Options Compared"
    else:
        made = f"{_cap(keyword)}: A Complete Guide"
    return made[:200]


def _number(value: float) -> str:
    return f"{round(value):,}"


def rationale(head: Candidate) -> str:
    """Why the item is in the plan, citing its evidence."""
    parts: list[str] = []
    if head.impressions and head.position is not None and "search_console" in head.sources:
        parts.append(
            f'ranks #{round(head.position)} for "{head.keyword}" with '
            f"{_number(head.impressions)} impressions in 28 days"
        )
    elif head.tracked and head.position is not None:
        parts.append(f'tracked "{head.keyword}" ranks #{head.position}')
    elif head.tracked:
        parts.append(f'tracked "{head.keyword}" does not rank in the checked depth')
    if head.action_title:
        parts.append(f'open SEO action "{head.action_title}" (impact {head.action_impact})')
    volume = monthly(head)
    if head.search_volume is not None and volume is not None:
        difficulty = (
            f", difficulty {head.keyword_difficulty}" if head.keyword_difficulty is not None else ""
        )
        parts.append(f"{_number(volume)} searches a month{difficulty}")
    if "knowledge" in head.sources and head.evidence.get("document"):
        parts.append(f'a key term of "{head.evidence["document"]}"')
    if not parts:
        parts.append(f'"{head.keyword}" came from {", ".join(head.sources)}')
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _sentences(keyword: str, knowledge: Sequence[Knowledge], limit: int) -> list[str]:
    """Up to `limit` sentences of the knowledge documents sharing the most stems with the
    keyword (at least one), in document order on ties."""
    wanted = set(stems(keyword))
    if not wanted:
        return []
    scored: list[tuple[int, int, str]] = []
    order = 0
    for document in knowledge:
        for sentence in _SENTENCE.split(document.text[:MAX_TEXT]):
            clean = squeeze(sentence)
            if not 20 <= len(clean) <= 300:
                continue
            overlap = len(wanted & set(stems(clean)))
            if overlap:
                scored.append((-overlap, order, clean))
            order += 1
    scored.sort()
    found: list[str] = []
    for _, _, sentence in scored:
        if sentence not in found:
            found.append(sentence)
        if len(found) == limit:
            break
    return found


def brief(
    head: Candidate, members: Sequence[Candidate], knowledge: Sequence[Knowledge]
) -> dict[str, Any]:
    keyword = head.keyword
    secondary = [member.keyword for member in members[1:6]]
    outline = [f"What {keyword} means and why it matters"]
    outline += [_cap(term) for term in secondary if not is_question(term)]
    if head.intent in ("commercial", "transactional"):
        outline.append(f"How to choose: {keyword}")
    else:
        outline.append(f"How to get started with {keyword}")
    outline += ["Frequently asked questions", "Key takeaways"]
    questions = [member.keyword + "?" for member in members if is_question(member.keyword)]
    for template in (f"What is {keyword}?", f"How does {keyword} work?"):
        if len(questions) >= 5:
            break
        if template not in questions:
            questions.append(template)
    grounding = _sentences(keyword, knowledge, 3)
    lines = [f"Primary keyword: {keyword}."]
    if secondary:
        lines.append(f"Secondary keywords: {', '.join(secondary)}.")
    if head.kind == "refresh" and head.url:
        lines.append(f"Revise the existing page {head.url}: keep its URL, update what is stale.")
    if head.kind == "geo":
        lines.append("Answer the question in the first paragraph, plainly, so AI answers cite it.")
    if grounding:
        lines.append("Ground it in the organization's knowledge:")
        lines += [f"- {sentence}" for sentence in grounding]
    lines.append(f"Why: {rationale(head)}")
    return {
        "outline": [line[:300] for line in outline[:30]],
        "questions": [line[:300] for line in questions[:20]],
        "word_count_target": WORDS_BY_KIND[head.kind],
        "instructions": "\n".join(lines)[:5000],
    }
