"""The Website Scan operation that maps a site without crawling it: a declaration only; the
rules live in discovery/service.py."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.website_scan.discovery import schemas
from contentplatform.website_scan.discovery import service as discovery
from contentplatform.website_scan.errors import CrawlConfigNotFound, StartUrlRefused

router = ProcedureRouter("websiteScan", tag="Website Scan")


@router.post(
    "discoverSitemap",
    "/v1/website-scan/sitemap-discovery",
    access=Access.editor,
    errors=[StartUrlRefused, CrawlConfigNotFound],
)
async def discover_sitemap(
    ctx: Context, data: schemas.DiscoverSitemapInput
) -> schemas.SitemapDiscovery:
    """Discover robots.txt sitemaps and list site URLs without crawling (map).

    Reads robots.txt, the sitemaps it declares and /sitemap.xml (indexes followed to depth 3,
    gzip sitemaps read) and, when they list no URL, the links of the start page; no other page
    is fetched and nothing is stored. Answers within 30 seconds: when time runs out, what was
    found is answered and each sitemap not read to the end has `error: "timeout"`. `url` goes
    through the same checks as a config's start URL (https, a public host: 400 naming `url`
    otherwise, nothing sent); `configId` reads its configuration's site instead (404 when it is
    not this organization's). Requests are as polite as a crawl's: the crawler's User-Agent, at
    most 5 a second (the configuration's rate with `configId`) or robots.txt's Crawl-delay, and
    none after a robots.txt that fails (5xx, unreachable: `robots_txt.error` says why)."""
    return await discovery.discover(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)
