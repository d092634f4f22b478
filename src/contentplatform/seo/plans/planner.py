"""Making a plan from candidates: pure and deterministic (no I/O, no clock: `today` is given),
so the same signals make the same plan.

1. **Normalize and merge**: keywords lowercased, punctuation dropped, spaces collapsed; one
   candidate per keyword, its figures the best known of its sources.
2. **Drop** what we rank top 3 for, what was targeted lately (another plan's items of the last
   6 months, a recent draft whose title holds every stem of the keyword), what is excluded.
3. **Cluster by intent**, so one page serves one intent: two keywords whose stored SERPs
   share 3 or more of their top-10 URLs are one cluster; where either has no SERP stored, the
   lexical rule: the same Snowball stems (stopwords aside); one keyword's stems (two or more)
   all in the other's, which has one more; or stems alike by rapidfuzz's token_sort_ratio >=
   LEXICAL_SIMILAR. The cluster's head is its highest-scored keyword.
4. **Score** (0-100): demand (volume, else Search Console impressions a month: 10 a decade, at
   most 40) + ease ((100 - difficulty) / 5, 10 when unknown) + intent (commercial and
   transactional 10, informational 7, navigational 0) + knowledge relevance (15 x the share of
   the keyword's stems among the knowledge documents' key terms) + boosts (an open SEO action
   up to 15 by its impact; striking distance, positions 4-20, 10; a focus topic 15; tracked 5).
5. **Pick to the content mix** (largest remainder of itemCount x percent), each kind's best
   first; a kind short of candidates leaves its places to the best of the others.
6. **Spread** the picked, best first, over the month's publish days (publish weekdays in the
   tenant's zone, from tomorrow when the month is the current one, blackout dates left out):
   item i of n on day floor(i x d / n) of d.
7. **Write** each item with the offline writer (writer.py) and its forecast: search volume x
   CTR at the target position (seo/rank/visibility.py's table): 5 for a new or geo page; for a
   refresh, 3 when it ranks in the top 10 already, else 5.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import snowballstemmer
from rapidfuzz import fuzz

from contentplatform.seo.rank import visibility
from contentplatform.seo.research.ideas import STOPWORDS, words

LEXICAL_SIMILAR = 88
SHARED_URLS = 3
TOP_POSITION = 3
INTENT_POINTS = {"commercial": 10, "transactional": 10, "informational": 7, "navigational": 0}
KINDS = ("new", "refresh", "geo")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_stemmer = snowballstemmer.stemmer("english")
_SPACES = re.compile(r"\s+")


def normalize(keyword: str) -> str:
    """Lowercase words of letters and digits, single-spaced, at most 100 characters."""
    return " ".join(words(keyword))[:100].strip()


def stems(keyword: str) -> tuple[str, ...]:
    found = [word for word in words(keyword) if word not in STOPWORDS]
    return tuple(sorted(set(_stemmer.stemWords(found))))


@dataclass
class Candidate:
    keyword: str  # normalized
    source: str  # the first signal that named it (the item's source)
    sources: list[str] = field(default_factory=list)
    kind: str = "new"
    intent: str | None = None
    search_volume: int | None = None
    keyword_difficulty: int | None = None
    cpc: float | None = None
    impressions: int = 0  # Search Console, 28 days
    clicks: int = 0
    position: float | None = None  # Search Console's average, or the tracked one
    url: str | None = None  # our page for it
    tracked: bool = False
    serp: list[str] = field(default_factory=list)
    action_id: str | None = None
    action_title: str | None = None
    action_impact: int = 0
    document_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0

    def merge(self, other: Candidate) -> None:
        """Another signal's view of the same keyword: the best known of each figure."""
        for source in other.sources:
            if source not in self.sources:
                self.sources.append(source)
        if self.kind == "new" and other.kind != "new":
            self.kind = other.kind
        self.intent = self.intent or other.intent
        for name in ("search_volume", "keyword_difficulty", "cpc"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(other, name))
        self.impressions = max(self.impressions, other.impressions)
        self.clicks = max(self.clicks, other.clicks)
        if self.position is None:
            self.position = other.position
        self.url = self.url or other.url
        self.tracked = self.tracked or other.tracked
        self.serp = self.serp or other.serp
        if other.action_id and not self.action_id:
            self.action_id, self.action_title = other.action_id, other.action_title
            self.action_impact = other.action_impact
        for document_id in other.document_ids:
            if document_id not in self.document_ids:
                self.document_ids.append(document_id)
        for name, value in other.evidence.items():
            self.evidence.setdefault(name, value)


def merged(candidates: Iterable[Candidate]) -> dict[str, Candidate]:
    found: dict[str, Candidate] = {}
    for candidate in candidates:
        if not candidate.keyword:
            continue
        if candidate.keyword in found:
            found[candidate.keyword].merge(candidate)
        else:
            found[candidate.keyword] = candidate
    return found


def covered_by_titles(keyword: str, titles: Sequence[str]) -> bool:
    """Whether a recent draft's title holds every stem of the keyword."""
    wanted = set(stems(keyword))
    return bool(wanted) and any(wanted <= set(stems(title)) for title in titles)


