"""What is read from one answer, locally, and stored with it as evidence.

- **Mentions**: the brand (SEO settings' brand name and brand terms) and each competitor tracked
  for AI (its name, aliases, and its domain) found in the text on word boundaries: the text is
  cut into words (`\\w+`), and a run of as many words as a term has is a mention when it equals
  the term (case-insensitive) or, for a term of 5 characters or more, when `rapidfuzz`'s ratio
  of the two (words joined by one space, casefolded) is at least FUZZY_SCORE: `Acme-Soil`,
  `ACME soil` and `Acme Soils` are mentions of `Acme Soil`, `Acme Soilless` is not.
  Overlapping mentions keep the longer, then the earlier. Each mention keeps its character
  offsets [start, end) in the stored text.
- **Order**: the brands mentioned, ranked 1, 2, ... by their first mention.
- **Sentiment**: per brand, the mean over the sentences mentioning it of each sentence's score,
  0 (negative) to 100 (positive), 50 neutral: the configured language model's where one is
  configured (sentiment.py), else a small lexicon's (LEXICON: no model is asked).
- **Citations**: each URL reduced to its registrable domain with `tldextract` and the public
  suffix list bundled with it (never fetched: no list URL, no cache directory), marked `self`
  (our site's registrable domain), `competitor` (a competitor's) or `third_party`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import tldextract
from rapidfuzz import fuzz

from contentplatform.seo.ai_visibility.engines import Answer

FUZZY_SCORE = 90
FUZZY_MIN_LENGTH = 5
LEXICON = "lexicon (offline, no model)"
EXCERPT_CHARS = 160
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A small sentiment lexicon (English): what AI answers say of products and vendors.
POSITIVE = frozenset(
    [
        "best",
        "great",
        "excellent",
        "reliable",
        "recommended",
        "recommend",
        "popular",
        "leading",
        "trusted",
        "top",
        "good",
        "affordable",
        "favorite",
        "favourite",
        "easy",
        "fast",
        "powerful",
        "robust",
        "strong",
        "solid",
        "ideal",
        "outstanding",
        "impressive",
        "love",
        "loved",
        "praised",
        "helpful",
        "quality",
        "innovative",
        "efficient",
        "secure",
    ]
)
NEGATIVE = frozenset(
    [
        "worst",
        "bad",
        "poor",
        "expensive",
        "slow",
        "unreliable",
        "avoid",
        "complaints",
        "complaint",
        "issues",
        "problems",
        "problem",
        "difficult",
        "buggy",
        "overpriced",
        "weak",
        "limited",
        "lacking",
        "outdated",
        "disappointing",
        "hate",
        "hated",
        "risky",
        "insecure",
        "confusing",
        "clunky",
        "terrible",
        "awful",
    ]
)
# Where a cited domain belongs when it is neither ours nor a competitor's.
UGC = frozenset(
    [
        "reddit.com",
        "quora.com",
        "youtube.com",
        "medium.com",
        "stackoverflow.com",
        "stackexchange.com",
        "x.com",
        "twitter.com",
        "facebook.com",
        "linkedin.com",
        "tiktok.com",
        "instagram.com",
        "pinterest.com",
        "trustpilot.com",
        "g2.com",
        "capterra.com",
    ]
)
REFERENCE = frozenset(
    [
        "wikipedia.org",
        "wikidata.org",
        "britannica.com",
        "wiktionary.org",
        "merriam-webster.com",
        "dictionary.com",
    ]
)


@dataclass(frozen=True)
class Brand:
    """One brand looked for: ours (`competitor_id` None) or a competitor's."""

    name: str
    terms: tuple[str, ...]
    competitor_id: str | None = None
    domain: str | None = None


@dataclass(frozen=True)
class Owners:
    own_domain: str | None
    # registrable domain -> competitor id
    competitors: dict[str, str]


@dataclass(frozen=True)
class Reading:
    mentions: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    brand_mentioned: bool
    brand_position: int | None
    sentiment: float | None
    cited: bool


@cache
def _extractor() -> tldextract.TLDExtract:
    # The bundled snapshot only: no suffix-list URL to fetch, no cache directory to write.
    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


def registrable_domain(value: str) -> str | None:
    """The registrable domain of a URL or host (`https://www.blog.example.co.uk/x` ->
    `example.co.uk`), lowercase; None for an IP address, `localhost` or no host."""
    text = value.strip()
    host = urlsplit(text if "://" in text else f"//{text}").hostname
    if not host:
        return None
    found = _extractor()(host)
    if not found.suffix or not found.domain:
        return None
    return f"{found.domain}.{found.suffix}".lower()


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group().casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _term_key(term: str) -> tuple[str, ...]:
    return tuple(word for word, _, _ in _words(term))


def _find(text: str, words: list[tuple[str, int, int]], term: str) -> list[tuple[int, int]]:
    key = _term_key(term)
    if not key:
        return []
    size, joined = len(key), " ".join(key)
    fuzzy = len(joined) >= FUZZY_MIN_LENGTH
    found = []
    for start in range(len(words) - size + 1):
        window = words[start : start + size]
        candidate = " ".join(word for word, _, _ in window)
        if candidate == joined or (fuzzy and fuzz.ratio(candidate, joined) >= FUZZY_SCORE):
            found.append((window[0][1], window[-1][2]))
    return found


