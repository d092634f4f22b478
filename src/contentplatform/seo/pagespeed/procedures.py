"""Declarations only: seo.runPageSpeed, listPageSpeedResults."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.pagespeed import schemas, service
from contentplatform.seo.pagespeed.errors import NothingToMeasure, PageSpeedDisabled
from contentplatform.seo.sync_runs.schemas import SyncRun

router = ProcedureRouter("seo", tag="SEO")


@router.post(
    "runPageSpeed",
    "/v1/seo/pagespeed",
    access=Access.editor,
    errors=[PageSpeedDisabled, NothingToMeasure],
)
async def run_page_speed(ctx: Context, data: schemas.RunPageSpeedInput) -> SyncRun:
    """Run PageSpeed Insights (Lighthouse + Chrome UX Report field data) for key URLs.

    `urls`: 1 to 20 https URLs of at most 2,048 characters (400 otherwise), normalized as the
    crawl normalizes them and deduplicated; default: the `audit.pagespeed_top_pages` pages
    (SEO settings, at most 20) with the most Search Console web clicks over the last 28 days
    of stored data, else the SEO profile's site home page; 409 when there is none of either.
    `strategy` mobile (default), desktop or both; `categories` any of performance, seo,
    accessibility, best-practices (default all four). Each URL and strategy is measured `runs`
    times (1 to 5, default 3: one Lighthouse run is noise, its performance score moving by
    several points between runs), one runPagespeed call each, with the tenant's API key when
    `pagespeed_insights` is connected (else keyless, on Google's shared quota). The stored
    result is the median of each score and lab metric, with each run's figures and their
    spread (min, max). Answers the sync run (kind `pagespeed`, `queued`) at once; the work is
    durable (a restart resumes it without measuring again what is stored): poll
    seo.getSyncRun, then seo.listPageSpeedResults. A URL Google cannot measure (400: the page
    failed to load, Lighthouse's FAILED_DOCUMENT_REQUEST or ERRORED_DOCUMENT_REQUEST; 429
    quota and 5xx after retries) is stored as a failed result and the run ends `partial` (or
    `failed` when none succeeded), its error naming them. Results feed the Core Web Vitals
    checks (lcp_poor, inp_poor, cls_poor) of the next audit (the URL's own field data, else
    the lab's LCP and CLS; an origin's field data judges no single page) and, once the run
    ends, the page inventory's `performance_score` and `lcp_category` (seo.listPages). 409
    when outbound PageSpeed calls are disabled for the deployment."""
    return await service.run(
        ctx.session, ctx.settings, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.get("listPageSpeedResults", "/v1/seo/pagespeed", access=Access.member)
async def list_page_speed_results(
    ctx: Context, data: schemas.ListPageSpeedResultsInput
) -> schemas.PageSpeedResultPage:
    """Stored PageSpeed results: Lighthouse scores, lab metrics and Core Web Vitals field data.

    Newest first; finished results only (completed, or failed with `error`). `latestOnly`
    (default true) keeps each URL and strategy's newest, then `url` (exact; normalized as
    measured), `strategy` and `pageId` (the page's URL; an unknown page: an empty list)
    filter. Scores are 0-100; lab metrics the median of the runs (`spread`: min and max,
    `runs`: each run's figures); field data the Chrome UX Report's 75th percentile of 28 days
    of real visits, for the URL (`scope` url), else its origin (`origin`), else none. Read
    from our store only: this never calls Google."""
    return await service.list_results(ctx.session, ctx.tenant.tenant_id, data)
