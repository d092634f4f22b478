"""seo.inspectUrls, listUrlInspections and getUrlInspection over REST and RPC, against the Google
stand-in: the durable workflow makes the inspections, the daily quota refuses before anything is
sent, Google's refusals fail what they must."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from contentplatform.kit.db import utcnow
from contentplatform.seo.inspections.service import quota_day
from contentplatform.seo.models import SeoUrlInspection
from tests.seo.inspections.support import (
    Inspections,
    inspections_sent,
    new_site,
    plant_inspections,
    run_of,
    seconds_to_pacific_midnight,
    selected_property,
)
from tests.support.database import select_all
from tests.support.google import GoogleStandIn, default_inspection
from tests.support.orgs import org_fixture
from tests.support.problems import problem

seo = org_fixture(Inspections)
other = org_fixture(Inspections, second=True)


@pytest.fixture
def site(seo: Inspections, google: GoogleStandIn) -> str:
    """The host of the organization's Search Console property (a domain property)."""
    host = new_site()
    seo.connect(google, f"sc-domain:{host}")
    return host


def failing(url: str) -> dict[str, Any]:
    """A FAIL result whose canonicals differ, with a rich-result issue."""
    result = default_inspection(url)
    result["indexStatusResult"].update(
        verdict="FAIL",
        coverageState="Crawled - currently not indexed",
        googleCanonical=url + "?ref=canonical",
        referringUrls=[url + "/from"],
        sitemap=[url.rsplit("/", 1)[0] + "/sitemap.xml"],
        crawledAs="DESKTOP",
    )
    result["richResultsResult"] = {
        "verdict": "FAIL",
        "detectedItems": [
            {
                "richResultType": "Product snippets",
                "items": [
                    {"name": "x", "issues": [{"issueMessage": "No price", "severity": "ERROR"}]}
                ],
            }
        ],
    }
    return result


def test_urls_are_inspected_in_the_background_with_every_field(seo, google, site, settings):
    passing, failed = f"https://{site}/", f"https://{site}/broken"
    google.inspection_results[failed] = failing(failed)
    answer = seo.inspect([failed, passing])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [row["url"] for row in body["data"]] == [failed, passing]
    assert {row["status"] for row in body["data"]} == {"pending"}
    assert body["total"] == 2
    assert body["quota"] == {"used_today": 2, "limit_per_day": 2000, "remaining": 1998}
    assert all(row["requested_by"] == seo.users["editor"] for row in body["data"])

    run_id = run_of(settings, seo.tenant_id, body["data"][0]["id"])
    run = seo.wait_run(run_id)
    assert run["kind"] == "url_inspection" and run["status"] == "succeeded", run
    assert (run["progress"]["done"], run["progress"]["total"]) == (2, 2)

    found = seo.inspection(body["data"][0]["id"])
    assert found["status"] == "completed" and found["error"] is None
    assert found["verdict"] == "FAIL"
    assert found["coverage_state"] == "Crawled - currently not indexed"
    assert (found["robots_txt_state"], found["indexing_state"]) == ("ALLOWED", "INDEXING_ALLOWED")
    assert found["page_fetch_state"] == "SUCCESSFUL" and found["crawled_as"] == "DESKTOP"
    assert found["google_canonical"] == failed + "?ref=canonical"
    assert found["user_canonical"] == failed
    assert found["last_crawl_time"] == "2026-01-02T03:04:05Z"
    assert found["sitemaps"] == [f"https://{site}/sitemap.xml"]
    assert found["referring_urls"] == [failed + "/from"]
    assert found["rich_results"] == {
        "verdict": "FAIL",
        "items": [
            {"type": "Product snippets", "issues": [{"message": "No price", "severity": "ERROR"}]}
        ],
    }
    assert found["inspection_result_link"].startswith("https://search.google.com/")
    assert found["completed_at"] is not None and found["previous"] is None

    listed = seo.ok("seo.listUrlInspections", {"verdict": "PASS"}, role="member")
    assert [row["url"] for row in listed["data"]] == [passing]
    assert listed["data"][0]["rich_results"]["items"][0]["type"] == "Breadcrumbs"
    assert seo.ok("seo.listUrlInspections", {"search": "BROKEN"})["total"] == 1
    assert seo.ok("seo.listUrlInspections", {"status": "pending"})["total"] == 0


