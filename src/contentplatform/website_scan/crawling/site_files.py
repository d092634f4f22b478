"""The site's own files a snapshot keeps beside its pages, for the audits: robots.txt (read by
robots.py, which decides what the crawl may fetch) and llms.txt (llmstxt.org's proposal: a
markdown file at the site's root telling language models what the site holds), each with the
status it answered and its text, capped; and what the sitemaps listed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from contentplatform.website_scan.crawling import robots
from contentplatform.website_scan.crawling.fetching import Fetcher
from contentplatform.website_scan.crawling.sitemaps import SiteMap

MAX_LLMS_TXT_BYTES = 500 * 1024


@dataclass
class SiteFile:
    """One file at the site's root: `status` None when no answer came (`error` says why);
    `body` its text when it answered 2xx (at most the cap: `truncated` when cut); for
    robots.txt, the sitemaps its Sitemap lines name."""

    status: int | None
    body: str | None = None
    error: str | None = None
    truncated: bool = False
    declared_sitemaps: list[str] | None = None  # robots.txt's Sitemap lines

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SiteFacts:
    """What a crawl learnt of the site before its pages; `sitemaps` None when it read none
    (sitemap_mode skip, or a resumed crawl, which keeps what its first start found)."""

    robots_txt: SiteFile
    llms_txt: SiteFile | None  # None: robots.txt keeps us from it
    sitemaps: SiteMap | None


def robots_file(rules: robots.Robots) -> SiteFile:
    truncated = rules.body is not None and len(rules.body.encode()) >= robots.MAX_ROBOTS_BYTES
    error = rules.problem if rules.status is None else None
    declared = list(rules.sitemaps) if rules.found else None
    return SiteFile(rules.status, rules.body, error, truncated, declared)


async def load_llms_txt(fetcher: Fetcher, origin: str) -> SiteFile:
    """`origin`/llms.txt, as it answered."""
    fetched = await fetcher.fetch(origin.rstrip("/") + "/llms.txt")
    if fetched.status is None:
        return SiteFile(None, error=fetched.error)
    if not 200 <= fetched.status < 300:
        return SiteFile(fetched.status)
    body = fetched.body[:MAX_LLMS_TXT_BYTES]
    return SiteFile(
        fetched.status,
        body.decode("utf-8", errors="replace"),
        truncated=len(fetched.body) > MAX_LLMS_TXT_BYTES,
    )


def sitemaps_json(found: SiteMap) -> dict[str, Any]:
    """The sitemaps read (url, type, url_count, error) and, for each URL they list, which."""
    return {
        "read": [asdict(report) for report in found.sitemaps],
        "listed": found.listed,
    }
