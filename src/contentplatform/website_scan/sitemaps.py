"""Sitemaps: robots.txt's Sitemap lines and /sitemap.xml, indexes followed to depth 3, gzip
children, every file size-capped, parsed with defusedxml (no entities, no XXE, no billion
laughs)."""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass, field

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from contentplatform.website_scan import urls
from contentplatform.website_scan.fetching import Fetcher

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
    urls: dict[str, str | None] = field(default_factory=dict)  # normalized url -> lastmod
    sitemaps: list[SitemapReport] = field(default_factory=list)


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
    fetcher: Fetcher, start_url: str, declared: list[str], *, limit: int = 5000
) -> SiteMap:
    """Every URL of the site's sitemaps (same site as `start_url` only), at most `limit`."""
    result = SiteMap()
    origin = start_url.split("/", 3)
    root = "/".join(origin[:3])
    queue = [(url, 0) for url in dict.fromkeys([*declared, root + "/sitemap.xml"])]
    visited: set[str] = set()
    while queue and len(visited) < MAX_SITEMAPS and len(result.urls) < limit:
        url, depth = queue.pop(0)
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
        for loc, lastmod in entries:
            if report.type == "index":
                if depth < MAX_INDEX_DEPTH:  # an index nested deeper is ignored
                    queue.append((loc, depth + 1))
                continue
            normalized = urls.normalize(loc)
            if normalized and urls.same_site(normalized, start_url):
                result.urls.setdefault(normalized, lastmod)
                if len(result.urls) >= limit:
                    break
    return result