def test_a_url_inspected_within_a_day_is_answered_as_it_is_unless_forced(
    seo, google, site, settings
):
    url = f"https://{site}/page"
    first = seo.inspect([url]).json()["data"][0]
    seo.wait_run(run_of(settings, seo.tenant_id, first["id"]))
    sent = inspections_sent(google)

    again = seo.inspect([url]).json()
    assert again["data"][0]["id"] == first["id"] and again["data"][0]["status"] == "completed"
    assert again["quota"]["used_today"] == 1
    assert inspections_sent(google) == sent  # nothing asked of Google

    google.inspection_results[url] = failing(url)
    forced = seo.inspect([url], force=True).json()
    assert forced["data"][0]["id"] != first["id"] and forced["quota"]["used_today"] == 2
    seo.wait_run(run_of(settings, seo.tenant_id, forced["data"][0]["id"]))
    assert inspections_sent(google) == sent + 1
    newest = seo.inspection(forced["data"][0]["id"])
    assert newest["verdict"] == "FAIL"
    assert newest["previous"]["verdict"] == "PASS"
    assert newest["previous"]["google_canonical"] == url
    assert newest["previous"]["coverage_state"] == "Submitted and indexed"
    assert seo.inspection(first["id"])["previous"] is None

    latest = seo.ok("seo.listUrlInspections", {"search": "/page"})
    assert [row["id"] for row in latest["data"]] == [forced["data"][0]["id"]]
    every = seo.ok("seo.listUrlInspections", {"search": "/page", "latestOnly": False})
    assert [row["id"] for row in every["data"]] == [forced["data"][0]["id"], first["id"]]


def test_the_call_that_would_pass_the_daily_quota_is_429_before_anything_is_sent(
    seo, google, site, settings
):
    property_id = selected_property(settings, seo.tenant_id)
    plant_inspections(settings, seo.tenant_id, property_id, 1999)
    # Yesterday's (Pacific) do not count.
    yesterday = quota_day(utcnow())[0] - timedelta(minutes=1)
    plant_inspections(settings, seo.tenant_id, property_id, 5, at=yesterday, url="https://y.test/")
    sent = inspections_sent(google)
    stored = seo.ok("seo.listUrlInspections", {"latestOnly": False})["total"]

    refused = seo.inspect([f"https://{site}/a", f"https://{site}/b"])
    body = problem(refused, 429, "TOO_MANY_REQUESTS")
    assert "1999" in body["detail"]
    retry_after = int(refused.headers["retry-after"])
    assert abs(retry_after - seconds_to_pacific_midnight()) < 10
    assert inspections_sent(google) == sent
    assert seo.ok("seo.listUrlInspections", {"latestOnly": False})["total"] == stored

    last = seo.inspect([f"https://{site}/a"])
    assert last.status_code == 200, last.text
    assert last.json()["quota"] == {"used_today": 2000, "limit_per_day": 2000, "remaining": 0}
    seo.wait_run(run_of(settings, seo.tenant_id, last.json()["data"][0]["id"]))
    assert inspections_sent(google) == sent + 1
    problem(seo.inspect([f"https://{site}/c"]), 429, "TOO_MANY_REQUESTS")


