"""Declarations only: seo.listSitemaps, submitSitemap, deleteSitemap, inspectUrls,
listUrlInspections, getUrlInspection."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.inspections import schemas, service
from contentplatform.seo.inspections.errors import (
    InspectionQuotaExceeded,
    OtherPropertySitemap,
    OutsideProperty,
    RobotsSitemap,
    SearchConsoleBusy,
    SearchConsoleRefused,
    SearchConsoleUnavailable,
    SitemapNotFound,
    SitemapsReadOnly,
    UrlInspectionNotFound,
)

router = ProcedureRouter("seo", tag="SEO")

GOOGLE_ERRORS = [SearchConsoleRefused, SearchConsoleBusy, SearchConsoleUnavailable]


@router.get("listSitemaps", "/v1/seo/sitemaps", access=Access.member)
async def list_sitemaps(ctx: Context, data: schemas.ListSitemapsInput) -> schemas.SitemapPage:
    """Sitemaps known to Search Console or declared in robots.txt, cross-checked with the crawl.

    `search_console` rows are the selected property's sitemaps as Google's sitemaps.list
    reported them at the last Search Console sync (or as submitted here since: `is_pending`);
    Google's deprecated `indexed` counts are not shown. `robots_txt` rows are the `Sitemap:`
    lines of the robots.txt each crawled site (within the selected property; every crawled site
    when none is selected) answered at its newest complete website scan, made again when a scan
    completes: a sitemap no longer declared goes. Read from our store only: this never calls
    Google. Sorted by URL. `snapshot` is the cross-check against the newest complete scan of
    the site that read sitemaps: the URLs the sitemap lists (an index through its children; as
    far as the scan read, at most its page limit), those crawled with a status other than 200,
    those crawled but not indexable (noindex, canonical elsewhere, not HTML), and the site's
    indexable pages that no sitemap lists; all null for a sitemap the scan did not read (or
    before any such scan). Non-200 or non-indexable URLs listed in a sitemap feed the audit
    check sitemap_contains_bad_urls."""
    return await service.list_sitemaps(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "submitSitemap",
    "/v1/seo/sitemaps",
    access=Access.admin,
    errors=[SearchConsoleNotConnected, SitemapsReadOnly, OutsideProperty, *GOOGLE_ERRORS],
)
async def submit_sitemap(ctx: Context, data: schemas.SubmitSitemapInput) -> schemas.Sitemap:
    """Submit (or resubmit) a sitemap to Search Console.

    Calls Google's sitemaps.submit for the selected property; the sitemap is stored once
    Google took it, `is_pending` until the next Search Console sync reads Google's report of
    it. Resubmitting is idempotent: Google reads it again, and the same sitemap (same id) is
    answered with a new `last_submitted`. The URL must be https and within the property: for
    a domain property (`sc-domain:example.com`) any URL on that host or a subdomain, for a
    URL-prefix property a URL starting with the prefix (400 otherwise). 409 when Search
    Console is not connected (or needs reauthorization, or no property is selected), was
    connected read-only, or the account's permission on the property is siteRestrictedUser
    (or Google answers 403). Google's other refusals: 400 with its message; its rate limits:
    429 with Retry-After; Google unreachable or failing: 503 (retryable)."""
    return await service.submit_sitemap(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteSitemap",
    "/v1/seo/sitemaps/{id}",
    access=Access.admin,
    errors=[
        SitemapNotFound,
        RobotsSitemap,
        OtherPropertySitemap,
        SearchConsoleNotConnected,
        SitemapsReadOnly,
        *GOOGLE_ERRORS,
    ],
)
async def delete_sitemap(ctx: Context, data: schemas.SitemapIdInput) -> Success:
    """Remove a submitted sitemap from Search Console.

    Calls Google's sitemaps.delete (Google stops reading it; the file itself is untouched),
    then forgets it here; a sitemap Google no longer knows is simply forgotten. robots_txt
    sitemaps are read-only here (409: remove the `Sitemap:` line from robots.txt), as is a
    sitemap of another property than the selected one (409). 409 too when Search Console is
    not connected, read-only, or siteRestrictedUser; 404 for another organization's
    sitemap."""
    await service.delete_sitemap(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post(
    "inspectUrls",
    "/v1/seo/url-inspections",
    access=Access.editor,
    errors=[SearchConsoleNotConnected, OutsideProperty, InspectionQuotaExceeded],
)
async def inspect_urls(ctx: Context, data: schemas.InspectUrlsInput) -> schemas.InspectUrlsAnswer:
    """Ask Google how it sees up to 100 URLs (indexing, canonical, robots, rich results).

    1 to 100 distinct https URLs, each within the selected property (400 naming each one
    outside it). Each new inspection is stored `pending` and made in the background by a
    durable workflow calling urlInspection.index.inspect at most 600 a minute per property,
    inside a sync run of kind `url_inspection` (seo.listSyncRuns); poll getUrlInspection or
    listUrlInspections until it is `completed` or `failed` (error {code, message}: Google's
    reason, or `grant_revoked` when Google no longer accepts the grant, which also marks the
    connection needs_reauth). A URL inspected in the last 24 hours (or being inspected) is
    answered as it is, unless `force` (a pending one is answered as it is even then). Google
    allows 2,000 inspections a day per property, reset at midnight Pacific time
    (America/Los_Angeles): every inspection asked for that day counts, whatever became of it;
    the call whose new inspections would pass it is 429 TOO_MANY_REQUESTS with Retry-After
    (the seconds to the reset), and nothing of it is stored or sent. `quota` says what is
    left. 409 when Search Console is not connected."""
    return await service.inspect(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("listUrlInspections", "/v1/seo/url-inspections", access=Access.member)
async def list_url_inspections(
    ctx: Context, data: schemas.ListUrlInspectionsInput
) -> schemas.UrlInspectionPage:
    """URL inspection results, filterable by verdict.

    Newest first. `latestOnly` (default true) keeps each URL's newest inspection, and the
    filters (`verdict`, `status`, `search`: URL contains, ignoring case) apply to those. Fields
    mirror Google's IndexStatusInspectionResult and RichResultsResult. A FAIL verdict, or
    google_canonical differing from user_canonical, feeds a fix_indexing action."""
    return await service.list_inspections(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getUrlInspection",
    "/v1/seo/url-inspections/{id}",
    access=Access.member,
    errors=[UrlInspectionNotFound],
)
async def get_url_inspection(
    ctx: Context, data: schemas.UrlInspectionIdInput
) -> schemas.UrlInspectionDetail:
    """One URL inspection with the previous result for the same URL.

    `previous` is the newest completed inspection of the same URL made before this one (null
    when there is none): what changed since."""
    return await service.get_inspection(ctx.session, ctx.tenant.tenant_id, data.id)
