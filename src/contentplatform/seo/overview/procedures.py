"""Declarations only: seo.overview."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.overview import schemas, service

router = ProcedureRouter("seo", tag="SEO")


@router.get("overview", "/v1/seo/overview", access=Access.member)
async def overview(ctx: Context, data: schemas.OverviewInput) -> schemas.Overview:
    """The SEO control center: search, audit, actions, rank, GEO and connection health in one
    call.

    A read of what is stored; it never calls a provider. A block whose source was never
    connected, synced or run is null, never zeros: `search` until a Search Console property is
    synced, `audit` before the first completed audit, `rank` while no keyword is tracked,
    `geo` until the site has a complete website scan, `ai_visibility` while no AI answer is
    stored in the period (its figures are seo.aiVisibilityOverview's over the period's days
    ending today, each null below 5 in its sample). The window (`period`: 7, 28 or 90 days) ends on
    the newest day Search Console data is stored for (today without it); `search.change`
    compares with the preceding window of equal length. `rank` is seo.rankOverview over the
    period's days ending today (rank checks do not lag). `actions` counts the open and
    in-progress actions. `running` lists the sync runs queued or running. Cached for 60 seconds
    per organization; a sync run or an audit that ends, or a run that starts, shows at once."""
    return await service.overview(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data)
