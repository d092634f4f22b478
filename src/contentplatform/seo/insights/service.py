"""listSearchInsights: opportunities found in the stored Search Console rows, computed here
(no provider call), each with its numbers and why it is listed.

- striking_distance: a query on a page at an average position of 5 to 20 (the issue's bounds;
  the catalog said 8) with impressions: worth `impressions x (expected CTR at 3 - its CTR)`.
- low_ctr: a query on a page at position <= 10 whose CTR is below half what the tenant's own
  CTR-by-position curve expects there.
- decaying_page: a page whose clicks fell >= 30% against the previous period (with >= 20
  before), and also against the same days a year before when it had >= 20 clicks then: a page
  that fell as much last year (a seasonal one) is not listed.
- cannibalization: a query where two or more of our pages each take >= 10% of the impressions
  and the best-placed page changes on >= 3 days.

The curve is an isotonic (monotone, never higher at a worse place) fit of the tenant's own CTR by
whole position over the last 90 days, weighted by impressions (pool adjacent violators); a
default curve stands in until those rows hold 1,000 clicks.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import pairwise

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import offset_of
from contentplatform.seo.insights import repository
from contentplatform.seo.insights.schemas import (
    CompetingPage,
    CtrCurve,
    CurvePoint,
    InsightPage,
    InsightType,
    ListSearchInsightsInput,
    SearchInsight,
)
from contentplatform.seo.search_console import service as search_console

STRIKING = (5.0, 20.0)
TARGET_POSITION = 3.0
LOW_CTR_POSITION = 10.0
LOW_CTR_RATIO = 0.5
DECAY = 0.30
DECAY_MIN_CLICKS = 20
SHARE = 0.10
SWITCHES = 3
CURVE_DAYS = 90
CURVE_MIN_CLICKS = 1_000
# Organic CTR by position as published industry studies put it (position 1 to 20): what is
# expected of a tenant whose own rows are too few to say.
_DEFAULT_CTR = (0.28, 0.155, 0.10, 0.072, 0.053, 0.04, 0.031, 0.025, 0.02, 0.017)
_DEFAULT_CTR_PAST_10 = (0.012, 0.011, 0.01, 0.009, 0.008, 0.007, 0.0065, 0.006, 0.0055, 0.005)
DEFAULT_CURVE: tuple[tuple[int, float], ...] = tuple(
    enumerate((*_DEFAULT_CTR, *_DEFAULT_CTR_PAST_10), start=1)
)


def isotonic_decreasing(points: Sequence[tuple[int, float, float]]) -> list[tuple[int, float]]:
    """Pool adjacent violators over (x, y, weight) sorted by x: the weighted least-squares fit
    of y that never rises as x grows. (x, fitted y) for each point."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for _, y, weight in points:
        blocks.append([y * weight, weight, 1])
        while len(blocks) > 1 and (blocks[-1][0] * blocks[-2][1] > blocks[-2][0] * blocks[-1][1]):
            total, mass, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += mass
            blocks[-1][2] += count
    fitted: list[float] = []
    for total, mass, count in blocks:
        fitted.extend([total / mass if mass else 0.0] * int(count))
    return [(x, value) for (x, _, _), value in zip(points, fitted, strict=True)]


class Curve:
    """Expected CTR at a position: linear between the fitted whole places, flat past the
    ends."""

    def __init__(self, points: Sequence[tuple[int, float]], source: str, clicks: int) -> None:
        self.points = list(points)
        self.source = source
        self.clicks = clicks

    def at(self, position: float) -> float:
        points = self.points
        if position <= points[0][0]:
            return points[0][1]
        for (x0, y0), (x1, y1) in pairwise(points):
            if position <= x1:
                return y0 + (y1 - y0) * (position - x0) / (x1 - x0)
        return points[-1][1]

    def shown(self) -> CtrCurve:
        return CtrCurve(
            source="own" if self.source == "own" else "default",
            clicks=self.clicks,
            points=[CurvePoint(position=x, ctr=round(y, 6)) for x, y in self.points],
        )


def fit_curve(buckets: Sequence[tuple[int, int, int]]) -> Curve:
    """The tenant's curve from (place, clicks, impressions), or the default one below 1,000
    clicks."""
    clicks = sum(bucket[1] for bucket in buckets)
    usable = [(place, c / i, float(i)) for place, c, i in buckets if i > 0 and place >= 1]
    if clicks < CURVE_MIN_CLICKS or not usable:
        return Curve(DEFAULT_CURVE, "default", clicks)
    return Curve(isotonic_decreasing(usable), "own", clicks)


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _insight(kind: str, page: str, clicks: int, impressions: int, **more: object) -> SearchInsight:
    values: dict[str, object] = {
        "type": kind,
        "query": None,
        "page_id": None,
        "page_url": page,
        "clicks": clicks,
        "impressions": impressions,
        "ctr": clicks / impressions if impressions else 0.0,
        "expected_ctr": None,
        "position": None,
        "previous_clicks": None,
        "year_ago_clicks": None,
        "change_pct": None,
        "competing_pages": [],
        "action_id": None,
        **more,
    }
    return SearchInsight.model_validate(values)


