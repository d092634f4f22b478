"""Declarations only: seo.listSyncRuns, getSyncRun."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.seo.sync_runs import schemas, service
from contentplatform.seo.sync_runs.errors import SyncRunNotFound

router = ProcedureRouter("seo", tag="SEO")


@router.get("listSyncRuns", "/v1/seo/sync-runs", access=Access.member)
async def list_sync_runs(ctx: Context, data: schemas.ListSyncRunsInput) -> schemas.SyncRunPage:
    """History of provider syncs and checks (Search Console, inspections, rank checks, AI runs,
    PageSpeed, keyword metrics).

    Newest first, filtered by `kind`, `provider` and `status`. Every provider call runs inside
    a sync run with a deterministic key (kind and window), so a crash resumes where it stopped
    and a retried trigger finds the run it made rather than paying twice. `progress.total` is
    0 until the run knows its size; `rows_written` counts the rows it stored. A run cancelled
    by a disconnect before it started is `failed` with `error.code` `cancelled`."""
    return await service.page(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getSyncRun", "/v1/seo/sync-runs/{id}", access=Access.member, errors=[SyncRunNotFound])
async def get_sync_run(ctx: Context, data: schemas.SyncRunIdInput) -> schemas.SyncRun:
    """One sync run: the poll target of every trigger operation.

    Poll until `status` is `succeeded`, `partial` or `failed`. `partial`: some days, keywords,
    prompts or URLs failed, listed in `error.items` (at most 100); credits are committed only
    for the part that succeeded and the rest released. Another organization's run is 404."""
    return await service.get(ctx.session, ctx.tenant.tenant_id, data.id)
