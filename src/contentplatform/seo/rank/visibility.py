"""Visibility, estimated traffic and average position from positions and search volumes.

    visibility        = sum(volume x CTR(position)) / sum(volume x CTR(1)) x 100
    estimated_traffic = sum(volume x CTR(position))            (searches a month x CTR)
    avg_position      = mean(position), a keyword not ranking counted as NOT_RANKING (100)

(Semrush's Visibility % and average position.) A keyword whose search volume is not known
yet (null until keyword data is fetched) is left out of visibility and traffic, as if its
volume were 0: there is no honest weight to give it; visibility is then null when no keyword
has a volume. It still counts in the average position and the distribution, which need no
volume.
"""

from __future__ import annotations

from collections.abc import Iterable

NOT_RANKING = 100

# Organic click-through rate by position. Positions 1-10: Backlinko, "We Analyzed 4 Million
# Google Search Results. Here's What We Learned About Organic Click Through Rate" (Brian
# Dean, 2019, updated 2023; backlinko.com/google-ctr-stats). Page two: the same study found
# 0.63% of searches click anything there, shared here evenly over its ten results. Past
# position 20, and not ranking: 0.
CTR_BY_POSITION: dict[int, float] = {
    1: 0.276,
    2: 0.158,
    3: 0.110,
    4: 0.084,
    5: 0.063,
    6: 0.049,
    7: 0.039,
    8: 0.033,
    9: 0.027,
    10: 0.024,
    **{position: 0.00063 for position in range(11, 21)},
}


def ctr(position: int | None) -> float:
    """The click-through rate of an organic position (0 when not ranking)."""
    return 0.0 if position is None else CTR_BY_POSITION.get(position, 0.0)


def traffic(volume: int | None, position: int | None) -> float | None:
    """One keyword's estimated monthly clicks; None when its volume is not known."""
    return None if volume is None else round(volume * ctr(position), 2)


def visibility(rows: Iterable[tuple[int | None, int | None]]) -> float | None:
    """Visibility % of (volume, position) pairs; None when no volume is known (or all 0)."""
    earned = best = 0.0
    for volume, position in rows:
        if volume:
            earned += volume * ctr(position)
            best += volume * ctr(1)
    return round(earned / best * 100, 2) if best else None


def total_traffic(rows: Iterable[tuple[int | None, int | None]]) -> float:
    return round(sum(volume * ctr(position) for volume, position in rows if volume), 2)


def avg_position(positions: Iterable[int | None]) -> float | None:
    """The mean position, not ranking as 100; None for no keyword."""
    found = [NOT_RANKING if position is None else position for position in positions]
    return round(sum(found) / len(found), 2) if found else None
