"""Crawl throughput: the crawler core against a bare httpx loop over the same site.

    .venv/bin/python bench/crawl.py [--pages 2000] [--rps 200] [--concurrency 2] [--tracemalloc]

Serves a generated site (tests/support/sites.py GeneratedSite: `--pages` nested pages of about
3 KB, robots.txt, a sitemap index with gzip children) from a child process (bench/site.py), so
its server threads do not share this process's interpreter lock. Then, one after another, with
the same politeness (at most `--concurrency` requests in flight, at least 1/`--rps` s between
two starts, as the Fetcher keeps per host):

- **floor**: a bare httpx.AsyncClient fetching every page URL (keep-alive, httpx's default);
- **floor, new connection each**: the same without keep-alive, as the guarded client works (it
  pins each resolved address and keeps nothing alive, on purpose): what that alone costs;
- **fetcher**: the crawler's Fetcher (the guarded client: address checks, size cap, timeouts,
  per-host politeness, redirects by hand) over the same URLs, nothing parsed;
- **crawl, no parsing**: crawler.crawl on the site with pages.record replaced by a stub (an
  empty record): robots.txt, the sitemaps, the frontier and the workers; the sitemap lists
  every page, so every page is still fetched;
- **crawl**: crawler.crawl as it is (robots.txt, the sitemaps, pages.record on the parser thread
  for every page: selectolax and trafilatura, the links queued);
- **parsing alone**: pages.record over the pages' bodies one after another on this thread: the
  CPU a crawl spends parsing.

For each: pages/s, the time as a multiple of the floor's, the CPU seconds of this process (all
its threads) and per page, and memory: how much the process's peak RSS rose during the leg
(VmHWM, reset before each leg through /proc/self/clear_refs) and, with `--tracemalloc`, the
peak of Python allocations (tracemalloc slows every leg, so it is off by default). Takes about
a minute with the defaults. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from contentplatform.kit.outbound import Policy
from contentplatform.website_scan.crawling import pages
from contentplatform.website_scan.crawling.crawler import CrawlSettings, crawl
from contentplatform.website_scan.crawling.fetching import Fetched, Fetcher

ROOT = Path(__file__).resolve().parent.parent
UA = "contentplatform-crawler/bench"
POLICY = Policy(allow_http=True, allow_loopback=True, timeout=30.0, connect_timeout=5.0)


Run = Callable[[], Coroutine[Any, Any, int]]  # a leg: the pages it got


@dataclass
class Leg:
    name: str
    pages: int
    seconds: float
    cpu: float
    rss_rise_mb: float | None
    traced_mb: float | None


# --- the site -----------------------------------------------------------------------------------


def serve_site(count: int) -> tuple[subprocess.Popen[str], str]:
    """bench/site.py in a child process, and its URL (without the trailing slash)."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "site.py"), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        process.terminate()
        raise SystemExit(f"bench/site.py did not start (it said {line!r})")
    return process, line.rstrip("/")


def page_urls(site: str) -> list[str]:
    """Every page URL, as the sitemap lists them (what each leg fetches)."""
    import gzip
    import re

    index = httpx.get(site + "/sitemap_index.xml").text
    found: list[str] = []
    for child in re.findall(r"<loc>([^<]+)</loc>", index):
        xml = gzip.decompress(httpx.get(child).content).decode()
        found += re.findall(r"<loc>([^<]+)</loc>", xml)
    return found


# --- measuring ----------------------------------------------------------------------------------


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MB
    return 0.0


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        return False
    return True


def measure(name: str, run: Run, traced: bool) -> Leg:
    gc.collect()
    resettable = _reset_peak_rss()
    before = _status("VmRSS")
    if traced:
        tracemalloc.start()
    cpu, started = time.process_time(), time.perf_counter()
    count = asyncio.run(run())
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = None
    if traced:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    rise = _status("VmHWM") - before if resettable else None
    return Leg(name, count, seconds, cpu, rise, peak)


class Polite:
    """The Fetcher's politeness for the floor: `concurrency` in flight, `interval` s between
    two starts."""

    def __init__(self, concurrency: int, interval: float) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.lock = asyncio.Lock()
        self.interval = interval
        self.next_start = 0.0

    async def turn(self) -> None:
        async with self.lock:
            wait = self.next_start - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.next_start = time.monotonic() + self.interval


async def _in_parallel(
    workers: int, todo: list[str], fetch: Callable[[str], Awaitable[Any]]
) -> None:
    queue = list(reversed(todo))

    async def worker() -> None:
        while queue:
            await fetch(queue.pop())

    await asyncio.gather(*(worker() for _ in range(workers)))


# --- the legs -----------------------------------------------------------------------------------


def floor(todo: list[str], concurrency: int, rps: float, keep_alive: bool) -> Run:
    async def run() -> int:
        polite = Polite(concurrency, 1 / rps)
        limits = httpx.Limits() if keep_alive else httpx.Limits(max_keepalive_connections=0)
        ok = 0
        async with httpx.AsyncClient(limits=limits, headers={"user-agent": UA}) as client:

            async def fetch(url: str) -> None:
                nonlocal ok
                async with polite.slots:
                    await polite.turn()
                    response = await client.get(url)
                ok += response.status_code == 200

            await _in_parallel(concurrency, todo, fetch)
        return ok

    return run


