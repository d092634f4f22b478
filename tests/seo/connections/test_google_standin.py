"""The Google stand-in speaks Search Console as Google does, seen through the service's own
SearchConsoleClient: totals include anonymized queries, query rows never do, positions are
impression-weighted, rows sorted by clicks and paged by startRow, fresh days only with
dataState=all (and firstIncompleteDate), quota errors in Google's JSON, sitemaps, inspection."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.seo.connections import google as api
from tests.support.google import GoogleStandIn, SearchRow

SITE = "https://standin-check.example.com/"
DAY, FRESH = date(2026, 3, 1), date(2026, 3, 2)


def client(google: GoogleStandIn, settings: Settings, scope: str = api.SCOPE) -> Any:
    """A SearchConsoleClient with a token the stand-in issued (consent, exchange)."""
    oauth = api.GoogleOAuth(settings)
    verifier, redirect = api.new_verifier(), "https://app.example.test/seo/callback"
    url = oauth.authorization_url(
        redirect_uri=redirect, state="s", verifier=verifier, read_only=scope != api.SCOPE
    )
    tokens = asyncio.run(
        oauth.exchange(code=google.authorize(url), verifier=verifier, redirect_uri=redirect)
    )
    return api.SearchConsoleClient(settings, tokens.access_token)


@pytest.fixture
def seeded(google: GoogleStandIn) -> GoogleStandIn:
    google.sites[:] = [s for s in google.sites if s["siteUrl"] != SITE]
    google.sites.append({"siteUrl": SITE, "permissionLevel": "siteOwner"})
    page_a, page_b = f"{SITE}a", f"{SITE}b"
    rows = [
        SearchRow("worm bins", page_a, "usa", "MOBILE", 10, 100, 2.0),
        SearchRow("compost", page_a, "usa", "DESKTOP", 5, 50, 4.0),
        SearchRow(None, page_a, "usa", "MOBILE", 3, 30, 8.0),  # anonymized
        SearchRow("compost", page_b, "gbr", "MOBILE", 1, 20, 10.0),
    ]
    google.set_day(SITE, "web", DAY, rows, final=True)
    google.set_day(SITE, "web", FRESH, rows[:1], final=False)
    return google


def query(seeded: GoogleStandIn, settings: Settings, **body: Any) -> dict[str, Any]:
    full = {"startDate": DAY.isoformat(), "endDate": DAY.isoformat(), **body}
    found: dict[str, Any] = asyncio.run(client(seeded, settings).query(SITE, full))
    return found


def test_totals_count_anonymized_queries_and_query_rows_never_show_them(
    seeded: GoogleStandIn, settings: Settings
) -> None:
    (total,) = query(seeded, settings)["rows"]
    assert (total["clicks"], total["impressions"]) == (19, 200)
    assert total["position"] == pytest.approx((200 + 200 + 240 + 200) / 200)
    by_query = query(seeded, settings, dimensions=["query"])["rows"]
    assert [(r["keys"], r["clicks"]) for r in by_query] == [(["worm bins"], 10), (["compost"], 6)]
    by_page = query(seeded, settings, dimensions=["page"])
    assert by_page["responseAggregationType"] == "byPage"
    assert [r["clicks"] for r in by_page["rows"]] == [18, 1]


def test_paging_and_data_state(seeded: GoogleStandIn, settings: Settings) -> None:
    dims = ["query", "page", "country", "device"]
    first = query(seeded, settings, dimensions=dims, rowLimit=2)["rows"]
    rest = query(seeded, settings, dimensions=dims, rowLimit=2, startRow=2)["rows"]
    assert [r["clicks"] for r in first + rest] == [10, 5, 1]
    window = {"endDate": FRESH.isoformat(), "dimensions": ["date"]}
    final = query(seeded, settings, **window)
    assert [r["keys"] for r in final["rows"]] == [[DAY.isoformat()]]
    assert "metadata" not in final
    fresh = query(seeded, settings, **window, dataState="all")
    assert {r["keys"][0] for r in fresh["rows"]} == {DAY.isoformat(), FRESH.isoformat()}
    assert fresh["metadata"] == {"firstIncompleteDate": FRESH.isoformat()}
    assert seeded.fetched[(SITE, "web", FRESH, "all")] >= 1


def test_quota_errors_are_googles(seeded: GoogleStandIn, settings: Settings) -> None:
    seeded.fail_next("searchAnalytics", 429, "rateLimitExceeded")
    with pytest.raises(api.GoogleApiError) as raised:
        query(seeded, settings)
    assert (raised.value.status, raised.value.reason) == (429, "rateLimitExceeded")
    assert raised.value.retry_after == 1.0 and raised.value.retryable
    seeded.fail_next("searchAnalytics", 403, "quotaExceeded")
    with pytest.raises(api.GoogleApiError, match="quotaExceeded"):
        query(seeded, settings)
    with pytest.raises(api.GoogleApiError) as invalid:
        query(seeded, settings, rowLimit=25_001)
    assert invalid.value.status == 400


def test_sitemaps_and_inspection(seeded: GoogleStandIn, settings: Settings) -> None:
    writer = client(seeded, settings)
    feed = f"{SITE}sitemap.xml"
    asyncio.run(writer.submit_sitemap(SITE, feed))
    (listed,) = asyncio.run(writer.list_sitemaps(SITE))
    assert listed["path"] == feed and listed["isPending"] is True
    reader = client(seeded, settings, api.READ_ONLY_SCOPE)
    with pytest.raises(api.GoogleApiError) as refused:
        asyncio.run(reader.delete_sitemap(SITE, feed))
    assert refused.value.status == 403
    asyncio.run(writer.delete_sitemap(SITE, feed))
    assert asyncio.run(writer.list_sitemaps(SITE)) == []
    result = asyncio.run(writer.inspect(SITE, f"{SITE}a", "en"))
    assert result["indexStatusResult"]["verdict"] == "PASS"
    seeded.inspection_results[f"{SITE}b"] = {"indexStatusResult": {"verdict": "FAIL"}}
    assert asyncio.run(writer.inspect(SITE, f"{SITE}b", None))["indexStatusResult"] == {
        "verdict": "FAIL"
    }


def test_a_revoked_grant_is_401_then_invalid_grant(
    seeded: GoogleStandIn, settings: Settings
) -> None:
    reader = client(seeded, settings)
    seeded.revoke_grants()
    with pytest.raises(api.GoogleGrantRevoked):
        asyncio.run(reader.list_sites())
    with pytest.raises(api.GoogleGrantRevoked, match="expired or revoked"):
        asyncio.run(api.GoogleOAuth(settings).refresh("1//standin-unknown"))
