"""`crawl` against the generated loopback site (tests/support/sites.py): one page one row,
robots.txt, Crawl-delay, sitemaps, the size cap, timeouts, loops, broken links, cancel, resume,
and the SSRF guard when loopback is not allowed; pages fetched `concurrency` at once, redirect
hops held to robots.txt and the patterns, and outbound links checked against a second site."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator

import pytest

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan.crawling.crawler import CrawlResult, CrawlSettings, crawl
from contentplatform.website_scan.crawling.frontier import Frontier
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.crawling.site_files import SiteFacts
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.servers import StubServer
from tests.support.sites import TestSite

# The 20 MB page must be cut off at 2 MB; the slow page (3 s) must time out at 2 s (a page
# that answers at once may take over 1 s on a loaded CI host).
LOCAL = Policy(
    allow_http=True,
    allow_loopback=True,
    timeout=2.0,
    connect_timeout=1.0,
    max_response_bytes=2 * 1024 * 1024,
)
# Long enough to wait out the slow page (3 s): what stops its fetch early is the cancel.
PATIENT = Policy(allow_http=True, allow_loopback=True, timeout=10.0, connect_timeout=1.0)


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


@pytest.fixture
def site() -> Iterator[TestSite]:
    with TestSite(crawl_delay=0.05) as running:
        yield running


def settings(site: TestSite, **overrides: object) -> CrawlSettings:
    values: dict[str, object] = {
        "start_url": site.url + "/",
        "user_agent": "contentplatform-crawler/test",
        "robots_token": "contentplatform-crawler",
        "requests_per_second": 100.0,
        "max_depth": 5,
    }
    values.update(overrides)
    return CrawlSettings(**values)  # type: ignore[arg-type]


def run(site: TestSite, policy: Policy = LOCAL, **overrides: object) -> CrawlResult:
    return asyncio.run(crawl(settings(site, **overrides), policy))


def by_path(result: CrawlResult, site: TestSite) -> dict[str, PageRecord]:
    return {page.url.removeprefix(site.url): page for page in result.pages}


def test_crawl_of_the_site(site: TestSite) -> None:
    result = run(site)
    pages = by_path(result, site)
    # One page, one row: tracking parameters and fragments collapse, the redirect lands on
    # /docs/b once; robots.txt keeps /private/ out; the sitemap-only page is found (index with
    # a gzip child).
    assert len(pages) == len(result.pages)
    assert {"/", "/docs/", "/docs/a", "/docs/b", "/docs/deep/1", "/docs/deep/2"} <= set(pages)
    assert "/only-in-sitemap" in pages and "/private/secret" not in pages
    assert "/moved" not in pages and pages["/docs/b"].status == 200
    # /moved redirects to /docs/b, already seen (the sitemap): that hop is not followed.
    assert site.paths().count("/docs/a") == 1 and site.paths().count("/docs/b") == 1
    # Not even through /to-private, which redirects there.
    assert "/private/secret" not in site.paths() and "/to-private" not in pages
    assert "/sitemaps/pages.xml.gz" in site.paths()
    assert any(url.endswith("/private/secret") for url in result.skipped_by_robots)

    a = pages["/docs/a"]
    assert a.title == "A" and a.canonical_url == site.url + "/docs/a"
    assert a.hreflang == {"de": site.url + "/de/docs/a"}
    assert a.json_ld == [{"@type": "Article", "name": "A"}]
    assert ("h2", "Part") in a.headings and a.word_count > 10 and a.content_hash
    assert pages["/noindex-meta"].noindex and pages["/noindex-header"].noindex
    assert not pages["/docs/b"].noindex

    assert pages["/big"].error == "too_large"
    assert pages["/slow"].error == "timeout"
    assert pages["/loop-a"].error == "redirect_loop"

    broken = {link.target_url.removeprefix(site.url): link for link in result.broken_links}
    assert set(broken) == {"/missing", "/flaky", "/big", "/slow", "/loop-a"}
    assert broken["/missing"].status == 404 and broken["/flaky"].status == 500
    assert broken["/missing"].sources[0] == (site.url + "/", "Missing")
    # External links are not checked unless asked (and the outside one is never reached).
    assert all(link.internal for link in result.broken_links)

    # The 500 recovers: a second crawl finds /flaky fine.
    again = run(site, include=(r"^/$", r"^/flaky"), sitemap_mode="skip")
    assert by_path(again, site)["/flaky"].status == 200


def test_the_site_files_are_handed_over_before_the_pages(site: TestSite) -> None:
    told: list[SiteFacts] = []
    first_page: list[int] = []

    async def on_site(facts: SiteFacts) -> None:
        told.append(facts)

    async def on_page(page: PageRecord) -> None:
        first_page.append(len(told))

    asyncio.run(crawl(settings(site, max_depth=1), LOCAL, on_site=on_site, on_page=on_page))
    [facts] = told
    assert first_page[0] == 1  # told before the first page
    robots = facts.robots_txt
    assert robots.status == 200 and robots.body is not None and "Disallow" in robots.body
    assert robots.declared_sitemaps == [site.url + "/sitemap_index.xml"]
    assert facts.llms_txt is not None and facts.llms_txt.status == 404
    assert facts.llms_txt.body is None
    assert facts.sitemaps is not None
    assert facts.sitemaps.listed[site.url + "/only-in-sitemap"] == [
        site.url + "/sitemaps/pages.xml.gz",
        site.url + "/sitemap_index.xml",
    ]


def test_robots_can_be_ignored(site: TestSite) -> None:
    result = run(site, respect_robots=False, max_depth=1, exclude=(r"^/(big|slow)",))
    assert "/private/secret" in by_path(result, site)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_crawl_delay_is_honoured(concurrency: int) -> None:
    with TestSite(crawl_delay=0.2) as site:
        run(
            site,
            max_pages=5,
            sitemap_mode="skip",
            exclude=(r"^/(big|slow)",),
            concurrency=concurrency,
        )
    arrivals = [at for _, at in site.requests]
    # Crawl-delay 0.2 s over a requested 100/s (0.01 s) and any concurrency: the site sees one
    # request at a time, each arriving at least 0.2 s after the previous one (it arrived before
    # its answer left, and the next starts 0.2 s after that answer came back).
    assert len(arrivals) >= 6
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    assert min(gaps) >= 0.2, gaps
    assert site.most_at_once == 1


def test_max_pages_and_depth(site: TestSite) -> None:
    result = run(site, max_pages=3, sitemap_mode="skip")
    assert len(result.pages) == 3 and result.truncated
    only_start = run(site, max_depth=0, sitemap_mode="skip")
    assert [page.url for page in only_start.pages] == [site.url + "/"]


def test_cancel_then_resume_from_the_frontier(site: TestSite) -> None:
    seen: list[PageRecord] = []

    async def keep(page: PageRecord) -> None:
        seen.append(page)

    options = settings(site, exclude=(r"^/(big|slow)",))
    first = asyncio.run(crawl(options, LOCAL, on_page=keep, cancelled=lambda: len(seen) >= 3))
    assert first.cancelled and len(first.pages) == 3
    stored = {page.url for page in first.pages}
    fetched_before = len(site.requests)
    resumed = asyncio.run(
        crawl(options, LOCAL, frontier=Frontier.from_json(first.frontier.to_json()))
    )
    assert not resumed.cancelled and resumed.pages
    # Nothing already stored is fetched again.
    assert not stored & {page.url for page in resumed.pages}
    assert len(site.requests) > fetched_before


def test_ssrf_guard_when_loopback_is_not_allowed(site: TestSite, network: NetworkGuard) -> None:
    policy = Policy(allow_http=True, timeout=1.0, connect_timeout=1.0)
    # robots.txt itself is refused: the site's wishes are unknown, nothing is crawled.
    result = run(site, policy)
    assert result.pages == [] and result.robots_retry
    # Without robots.txt, the page itself is refused.
    result = run(site, policy, respect_robots=False, sitemap_mode="skip")
    assert site.requests == []  # nothing reached the loopback site
    assert [page.error for page in result.pages] == ["refused"]
    private = asyncio.run(
        crawl(
            settings(
                site, start_url="http://192.168.1.10/", sitemap_mode="skip", respect_robots=False
            ),
            policy,
        )
    )
    assert [page.error for page in private.pages] == ["refused"]
    assert network.refused == [] and network.here == []


@pytest.mark.parametrize("concurrency", [1, 2])
def test_concurrency_is_how_many_fetches_are_in_flight(concurrency: int) -> None:
    # Each page takes 0.15 s to answer, far longer than the 0.001 s between two starts; no
    # Crawl-delay, which would allow one request at a time.
    with TestSite(crawl_delay=None, page_delay=0.15) as site:
        result = run(
            site,
            include=(r"^/$", r"^/docs/"),
            sitemap_mode="skip",
            requests_per_second=1000.0,
            concurrency=concurrency,
        )
    assert {"/", "/docs/", "/docs/a", "/docs/b", "/docs/deep/1"} <= set(by_path(result, site))
    assert site.most_at_once == concurrency


def test_cancel_mid_crawl_then_resume_fetches_exactly_the_rest() -> None:
    with TestSite(page_delay=0.05) as site:
        options = settings(site, exclude=(r"^/(big|slow)",), concurrency=2)
        # PATIENT: a loaded machine must not time out the sitemap in one of the three crawls.
        every = {page.url for page in asyncio.run(crawl(options, PATIENT)).pages}
        stored: list[str] = []

        async def keep(page: PageRecord) -> None:
            stored.append(page.url)

        first = asyncio.run(
            crawl(options, PATIENT, on_page=keep, cancelled=lambda: len(stored) >= 4)
        )
        # The other worker's page, fetched meanwhile, is not handed over after the cancel.
        assert first.cancelled and len(stored) == 4 == len(first.pages)
        front = first.frontier
        queued = {url for url, _ in front.queue}
        assert queued | front.done == set(front.seen) and not queued & front.done
        resumed = asyncio.run(crawl(options, PATIENT, frontier=Frontier.from_json(front.to_json())))
    again = [page.url for page in resumed.pages]
    assert len(again) == len(set(again)) and not set(again) & set(stored)
    assert set(stored) | set(again) == every


def test_cancel_drops_a_fetch_in_flight_and_queues_its_url(site: TestSite) -> None:
    options = settings(site, include=(r"^/$", r"^/slow$"), sitemap_mode="skip")
    started = time.monotonic()
    result = asyncio.run(crawl(options, PATIENT, cancelled=lambda: "/slow" in site.paths()))
    # Stopped within the cancel poll, not when the slow page (3 s) answered.
    assert time.monotonic() - started < 2
    assert result.cancelled and [page.url for page in result.pages] == [site.url + "/"]
    assert list(result.frontier.queue) == [(site.url + "/slow", 1)]


def test_a_cancelled_crawl_task_queues_what_it_was_fetching(site: TestSite) -> None:
    options = settings(site, include=(r"^/$", r"^/slow$", r"^/docs/$"), sitemap_mode="skip")
    front = Frontier(options.max_pages, options.max_depth)

    async def main() -> None:
        task = asyncio.create_task(crawl(options, PATIENT, frontier=front))
        for _ in range(500):  # at most 5 s
            if "/slow" in site.paths():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    queued = {url for url, _ in front.queue}
    assert site.url + "/slow" in queued and site.url + "/" in front.done
    assert queued | front.done == set(front.seen)


def test_a_redirect_hop_is_held_to_robots_and_the_patterns(site: TestSite) -> None:
    # /to-private redirects to /private/secret, which robots.txt disallows: never requested.
    result = run(site, include=(r"^/$", r"^/to-private$"), sitemap_mode="skip")
    assert "/to-private" in site.paths() and "/private/secret" not in site.paths()
    assert set(by_path(result, site)) == {"/"}
    assert site.url + "/private/secret" in result.skipped_by_robots
    # /moved redirects to /docs/b, which the patterns leave out.
    result = run(site, include=(r"^/$", r"^/moved$"), sitemap_mode="skip")
    assert "/moved" in site.paths() and "/docs/b" not in site.paths()
    assert set(by_path(result, site)) == {"/"}
    # The start URL's own redirect is held to robots.txt only, as the start URL is.
    result = run(site, start_url=site.url + "/moved", include=(r"^/nothing",), max_depth=0)
    assert set(by_path(result, site)) == {"/docs/b"}


def test_outbound_links_are_checked_when_asked() -> None:
    with TestSite() as elsewhere, TestSite(external=elsewhere.url) as site:
        checked = run(site, include=(r"^/$",), sitemap_mode="skip", check_external_links=True)
        assert sorted(elsewhere.methods) == [("HEAD", "/docs/a"), ("HEAD", "/gone")]
        unchecked = run(site, include=(r"^/$",), sitemap_mode="skip")
        assert len(elsewhere.methods) == 2
    outbound = [link for link in checked.broken_links if not link.internal]
    # The 404 is broken, the 200 is not.
    assert [(link.target_url, link.status, link.error) for link in outbound] == [
        (elsewhere.url + "/gone", 404, None)
    ]
    assert outbound[0].sources == [(site.url + "/", "Gone elsewhere")]
    assert all(link.internal for link in unchecked.broken_links)


def test_an_outbound_link_is_asked_again_with_get_when_head_is_not_served() -> None:
    with StubServer() as elsewhere, TestSite(external=elsewhere.url) as site:
        # The stub serves GET only: HEAD is answered 501 before it sees the request.
        elsewhere.route("GET", "/docs/a", lambda *_: (200, {}, {"ok": True}))
        checked = run(site, include=(r"^/$",), sitemap_mode="skip", check_external_links=True)
        asked = [(request["method"], request["path"]) for request in elsewhere.requests]
    assert sorted(asked) == [("GET", "/docs/a"), ("GET", "/gone")]
    outbound = [link for link in checked.broken_links if not link.internal]
    assert [(link.target_url, link.status) for link in outbound] == [(elsewhere.url + "/gone", 404)]


def test_an_error_handing_a_page_over_stops_the_crawl_as_itself(site: TestSite) -> None:
    # The workflow stops a crawl by raising from on_page: that error comes out as it is (no
    # ExceptionGroup), the other worker stopped, and the unstored URLs stay queued.
    class Stop(Exception):
        pass

    handed: list[str] = []

    async def refuse_the_third(page: PageRecord) -> None:
        if len(handed) == 2:
            raise Stop
        handed.append(page.url)

    front = Frontier(200, 5)
    options = settings(site, exclude=(r"^/(big|slow)",), concurrency=2)
    with pytest.raises(Stop):
        asyncio.run(crawl(options, LOCAL, frontier=front, on_page=refuse_the_third))
    queued = {url for url, _ in front.queue}
    assert len(handed) == 2 and queued | front.done == set(front.seen)
    assert not set(handed) & queued
