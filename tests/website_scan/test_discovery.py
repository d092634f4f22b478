"""websiteScan.discoverSitemap over REST and RPC against the generated loopback site
(tests/support/sites.py): robots.txt's Sitemap lines, an index with a gzip child, lastmod,
/sitemap.xml without them, search and limit, subdomains, the start page's links when there is
no sitemap, the 30 s limit (map_site with a shorter one), the outbound guard, the roles, a
second organization's config; no page crawled, nothing sent off loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan.discovery import service as discovery
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.support.servers import StubServer
from tests.support.sites import TestSite
from tests.website_scan.support import Scanner

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

OPERATION = "websiteScan.discoverSitemap"
SITEMAP_FILES = {"/robots.txt", "/sitemap_index.xml", "/sitemaps/pages.xml.gz", "/sitemap.xml"}


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


@pytest.fixture
def site() -> Iterator[TestSite]:
    with TestSite(crawl_delay=0.01) as running:
        yield running


def discover(scanner: Scanner, role: str = "editor", **data: Any) -> dict[str, Any]:
    answer: dict[str, Any] = scanner.ok(OPERATION, data, role=role)
    return answer


def test_the_sitemaps_robots_txt_declares_are_read_and_nothing_is_crawled(
    scanner: Scanner, site: TestSite
) -> None:
    found = discover(scanner, url=site.url + "/")
    assert found["robots_txt"] == {
        "found": True,
        "sitemaps_declared": [site.url + "/sitemap_index.xml"],
        "disallow_count": 1,
        "error": None,
    }
    # Those robots.txt names, then /sitemap.xml, then what the indexes list (gzip here).
    assert found["sitemaps"] == [
        {"url": site.url + "/sitemap_index.xml", "type": "index", "url_count": 1, "error": None},
        {"url": site.url + "/sitemap.xml", "type": None, "url_count": 0, "error": "HTTP 404"},
        {
            "url": site.url + "/sitemaps/pages.xml.gz",
            "type": "urlset",
            "url_count": 3,
            "error": None,
        },
    ]
    # The subdomain's URL is left out unless asked for.
    assert found["urls"] == [
        {"url": site.url + "/only-in-sitemap", "lastmod": "2026-01-01", "source": "robots"},
        {"url": site.url + "/docs/b", "lastmod": None, "source": "robots"},
    ]
    assert found["total"] == 2
    assert sorted(site.paths()) == sorted(SITEMAP_FILES)


def test_a_sitemap_found_without_robots_txt_and_subdomains(scanner: Scanner) -> None:
    with TestSite(crawl_delay=0.01, sitemap="conventional") as site:
        # Addressed as localhost, so the subdomain blog.localhost is one of the site.
        start = site.url.replace("127.0.0.1", "localhost") + "/"
        found = discover(scanner, url=start, includeSubdomains=True)
    base = start.rstrip("/")
    assert found["robots_txt"]["sitemaps_declared"] == []
    assert [report["url"] for report in found["sitemaps"]] == [
        base + "/sitemap.xml",
        base + "/sitemaps/pages.xml.gz",
    ]
    assert [(entry["url"], entry["source"]) for entry in found["urls"]] == [
        (base + "/only-in-sitemap", "sitemap"),
        (base + "/docs/b", "sitemap"),
        (base.replace("://", "://blog.") + "/from-a-subdomain", "sitemap"),
    ]


def test_search_and_limit(scanner: Scanner, site: TestSite) -> None:
    found = discover(scanner, url=site.url + "/", search="ONLY-in")
    assert [entry["url"] for entry in found["urls"]] == [site.url + "/only-in-sitemap"]
    assert found["total"] == 1
    first = discover(scanner, url=site.url + "/", limit=1)
    assert [entry["url"] for entry in first["urls"]] == [site.url + "/only-in-sitemap"]
    assert first["total"] == 2
    none = discover(scanner, url=site.url + "/", search="nowhere")
    assert (none["urls"], none["total"]) == ([], 0)


def test_without_sitemaps_the_start_pages_links_are_listed(scanner: Scanner) -> None:
    with TestSite(crawl_delay=0.01, sitemap="none") as site:
        found = discover(scanner, url=site.url + "/")
        # The start page is the one page fetched; its links are listed, not followed.
        assert site.paths() == ["/robots.txt", "/sitemap.xml", "/"]
    assert found["sitemaps"] == [
        {"url": site.url + "/sitemap.xml", "type": None, "url_count": 0, "error": "HTTP 404"}
    ]
    listed = [entry["url"].removeprefix(site.url) for entry in found["urls"]]
    assert listed[:4] == ["/", "/docs/", "/docs/a", "/moved"]
    # Internal links only, each once (tracking parameters and fragments collapsed).
    assert "/docs/a" in listed and len(listed) == len(set(listed)) == found["total"]
    assert not any(url.startswith("https://example.invalid") for url in listed)
    assert {entry["source"] for entry in found["urls"]} == {"link"}
    assert {entry["lastmod"] for entry in found["urls"]} == {None}


def test_a_configs_site_is_read(scanner: Scanner, other: Scanner, site: TestSite) -> None:
    config = scanner.config(startUrl=site.url + "/", requestsPerSecond=10)
    found = discover(scanner, configId=config["id"], search="docs")
    assert [entry["url"] for entry in found["urls"]] == [site.url + "/docs/b"]
    # Another organization's config is not found, and its site is not asked.
    asked = len(site.paths())
    body = problem(
        other.request(OPERATION, {"configId": config["id"]}, role="admin"), 404, "NOT_FOUND"
    )
    assert config["id"] in body["detail"] and len(site.paths()) == asked


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.7/", "a private address"),
        ("http://192.168.1.1/sitemap.xml", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("ftp://127.0.0.1/", "Only"),
    ],
)
def test_a_url_the_guard_refuses_is_400_naming_url(
    scanner: Scanner, network: NetworkGuard, url: str, reason: str
) -> None:
    body = problem(scanner.request(OPERATION, {"url": url}), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["url"]
    assert reason in body["detail"]
    assert network.refused == []


@pytest.mark.parametrize("data", [{}, {"search": "x"}, "both"])
def test_one_site_must_be_named(scanner: Scanner, site: TestSite, data: Any) -> None:
    if data == "both":
        config = scanner.config(startUrl=site.url + "/")
        data = {"url": site.url + "/", "configId": config["id"]}
    problem(scanner.request(OPERATION, data), 400, "BAD_REQUEST")
    assert site.paths() == []


def test_an_editor_may_a_member_may_not(scanner: Scanner, site: TestSite) -> None:
    problem(scanner.request(OPERATION, {"url": site.url + "/"}, role="member"), 403, "FORBIDDEN")
    assert site.paths() == []
    assert discover(scanner, role="admin", url=site.url + "/")["total"] == 2


# --- the rules, with a time limit of their own -----------------------------------------------

LOCAL = Policy(allow_http=True, allow_loopback=True, timeout=5.0, connect_timeout=1.0)


def test_when_time_runs_out_what_was_found_is_answered() -> None:
    def slow(*_: object) -> tuple[int, dict[str, str], bytes]:
        time.sleep(1.5)
        return 200, {}, b"<urlset/>"

    with StubServer() as stub:
        robots_txt = f"User-agent: *\nSitemap: {stub.url}/slow.xml\n".encode()
        stub.route("GET", "/robots.txt", lambda *_: (200, {}, robots_txt))
        stub.route("GET", "/slow.xml", slow)
        started = time.monotonic()
        found = asyncio.run(discovery.map_site(stub.url + "/", LOCAL, seconds=0.5))
        elapsed = time.monotonic() - started
    assert elapsed < 1.4 and found.timed_out
    answer = discovery.answer(found, search=None, limit=10)
    assert answer.robots_txt.found and answer.robots_txt.sitemaps_declared == [
        stub.url + "/slow.xml"
    ]
    assert [(report.url, report.error) for report in answer.sitemaps] == [
        (stub.url + "/slow.xml", "timeout"),
        (stub.url + "/sitemap.xml", "timeout"),
    ]
    assert answer.total == 0


def test_a_robots_txt_that_fails_stops_the_reading() -> None:
    with StubServer() as stub:
        stub.route("GET", "/robots.txt", lambda *_: (503, {}, b"down"))
        found = asyncio.run(discovery.map_site(stub.url + "/", LOCAL))
        asked = [request["path"] for request in stub.requests]
    answer = discovery.answer(found, search=None, limit=10)
    assert asked == ["/robots.txt", "/robots.txt"]  # asked again once, as it may recover
    assert answer.robots_txt.error == "HTTP 503" and not answer.robots_txt.found
    assert answer.sitemaps == [] and answer.urls == []