@dataclass(frozen=True)
class Computed:
    """One kind's insights over a period (largest opportunity first), and what they were
    read against."""

    insights: list[SearchInsight]
    first: date
    last: date
    curve: Curve


async def compute(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    kind: InsightType,
    *,
    period: str = "28d",
    min_impressions: int = 100,
) -> Computed | None:
    """Every insight of `kind` (listSearchInsights' rules); None while no property is selected
    or no final day is stored (SEO actions read this too)."""
    prop = await search_console.selected_property(session, tenant_id)
    last = (prop.final_through or prop.fresh_through) if prop else None
    if prop is None or last is None:
        return None
    days = 28 if period == "28d" else 90
    first = last - timedelta(days=days - 1)
    at = (session, tenant_id, prop.id)
    curve = fit_curve(
        await repository.ctr_by_position(*at, last - timedelta(days=CURVE_DAYS - 1), last)
    )
    found: list[SearchInsight]
    if kind in ("striking_distance", "low_ctr"):
        pairs = await repository.query_pages(*at, first, last)
        kept = [pair for pair in pairs if pair[3] >= max(min_impressions, 1)]
        found = (
            striking_distance(kept, curve) if kind == "striking_distance" else low_ctr(kept, curve)
        )
    elif kind == "decaying_page":
        gap = timedelta(days=days)
        now_clicks = await repository.page_clicks(*at, first, last)
        before = await repository.page_clicks(*at, first - gap, first - timedelta(days=1))
        year_ago = await repository.page_clicks(*at, _year_before(first), _year_before(last))
        found = decaying(now_clicks, before, year_ago, min_impressions)
    else:
        pairs = await repository.query_pages(*at, first, last)
        candidates = sharing(pairs, min_impressions)
        daily = await repository.daily_query_pages(*at, first, last, sorted(candidates))
        found = cannibalization(candidates, daily, curve)
    found.sort(
        key=lambda insight: (-insight.opportunity_clicks, insight.query or "", insight.page_url)
    )
    return Computed(found, first, last, curve)


async def list_insights(
    session: AsyncSession, tenant_id: uuid.UUID, data: ListSearchInsightsInput
) -> InsightPage:
    computed = await compute(
        session,
        tenant_id,
        data.type,
        period=data.period,
        min_impressions=data.min_impressions,
    )
    now = utcnow()
    if computed is None:
        return InsightPage(
            data=[],
            total=0,
            page=data.page,
            limit=data.limit,
            period_start=None,
            period_end=None,
            ctr_curve=fit_curve([]).shown(),
            computed_at=now,
        )
    start = offset_of(data.page, data.limit)
    return InsightPage(
        data=computed.insights[start : start + data.limit],
        total=len(computed.insights),
        page=data.page,
        limit=data.limit,
        period_start=computed.first,
        period_end=computed.last,
        ctr_curve=computed.curve.shown(),
        computed_at=now,
    )


def _year_before(day: date) -> date:
    return day.replace(year=day.year - 1, day=min(day.day, 28) if day.month == 2 else day.day)


Pair = tuple[str, str, int, int, float]


def striking_distance(pairs: Sequence[Pair], curve: Curve) -> list[SearchInsight]:
    expected = curve.at(TARGET_POSITION)
    found = []
    for query, page, clicks, impressions, position_sum in pairs:
        position = position_sum / impressions
        ctr = clicks / impressions
        if not STRIKING[0] <= position <= STRIKING[1]:
            continue
        opportunity = max(round(impressions * (expected - ctr)), 0)
        found.append(
            _insight(
                "striking_distance",
                page,
                clicks,
                impressions,
                query=query,
                position=position,
                expected_ctr=expected,
                opportunity_clicks=opportunity,
                explanation=(
                    f"Average position {position:.1f} (5 to 20) with {impressions} impressions "
                    f"and a CTR of {_pct(ctr)}: at position 3 the expected CTR is "
                    f"{_pct(expected)}, about {opportunity} more clicks."
                ),
            )
        )
    return found


def low_ctr(pairs: Sequence[Pair], curve: Curve) -> list[SearchInsight]:
    found = []
    for query, page, clicks, impressions, position_sum in pairs:
        position = position_sum / impressions
        ctr = clicks / impressions
        expected = curve.at(position)
        if position > LOW_CTR_POSITION or ctr >= LOW_CTR_RATIO * expected:
            continue
        opportunity = max(round(impressions * (expected - ctr)), 0)
        found.append(
            _insight(
                "low_ctr",
                page,
                clicks,
                impressions,
                query=query,
                position=position,
                expected_ctr=expected,
                opportunity_clicks=opportunity,
                explanation=(
                    f"CTR {_pct(ctr)} at position {position:.1f}, under half the "
                    f"{_pct(expected)} this site's curve ({curve.source}) expects there: a "
                    f"better title and description could win about {opportunity} clicks."
                ),
            )
        )
    return found


