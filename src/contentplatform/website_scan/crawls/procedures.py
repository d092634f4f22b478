"""The Website Scan operations on crawl runs: declarations only; the rules live in
crawls/service.py. Every member reads runs; editors start and cancel crawls."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.website_scan.crawls import schemas
from contentplatform.website_scan.crawls import service as crawls
from contentplatform.website_scan.errors import (
    CrawlAlreadyActive,
    CrawlConfigNotFound,
    CrawlNotCancellable,
    CrawlRunNotFound,
    RobotsOverrideForbidden,
    TooManyActiveCrawls,
)

router = ProcedureRouter("websiteScan", tag="Website Scan")


@router.post(
    "startCrawl",
    "/v1/website-scan/crawls",
    access=Access.editor,
    errors=[
        CrawlConfigNotFound,
        RobotsOverrideForbidden,
        PlanLimitReached,
        CrawlAlreadyActive,
        TooManyActiveCrawls,
    ],
)
async def start_crawl(ctx: Context, data: schemas.StartCrawlInput) -> schemas.CrawlRun:
    """Start a crawl run for a config.

    The run copies the config's settings (with `overrides`, for this run only) and is queued;
    the crawl starts at once in the background. maxPages is kept within the plan's
    `crawl_pages` (an override above it is a 403; a config saved under a larger plan crawls as
    many as the plan allows now). 409 when the config already has a queued or
    running crawl (`runId` names it), 429 when the organization has 2. The same
    `idempotencyKey` within 24 hours returns the run it started and starts nothing."""
    return await crawls.start(
        ctx.session, ctx.tenant.tenant_id, ctx.tenant.role, ctx.identity.subject, data
    )


@router.get("listCrawls", "/v1/website-scan/crawls", access=Access.member)
async def list_crawls(ctx: Context, data: schemas.ListCrawlsInput) -> schemas.CrawlRunPage:
    """List crawl runs with progress.

    Newest first; `configId` and `status` filter (a deleted config's runs stay listed)."""
    return await crawls.page(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getCrawl", "/v1/website-scan/crawls/{id}", access=Access.member, errors=[CrawlRunNotFound]
)
async def get_crawl(ctx: Context, data: schemas.CrawlIdInput) -> schemas.CrawlRun:
    """Get a crawl run with live progress.

    Progress is stored with each batch of pages (every 25 pages or every second): poll every 2
    seconds or more. `percent` is crawled / (crawled + queued), capped at maxPages;
    `eta_seconds` comes from the pace so far. `snapshot_id` is set once the run ends."""
    return await crawls.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "cancelCrawl",
    "/v1/website-scan/crawls/{id}/cancel",
    access=Access.editor,
    errors=[CrawlRunNotFound, CrawlNotCancellable],
)
async def cancel_crawl(ctx: Context, data: schemas.CrawlIdInput) -> schemas.CrawlRun:
    """Cancel a queued or running crawl.

    A queued crawl is cancelled at once; a running one becomes `cancelling` and stops before its
    next page (within about a second), and the pages it stored form a partial snapshot. 409 when
    the crawl already ended."""
    return await crawls.cancel(ctx.session, ctx.tenant.tenant_id, data.id)
