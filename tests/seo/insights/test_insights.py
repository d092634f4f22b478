"""seo.listSearchInsights over REST and RPC, on a fixture with one planted case of each kind
(and one seasonal page, which must not be listed): each kind returns exactly its case,
explained; the CTR curve is the tenant's own, monotone; another tenant sees nothing."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.seo.insights.service import fit_curve, isotonic_decreasing
from contentplatform.seo.search_console.repository import Figures
from tests.seo.search_console.support import Day, days, make_property, p, plant, q
from tests.support.orgs import Org
from tests.support.problems import problem

pytestmark = pytest.mark.shared_org

OP = "seo.listSearchInsights"
SITE = "https://example.com"
LAST = date(2026, 3, 28)  # the last final day stored: the 28-day period is 1-28 March
_planted: set[str] = set()

# Steady rows every day: (query, page, clicks, impressions, position). 1,680 clicks in 28
# days, so the tenant's own curve is fitted.
STEADY = [
    ("widget", "/widgets", 30, 100, 1.0),
    ("widget price", "/widgets", 16, 100, 2.0),
    ("buy widget", "/shop", 10, 100, 3.0),
    ("widget guide", "/guide", 4, 50, 4.0),
]
# The planted cases.
STRIKING = ("widget repair", "/repair", 1, 40, 12.0)  # position 12: striking distance
LOW_CTR = ("widget colors", "/colors", 2, 100, 2.0)  # 2% at position 2: low CTR


def cannibal_rows(day: date) -> list[tuple[str, str, int, int, float]]:
    """Two pages trading "widget reviews" every other day."""
    first, second = (
        ("/reviews", "/blog/reviews") if day.toordinal() % 2 else ("/blog/reviews", "/reviews")
    )
    return [("widget reviews", first, 3, 30, 3.0), ("widget reviews", second, 2, 30, 4.0)]


def one_day(day: date) -> Day:
    in_period = day >= date(day.year, 3, 1)
    rows = [*STEADY, STRIKING, LOW_CTR, *cannibal_rows(day)]
    queries = [q(query, SITE + page, c, i, pos) for query, page, c, i, pos in rows]
    totals: dict[str, list[float]] = {}
    for _, page, c, i, pos in rows:
        total = totals.setdefault(page, [0, 0, 0.0])
        total[0] += c
        total[1] += i
        total[2] += pos * i
    pages = [p(SITE + page, int(c), int(i), s / i) for page, (c, i, s) in totals.items()]
    # /old-post halves in March 2026 (it did not a year before): decaying. /christmas halves
    # in March of both years: seasonal, not decaying.
    decaying = 5 if in_period and day.year == 2026 else 10
    seasonal = 5 if in_period else 10
    pages.append(p(SITE + "/old-post", decaying, 200, 6.0))
    pages.append(p(SITE + "/christmas", seasonal, 200, 6.0))
    clicks = sum(row.clicks for row in pages)
    impressions = sum(row.impressions for row in pages)
    return Day(day, Figures(clicks + 20, impressions + 300, 4.0), pages=pages, queries=queries)


@pytest.fixture
def seo(tenant: Org, settings: Settings) -> Org:
    """February and March of 2025 and 2026 stored, planted once per module."""
    if tenant.org not in _planted:
        property_id = make_property(settings, tenant.tenant_id)
        planted = [one_day(day) for day in days(date(2025, 2, 1), 56)]
        planted += [one_day(day) for day in days(date(2026, 2, 1), 56)]
        assert planted[-1].day == LAST
        plant(settings, tenant.tenant_id, property_id, planted)
        _planted.add(tenant.org)
    return tenant


def insights(org: Org, kind: str, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = org.ok(OP, {"type": kind, **fields})
    return answer


def test_striking_distance_finds_the_planted_query(seo: Org) -> None:
    answer = insights(seo, "striking_distance")
    assert [(row["query"], row["page_url"]) for row in answer["data"]] == [
        ("widget repair", SITE + "/repair")
    ]
    found = answer["data"][0]
    assert found["position"] == 12.0 and found["impressions"] == 1120 and found["clicks"] == 28
    # Expected CTR at 3 from the tenant's own curve: position 2 (widget price and colors,
    # 18/200) falls below position 3 (buy widget and the reviews' leader, 13/130), so the fit
    # pools them: 31/330.
    expected = 31 / 330
    assert found["expected_ctr"] == pytest.approx(expected)
    assert found["opportunity_clicks"] == round(1120 * (expected - 28 / 1120))
    assert "position 12.0" in found["explanation"]
    assert answer["period_start"] == "2026-03-01" and answer["period_end"] == "2026-03-28"
    assert answer["computed_at"]
    # The 90-day period reaches into February, where the same row stands.
    assert insights(seo, "striking_distance", period="90d")["data"][0]["impressions"] == 2240


def test_low_ctr_against_the_tenants_own_curve(seo: Org) -> None:
    answer = insights(seo, "low_ctr")
    assert answer["ctr_curve"]["source"] == "own"
    points = [point["ctr"] for point in answer["ctr_curve"]["points"]]
    assert points == sorted(points, reverse=True)
    assert [(row["query"], row["page_url"]) for row in answer["data"]] == [
        ("widget colors", SITE + "/colors")
    ]
    found = answer["data"][0]
    assert found["ctr"] == 0.02
    assert found["ctr"] < 0.5 * found["expected_ctr"]
    assert "under half" in found["explanation"]


def test_decaying_page_is_listed_and_the_seasonal_one_is_not(seo: Org) -> None:
    answer = insights(seo, "decaying_page")
    assert [row["page_url"] for row in answer["data"]] == [SITE + "/old-post"]
    found = answer["data"][0]
    assert (found["clicks"], found["previous_clicks"], found["year_ago_clicks"]) == (140, 280, 280)
    assert found["change_pct"] == -50.0
    assert found["opportunity_clicks"] == 140
    assert found["query"] is None
    assert "a year before" in found["explanation"]


def test_cannibalization_finds_the_traded_query(seo: Org) -> None:
    answer = insights(seo, "cannibalization")
    assert [row["query"] for row in answer["data"]] == ["widget reviews"]
    found = answer["data"][0]
    competing = found["competing_pages"]
    assert sorted(page["url"] for page in competing) == [SITE + "/blog/reviews", SITE + "/reviews"]
    assert [page["impressions_share"] for page in competing] == [0.5, 0.5]
    assert sum(page["top_days"] for page in competing) == 28
    assert "changed 27 times in 28 days" in found["explanation"]


def test_min_impressions_and_paging(seo: Org) -> None:
    assert insights(seo, "striking_distance", minImpressions=1121)["data"] == []
    page = insights(seo, "striking_distance", page=2, limit=1)
    assert page["data"] == [] and page["total"] == 1


@pytest.mark.parametrize(
    "fields",
    [{}, {"type": "nope"}, {"type": "low_ctr", "period": "7d"}, {"type": "low_ctr", "limit": 101}],
)
def test_invalid_input_is_400(seo: Org, fields: dict[str, Any]) -> None:
    problem(seo.request(OP, fields), 400, "BAD_REQUEST")


def test_another_tenant_sees_none_of_it(seo: Org, other_tenant: Org, settings: Settings) -> None:
    for kind in ("striking_distance", "low_ctr", "decaying_page", "cannibalization"):
        answer = insights(other_tenant, kind)
        assert answer["data"] == [] and answer["period_end"] is None
        assert answer["ctr_curve"]["source"] == "default"


def test_needs_a_member(seo: Org) -> None:
    problem(seo.call(OP, {"type": "low_ctr"}), 401, "UNAUTHORIZED")
    assert insights(seo, "low_ctr")["total"] == 1


def test_the_curve_is_monotone_and_weighted() -> None:
    # Position 3 beats position 2 in the data: pooled, weighted by impressions.
    fitted = isotonic_decreasing([(1, 0.3, 100), (2, 0.05, 300), (3, 0.09, 100), (4, 0.02, 10)])
    assert fitted == [(1, 0.3), (2, pytest.approx(0.06)), (3, pytest.approx(0.06)), (4, 0.02)]
    assert fit_curve([(1, 999, 2000)]).source == "default"
    own = fit_curve([(1, 600, 2000), (5, 400, 4000)])
    assert own.source == "own"
    assert own.at(3) == pytest.approx(0.2) and own.at(0.5) == 0.3 and own.at(50) == 0.1
