"""seo.queryPerformance over REST and RPC: the right stored fact answers, totals add up, the
hidden share is shown, filters (RE2 included) and brand split, comparison, paging, the empty
answer before any sync, and another tenant sees nothing."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.seo.search_console.repository import Figures
from tests.seo.search_console.support import Day, days, make_property, p, plant, q
from tests.support.orgs import Org
from tests.support.problems import problem

pytestmark = pytest.mark.shared_org

OP = "seo.queryPerformance"
A = "https://example.com/a"
B = "https://example.com/b"
START, END = date(2026, 3, 1), date(2026, 3, 14)
WINDOW = {"startDate": START.isoformat(), "endDate": END.isoformat()}
_planted: set[str] = set()


def one_day(day: date, scale: int) -> Day:
    """A day of the property: site 100 clicks / 1,000 impressions at 5.0; query rows that add
    up to 45 / 450 of it (the rest is hidden); everything x `scale`."""
    return Day(
        day,
        Figures(100 * scale, 1000 * scale, 5.0),
        pages=[
            p(A, 40 * scale, 400 * scale, 3.0, country="USA", device="DESKTOP"),
            p(B, 30 * scale, 300 * scale, 8.0, country="DEU", device="MOBILE"),
        ],
        queries=[
            q("acme shoes", A, 20 * scale, 200 * scale, 2.0, country="USA", device="DESKTOP"),
            q("red shoes", A, 10 * scale, 100 * scale, 4.0, country="USA", device="DESKTOP"),
            q("blue boots", B, 15 * scale, 150 * scale, 9.0, country="DEU", device="MOBILE"),
        ],
    )


@pytest.fixture
def seo(tenant: Org, settings: Settings) -> Org:
    """The organization with its property selected and 14 days stored (and the 14 days before,
    and the same days a year before, at half the figures), planted once per module."""
    if tenant.org not in _planted:
        property_id = make_property(settings, tenant.tenant_id, brand_terms=["ACME"])
        planted = [one_day(day, 2) for day in days(START, 14)]
        planted += [one_day(day, 1) for day in days(START - timedelta(days=14), 14)]
        planted += [one_day(day, 1) for day in days(date(2025, 3, 1), 14)]
        plant(settings, tenant.tenant_id, property_id, planted)
        _planted.add(tenant.org)
    return tenant


def read(org: Org, role: str = "member", **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = org.ok(OP, {**WINDOW, **fields}, role=role)
    return answer


def test_no_dimension_reads_the_site_totals(seo: Org) -> None:
    answer = read(seo)
    assert answer["source"] == "site"
    assert answer["total"] == 1
    assert answer["totals"] == {"clicks": 2800, "impressions": 28000, "ctr": 0.1, "position": 5.0}
    assert answer["data"][0]["clicks"] == 2800
    assert answer["hidden"] is None
    assert answer["data_state"] == {"final_through": "2026-03-14", "fresh_through": "2026-03-14"}
    assert answer["last_synced_at"] is not None


def test_query_rows_show_the_hidden_share(seo: Org) -> None:
    answer = read(seo, dimensions=["query"])
    assert answer["source"] == "query"
    assert [(row["keys"]["query"], row["clicks"]) for row in answer["data"]] == [
        ("acme shoes", 560),
        ("blue boots", 420),
        ("red shoes", 280),
    ]
    assert answer["totals"]["clicks"] == 1260
    assert answer["hidden"] == {
        "clicks": 1540,
        "impressions": 15400,
        "clicks_share": 0.55,
        "impressions_share": 0.55,
    }
    # Impression-weighted: (2 x 200 ... ) / impressions
    assert answer["data"][0]["position"] == 2.0
    assert answer["data"][0]["ctr"] == 0.1


def test_page_dimension_with_country_and_device(seo: Org) -> None:
    answer = read(seo, dimensions=["page", "country", "device"], country="DEU")
    assert answer["source"] == "page"
    assert [row["keys"] for row in answer["data"]] == [
        {"date": None, "query": None, "page": B, "country": "deu", "device": "mobile"}
    ]
    assert answer["totals"]["clicks"] == 840
    assert answer["hidden"] is None
    # The hidden share in the scope of a page filter: B's totals minus its query rows.
    scoped = read(seo, dimensions=["query"], pageFilter=B, pageOperator="equals")
    assert scoped["hidden"]["clicks"] == 840 - 420


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"queryFilter": "^(red|blue) ", "queryOperator": "regex"}, ["blue boots", "red shoes"]),
        ({"queryFilter": "shoes$", "queryOperator": "not_regex"}, ["blue boots"]),
        ({"queryFilter": "SHOES"}, ["acme shoes", "red shoes"]),
        ({"queryFilter": "shoes", "queryOperator": "not_contains"}, ["blue boots"]),
        ({"queryFilter": "red shoes", "queryOperator": "equals"}, ["red shoes"]),
        ({"queryFilter": "Blue", "queryOperator": "starts_with"}, ["blue boots"]),
        ({"pageFilter": "/A", "dimensions": ["query", "page"]}, ["acme shoes", "red shoes"]),
        ({"brand": "branded"}, ["acme shoes"]),
        ({"brand": "non_branded"}, ["blue boots", "red shoes"]),
        ({"brand": "non_branded", "queryFilter": "shoes"}, ["red shoes"]),
    ],
)
def test_filters(seo: Org, fields: dict[str, Any], expected: list[str]) -> None:
    fields = {"dimensions": ["query"], "sortBy": "impressions", "sortOrder": "asc", **fields}
    answer = read(seo, **fields)
    assert sorted(row["keys"]["query"] for row in answer["data"]) == expected
    assert answer["totals"]["clicks"] == sum(row["clicks"] for row in answer["data"])
    # The hidden share is the scope's (page, country, device), whatever the query filter:
    # the site's 2,800 clicks minus the query rows' 1,260, or page A's 1,120 minus its 840.
    assert answer["hidden"]["clicks"] == (280 if "pageFilter" in fields else 1540)


def test_previous_period_and_year_compare_each_row(seo: Org) -> None:
    answer = read(
        seo, dimensions=["date"], compare="previous_period", sortBy="date", sortOrder="asc"
    )
    assert [row["keys"]["date"] for row in answer["data"]][:2] == ["2026-03-01", "2026-03-02"]
    first = answer["data"][0]
    assert first["previous"] == {"clicks": 100, "impressions": 1000, "ctr": 0.1, "position": 5.0}
    assert first["change"] == {
        "clicks_pct": 100.0,
        "impressions_pct": 100.0,
        "ctr_pts": 0.0,
        "position": 0.0,
    }
    assert answer["previous_totals"]["clicks"] == 1400
    by_year = read(seo, dimensions=["query"], compare="previous_year", queryFilter="red shoes")
    assert by_year["data"][0]["previous"]["clicks"] == 140
    assert by_year["data"][0]["change"]["clicks_pct"] == 100.0


def test_sorting_and_paging(seo: Org) -> None:
    second = read(seo, dimensions=["query"], sortBy="position", sortOrder="asc", limit=1, page=2)
    assert second["total"] == 3
    assert [row["keys"]["query"] for row in second["data"]] == ["red shoes"]
    past = read(seo, dimensions=["query"], page=9)
    assert past["data"] == []
    assert past["totals"]["clicks"] == 1260


def test_days_outside_the_window_are_not_read(seo: Org) -> None:
    answer = read(seo, startDate="2026-03-14", endDate="2026-03-20", dimensions=["date"])
    assert [row["keys"]["date"] for row in answer["data"]] == ["2026-03-14"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"queryFilter": "(unclosed", "queryOperator": "regex"}, "queryFilter"),
        ({"pageFilter": "a(?=b)", "pageOperator": "not_regex"}, "pageFilter"),
    ],
)
def test_a_pattern_re2_refuses_is_400(seo: Org, fields: dict[str, Any], field: str) -> None:
    body = problem(seo.request(OP, {**WINDOW, **fields}), 400, "BAD_REQUEST")
    assert body["errors"][0]["path"] == field


@pytest.mark.parametrize(
    "fields",
    [
        {"endDate": "2026-02-28"},
        {"startDate": "2024-11-01"},
        {"dimensions": ["query", "query"]},
        {"dimensions": ["query", "page", "country", "device"]},
        {"dimensions": ["searchAppearance"]},
        {"sortBy": "date"},
        {"queryFilter": "x" * 256, "queryOperator": "regex"},
        {"queryFilter": "a\x00b"},
        {"country": "us"},
        {"limit": 1001},
    ],
)
def test_invalid_input_is_400(seo: Org, fields: dict[str, Any]) -> None:
    problem(seo.request(OP, {**WINDOW, **fields}), 400, "BAD_REQUEST")


def test_before_any_sync_the_answer_is_empty(other_tenant: Org) -> None:
    answer = read(other_tenant, dimensions=["query"], compare="previous_period")
    assert answer["data"] == []
    assert answer["total"] == 0
    assert answer["totals"] == {"clicks": 0, "impressions": 0, "ctr": 0.0, "position": None}
    assert answer["last_synced_at"] is None
    assert answer["data_state"] == {"final_through": None, "fresh_through": None}


def test_another_tenant_sees_nothing_of_the_first(
    seo: Org, other_tenant: Org, settings: Settings
) -> None:
    # Even with a property of the same site selected, but no data of its own.
    if "selected" not in _planted:
        make_property(settings, other_tenant.tenant_id)
        _planted.add("selected")
    answer = read(other_tenant, dimensions=["query"])
    assert answer["data"] == [] and answer["totals"]["clicks"] == 0
    assert answer["last_synced_at"] is None


def test_needs_a_member_of_the_organization(seo: Org) -> None:
    response = seo.call(OP, WINDOW)
    problem(response, 401, "UNAUTHORIZED")
    for role in ("member", "editor", "admin"):
        assert read(seo, role=role)["total"] == 1