def _sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if b > a]


def sentence_score(sentence: str) -> float:
    """The lexicon's score of one sentence: 50 + 50 x (positive - negative) / (positive +
    negative words), 50 when it has neither."""
    words = [word for word, _, _ in _words(sentence)]
    good = sum(1 for word in words if word in POSITIVE)
    bad = sum(1 for word in words if word in NEGATIVE)
    if not good and not bad:
        return 50.0
    return 50.0 + 50.0 * (good - bad) / (good + bad)


def _excerpt(text: str, start: int, end: int) -> str:
    left = max(0, start - EXCERPT_CHARS // 2)
    return text[left : min(len(text), end + EXCERPT_CHARS // 2)].strip()


# A sentence, as its [start, end) character offsets in the answer's text.
Span = tuple[int, int]


def _brand_offsets(text: str, brands: list[Brand]) -> list[tuple[int, list[Span]]]:
    """(brand index, its mentions' offsets) of each brand mentioned, in order of first mention."""
    words = _words(text)
    spans: list[tuple[int, int, int]] = []  # start, end, brand index
    for index, brand in enumerate(brands):
        for term in brand.terms:
            spans.extend((start, end, index) for start, end in _find(text, words, term))
    # Overlaps: the longer first, then the earlier; a span overlapping a kept one is dropped.
    kept: list[tuple[int, int, int]] = []
    for start, end, index in sorted(spans, key=lambda s: (-(s[1] - s[0]), s[0])):
        if all(end <= a or start >= b for a, b, _ in kept):
            kept.append((start, end, index))
    kept.sort()
    by_brand: dict[int, list[Span]] = {}
    for start, end, index in kept:
        by_brand.setdefault(index, []).append((start, end))
    return sorted(by_brand.items(), key=lambda item: item[1][0][0])


def _touched(sentences: list[Span], offsets: list[Span]) -> list[Span]:
    return sorted({(a, b) for a, b in sentences for start, _ in offsets if a <= start < b})


def mention_sentences(text: str, brands: list[Brand]) -> list[Span]:
    """The sentences naming any of the brands, in order: what a model is asked to score."""
    sentences = _sentences(text)
    touched = {
        span for _, offsets in _brand_offsets(text, brands) for span in _touched(sentences, offsets)
    }
    return sorted(touched)


def mentions(
    text: str, brands: list[Brand], scores: dict[Span, float] | None = None
) -> list[dict[str, Any]]:
    """One entry per brand mentioned, in order of first mention: {brand (self|competitor),
    competitor_id, name, position, sentiment, offsets [[start, end], ...], excerpt}. A
    sentence's sentiment is its score in `scores` (a model's), else the lexicon's."""
    sentences = _sentences(text)
    found = []
    for position, (index, offsets) in enumerate(_brand_offsets(text, brands), 1):
        brand = brands[index]
        touched = _touched(sentences, offsets)
        marks = [
            scores[span] if scores and span in scores else sentence_score(text[slice(*span)])
            for span in touched
        ]
        found.append(
            {
                "brand": "self" if brand.competitor_id is None else "competitor",
                "competitor_id": brand.competitor_id,
                "name": brand.name,
                "position": position,
                "sentiment": round(sum(marks) / len(marks), 2) if marks else None,
                "offsets": [[start, end] for start, end in offsets],
                "excerpt": _excerpt(text, *offsets[0]),
            }
        )
    return found


def citations(answer: Answer, owners: Owners) -> list[dict[str, Any]]:
    found = []
    for position, citation in enumerate(answer.citations, 1):
        domain = registrable_domain(citation.url)
        hint = registrable_domain(citation.domain_hint) if citation.domain_hint else None
        if hint and (domain is None or domain.endswith("google.com")):
            domain = hint  # Gemini's grounding URIs redirect through Google
        competitor_id = owners.competitors.get(domain or "")
        owner = (
            "self"
            if domain is not None and domain == owners.own_domain
            else "competitor"
            if competitor_id
            else "third_party"
        )
        found.append(
            {
                "url": citation.url[:2048],
                "domain": domain,
                "title": (citation.title or "")[:300] or None,
                "position": position,
                "owner": owner,
                "competitor_id": competitor_id,
            }
        )
    return found


def category(domain: str | None, owner: str) -> str:
    """owned, competitor, ugc, reference, editorial (a news or review site we know of: none
    yet, so third parties not listed are `other`)."""
    if owner == "self":
        return "owned"
    if owner == "competitor":
        return "competitor"
    if domain in UGC:
        return "ugc"
    if domain in REFERENCE or (domain or "").endswith((".gov", ".edu")):
        return "reference"
    return "other"


def read(
    answer: Answer, brands: list[Brand], owners: Owners, scores: dict[Span, float] | None = None
) -> Reading:
    found = mentions(answer.text, brands, scores)
    cited = citations(answer, owners)
    ours = next((item for item in found if item["brand"] == "self"), None)
    return Reading(
        mentions=found,
        citations=cited,
        brand_mentioned=ours is not None,
        brand_position=ours["position"] if ours else None,
        sentiment=ours["sentiment"] if ours else None,
        cited=any(item["owner"] == "self" for item in cited),
    )