def monthly(candidate: Candidate) -> int | None:
    """Searches a month: the known volume, else Search Console's impressions over 28 days
    scaled to 30."""
    if candidate.search_volume is not None:
        return candidate.search_volume
    if candidate.impressions:
        return round(candidate.impressions * 30 / 28)
    return None


def score(candidate: Candidate, knowledge: set[str], focus: Sequence[tuple[str, ...]]) -> float:
    demand = monthly(candidate) or 0
    points = min(40.0, 10 * math.log10(1 + demand))
    difficulty = candidate.keyword_difficulty
    points += 10.0 if difficulty is None else (100 - difficulty) / 5
    points += INTENT_POINTS.get(candidate.intent or "informational", 7)
    own = set(stems(candidate.keyword))
    if own and knowledge:
        points += 15 * len(own & knowledge) / len(own)
    if candidate.action_id:
        points += 15 * min(100, max(0, candidate.action_impact)) / 100
    if candidate.position is not None and 4 <= candidate.position <= 20:
        points += 10
    if any(topic and set(topic) <= own for topic in focus):
        points += 15
    if candidate.tracked:
        points += 5
    return round(min(100.0, points), 2)


def clusters(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """Candidates grouped so that one page serves one intent; each group best first, groups by
    their head's score."""
    ordered = sorted(candidates, key=lambda c: (-c.score, c.keyword))
    parent = list(range(len(ordered)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    keys = [stems(candidate.keyword) for candidate in ordered]
    joined = [" ".join(key) for key in keys]
    for i, first in enumerate(ordered):
        for j in range(i + 1, len(ordered)):
            second = ordered[j]
            if first.serp and second.serp:
                same = len(set(first.serp[:10]) & set(second.serp[:10])) >= SHARED_URLS
            else:
                same = lexically_alike(keys[i], keys[j], joined[i], joined[j])
            if same:
                a, b = root(i), root(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[Candidate]] = {}
    for index, candidate in enumerate(ordered):
        groups.setdefault(root(index), []).append(candidate)
    return [groups[key] for key in sorted(groups)]


def lexically_alike(
    first: tuple[str, ...], second: tuple[str, ...], first_joined: str, second_joined: str
) -> bool:
    """The same stems; or one's stems all in the other's, which has one more (a modifier:
    "drip irrigation", "drip irrigation kit"); or stems alike (a plural, a typo)."""
    if not first or not second:
        return False
    if first == second:
        return True
    small, large = sorted((set(first), set(second)), key=len)
    if small < large and len(large) - len(small) == 1 and len(small) >= 2:
        return True
    return fuzz.token_sort_ratio(first_joined, second_joined) >= LEXICAL_SIMILAR


def quotas(count: int, mix: dict[str, int]) -> dict[str, int]:
    """count split by the mix's percents, by largest remainder (ties: new, refresh, geo)."""
    exact = {kind: count * mix.get(kind, 0) / 100 for kind in KINDS}
    found = {kind: math.floor(value) for kind, value in exact.items()}
    left = count - sum(found.values())
    for kind in sorted(KINDS, key=lambda k: (-(exact[k] - found[k]), KINDS.index(k)))[:left]:
        found[kind] += 1
    return found


def pick(
    groups: Sequence[list[Candidate]], count: int, mix: dict[str, int]
) -> list[list[Candidate]]:
    """The best `count` clusters filling each kind's quota, the shortfall from the rest; best
    first."""
    wanted = quotas(count, mix)
    chosen: list[int] = []
    for kind in KINDS:
        of_kind = [i for i, group in enumerate(groups) if group[0].kind == kind]
        chosen.extend(of_kind[: wanted[kind]])
    for index in range(len(groups)):
        if len(chosen) >= count:
            break
        if index not in chosen:
            chosen.append(index)
    return [groups[index] for index in sorted(chosen)[:count]]


def publish_days(
    year: int, month: int, weekdays: Sequence[str], blackout: Iterable[date], today: date
) -> list[date]:
    """The month's days on a publish weekday, after today, not blacked out."""
    closed = set(blackout)
    allowed = {WEEKDAYS.index(day) for day in weekdays}
    found = []
    for number in range(1, calendar.monthrange(year, month)[1] + 1):
        day = date(year, month, number)
        if day > today and day.weekday() in allowed and day not in closed:
            found.append(day)
    return found


def spread(count: int, days: Sequence[date]) -> list[date]:
    """The day of each of `count` items, in order: item i on day floor(i x d / count)."""
    return [days[i * len(days) // count] for i in range(count)] if days else []


def target_position(candidate: Candidate) -> int:
    if candidate.kind == "refresh" and candidate.position is not None and candidate.position <= 10:
        return TOP_POSITION
    return 5


def forecast(candidate: Candidate) -> dict[str, Any]:
    volume = monthly(candidate)
    position = target_position(candidate)
    rate = visibility.ctr(position)
    return {
        "target_position": position,
        "ctr": rate,
        "search_volume": volume,
        "clicks": None if volume is None else round(volume * rate, 2),
    }


def day_after(day: date) -> date:
    return day + timedelta(days=1)


def squeeze(text: str) -> str:
    return _SPACES.sub(" ", text).strip()
