"""seo.listSitemaps, submitSitemap and deleteSitemap over REST and RPC against the Google
stand-in, and `refresh_sitemaps` (what the Search Console sync stores of sitemaps.list)."""

from __future__ import annotations

import uuid

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.seo.connections import access as connections
from contentplatform.seo.inspections import service
from tests.seo.inspections.support import (
    Inspections,
    new_site,
    plant_sitemap,
    selected_property,
)
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import org_fixture
from tests.support.problems import problem

seo = org_fixture(Inspections)
other = org_fixture(Inspections, second=True)


@pytest.fixture
def site(seo: Inspections, google: GoogleStandIn) -> str:
    host = new_site()
    seo.connect(google, f"sc-domain:{host}")
    return host


def refresh(settings: Settings, tenant_id: uuid.UUID) -> int:
    """What the Search Console sync does for sitemaps."""

    async def scenario(db: Database) -> int:
        async with db.unit_of_work() as session:
            access = await connections.search_console(session, tenant_id, settings)
            return await service.refresh_sitemaps(session, tenant_id, access)

    count: int = run_on(settings, scenario)
    return count


def test_a_sitemap_is_submitted_and_resubmitting_it_is_idempotent(seo, google, site):
    url = f"https://{site}/sitemap.xml"
    made = seo.ok("seo.submitSitemap", {"url": url})
    assert made["url"] == url and made["source"] == "search_console"
    assert made["is_pending"] is True and made["last_submitted"] is not None
    # No scan of the site yet: nothing to cross-check.
    assert set(made["snapshot"].values()) == {None} and len(made["snapshot"]) == 5
    assert url in google.sitemaps[f"sc-domain:{site}"]

    again = seo.ok("seo.submitSitemap", {"url": url})
    assert again["id"] == made["id"] and again["last_submitted"] >= made["last_submitted"]
    listed = seo.ok("seo.listSitemaps", {}, role="member")
    assert [row["id"] for row in listed["data"]] == [made["id"]]
    assert (listed["total"], listed["page"], listed["limit"]) == (1, 1, 50)


def test_the_sync_stores_what_google_lists_without_the_indexed_counts(seo, google, site, settings):
    site_url = f"sc-domain:{site}"
    gone = seo.ok("seo.submitSitemap", {"url": f"https://{site}/old.xml"})
    with google.lock:
        google.sitemaps[site_url] = {
            f"https://{site}/index.xml": {
                "path": f"https://{site}/index.xml",
                "lastSubmitted": "2026-11-01T10:00:00.000Z",
                "isPending": False,
                "isSitemapsIndex": True,
                "lastDownloaded": "2026-11-02T11:00:00Z",
                "warnings": "3",
                "errors": "1",
                "contents": [
                    {"type": "web", "submitted": "250", "indexed": "0"},
                    {"type": "image", "submitted": "12", "indexed": "0"},
                ],
            }
        }
    assert refresh(settings, seo.tenant_id) == 1
    listed = seo.ok("seo.listSitemaps", {"source": "search_console"}, role="member")
    assert listed["total"] == 1
    row = listed["data"][0]
    assert row["id"] != gone["id"]  # Google no longer lists it: forgotten
    assert row["url"] == f"https://{site}/index.xml" and row["is_index"] is True
    assert (row["is_pending"], row["errors"], row["warnings"]) == (False, 1, 3)
    assert row["last_submitted"] == "2026-11-01T10:00:00Z"
    assert row["last_downloaded"] == "2026-11-02T11:00:00Z"
    assert row["contents"] == [
        {"type": "web", "submitted": 250},
        {"type": "image", "submitted": 12},
    ]
    assert row["synced_at"] is not None


def test_robots_txt_sitemaps_are_listed_and_read_only(seo, google, site, settings):
    robots = plant_sitemap(settings, seo.tenant_id, f"https://{site}/robots-map.xml")
    submitted = seo.ok("seo.submitSitemap", {"url": f"https://{site}/sitemap.xml"})
    every = seo.ok("seo.listSitemaps", {}, role="member")
    assert [(row["url"], row["source"]) for row in every["data"]] == [
        (f"https://{site}/robots-map.xml", "robots_txt"),
        (f"https://{site}/sitemap.xml", "search_console"),
    ]
    only = seo.ok("seo.listSitemaps", {"source": "robots_txt"})
    assert [row["id"] for row in only["data"]] == [robots]
    second = seo.ok("seo.listSitemaps", {"limit": 1, "page": 2})
    assert [row["id"] for row in second["data"]] == [submitted["id"]] and second["total"] == 2

    body = problem(seo.request("seo.deleteSitemap", {"id": robots}), 409, "CONFLICT")
    assert "robots.txt" in body["detail"]
    assert seo.ok("seo.listSitemaps", {"source": "robots_txt"})["total"] == 1


