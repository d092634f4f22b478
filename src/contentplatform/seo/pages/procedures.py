"""Declarations only: seo.listPages, seo.getPage."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.pages import schemas, service
from contentplatform.seo.pages.errors import PageNotFound

router = ProcedureRouter("seo", tag="SEO")


@router.get("listPages", "/v1/seo/pages", access=Access.member)
async def list_pages(ctx: Context, data: schemas.ListPagesInput) -> schemas.SeoPagePage:
    """The page inventory: one row per page of the site, joining the website scans, Search
    Console, URL inspections, audits, PageSpeed and our published drafts.

    One row per normalized URL (lowercase scheme and host, no default port, no fragment,
    tracking parameters such as utm_*, gclid and fbclid dropped, the query sorted) seen in a
    website scan, in Search Console's last 56 stored days, or as the URL a target gave one of
    our published drafts (`draft_id` links back). The rows are kept up to date as their sources
    change, never computed on read: a completed scan writes its pages (title, status,
    indexability, citability; the site's pages it did not find leave `in_latest_snapshot`), a
    Search Console sync the 28-day figures (web search, the last 28 stored days against the 28
    before for `clicks_change_pct`), a publication its draft, a URL-inspection run the newest
    verdict. The first read of an organization with no row yet builds them from what is stored.
    `open_issues`/`highest_severity` come from the audits, `performance_score`/`lcp_category`
    from PageSpeed, `tracked_keywords` (the tracked keywords whose newest check ranks the page)
    from the end of each rank check; `ai_citations_28d` is null until AI visibility exists.

    Filters: `search` (URL or title contains, any case; 1-255 characters), `source`,
    `indexable`, `hasIssues`, `severity` (highest open issue), `verdict` (newest inspection).
    `sortBy` clicks (default), impressions, position, clicks_change, issues, citability or url,
    `sortOrder` desc (default) or asc; pages without the value come last either way, ties by
    id. `page` from 1, `limit` 1-100 (default 50). Another organization's pages never
    appear."""
    return await service.list_pages(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getPage", "/v1/seo/pages/{id}", access=Access.member, errors=[PageNotFound])
async def get_page(ctx: Context, data: schemas.GetPageInput) -> schemas.SeoPageDetail:
    """A page's 360 view: its inventory row with its Search Console series and queries, audit
    issues, newest URL inspection, PageSpeed results, citability and what is tracked for it.

    Local data only: no provider is called. `series`: the page's daily web-search clicks,
    impressions and position over `period` (28d default, 90d, or 16m: sixteen months), ending
    at the last day Search Console data is stored for, in the property in use; the days
    without a row are absent. `top_queries`: at most 20 queries of the same span, most clicks
    first, from the query rows Search Console returned (its top rows only: anonymized queries
    never appear, so they do not add up to the series). `latest_inspection`: the newest
    completed URL inspection of the URL (null before any). `geo`: its citability in the newest
    complete scan of the site (null when it is no indexable page of that scan). `issues`
    (the newest audit's open ones) and `pagespeed` (the newest result per strategy) come from
    the audits and PageSpeed. `tracked_keywords`: the tracked keywords (keyword x market x
    device) whose newest check found this page as our ranking URL, {id, keyword, position,
    device, market}, best position first. `ai_citations` and `actions` are empty until AI
    visibility and SEO actions exist. 404 for an unknown id, or another organization's page."""
    return await service.get_page(ctx.session, ctx.tenant.tenant_id, data)
