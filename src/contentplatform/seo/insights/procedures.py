"""Declarations only: seo.listSearchInsights."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.insights import schemas, service

router = ProcedureRouter("seo", tag="SEO")


@router.get("listSearchInsights", "/v1/seo/search-console/insights", access=Access.member)
async def list_search_insights(
    ctx: Context, data: schemas.ListSearchInsightsInput
) -> schemas.InsightPage:
    """Opportunities in the Search Console data: striking distance, low CTR, decay, cannibalization.

    Computed on each call from the stored web-search rows of the property selected on the
    Search Console connection (never a call to Google), over the last 28 or 90 days up to the
    last final day stored (`period_start`..`period_end`; fresh days would look like a fall).
    Nothing selected or stored yet: an empty list. Each insight carries its numbers and an
    `explanation`; the list is ordered by `opportunity_clicks`, largest first.

    - `striking_distance`: a query on a page at an average position of 5 to 20 (issue 39's
      bounds) with at least `minImpressions`; `opportunity_clicks` = impressions x (expected CTR
      at position 3 - its CTR).
    - `low_ctr`: a query on a page at position 10 or better, with at least `minImpressions`,
      whose CTR is under half the CTR expected at its position.
    - `decaying_page`: a page (all its queries, anonymized ones included) whose clicks fell by
      30% or more against the as-long period before, which had at least 20 clicks, and at least
      `minImpressions` in either period. Year-over-year guard: when the page had 20 clicks or
      more on the same days a year before, it must have fallen 30% against those too, so a
      seasonal page is not listed. `opportunity_clicks`: the clicks lost.
    - `cannibalization`: a query (with at least `minImpressions`) where two or more of our pages
      each take 10% or more of its impressions and the best-placed page changes on 3 days or
      more; `competing_pages` lists them with their share, position and days in front.

    Expected CTR comes from the tenant's own curve: CTR by whole position over the last 90
    days, fitted monotone (isotonic regression, weighted by impressions: never higher at a
    worse position), linear between positions; until those rows hold 1,000 clicks a default
    curve from published industry figures (`ctr_curve.source`). `page_id` and `action_id` are
    null: pages are not yet linked to content, and SEO actions come later."""
    return await service.list_insights(ctx.session, ctx.tenant.tenant_id, data)