def test_a_sitemap_is_deleted_at_google_then_here(seo, other, google, site):
    url = f"https://{site}/sitemap.xml"
    made = seo.ok("seo.submitSitemap", {"url": url})
    problem(other.request("seo.deleteSitemap", {"id": made["id"]}), 404, "NOT_FOUND")
    assert other.ok("seo.listSitemaps", {})["total"] == 0
    problem(seo.request("seo.deleteSitemap", {"id": made["id"]}, role="editor"), 403, "FORBIDDEN")

    assert seo.ok("seo.deleteSitemap", {"id": made["id"]}) == {"success": True}
    assert url not in google.sitemaps[f"sc-domain:{site}"]
    assert seo.ok("seo.listSitemaps", {})["total"] == 0
    problem(seo.request("seo.deleteSitemap", {"id": made["id"]}), 404, "NOT_FOUND")

    # One Google forgot already is forgotten here too.
    again = seo.ok("seo.submitSitemap", {"url": url})
    with google.lock:
        del google.sitemaps[f"sc-domain:{site}"][url]
    assert seo.ok("seo.deleteSitemap", {"id": again["id"]}) == {"success": True}


def test_a_sitemap_must_be_within_the_property(seo, google):
    host = new_site()
    seo.connect(google, f"https://{host}/blog/")
    body = problem(
        seo.request("seo.submitSitemap", {"url": f"https://{host}/sitemap.xml"}), 400, "BAD_REQUEST"
    )
    assert body["errors"][0]["path"] == "url"
    problem(
        seo.request("seo.submitSitemap", {"url": f"http://{host}/blog/s.xml"}), 400, "BAD_REQUEST"
    )
    assert google.sitemaps.get(f"https://{host}/blog/", {}) == {}
    made = seo.ok("seo.submitSitemap", {"url": f"https://{host}/blog/sitemap.xml"})
    assert made["url"] == f"https://{host}/blog/sitemap.xml"


@pytest.mark.parametrize(
    ("permission", "read_only"), [("siteOwner", True), ("siteRestrictedUser", False)]
)
def test_sitemaps_cannot_be_changed_read_only_or_restricted(seo, google, permission, read_only):
    host = new_site()
    seo.connect(google, f"sc-domain:{host}", permission=permission, read_only=read_only)
    body = problem(
        seo.request("seo.submitSitemap", {"url": f"https://{host}/sitemap.xml"}), 409, "CONFLICT"
    )
    assert ("read-only" if read_only else "restricted") in body["detail"]
    assert google.sitemaps.get(f"sc-domain:{host}", {}) == {}
    assert seo.ok("seo.listSitemaps", {}, role="member")["total"] == 0


def test_submitting_needs_search_console_and_an_admin(seo, google, settings):
    body = problem(
        seo.request("seo.submitSitemap", {"url": "https://example.com/sitemap.xml"}),
        409,
        "CONFLICT",
    )
    assert "Search Console" in body["detail"]
    problem(
        seo.request("seo.submitSitemap", {"url": "https://example.com/s.xml"}, role="editor"),
        403,
        "FORBIDDEN",
    )
    problem(seo.request("seo.listSitemaps", {"limit": 101}), 400, "BAD_REQUEST")
    problem(seo.request("seo.listSitemaps", {"source": "bing"}), 400, "BAD_REQUEST")


def test_another_propertys_sitemap_is_not_deleted_through_this_one(seo, google, site, settings):
    made = seo.ok("seo.submitSitemap", {"url": f"https://{site}/sitemap.xml"})
    first = selected_property(settings, seo.tenant_id)
    host = new_site()
    seo.connect(google, f"sc-domain:{host}")
    assert selected_property(settings, seo.tenant_id) != first
    # Listed with the property selected, so no longer shown.
    assert seo.ok("seo.listSitemaps", {})["total"] == 0
    problem(seo.request("seo.deleteSitemap", {"id": made["id"]}), 409, "CONFLICT")


def test_google_refusing_a_submission_is_a_problem_not_a_500(seo, google, site):
    google.fail_next("/sitemaps/", 400, "invalid")
    body = problem(
        seo.request("seo.submitSitemap", {"url": f"https://{site}/bad.xml"}), 400, "BAD_REQUEST"
    )
    assert "Stand-in" in body["detail"]
    google.fail_next("/sitemaps/", 429, "rateLimitExceeded")
    refused = seo.request("seo.submitSitemap", {"url": f"https://{site}/bad.xml"})
    problem(refused, 429, "TOO_MANY_REQUESTS")
    assert refused.headers["retry-after"] == "1"
    google.fail_next("/sitemaps/", 503, "backendError")
    problem(
        seo.request("seo.submitSitemap", {"url": f"https://{site}/bad.xml"}),
        503,
        "INTERNAL_SERVER_ERROR",
    )
    google.fail_next("/sitemaps/", 401, "authError")
    problem(seo.request("seo.submitSitemap", {"url": f"https://{site}/bad.xml"}), 409, "CONFLICT")
    connection = seo.ok("seo.getConnection", {"provider": "google_search_console"})
    assert connection["status"] == "needs_reauth"
    assert seo.ok("seo.listSitemaps", {})["total"] == 0