def fetcher_only(todo: list[str], concurrency: int, rps: float, bodies: list[Fetched]) -> Run:
    async def run() -> int:
        async with Fetcher(
            POLICY, user_agent=UA, interval=1 / rps, concurrency=concurrency
        ) as fetcher:

            async def fetch(url: str) -> None:
                bodies.append(await fetcher.fetch(url))

            await _in_parallel(concurrency, todo, fetch)
        return sum(1 for fetched in bodies if fetched.status == 200)

    return run


def crawled(site: str, count: int, concurrency: int, rps: float, parse: bool) -> Run:
    options = CrawlSettings(
        start_url=site + "/",
        user_agent=UA,
        robots_token="contentplatform-crawler",
        max_pages=count,
        max_depth=10,
        requests_per_second=rps,
        concurrency=concurrency,
    )

    def stub(
        fetched: Fetched, depth: int, start: str, *, allow_subdomains: bool = False
    ) -> pages.PageRecord:
        return pages.PageRecord(
            url=fetched.url,
            final_url=fetched.final_url,
            depth=depth,
            status=fetched.status,
            error=fetched.error,
            redirect_chain=[],
        )

    async def run() -> int:
        record = pages.record
        if not parse:
            pages.record = stub  # type: ignore[assignment]
        try:
            result = await crawl(options, POLICY)
        finally:
            pages.record = record
        return sum(1 for page in result.pages if page.status == 200)

    return run


def parsing_alone(site: str, bodies: list[Fetched]) -> Run:
    async def run() -> int:
        for fetched in bodies:
            pages.record(fetched, 1, site + "/")
        return len(bodies)

    return run


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--pages", type=int, default=2000, help="pages of the site (default 2000)")
    args.add_argument("--rps", type=float, default=200.0, help="requests per second (default 200)")
    args.add_argument("--concurrency", type=int, default=2, help="in flight at once (default 2)")
    args.add_argument("--tracemalloc", action="store_true", help="also trace Python allocations")
    options = args.parse_args()
    if not 1 <= options.pages <= 5000:
        raise SystemExit("--pages: 1 to 5000 (a crawl's max_pages)")

    process, site = serve_site(options.pages)
    try:
        todo = page_urls(site)
        assert len(todo) == options.pages, (len(todo), options.pages)
        bodies: list[Fetched] = []
        c, rps, traced = options.concurrency, options.rps, options.tracemalloc
        legs = [
            measure("floor: bare httpx, keep-alive", floor(todo, c, rps, True), traced),
            measure("floor: bare httpx, new connection each", floor(todo, c, rps, False), traced),
            measure(
                "fetcher (guarded client), no parsing", fetcher_only(todo, c, rps, bodies), traced
            ),
            measure("crawl, pages.record stubbed", crawled(site, len(todo), c, rps, False), traced),
            measure(
                "crawl (parsing on the parser thread)",
                crawled(site, len(todo), c, rps, True),
                traced,
            ),
            measure(
                "parsing alone (pages.record, this thread)", parsing_alone(site, bodies), traced
            ),
        ]
    finally:
        process.terminate()
        process.wait(10)

    base = legs[0].seconds
    size = sum(len(fetched.body) for fetched in bodies) / max(len(bodies), 1) / 1024
    print(
        f"site: {options.pages} pages of ~{size:.1f} KB (and robots.txt, a sitemap index, "
        f"{(options.pages + 999) // 1000} gzip sitemaps) in a child process; politeness: "
        f"{c} in flight, {rps:g}/s (one start every {1000 / rps:g} ms)"
    )
    header = f"{'':44} {'s':>6} {'pages/s':>8} {'x floor':>8} {'CPU s':>6} {'CPU ms/page':>11}"
    header += f" {'peak RSS':>9}"
    if traced:
        header += f" {'traced':>8}"
    print(header)
    for leg in legs:
        rss = "n/a" if leg.rss_rise_mb is None else f"+{leg.rss_rise_mb:.0f} MB"
        per_page = 1000 * leg.cpu / max(leg.pages, 1)
        line = (
            f"{leg.name:44} {leg.seconds:6.2f} {leg.pages / leg.seconds:8.1f} "
            f"{leg.seconds / base:8.2f} {leg.cpu:6.2f} {per_page:11.2f} {rss:>9}"
        )
        if leg.traced_mb is not None:
            line += f" {leg.traced_mb:6.1f} MB"
        print(line)
    crawl_leg, stub_leg, parse_leg = legs[4], legs[3], legs[5]
    print(
        f"parsing in the crawl: {crawl_leg.seconds - stub_leg.seconds:+.2f} s wall, "
        f"{crawl_leg.cpu - stub_leg.cpu:+.2f} s CPU against the stubbed crawl; "
        f"{1000 * parse_leg.cpu / max(parse_leg.pages, 1):.2f} ms CPU per page alone"
    )


if __name__ == "__main__":
    main()
