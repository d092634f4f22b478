"""The crawler's parts one by one (issue 21): URL normalization and patterns, robots.txt,
sitemaps, page records, the frontier's JSON, the fetcher's politeness, redirect hop checks and
SSRF refusals."""

from __future__ import annotations

import asyncio
import functools
import gzip
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from defusedxml.common import DefusedXmlException

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan.crawling import robots, sitemaps, urls
from contentplatform.website_scan.crawling.crawler import CrawlResult, CrawlSettings, crawl
from contentplatform.website_scan.crawling.fetching import Fetched, Fetcher
from contentplatform.website_scan.crawling.frontier import Frontier
from contentplatform.website_scan.crawling.pages import record
from tests.support.network import NetworkGuard, no_outside_connections
from tests.support.servers import StubServer

LOCAL = Policy(allow_http=True, allow_loopback=True, timeout=5.0, connect_timeout=5.0)
UA = "contentplatform-crawler/test"


def run(test: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """An async test run on a fresh event loop (the suite has no async plugin)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))  # type: ignore[arg-type]

    return wrapper


@pytest.fixture(autouse=True)
def network() -> Iterator[NetworkGuard]:
    with no_outside_connections() as guard:
        yield guard


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("HTTP://Example.COM:80/a/b/?utm_source=x&b=2&a=1#frag", "http://example.com/a/b/?a=1&b=2"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com/a?gclid=1&fbclid=2&msclkid=3", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        # Trailing slashes are kept: /a and /a/ may be different pages.
        ("https://example.com/a/", "https://example.com/a/"),
    ],
)
def test_normalize(given: str, normal: str) -> None:
    assert urls.normalize(given) == normal


def test_normalize_refuses_what_is_no_page() -> None:
    for url in ("mailto:a@b.c", "javascript:void(0)", "ftp://x/y", "http://", "x" * 3000):
        assert urls.normalize(url, "https://example.com/") is None
    assert urls.normalize("../c?x=1", "https://example.com/a/b/") == "https://example.com/a/c?x=1"


def test_same_site() -> None:
    assert urls.same_site("https://example.com/x", "https://EXAMPLE.com/")
    assert not urls.same_site("https://blog.example.com/x", "https://example.com/")
    assert urls.same_site(
        "https://blog.example.com/x", "https://example.com/", allow_subdomains=True
    )
    assert not urls.same_site("https://example.com:8443/x", "https://example.com/")


def test_path_filter_exclude_wins_and_slow_patterns_are_cut_off() -> None:
    rules = urls.PathFilter(include=[r"^/blog/"], exclude=[r"/drafts/"])
    assert rules.allows("https://e.com/blog/post")
    assert not rules.allows("https://e.com/blog/drafts/x")
    assert not rules.allows("https://e.com/about")
    catastrophic = urls.PathFilter(include=[r"^/(a+)+$"])
    started = time.monotonic()
    assert not catastrophic.allows("https://e.com/" + "a" * 40 + "!")
    assert time.monotonic() - started < 2


def test_robots_parse() -> None:
    rules = robots.parse(
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: https://e.com/s.xml\n"
    )
    assert rules.allowed("https://e.com/a", UA)
    assert not rules.allowed("https://e.com/private/x", UA)
    assert rules.crawl_delay(UA) == 2.0
    assert rules.sitemaps == ["https://e.com/s.xml"]
    # Rules that disallow something, in every group; an empty Disallow allows all.
    assert rules.disallow_count == 1
    text = "User-agent: a\nDisallow: /x\nDisallow:\n\nUser-agent: *\ndisallow : /y # z\n"
    assert robots.parse(text).disallow_count == 2


@pytest.mark.parametrize(("status", "allowed", "retry"), [(404, True, False), (500, False, True)])
@run
async def test_robots_missing_allows_all_and_5xx_disallows_all(
    status: int, allowed: bool, retry: bool
) -> None:
    with StubServer() as stub:
        stub.route("GET", "/robots.txt", lambda *_: (status, {}, b"nope"))
        async with Fetcher(LOCAL, user_agent=UA, interval=0, retries=0) as fetcher:
            rules = await robots.load(fetcher, stub.url)
    assert rules.allowed(stub.url + "/anything", UA) is allowed
    assert rules.retry is retry
    assert rules.problem == (None if allowed else "HTTP 500")


def test_sitemap_parse_gzip_and_refuse_entities() -> None:
    xml = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://e.com/a'
        b"</loc><lastmod>2026-01-01</lastmod></url></urlset>"
    )
    assert sitemaps.parse(gzip.compress(xml)) == ("urlset", [("https://e.com/a", "2026-01-01")])
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>&x;</loc></url></urlset>"
    )
    with pytest.raises(DefusedXmlException):
        sitemaps.parse(xxe)


def test_sitemaps_given_up_on_keep_what_they_found() -> None:
    found = sitemaps.SiteMap()
    found.urls["https://e.com/a"] = None
    found.sitemaps.append(sitemaps.SitemapReport("https://e.com/done.xml", "urlset", 1))
    found.sitemaps.append(sitemaps.SitemapReport("https://e.com/reading.xml"))
    found.pending.append(("https://e.com/queued.xml", 1, True))
    found.give_up("timeout")
    assert [(report.url, report.error) for report in found.sitemaps] == [
        ("https://e.com/done.xml", None),
        ("https://e.com/reading.xml", "timeout"),
        ("https://e.com/queued.xml", "timeout"),
    ]
    assert found.urls == {"https://e.com/a": None} and found.pending == []


def test_page_record_holds_what_an_audit_needs() -> None:
    html = b"""<html lang="de"><head><title> Hello  World </title>
    <meta name="description" content="Desc"><meta name="robots" content="noindex">
    <link rel="canonical" href="/canon"><link rel="alternate" hreflang="en" href="/en">
    <script type="application/ld+json">{"@type": "Thing"}</script></head>
    <body><h1>One</h1><h3>Three</h3><h2>Two</h2>
    <p>Some main text with several words in it, long enough for the extractor to keep it.</p>
    <a href="/x?utm_medium=y">X</a> <a href="https://other.example/" rel="nofollow">Out</a>
    </body></html>"""
    fetched = Fetched(
        url="https://e.com/p",
        final_url="https://e.com/p",
        status=200,
        headers={"content-type": "text/html", "x-robots-tag": "nofollow"},
        body=html,
    )
    page = record(fetched, 1, "https://e.com/")
    assert page.title == "Hello World"
    assert page.meta_description == "Desc"
    assert page.noindex and page.x_robots_tag == "nofollow"
    assert page.canonical_url == "https://e.com/canon"
    assert page.hreflang == {"en": "https://e.com/en"}
    assert page.json_ld == [{"@type": "Thing"}]
    assert page.headings == [("h1", "One"), ("h3", "Three"), ("h2", "Two")]
    assert page.language == "de"
    assert [(link.url, link.internal, link.rel) for link in page.links] == [
        ("https://e.com/x", True, ""),
        ("https://other.example/", False, "nofollow"),
    ]
    assert page.word_count > 5 and page.content_hash and len(page.content_hash) == 64


def test_page_record_holds_the_audit_facts() -> None:
    html = b"""<html><head><title>T</title>
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta property="og:title" content="Og title"><meta property="og:image" content="/i.png">
    <meta name="twitter:card" content="summary">
    <link rel="stylesheet" href="http://cdn.example/a.css"></head>
    <body><img src="/a.png" alt="A chair"><img src="/b.png" alt=""><img src="/c.png">
    <img src="http://cdn.example/d.png" alt="D"><script src="http://cdn.example/x.js"></script>
    <script src="https://cdn.example/y.js"></script></body></html>"""
    fetched = Fetched(
        url="https://e.com/p",
        final_url="https://e.com/p",
        status=200,
        headers={
            "content-type": "text/html",
            "Strict-Transport-Security": "max-age=63072000",
            "X-Frame-Options": "DENY",
        },
        body=html,
        elapsed_ms=120,
        first_byte_ms=40,
    )
    page = record(fetched, 1, "https://e.com/")
    assert (page.ttfb_ms, page.load_ms) == (40, 120)
    facts = page.audit
    assert facts is not None
    assert [(image.src, image.alt) for image in facts.images] == [
        ("https://e.com/a.png", "A chair"),
        ("https://e.com/b.png", ""),
        ("https://e.com/c.png", None),
        ("http://cdn.example/d.png", "D"),
    ]
    assert facts.open_graph == {"og:title": "Og title", "og:image": "/i.png"}
    assert facts.twitter == {"twitter:card": "summary"}
    assert facts.viewport == "width=device-width, initial-scale=1"
    assert facts.security_headers == {
        "strict-transport-security": "max-age=63072000",
        "x-frame-options": "DENY",
    }
    assert facts.mixed_content == [
        "http://cdn.example/d.png",
        "http://cdn.example/x.js",
        "http://cdn.example/a.css",
    ]
    # On an http page nothing is mixed; a page that never answered has no facts at all.
    plain = record(
        Fetched(
            url="http://e.com/p",
            final_url="http://e.com/p",
            status=200,
            headers={"content-type": "text/html"},
            body=html,
        ),
        1,
        "http://e.com/",
    )
    assert plain.audit is not None and plain.audit.mixed_content == []
    failed = record(Fetched(url="https://e.com/q", final_url="https://e.com/q", error="dns"), 1, "")
    assert failed.audit is None and failed.ttfb_ms is None


def test_frontier_round_trips_through_json_and_requeues_in_flight_urls() -> None:
    front = Frontier(max_pages=3, max_depth=2)
    assert front.add("https://e.com/", 0)
    assert not front.add("https://e.com/", 0)  # seen
    assert not front.add("https://e.com/deep", 3)  # too deep
    front.add("https://e.com/a", 1)
    front.add("https://e.com/b", 1)
    assert not front.add("https://e.com/c", 1) and front.truncated  # max_pages
    assert front.pop() == ("https://e.com/", 0)
    front.finish("https://e.com/")
    assert front.pop() == ("https://e.com/a", 1)  # in flight when the "crash" came
    again = Frontier.from_json(front.to_json())
    assert list(again.queue) == [("https://e.com/a", 1), ("https://e.com/b", 1)]
    assert again.done == {"https://e.com/"} and again.truncated
    # The same in memory, for a crawl stopped with fetches in flight.
    front.requeue_unfinished()
    assert list(front.queue) == list(again.queue)
    with pytest.raises(ValueError):
        Frontier(max_pages=5001)


@run
async def test_fetcher_honours_retry_after() -> None:
    calls: list[float] = []

    def busy(*_: object) -> tuple[int, dict[str, str], bytes]:
        calls.append(time.monotonic())
        return (429, {"retry-after": "0.3"}, b"") if len(calls) == 1 else (200, {}, b"ok")

    with StubServer() as stub:
        stub.route("GET", "/p", busy)
        async with Fetcher(LOCAL, user_agent=UA, interval=0) as fetcher:
            fetched = await fetcher.fetch(stub.url + "/p")
    assert fetched.status == 200 and len(calls) == 2
    assert calls[1] - calls[0] >= 0.25
    assert {k.lower(): v for k, v in stub.requests[0]["headers"].items()}["user-agent"] == UA


@run
async def test_fetcher_follows_a_redirect_only_where_the_check_allows() -> None:
    with StubServer() as stub:
        stub.route("GET", "/a", lambda *_: (301, {"location": "/b"}, b""))
        stub.route("GET", "/b", lambda *_: (302, {"location": "/private/c"}, b""))
        asked: list[str] = []

        def follow(target: str) -> bool:
            asked.append(target)
            return "/private/" not in target

        async with Fetcher(LOCAL, user_agent=UA, interval=0) as fetcher:
            fetched = await fetcher.fetch(stub.url + "/a", follow=follow)
        paths = [request["path"] for request in stub.requests]
    assert asked == [stub.url + "/b", stub.url + "/private/c"]
    assert paths == ["/a", "/b"]  # the refused hop is never requested
    assert (fetched.status, fetched.final_url, fetched.error) == (302, stub.url + "/b", None)
    assert fetched.redirect_chain == [stub.url + "/a"]
    assert fetched.refused_redirect == stub.url + "/private/c" and not fetched.broken


@run
async def test_fetcher_refuses_private_addresses_before_sending(network: NetworkGuard) -> None:
    # Loopback not allowed here: neither a private address nor loopback is reached.
    policy = Policy(allow_http=True, timeout=1.0, connect_timeout=1.0)
    async with Fetcher(policy, user_agent=UA, interval=0) as fetcher:
        private = await fetcher.fetch("http://10.0.0.1/")
        loop = await fetcher.fetch("http://127.0.0.1:9/")
    assert (private.error, loop.error) == ("refused", "refused")
    assert "private" in (private.message or "")
    assert network.here == [] and network.refused == []


def test_a_site_whose_robots_txt_fails_is_not_crawled() -> None:
    async def main() -> CrawlResult:
        with StubServer() as stub:
            stub.route("GET", "/robots.txt", lambda *_: (503, {}, b"down"))
            stub.route("GET", "/", lambda *_: (200, {"content-type": "text/html"}, b"<p>hi</p>"))
            options = CrawlSettings(stub.url + "/", UA, "contentplatform-crawler")
            async with Fetcher(LOCAL, user_agent=UA, interval=0, retries=0) as fetcher:
                result = await crawl(options, LOCAL, fetcher=fetcher)
            assert [request["path"] for request in stub.requests] == ["/robots.txt"]
            return result

    result = asyncio.run(main())
    assert result.pages == [] and result.robots_retry