def test_urls_must_be_https_within_the_property_distinct_and_at_most_100(
    seo, google, site, settings
):
    outside = seo.inspect([f"https://evil{site}/", f"https://{site}/ok", "https://example.org/"])
    body = problem(outside, 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["urls.0", "urls.2"]
    for urls in (
        [f"http://{site}/"],
        [f"https://{site}/a", f"https://{site}/a"],
        [f"https://{site}/{n}" for n in range(101)],
        [],
        ["https://user:pw@" + site + "/"],
        [f"https://{site}/a\x00b"],
    ):
        problem(seo.inspect(urls), 400, "BAD_REQUEST")
    problem(seo.inspect([f"https://{site}/"], languageCode="not a tag"), 400, "BAD_REQUEST")
    # A URL of the property is taken, with the language of the issue messages.
    made = seo.inspect([f"https://{site}/x"], languageCode="de-DE")
    assert made.status_code == 200, made.text
    # Waited for, so that no inspection of this test is sent during the next one.
    seo.wait_run(run_of(settings, seo.tenant_id, made.json()["data"][0]["id"]))


def test_inspecting_needs_search_console_connected(seo):
    body = problem(seo.inspect(["https://example.com/"]), 409, "CONFLICT")
    assert "Search Console" in body["detail"]


def test_members_read_editors_inspect_and_other_organizations_see_nothing(
    seo, other, google, site, settings
):
    problem(seo.inspect([f"https://{site}/"], role="member"), 403, "FORBIDDEN")
    made = seo.inspect([f"https://{site}/"]).json()["data"][0]
    seo.wait_run(run_of(settings, seo.tenant_id, made["id"]))
    assert seo.inspection(made["id"], role="member")["id"] == made["id"]
    assert seo.ok("seo.listUrlInspections", {}, role="member")["total"] == 1

    problem(
        other.request("seo.getUrlInspection", {"id": made["id"]}, role="admin"), 404, "NOT_FOUND"
    )
    problem(seo.request("seo.getUrlInspection", {"id": str(uuid.uuid4())}), 404, "NOT_FOUND")
    assert other.ok("seo.listUrlInspections", {}, role="admin")["total"] == 0


def test_a_refused_inspection_fails_with_googles_reason_and_the_run_is_partial(
    seo, google, site, settings
):
    google.fail_next("urlInspection", 403, "forbidden")
    body = seo.inspect([f"https://{site}/1", f"https://{site}/2"]).json()
    run = seo.wait_run(run_of(settings, seo.tenant_id, body["data"][0]["id"]))
    assert run["status"] == "partial", run
    assert run["error"]["items"] == [{"url": f"https://{site}/1", "code": "forbidden"}]
    first = seo.inspection(body["data"][0]["id"])
    assert first["status"] == "failed" and first["verdict"] is None
    assert first["error"]["code"] == "forbidden" and "Stand-in" in first["error"]["message"]
    assert seo.inspection(body["data"][1]["id"])["status"] == "completed"
    failed = seo.ok("seo.listUrlInspections", {"status": "failed"})
    assert [row["id"] for row in failed["data"]] == [first["id"]]


def test_a_rate_limited_inspection_is_tried_again(seo, google, site, settings):
    google.fail_next("urlInspection", 429, "rateLimitExceeded")
    sent = inspections_sent(google)
    made = seo.inspect([f"https://{site}/slow"]).json()["data"][0]
    run = seo.wait_run(run_of(settings, seo.tenant_id, made["id"]))
    assert run["status"] == "succeeded", run
    assert seo.inspection(made["id"])["status"] == "completed"
    assert inspections_sent(google) == sent + 2


def test_a_revoked_grant_fails_the_inspections_and_asks_for_reauthorization(
    seo, google, site, settings
):
    google.fail_next("urlInspection", 401, "authError")
    body = seo.inspect([f"https://{site}/1", f"https://{site}/2"]).json()
    run = seo.wait_run(run_of(settings, seo.tenant_id, body["data"][0]["id"]))
    assert run["status"] == "failed", run
    for made in body["data"]:
        found = seo.inspection(made["id"])
        assert found["status"] == "failed" and found["error"]["code"] == "grant_revoked"
    connection = seo.ok("seo.getConnection", {"provider": "google_search_console"})
    assert connection["status"] == "needs_reauth"
    problem(seo.inspect([f"https://{site}/3"]), 409, "CONFLICT")


def test_the_language_defaults_to_the_seo_settings_language(seo, google, site, settings):
    seo.ok("seo.updateSettings", {"language": "fr-CA"})
    default = seo.inspect([f"https://{site}/fr"]).json()["data"][0]
    given = seo.inspect([f"https://{site}/de"], languageCode="de").json()["data"][0]
    stored = select_all(
        settings,
        select(SeoUrlInspection.language_code)
        .where(SeoUrlInspection.id.in_([uuid.UUID(default["id"]), uuid.UUID(given["id"])]))
        .order_by(SeoUrlInspection.url),
    )
    assert stored == ["de", "fr-CA"]
    for made in (default, given):
        seo.wait_run(run_of(settings, seo.tenant_id, made["id"]))
