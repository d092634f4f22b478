"""One site crawled in memory: robots.txt, sitemaps, then breadth-first from the start URL.
No database here: each page goes to `on_page` (the durable workflow stores it there), and the
frontier can be given back to resume a crawl."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan import pages, robots, sitemaps, urls
from contentplatform.website_scan.fetching import Fetcher
from contentplatform.website_scan.frontier import Frontier


@dataclass(frozen=True)
class CrawlSettings:
    start_url: str
    user_agent: str
    robots_token: str  # the name robots.txt addresses us by
    max_pages: int = 200
    max_depth: int = 3
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_robots: bool = True
    requests_per_second: float = 2.0
    concurrency: int = 2
    sitemap_mode: str = "include"  # include | skip | only
    allow_subdomains: bool = False
    check_external_links: bool = False


@dataclass
class BrokenLink:
    target_url: str
    status: int | None
    error: str | None
    internal: bool
    sources: list[tuple[str, str]] = field(default_factory=list)  # (page url, anchor text)


@dataclass
class CrawlResult:
    pages: list[pages.PageRecord]
    broken_links: list[BrokenLink]
    frontier: Frontier
    skipped_by_robots: set[str]
    cancelled: bool = False
    robots_retry: bool = False  # robots.txt answered 5xx or not at all: try again next run

    @property
    def truncated(self) -> bool:
        return self.frontier.truncated


PageCallback = Callable[[pages.PageRecord], Awaitable[None]]


async def crawl(
    settings: CrawlSettings,
    policy: Policy,
    *,
    frontier: Frontier | None = None,
    on_page: PageCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    fetcher: Fetcher | None = None,
) -> CrawlResult:
    """Crawl one site. `cancelled()` is asked before each page: when true, the crawl stops and
    what was fetched is returned (a partial snapshot). A given `frontier` resumes a crawl."""
    start = urls.normalize(settings.start_url)
    if start is None:
        raise ValueError("the start URL is not an http(s) URL")
    own = fetcher is None
    fetcher = fetcher or Fetcher(
        policy,
        user_agent=settings.user_agent,
        interval=1 / settings.requests_per_second,
        concurrency=settings.concurrency,
    )
    try:
        return await _crawl(settings, start, fetcher, frontier, on_page, cancelled)
    finally:
        if own:
            await fetcher.client.aclose()


async def _crawl(
    settings: CrawlSettings,
    start: str,
    fetcher: Fetcher,
    frontier: Frontier | None,
    on_page: PageCallback | None,
    cancelled: Callable[[], bool],
) -> CrawlResult:
    origin = f"{urlsplit(start).scheme}://{urlsplit(start).netloc}"
    rules = await robots.load(fetcher, origin)
    delay = rules.crawl_delay(settings.robots_token)
    if delay:
        fetcher.slow_down(urls.host_of(start), delay)
    filters = urls.PathFilter(settings.include, settings.exclude)
    front = frontier or Frontier(settings.max_pages, settings.max_depth)
    result = CrawlResult([], [], front, set())
    result.robots_retry = rules.retry

    def allowed(url: str) -> bool:
        if settings.respect_robots and not rules.allowed(url, settings.robots_token):
            result.skipped_by_robots.add(url)
            return False
        return filters.allows(url)

    if frontier is None:
        # The start URL is fetched whatever the path patterns say, but not against robots.txt.
        robots_ok = not settings.respect_robots or rules.allowed(start, settings.robots_token)
        if settings.sitemap_mode != "only" and robots_ok:
            front.add(start, 0)
        elif not robots_ok:
            result.skipped_by_robots.add(start)
        # robots.txt failing (5xx, unreachable) stops everything, sitemaps included.
        if settings.sitemap_mode != "skip" and not (settings.respect_robots and rules.disallow_all):
            found = await sitemaps.discover(
                fetcher, start, rules.sitemaps, limit=settings.max_pages
            )
            for url in found.urls:
                # Sitemap URLs count as linked from the start page (depth 1).
                if urls.same_site(
                    url, start, allow_subdomains=settings.allow_subdomains
                ) and allowed(url):
                    front.add(url, min(1, settings.max_depth))

    broken: dict[str, BrokenLink] = {}
    statuses: dict[str, tuple[int | None, str | None]] = {}
    external: dict[str, list[tuple[str, str]]] = {}
    while (item := front.pop()) is not None:
        if cancelled():
            front.queue.appendleft(item)
            result.cancelled = True
            break
        url, depth = item
        fetched = await fetcher.fetch(url)
        statuses[url] = (fetched.status, fetched.error)
        final = urls.normalize(fetched.final_url) or url
        landed = urls.same_site(final, start, allow_subdomains=settings.allow_subdomains)
        if final != url and fetched.error is None and landed:
            # A redirect: the page is stored under where it landed, once (one page, one row);
            # a failed one (a loop) stays under the URL that was linked.
            front.finish(url)
            if final in front.seen:
                continue
            front.seen[final] = depth
            url = final
        page = pages.record(fetched, depth, start, allow_subdomains=settings.allow_subdomains)
        page.url = url
        result.pages.append(page)
        if on_page is not None:
            await on_page(page)
        front.finish(url)
        for link in page.links:
            if link.internal:
                if (
                    depth + 1 <= front.max_depth
                    and link.url not in front.seen
                    and allowed(link.url)
                ):
                    front.add(link.url, depth + 1)
                broken.setdefault(link.url, BrokenLink(link.url, None, None, True)).sources.append(
                    (url, link.text)
                )
            else:
                external.setdefault(link.url, []).append((url, link.text))

    # Internal links broken: their target was fetched in this crawl and failed.
    found_broken = []
    for target, entry in broken.items():
        status, error = statuses.get(target, (None, None))
        if target in statuses and (error is not None or (status is not None and status >= 400)):
            entry.status, entry.error = status, error
            found_broken.append(entry)
    if settings.check_external_links and not result.cancelled:
        for target, sources in external.items():
            if cancelled():
                break
            fetched = await fetcher.fetch(target, method="HEAD")
            if fetched.broken:
                found_broken.append(
                    BrokenLink(target, fetched.status, fetched.error, False, sources)
                )
    result.broken_links = found_broken
    return result
