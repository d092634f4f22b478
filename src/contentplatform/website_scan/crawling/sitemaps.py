"""Sitemaps: robots.txt's Sitemap lines and /sitemap.xml, indexes followed to depth 3, gzip
children, every file size-capped, parsed with defusedxml (no entities, no XXE, no billion
laughs)."""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass, field

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from contentplatform.website_scan.crawling import urls
from contentplatform.website_scan.crawling.fetching import Fetcher

MAX_INDEX_DEPTH = 3
# The sitemap protocol's own limit for one file, uncompressed.
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
MAX_SITEMAPS = 100


@dataclass
class SitemapReport:
    url: str
    type: str | None = None  # index | urlset
    url_count: int = 0
    error: str | None = None


@dataclass
class SiteMap:
    """What the sitemaps gave, so far: kept by the caller, it holds what was found when a time
    limit stops the reading (`give_up`)."""

    urls: dict[str, str | None] = field(default_factory=dict)  # normalized url -> lastmod
    sitemaps: list[SitemapReport] = field(default_factory=list)
    via_robots: set[str] = field(default_factory=set)  # found through a sitemap robots.txt names
    # normalized url -> the sitemaps listing it: the file, and the index it was reached from
    # (robots.txt's or /sitemap.xml) when that is another, as a site submits either.
    listed: dict[str, list[str]] = field(default_factory=dict)
    # A child sitemap's root: the sitemap named in robots.txt (or /sitemap.xml) it came through.
    root_of: dict[str, str] = field(default_factory=dict)
    # Sitemaps queued, not read yet: (url, index depth, declared in robots.txt).
    pending: list[tuple[str, int, bool]] = field(default_factory=list)

    def give_up(self, reason: str) -> None:
        """Mark the sitemap being read and those still queued as unfinished, with `reason`."""
        for report in self.sitemaps:
            if report.type is None and report.error is None:
                report.error = reason
        reported = {report.url for report in self.sitemaps}
        for url, _, _ in self.pending:
            if url not in reported:
                reported.add(url)
                self.sitemaps.append(SitemapReport(url, error=reason))
        self.pending.clear()


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _gunzip(body: bytes) -> bytes:
    """Decompressed, never more than the cap (a gzip bomb stops there)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = inflater.decompress(body, MAX_SITEMAP_BYTES + 1)
    if len(data) > MAX_SITEMAP_BYTES:
        raise ValueError("the sitemap is larger than 50 MB uncompressed")
    return data


def parse(body: bytes) -> tuple[str, list[tuple[str, str | None]]]:
    """("index" | "urlset", [(loc, lastmod)]) of one sitemap file (gzip or not)."""
    if body[:2] == b"\x1f\x8b":
        body = _gunzip(body)
    root = ElementTree.parse(io.BytesIO(body)).getroot()
    kind = "index" if _local(root.tag) == "sitemapindex" else "urlset"
    entries: list[tuple[str, str | None]] = []
    for item in root:
        fields = {_local(child.tag): (child.text or "").strip() for child in item}
        if fields.get("loc"):
            entries.append((fields["loc"], fields.get("lastmod") or None))
    return kind, entries


async def discover(
    fetcher: Fetcher,
    start_url: str,
    declared: list[str],
    *,
    limit: int = 5000,
    allow_subdomains: bool = False,
    into: SiteMap | None = None,
) -> SiteMap:
    """Every URL of the site's sitemaps (the site of `start_url` only), at most `limit`: those
    robots.txt `declared`, then /sitemap.xml, indexes followed. Found URLs go into `into` (when
    given) as they come, so a caller that stops this on a time limit keeps them."""
    result = into or SiteMap()
    origin = start_url.split("/", 3)
    root = "/".join(origin[:3])
    guessed = root + "/sitemap.xml"
    named = dict.fromkeys(declared)
    result.pending.extend((url, 0, True) for url in named)
    if guessed not in named:
        result.pending.append((guessed, 0, False))
    visited: set[str] = set()
    while result.pending and len(visited) < MAX_SITEMAPS and len(result.urls) < limit:
        url, depth, via_robots = result.pending.pop(0)
        if url in visited:
            continue
        visited.add(url)
        report = SitemapReport(url)
        result.sitemaps.append(report)
        fetched = await fetcher.fetch(url)
        if fetched.broken:
            report.error = fetched.error or f"HTTP {fetched.status}"
            continue
        try:
            report.type, entries = parse(fetched.body)
        except (ElementTree.ParseError, DefusedXmlException, ValueError, zlib.error) as error:
            report.error = f"not a sitemap ({type(error).__name__})"
            continue
        report.url_count = len(entries)
        root = result.root_of.get(url, url)
        for loc, lastmod in entries:
            if report.type == "index":
                if depth < MAX_INDEX_DEPTH:  # an index nested deeper is ignored
                    result.pending.append((loc, depth + 1, via_robots))
                    result.root_of.setdefault(loc, root)
                continue
            normalized = urls.normalize(loc)
            if normalized and urls.same_site(
                normalized, start_url, allow_subdomains=allow_subdomains
            ):
                if normalized not in result.urls:
                    result.urls[normalized] = lastmod
                    if via_robots:
                        result.via_robots.add(normalized)
                listing = result.listed.setdefault(normalized, [])
                for sitemap in (url, root):
                    if sitemap not in listing:
                        listing.append(sitemap)
                if len(result.urls) >= limit:
                    break
    result.pending.clear()  # what is left was cut off by a cap, not unfinished
    return result
