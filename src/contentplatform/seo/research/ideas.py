"""The rules every keyword idea follows, whatever its source.

- **De-duplication**: near-identical keywords are one idea, the one with the highest search
  volume kept (ties: the shorter, then the first alphabetically). Near-identical: the same
  words in any order but for at most one on each side, and those two alike (rapidfuzz's ratio
  >= SIMILAR: a plural, a typo): "garden soil", "garden soils", "soil garden", "gardn soil";
  never "buy garden soil" (a word more) nor "garden tools" (another word). rapidfuzz's
  token_sort_ratio finds the candidates (in C), the word rule decides.
- **Intent**: the provider's when it gives one; otherwise a small deterministic lexical rule
  over the keyword's words: transactional (buy, price, cheap, coupon, order, ...), commercial
  (best, vs, review, top, compare, ...), navigational (the organization's brand name or terms,
  or its site's name), else informational. The first that matches is the intent, the other
  matches its secondary intents.
- **Filters** drop only the ideas known to fail them: an idea whose volume or difficulty is
  unknown passes minVolume and maxDifficulty (nothing says it fails them).
- **Order**: most searched first (unknown volume last), then the shorter, then by keyword.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from rapidfuzz import fuzz, process

from contentplatform.seo.research.schemas import Intent

SIMILAR = 80
TRANSACTIONAL = frozenset(
    {"buy", "price", "prices", "pricing", "cheap", "cheapest", "coupon", "coupons", "order"}
    | {"discount", "deal", "deals", "purchase", "shop", "sale"}
)
COMMERCIAL = frozenset(
    {"best", "vs", "versus", "review", "reviews", "top", "compare", "comparison"}
    | {"alternative", "alternatives"}
)
# Words too common to say what a query is about (the Search Console fallback's matching).
STOPWORDS = frozenset(
    {"a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from"}
)
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of `text`, lowercased (letters and digits of any script)."""
    return _WORD.findall(text.lower())


def brand_names(terms: Iterable[str], site_url: str | None) -> list[str]:
    """What makes a query navigational: the brand name and terms, and the site's name (its host
    without www. and the TLD: `acme-tools` of www.acme-tools.com, as `acme tools` and
    `acmetools`), each as its words joined by single spaces."""
    names = [" ".join(words(term)) for term in terms]
    host = (urlsplit(site_url).hostname or "") if site_url else ""
    label = host.removeprefix("www.").split(".")[0]
    if label:
        names += [" ".join(words(label)), "".join(words(label))]
    return list(dict.fromkeys(name for name in names if name))


def classify(keyword: str, brands: list[str]) -> tuple[Intent, list[Intent]]:
    """The lexical intent of `keyword` and its secondary intents."""
    found = words(keyword)
    spaced = f" {' '.join(found)} "
    matched: list[Intent] = []
    if TRANSACTIONAL.intersection(found):
        matched.append("transactional")
    if COMMERCIAL.intersection(found):
        matched.append("commercial")
    if any(f" {name} " in spaced for name in brands):
        matched.append("navigational")
    if not matched:
        return "informational", []
    return matched[0], matched[1:]


def with_intent(idea: dict[str, Any], brands: list[str]) -> dict[str, Any]:
    """`idea` with an intent: the provider's, else the lexical rule's."""
    if idea.get("intent"):
        return idea
    intent, secondary = classify(idea["keyword"], brands)
    return {**idea, "intent": intent, "secondary_intents": secondary}


def _order(idea: dict[str, Any]) -> tuple[int, int, str]:
    volume = idea.get("search_volume")
    return (-volume if volume is not None else 1, len(idea["keyword"]), idea["keyword"])


def ordered(ideas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most searched first (unknown volume last), then the shorter, then by keyword."""
    return sorted(ideas, key=_order)


def near_identical(first: str, second: str) -> bool:
    """The same words in any order but for one on each side, those two alike."""
    left, right = Counter(words(first)), Counter(words(second))
    only_left, only_right = list((left - right).elements()), list((right - left).elements())
    if not only_left and not only_right:
        return True
    return (
        len(only_left) == len(only_right) == 1
        and fuzz.ratio(only_left[0], only_right[0]) >= SIMILAR
    )


def dedupe(ideas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One idea per group of near-identical keywords, the most searched kept; most searched
    first."""
    kept: list[dict[str, Any]] = []
    names: list[str] = []
    for idea in ordered(ideas):
        candidates = process.extract(
            idea["keyword"], names, scorer=fuzz.token_sort_ratio, score_cutoff=SIMILAR, limit=None
        )
        if any(near_identical(idea["keyword"], name) for name, _, _ in candidates):
            continue
        kept.append(idea)
        names.append(idea["keyword"])
    return kept


def passes(
    idea: dict[str, Any],
    min_volume: int | None,
    max_difficulty: int | None,
    intents: Sequence[str] | None,
) -> bool:
    volume, difficulty = idea.get("search_volume"), idea.get("keyword_difficulty")
    if min_volume is not None and volume is not None and volume < min_volume:
        return False
    if max_difficulty is not None and difficulty is not None and difficulty > max_difficulty:
        return False
    return intents is None or idea["intent"] in intents


def tokens(seeds: Iterable[str]) -> list[str]:
    """The seeds' words that say what they are about (no stopwords), for matching stored
    queries; a seed of stopwords alone is matched whole."""
    found: list[str] = []
    for seed in seeds:
        meaningful = [word for word in words(seed) if word not in STOPWORDS]
        found.extend(meaningful or [seed])
    return list(dict.fromkeys(found))
