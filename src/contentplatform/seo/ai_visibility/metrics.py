"""The AI visibility metrics over a set of stored answers (definitions in docs/guides/seo.md):

- visibility: answers mentioning the brand / answers, in %;
- share_of_voice: brand mentions / mentions of every tracked brand (ours and the competitors
  tracked for AI), a brand counted once per answer that mentions it, in %;
- avg_position: the mean, over answers mentioning the brand, of its rank among the brands of
  that answer by first mention (1 = named first; lower is better);
- sentiment: the mean, over answers mentioning the brand, of the brand's sentiment (0-100);
- citation_share: citations of our registrable domain / all citations, in %.

Each carries `n` (the sample it is over) and a 95% interval: Wilson's score interval for the
three shares, a normal-approximation interval (mean +- 1.96 s / sqrt(n)) for the two means. Below
MIN_SAMPLE the value and interval are null and `insufficient_data` true.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contentplatform.seo.ai_visibility.schemas import AiVisibilityDelta, AiVisibilityMetric

MIN_SAMPLE = 5
Z = 1.959963984540054


@dataclass(frozen=True)
class Figures:
    """What one answer contributes (read from its stored row)."""

    brand_mentioned: bool
    brand_position: int | None
    sentiment: float | None
    mentions: Sequence[dict[str, Any]]
    citations: Sequence[dict[str, Any]]


def wilson(successes: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval of a proportion, as fractions."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denominator
    margin = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


def _insufficient(n: int) -> AiVisibilityMetric:
    return AiVisibilityMetric(value=None, n=n, low=None, high=None, insufficient_data=True)


def share(successes: int, n: int) -> AiVisibilityMetric:
    """successes / n in %, with Wilson's interval in %."""
    if n < MIN_SAMPLE:
        return _insufficient(n)
    low, high = wilson(successes, n)
    return AiVisibilityMetric(
        value=round(100 * successes / n, 2),
        n=n,
        low=round(100 * low, 2),
        high=round(100 * high, 2),
        insufficient_data=False,
    )


def mean(values: Iterable[float], *, floor: float, ceiling: float) -> AiVisibilityMetric:
    """The mean of `values` with a normal-approximation 95% interval, cut to [floor, ceiling]."""
    found = list(values)
    n = len(found)
    if n < MIN_SAMPLE:
        return _insufficient(n)
    average = sum(found) / n
    spread = math.sqrt(sum((v - average) ** 2 for v in found) / (n - 1)) if n > 1 else 0.0
    margin = Z * spread / math.sqrt(n)
    return AiVisibilityMetric(
        value=round(average, 2),
        n=n,
        low=round(max(floor, average - margin), 2),
        high=round(min(ceiling, average + margin), 2),
        insufficient_data=False,
    )


@dataclass(frozen=True)
class Summary:
    visibility: AiVisibilityMetric
    share_of_voice: AiVisibilityMetric
    avg_position: AiVisibilityMetric
    sentiment: AiVisibilityMetric
    citation_share: AiVisibilityMetric
    # The shares' (successes, n): what a change between two windows is computed from.
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)


def summary(answers: Sequence[Figures]) -> Summary:
    mentioned = [a for a in answers if a.brand_mentioned]
    all_mentions = sum(len(a.mentions) for a in answers)
    citations = [c for a in answers for c in a.citations]
    cited = sum(1 for c in citations if c.get("owner") == "self")
    return Summary(
        visibility=share(len(mentioned), len(answers)),
        share_of_voice=share(len(mentioned), all_mentions),
        avg_position=mean(
            (float(a.brand_position) for a in mentioned if a.brand_position is not None),
            floor=1.0,
            ceiling=float(max((len(a.mentions) for a in answers), default=1)),
        ),
        sentiment=mean(
            (a.sentiment for a in mentioned if a.sentiment is not None), floor=0.0, ceiling=100.0
        ),
        citation_share=share(cited, len(citations)),
        counts={
            "visibility": (len(mentioned), len(answers)),
            "share_of_voice": (len(mentioned), all_mentions),
            "citation_share": (cited, len(citations)),
        },
    )


def competitor_summary(answers: Sequence[Figures], competitor_id: str) -> Summary:
    """The same figures for one competitor (its citation share left out: see listAiSources)."""
    theirs = [
        next(m for m in a.mentions if m.get("competitor_id") == competitor_id)
        for a in answers
        if any(m.get("competitor_id") == competitor_id for m in a.mentions)
    ]
    all_mentions = sum(len(a.mentions) for a in answers)
    return Summary(
        visibility=share(len(theirs), len(answers)),
        share_of_voice=share(len(theirs), all_mentions),
        avg_position=mean(
            (float(m["position"]) for m in theirs),
            floor=1.0,
            ceiling=float(max((len(a.mentions) for a in answers), default=1)),
        ),
        sentiment=mean(
            (float(m["sentiment"]) for m in theirs if m.get("sentiment") is not None),
            floor=0.0,
            ceiling=100.0,
        ),
        citation_share=_insufficient(0),
    )


def change(now: AiVisibilityMetric, before: AiVisibilityMetric) -> float | None:
    """The change in points, null unless both are known."""
    if now.value is None or before.value is None:
        return None
    return round(now.value - before.value, 2)


def difference(now: tuple[int, int], before: tuple[int, int]) -> AiVisibilityDelta:
    """A share's change in points (now - before) with Newcombe's 95% interval for a difference
    of two independent proportions (his method 10, built from each side's Wilson interval):
    `real` when the interval leaves out 0. Insufficient below MIN_SAMPLE on either side."""
    (k1, n1), (k2, n2) = now, before
    if n1 < MIN_SAMPLE or n2 < MIN_SAMPLE:
        return AiVisibilityDelta(value=None, low=None, high=None, real=None, insufficient_data=True)
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return AiVisibilityDelta(
        value=round(100 * d, 2),
        low=round(100 * low, 2),
        high=round(100 * high, 2),
        real=low > 0 or high < 0,
        insufficient_data=False,
    )
