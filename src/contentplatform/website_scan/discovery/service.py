"""websiteScan.discoverSitemap: the URLs a site says it has, read without crawling it (a map).

robots.txt first (its Sitemap lines, its Disallow rules counted), then the sitemaps it names and
/sitemap.xml, indexes followed to depth 3, gzip read (sitemaps.py, as a crawl reads them); when
they give no URL at all, the links of the start page. Nothing is stored.

It answers within DISCOVERY_SECONDS whatever the site does: when time runs out, what was found
is answered and the sitemaps not read to the end say `timeout`. It asks as politely as a crawl:
our User-Agent, the request rate of the config (REQUESTS_PER_SECOND without one; a person is
waiting for a handful of requests), robots.txt's Crawl-delay as a crawl does, and nothing at all
after robots.txt when that cannot be read (5xx, unreachable), as a crawl would not. The URL goes
through the outbound guard first, as a config's start URL (service.checked_start_url), and the
fetcher checks every request and redirect hop again.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.kit.errors import FieldError
from contentplatform.kit.outbound import Policy
from contentplatform.website_scan import service
from contentplatform.website_scan.crawling import pages, robots, sitemaps, urls
from contentplatform.website_scan.crawling.fetching import Fetcher
from contentplatform.website_scan.discovery import schemas
from contentplatform.website_scan.errors import StartUrlRefused
from contentplatform.website_scan.schemas import ROBOTS_TOKEN, USER_AGENT

DISCOVERY_SECONDS = 30.0
REQUESTS_PER_SECOND = 5.0
# URLs read at most (one sitemap file may list 50,000): `total` stops counting there.
MAX_URLS = 50_000


@dataclass
class SiteUrls:
    """What discovery found; filled as it goes, so a timeout keeps what came before it."""

    robots: robots.Robots | None = None  # None: time ran out before robots.txt answered
    sitemap: sitemaps.SiteMap = field(default_factory=sitemaps.SiteMap)
    links: list[str] = field(default_factory=list)  # of the start page, when no sitemap gave any
    timed_out: bool = False


async def discover(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.DiscoverSitemapInput,
) -> schemas.SitemapDiscovery:
    """The answer of websiteScan.discoverSitemap (see the module docstring)."""
    rate, respect_robots, field_name = REQUESTS_PER_SECOND, True, "url"
    if data.config_id is not None:
        config = await service.require(session, tenant_id, data.config_id)
        url, field_name = config.start_url, "configId"
        rate, respect_robots = config.requests_per_second, config.respect_robots_txt
    else:
        url = data.url or ""  # the input holds one of them
    # Nothing else is read or written: the transaction ends before the site is asked, so no
    # database connection is held while it answers (up to DISCOVERY_SECONDS).
    await session.rollback()
    start = await _checked(settings, url, field_name)
    found = await map_site(
        start,
        service.policy(settings),
        include_subdomains=data.include_subdomains,
        respect_robots=respect_robots,
        requests_per_second=rate,
    )
    return answer(found, search=data.search, limit=data.limit)


async def _checked(settings: Settings, url: str, field_name: str) -> str:
    """`url` normalized when the outbound guard allows it (StartUrlRefused naming the input's
    field otherwise); nothing is sent to it here."""
    try:
        return (await service.checked_start_url(settings, url)).url
    except StartUrlRefused as refused:
        reason = refused.errors[0].message if refused.errors else refused.detail
        raise StartUrlRefused(
            f"The URL cannot be read: {reason}", errors=[FieldError(field_name, reason)]
        ) from None


async def map_site(
    start: str,
    policy: Policy,
    *,
    include_subdomains: bool = False,
    respect_robots: bool = True,
    requests_per_second: float = REQUESTS_PER_SECOND,
    seconds: float = DISCOVERY_SECONDS,
) -> SiteUrls:
    """robots.txt, the sitemaps and, when they give nothing, the start page's links of the site
    of `start` (a normalized URL), within `seconds`."""
    found = SiteUrls()
    # One retry of a 429/503 (after its Retry-After, else a second), not a crawl's two: a person
    # is waiting.
    async with Fetcher(
        policy,
        user_agent=USER_AGENT,
        interval=1 / requests_per_second,
        concurrency=2,
        retries=1,
    ) as fetcher:
        try:
            async with asyncio.timeout(seconds):
                await _read(found, fetcher, start, include_subdomains, respect_robots)
        except TimeoutError:
            found.timed_out = True
            found.sitemap.give_up("timeout")
    return found


async def _read(
    found: SiteUrls, fetcher: Fetcher, start: str, include_subdomains: bool, respect_robots: bool
) -> None:
    parts = urlsplit(start)
    found.robots = rules = await robots.load(fetcher, f"{parts.scheme}://{parts.netloc}")
    if respect_robots and rules.disallow_all:
        return  # the site's wishes are unknown: nothing more is asked
    delay = rules.crawl_delay(ROBOTS_TOKEN)
    if delay:
        fetcher.slow_down(urls.host_of(start), delay)
    await sitemaps.discover(
        fetcher,
        start,
        rules.sitemaps,
        limit=MAX_URLS,
        allow_subdomains=include_subdomains,
        into=found.sitemap,
    )
    if found.sitemap.urls:
        return
    if respect_robots and not rules.allowed(start, ROBOTS_TOKEN):
        return
    fetched = await fetcher.fetch(start)
    links = await pages.off_loop(
        pages.links_of, fetched, start, allow_subdomains=include_subdomains
    )
    found.links = [link.url for link in links if link.internal][:MAX_URLS]


def answer(found: SiteUrls, *, search: str | None, limit: int) -> schemas.SitemapDiscovery:
    """The operation's answer: URLs matching `search` (in the URL as normalized or as read,
    case-insensitive), at most `limit` of them, `total` counting all."""
    listed = [
        (url, lastmod, "robots" if url in found.sitemap.via_robots else "sitemap")
        for url, lastmod in found.sitemap.urls.items()
    ]
    listed += [(url, None, "link") for url in found.links]
    rules = found.robots or robots.Robots(problem="timeout")
    if search:
        needle = search.casefold()
        listed = [
            entry
            for entry in listed
            if needle in entry[0].casefold() or needle in unquote(entry[0]).casefold()
        ]
    return schemas.SitemapDiscovery.model_validate(
        {
            "robots_txt": {
                "found": rules.found,
                "sitemaps_declared": rules.sitemaps,
                "disallow_count": rules.disallow_count,
                "error": rules.problem,
            },
            "sitemaps": [
                {
                    "url": report.url,
                    "type": report.type,
                    "url_count": report.url_count,
                    "error": report.error,
                }
                for report in found.sitemap.sitemaps
            ],
            "urls": [
                {"url": url, "lastmod": lastmod, "source": source}
                for url, lastmod, source in listed[:limit]
            ],
            "total": len(listed),
        }
    )