def decaying(
    now: dict[str, tuple[int, int, float]],
    before: dict[str, tuple[int, int, float]],
    year_ago: dict[str, tuple[int, int, float]],
    min_impressions: int,
) -> list[SearchInsight]:
    found = []
    for page, (previous, previous_impressions, _) in before.items():
        clicks, impressions, position_sum = now.get(page, (0, 0, 0.0))
        if previous < DECAY_MIN_CLICKS or max(impressions, previous_impressions) < min_impressions:
            continue
        if clicks > previous * (1 - DECAY):
            continue
        last_year = year_ago.get(page, (0, 0, 0.0))[0]
        # The year-over-year guard: a page that had as many clicks on these days last year
        # is in its season's trough, not decaying.
        guarded = last_year >= DECAY_MIN_CLICKS
        if guarded and clicks > last_year * (1 - DECAY):
            continue
        change = (clicks - previous) * 100.0 / previous
        why = f"Clicks fell from {previous} to {clicks} ({change:.0f}%) against the previous period"
        if guarded:
            yearly = (clicks - last_year) * 100.0 / last_year
            why += f", and {yearly:.0f}% against the same days a year before ({last_year})"
        else:
            why += "; no comparable year-ago data to rule out a seasonal dip"
        found.append(
            _insight(
                "decaying_page",
                page,
                clicks,
                impressions,
                position=position_sum / impressions if impressions else None,
                previous_clicks=previous,
                year_ago_clicks=last_year if guarded else None,
                change_pct=change,
                opportunity_clicks=previous - clicks,
                explanation=why + ".",
            )
        )
    return found


def sharing(pairs: Sequence[Pair], min_impressions: int) -> dict[str, list[Pair]]:
    """The queries where two or more of our pages each take >= 10% of the impressions (and the
    query has `min_impressions`): query -> those pages' rows."""
    by_query: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_query[pair[0]].append(pair)
    found = {}
    for query, rows in by_query.items():
        impressions = sum(row[3] for row in rows)
        if impressions < max(min_impressions, 1):
            continue
        shared = [row for row in rows if row[3] >= SHARE * impressions]
        if len(shared) >= 2:
            found[query] = shared
    return found


def cannibalization(
    candidates: dict[str, list[Pair]],
    daily: Sequence[tuple[str, date, str, int, float]],
    curve: Curve,
) -> list[SearchInsight]:
    # query -> day -> the best-placed of the sharing pages (ties: more impressions, then URL).
    best: dict[str, dict[date, tuple[float, int, str]]] = defaultdict(dict)
    for query, day, page, impressions, position_sum in daily:
        if impressions <= 0 or page not in {row[1] for row in candidates[query]}:
            continue
        rank = (position_sum / impressions, -impressions, page)
        if day not in best[query] or rank < best[query][day]:
            best[query][day] = rank
    found = []
    for query, rows in candidates.items():
        leaders = [best[query][day][2] for day in sorted(best[query])]
        switches = sum(1 for a, b in pairwise(leaders) if a != b)
        if switches < SWITCHES:
            continue
        impressions = sum(row[3] for row in candidates[query])
        total_impressions = impressions
        clicks = sum(row[2] for row in rows)
        position = sum(row[4] for row in rows) / impressions
        top = max(rows, key=lambda row: (row[3], row[1]))
        best_position = min(row[4] / row[3] for row in rows)
        expected = curve.at(best_position)
        opportunity = max(round(impressions * expected) - clicks, 0)
        competing = [
            CompetingPage(
                page_id=None,
                url=page,
                impressions_share=page_impressions / total_impressions,
                position=position_sum / page_impressions,
                top_days=leaders.count(page),
            )
            for _, page, _, page_impressions, position_sum in sorted(
                rows, key=lambda row: (-row[3], row[1])
            )
        ]
        found.append(
            _insight(
                "cannibalization",
                top[1],
                clicks,
                impressions,
                query=query,
                position=position,
                expected_ctr=expected,
                competing_pages=competing,
                opportunity_clicks=opportunity,
                explanation=(
                    f"{len(rows)} of our pages share the query's impressions (each >= 10%) and "
                    f"the best-placed one changed {switches} times in {len(leaders)} days: "
                    "Google cannot tell which to rank. One page, held at its best position "
                    f"({best_position:.1f}), would expect about {opportunity} more clicks."
                ),
            )
        )
    return found
