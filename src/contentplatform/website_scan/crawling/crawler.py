"""One site crawled in memory: robots.txt, sitemaps, then breadth-first from the start URL.
No database here: each page goes to `on_page` (the durable workflow stores it there), and the
frontier can be given back to resume a crawl.

Up to `concurrency` pages are fetched at once: as many workers take URLs from the frontier in its
(breadth-first) order, while the Fetcher holds each host to its limits (1-2 requests in flight
and the request interval between two starts; under robots.txt's Crawl-delay, one at a time and
the delay between one's end and the next's start). Pages are parsed off the
event loop (pages.off_loop) and handed to `on_page` one at a time, in the order they finish.
A redirect hop is checked as a link is: against robots.txt and the path patterns (the start
URL's hops against robots.txt only, as the start URL itself), and a hop to a URL already seen is
not followed, since that page is fetched and stored under its own URL.

Cancel: `cancelled()` is asked before each fetch, before each page is handed over, and every
CANCEL_POLL_SECONDS while fetches are in flight. Once it is true, fetches in flight are dropped
and every URL taken but not stored goes back to the front of the queue, as it does when the
task running the crawl is cancelled: a resume fetches them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan.crawling import pages, robots, site_files, sitemaps, urls
from contentplatform.website_scan.crawling.fetching import Fetched, Fetcher, HopCheck
from contentplatform.website_scan.crawling.frontier import Frontier

# How often `cancelled()` is asked while every worker waits on a fetch.
CANCEL_POLL_SECONDS = 0.2


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
    # False when `on_page` keeps the pages (the durable crawl stores them): a 5000-page crawl
    # holds none of them in memory.
    keep_pages: bool = True

    @property
    def truncated(self) -> bool:
        return self.frontier.truncated


PageCallback = Callable[[pages.PageRecord], Awaitable[None]]
SiteCallback = Callable[[site_files.SiteFacts], Awaitable[None]]


async def crawl(
    settings: CrawlSettings,
    policy: Policy,
    *,
    frontier: Frontier | None = None,
    on_page: PageCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    fetcher: Fetcher | None = None,
    keep_pages: bool = True,
    on_site: SiteCallback | None = None,
) -> CrawlResult:
    """Crawl one site. `cancelled()` is asked before each page: when true, the crawl stops and
    what was stored is returned (a partial snapshot), the rest left queued in the frontier. A
    given `frontier` resumes a crawl. `on_page` is awaited for each stored page, one at a
    time; `on_site` once, before the pages, with robots.txt, llms.txt and the sitemaps."""
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
        return await _crawl(
            settings, start, fetcher, frontier, on_page, cancelled, keep_pages, on_site
        )
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
    keep_pages: bool,
    on_site: SiteCallback | None = None,
) -> CrawlResult:
    origin = f"{urlsplit(start).scheme}://{urlsplit(start).netloc}"
    rules = await robots.load(fetcher, origin)
    delay = rules.crawl_delay(settings.robots_token)
    if delay:
        fetcher.slow_down(urls.host_of(start), delay)
    front = frontier or Frontier(settings.max_pages, settings.max_depth)
    result = CrawlResult([], [], front, set(), keep_pages=keep_pages)
    result.robots_retry = rules.retry
    run = _Workers(settings, start, fetcher, result, rules, on_page, cancelled)

    llms_txt = origin + "/llms.txt"
    llms = await site_files.load_llms_txt(fetcher, origin) if run.robots_allow(llms_txt) else None
    result.skipped_by_robots.discard(llms_txt)  # not a page the crawl was after
    found: sitemaps.SiteMap | None = None
    if frontier is None or not frontier.seen:  # a fresh crawl (not a resumed one)
        # The start URL is fetched whatever the path patterns say, but not against robots.txt.
        robots_ok = run.robots_allow(start)
        if settings.sitemap_mode != "only" and robots_ok:
            front.add(start, 0)
        # robots.txt failing (5xx, unreachable) stops everything, sitemaps included.
        if settings.sitemap_mode != "skip" and not (settings.respect_robots and rules.disallow_all):
            found = await sitemaps.discover(
                fetcher,
                start,
                rules.sitemaps,
                limit=settings.max_pages,
                allow_subdomains=settings.allow_subdomains,
            )
            for url in found.urls:
                # Sitemap URLs count as linked from the start page (depth 1).
                if run.same_site(url) and run.allowed(url):
                    front.add(url, min(1, settings.max_depth))
    if on_site is not None:
        await on_site(site_files.SiteFacts(site_files.robots_file(rules), llms, found))

    await run.run()

    # Internal links broken: their target was fetched in this crawl and failed.
    found_broken = []
    for target, entry in run.broken.items():
        status, error = run.statuses.get(target, (None, None))
        if target in run.statuses and (error is not None or (status is not None and status >= 400)):
            entry.status, entry.error = status, error
            found_broken.append(entry)
    if settings.check_external_links and not result.cancelled:
        found_broken += await _check_external(
            fetcher, run.external, settings.concurrency, cancelled
        )
    result.broken_links = found_broken
    return result


class _Workers:
    """The pages of one crawl, fetched by `settings.concurrency` workers sharing its frontier."""

    def __init__(
        self,
        settings: CrawlSettings,
        start: str,
        fetcher: Fetcher,
        result: CrawlResult,
        rules: robots.Robots,
        on_page: PageCallback | None,
        cancelled: Callable[[], bool],
    ) -> None:
        self.settings, self.start, self.fetcher = settings, start, fetcher
        self.result, self.front, self.rules = result, result.frontier, rules
        self.on_page, self.cancelled = on_page, cancelled
        self.filters = urls.PathFilter(settings.include, settings.exclude)
        self.busy = 0  # workers between taking a URL and being done with it
        self.stopped = False
        self.wake = asyncio.Event()  # set when the queue or `busy` changed
        self.fetching: set[asyncio.Task[Fetched]] = set()
        self.handing = asyncio.Lock()  # on_page one page at a time
        self.statuses: dict[str, tuple[int | None, str | None]] = {}
        self.broken: dict[str, BrokenLink] = {}
        self.external: dict[str, list[tuple[str, str]]] = {}

    # --- scope --------------------------------------------------------------------------------

    def same_site(self, url: str) -> bool:
        return urls.same_site(url, self.start, allow_subdomains=self.settings.allow_subdomains)

    def robots_allow(self, url: str) -> bool:
        """Whether robots.txt lets us fetch `url`; a refusal is recorded."""
        if self.settings.respect_robots and not self.rules.allowed(url, self.settings.robots_token):
            self.result.skipped_by_robots.add(url)
            return False
        return True

    def allowed(self, url: str) -> bool:
        return self.robots_allow(url) and self.filters.allows(url)

    def hop_check(self, source: str) -> HopCheck:
        """Whether a redirect met while fetching `source` may be followed to its target."""

        def follow(target: str) -> bool:
            url = urls.normalize(target)
            if url is None or not self.same_site(url):
                # Off the site: followed (the guard checks every hop); its robots.txt and the
                # patterns are not this crawl's to apply.
                return True
            if url in self.front.seen:
                return False  # fetched (or to be) and stored under its own URL
            return self.robots_allow(url) if source == self.start else self.allowed(url)

        return follow

    # --- the workers --------------------------------------------------------------------------

    async def run(self) -> None:
        workers = [
            asyncio.create_task(self._worker()) for _ in range(max(1, self.settings.concurrency))
        ]
        watcher = asyncio.create_task(self._watch())
        done: set[asyncio.Task[None]] = set()
        try:
            done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            watcher.cancel()
            for task in workers:
                task.cancel()
            await asyncio.gather(watcher, *workers, return_exceptions=True)
            # URLs taken and never stored (dropped on cancel, a worker failed, or this task was
            # cancelled) are queued again.
            self.front.requeue_unfinished()
        for task in done:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error

    async def _worker(self) -> None:
        while (item := await self._take()) is not None:
            try:
                await self._visit(*item)
            finally:
                self.busy -= 1
                self.wake.set()

    async def _take(self) -> tuple[str, int] | None:
        """The next URL to fetch; waits while others work (they may find more). None once the
        crawl is done or stopped."""
        while not self.stopped:
            item = self.front.pop()
            if item is None:
                if self.busy == 0:
                    self._stop()
                    return None
                self.wake.clear()
                await self.wake.wait()
                continue
            if self._cancelled():
                self.front.queue.appendleft(item)
                return None
            self.busy += 1
            return item
        return None

    async def _watch(self) -> None:
        """Ask `cancelled()` while fetches are in flight, so a cancel need not wait for them."""
        while not self.stopped:
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            self._cancelled()

    def _cancelled(self) -> bool:
        if not self.result.cancelled and self.cancelled():
            self.result.cancelled = True
            self._stop()
        return self.result.cancelled

    def _stop(self) -> None:
        self.stopped = True
        for task in self.fetching:
            task.cancel()
        self.wake.set()

    async def _fetch(self, url: str) -> Fetched | None:
        """`url` fetched; None when the crawl stopped meanwhile and the fetch was dropped."""
        task = asyncio.create_task(self.fetcher.fetch(url, follow=self.hop_check(url)))
        self.fetching.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            worker = asyncio.current_task()
            if worker is not None and worker.cancelling():
                raise  # this worker itself is cancelled, not only its fetch
            return None
        finally:
            self.fetching.discard(task)

    async def _visit(self, url: str, depth: int) -> None:
        """Fetch, parse and hand over one page, then queue its links. A page not stored
        (the crawl stopped first) stays seen but not done: `run` queues it again."""
        fetched = await self._fetch(url)
        if fetched is None:
            return
        self.statuses[url] = (fetched.status, fetched.error)
        if fetched.refused_redirect is not None:
            # A redirect to a page seen already, or to one robots.txt (recorded by the check)
            # or the patterns keep out: nothing is stored under the URL that redirected.
            self.front.finish(url)
            return
        stored_as = url
        final = urls.normalize(fetched.final_url) or url
        if final != url and fetched.error is None and self.same_site(final):
            # A redirect: the page is stored under where it landed, once (one page, one row);
            # a failed one (a loop) stays under the URL that was linked.
            self.front.finish(url)
            if final in self.front.seen:  # another worker reached it meanwhile
                return
            self.front.seen[final] = depth
            stored_as = final
        page = await pages.off_loop(
            pages.record,
            fetched,
            depth,
            self.start,
            allow_subdomains=self.settings.allow_subdomains,
        )
        page.url = stored_as
        async with self.handing:
            if self._cancelled():
                return
            if self.result.keep_pages:
                self.result.pages.append(page)
            if self.on_page is not None:
                await self.on_page(page)
            self.front.finish(stored_as)
        for link in page.links:
            if link.internal:
                if (
                    depth + 1 <= self.front.max_depth
                    and link.url not in self.front.seen
                    and self.allowed(link.url)
                ):
                    self.front.add(link.url, depth + 1)
                    self.wake.set()
                entry = self.broken.setdefault(link.url, BrokenLink(link.url, None, None, True))
                entry.sources.append((stored_as, link.text))
            else:
                self.external.setdefault(link.url, []).append((stored_as, link.text))


async def _check_external(
    fetcher: Fetcher,
    external: dict[str, list[tuple[str, str]]],
    workers: int,
    cancelled: Callable[[], bool],
) -> list[BrokenLink]:
    """The outbound links that are broken: each target asked with HEAD (GET when the server
    does not take HEAD), `workers` at once; every host keeps its own limits in the Fetcher."""
    todo = deque(external.items())
    broken: dict[str, BrokenLink] = {}

    async def check() -> None:
        while todo and not cancelled():
            target, sources = todo.popleft()
            fetched = await fetcher.fetch(target, method="HEAD")
            if fetched.status in (405, 501):
                fetched = await fetcher.fetch(target)
            if fetched.broken:
                broken[target] = BrokenLink(target, fetched.status, fetched.error, False, sources)

    await asyncio.gather(*(check() for _ in range(max(1, workers))))
    return [broken[target] for target in external if target in broken]
