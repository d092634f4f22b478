"""The rules below the API: which URLs a property holds, the quota's Pacific day, and Google's
answers mapped to our rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from contentplatform.seo.inspections import results
from contentplatform.seo.inspections.service import quota_day, within
from contentplatform.seo.models import SeoSitemap, SeoUrlInspection


@pytest.mark.parametrize(
    ("site_url", "url", "inside"),
    [
        ("sc-domain:example.com", "https://example.com/a", True),
        ("sc-domain:example.com", "https://blog.example.com/a", True),
        ("sc-domain:example.com", "https://EXAMPLE.com./", True),
        ("sc-domain:example.com", "https://badexample.com/", False),
        ("sc-domain:example.com", "https://example.com.evil.io/", False),
        ("sc-domain:example.com", "http://example.com/", False),
        ("sc-domain:bücher.de", "https://xn--bcher-kva.de/", True),
        ("https://example.com/blog/", "https://example.com/blog/post", True),
        ("https://example.com/blog/", "https://Example.COM/blog/", True),
        ("https://example.com/blog/", "https://example.com/blogger", False),
        ("https://example.com/blog/", "https://example.com/", False),
        ("https://example.com/", "https://www.example.com/", False),
        ("https://example.com/", "https://example.com:8443/", False),
        ("https://example.com/", "https://example.com:443/x", True),
        ("http://example.com/", "https://example.com/", False),
    ],
)
def test_a_url_is_within_a_property_as_search_console_reads_it(site_url, url, inside):
    assert within(site_url, url) is inside


def test_the_quota_day_runs_from_midnight_to_midnight_pacific():
    # 2026-07-01 06:59 UTC is 23:59 on June 30 in Los Angeles (PDT, UTC-7).
    start, reset = quota_day(datetime(2026, 7, 1, 6, 59, tzinfo=UTC))
    assert start == datetime(2026, 6, 30, 7, 0, tzinfo=UTC)
    assert reset == datetime(2026, 7, 1, 7, 0, tzinfo=UTC)
    # In winter (PST, UTC-8), and across the day's change.
    start, reset = quota_day(datetime(2026, 1, 15, 8, 0, tzinfo=UTC))
    assert (start, reset) == (
        datetime(2026, 1, 15, 8, 0, tzinfo=UTC),
        datetime(2026, 1, 16, 8, 0, tzinfo=UTC),
    )
    # The day the clocks go forward is 23 hours long.
    start, reset = quota_day(datetime(2026, 3, 8, 12, 0, tzinfo=UTC))
    assert (reset - start).total_seconds() == 23 * 3600


GOOGLE_RESULT = {
    "inspectionResultLink": "https://search.google.com/search-console/inspect?resource_id=x",
    "indexStatusResult": {
        "verdict": "PASS",
        "coverageState": "Submitted and indexed",
        "robotsTxtState": "ALLOWED",
        "indexingState": "INDEXING_ALLOWED",
        "lastCrawlTime": "2026-11-30T10:20:30Z",
        "pageFetchState": "SUCCESSFUL",
        "googleCanonical": "https://example.com/a",
        "userCanonical": "https://example.com/a?x=1",
        "sitemap": ["https://example.com/sitemap.xml"],
        "referringUrls": ["https://example.com/", "https://example.com/b"],
        "crawledAs": "MOBILE",
    },
    "richResultsResult": {
        "verdict": "PARTIAL",
        "detectedItems": [
            {
                "richResultType": "Breadcrumbs",
                "items": [
                    {
                        "name": "Unnamed item",
                        "issues": [{"issueMessage": 'Missing field "item"', "severity": "ERROR"}],
                    },
                    {
                        "name": "Second",
                        "issues": [{"issueMessage": "x\x00y", "severity": "WARNING"}],
                    },
                ],
            }
        ],
    },
}


def test_an_inspection_result_maps_every_field():
    row = SeoUrlInspection(url="https://example.com/a", status="pending")
    results.complete(row, GOOGLE_RESULT)
    assert row.status == "completed" and row.completed_at is not None and row.error is None
    assert (row.verdict, row.coverage_state) == ("PASS", "Submitted and indexed")
    assert (row.robots_txt_state, row.indexing_state) == ("ALLOWED", "INDEXING_ALLOWED")
    assert row.page_fetch_state == "SUCCESSFUL" and row.crawled_as == "MOBILE"
    assert row.last_crawl_time == datetime(2026, 11, 30, 10, 20, 30, tzinfo=UTC)
    assert row.google_canonical == "https://example.com/a"
    assert row.user_canonical == "https://example.com/a?x=1"
    assert row.sitemaps == ["https://example.com/sitemap.xml"]
    assert row.referring_urls == ["https://example.com/", "https://example.com/b"]
    assert row.inspection_result_link == GOOGLE_RESULT["inspectionResultLink"]
    assert row.rich_results == {
        "verdict": "PARTIAL",
        "items": [
            {
                "type": "Breadcrumbs",
                "issues": [
                    {"message": 'Missing field "item"', "severity": "ERROR"},
                    {"message": "xy", "severity": "WARNING"},  # NUL dropped
                ],
            }
        ],
    }


def test_an_unknown_verdict_and_odd_values_are_null_not_errors():
    row = SeoUrlInspection(url="https://example.com/a", status="pending")
    odd = {
        "indexStatusResult": {
            "verdict": "VERDICT_UNSPECIFIED",
            "lastCrawlTime": "yesterday",
            "coverageState": "x" * 400,
            "sitemap": "not a list",
        },
        "richResultsResult": "nope",
    }
    results.complete(row, odd)
    assert row.verdict is None and row.last_crawl_time is None and row.rich_results is None
    assert row.coverage_state == "x" * 255 and row.sitemaps == []


def test_a_google_sitemap_maps_without_its_deprecated_indexed_counts():
    row = SeoSitemap(url="https://example.com/sitemap.xml", source="search_console")
    now = datetime(2026, 12, 1, tzinfo=UTC)
    results.apply_sitemap(
        row,
        {
            "path": "https://example.com/sitemap.xml",
            "lastSubmitted": "2026-11-01T00:00:00.000Z",
            "isPending": False,
            "isSitemapsIndex": True,
            "lastDownloaded": "2026-11-02T03:04:05Z",
            "warnings": "2",
            "errors": "1",
            "contents": [{"type": "web", "submitted": "120", "indexed": "100"}],
        },
        now,
    )
    assert row.is_index is True and row.is_pending is False
    assert row.last_submitted == datetime(2026, 11, 1, tzinfo=UTC)
    assert row.last_downloaded == datetime(2026, 11, 2, 3, 4, 5, tzinfo=UTC)
    assert (row.errors, row.warnings) == (1, 2)
    assert row.contents == [{"type": "web", "submitted": 120}]
    assert row.synced_at == now
