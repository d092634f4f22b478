"""Declarations only: analytics.createExport, listExports, getExport, deleteExport."""

from __future__ import annotations

from contentplatform.analytics.exports import schemas, service
from contentplatform.analytics.exports.errors import (
    ExportNotFound,
    NotYourExport,
    TooManyActiveExports,
)
from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter

router = ProcedureRouter("analytics", tag="Analytics")


@router.post(
    "createExport", "/v1/analytics/exports", access=Access.member, errors=[TooManyActiveExports]
)
async def create_export(ctx: Context, data: schemas.CreateExportInput) -> schemas.ExportJob:
    """Start an async CSV export of a report.

    Reports: `automation_runs` (one row per job run that started in the period: id, job_id,
    status, step, started_at, finished_at, duration_ms, error; filters `jobId`, `status`) and
    `ai_usage` (one row per UTC day and kind of use: bucket_start, bucket_end, kind, credits,
    operations, input_tokens, output_tokens; filter `kind`). More reports follow.

    `format`: `csv` (RFC 4180 with a header row; a text cell starting with `=`, `+`, `-`, `@`, a
    tab or a carriage return is written with a leading single quote, as OWASP advises against
    formula injection, so a spreadsheet shows it as text) or `jsonl` (one JSON object per line).
    The period is read in the organization's time zone, dateFrom to dateTo inclusive, at most
    366 days (400 otherwise). The export is queued and written in the background: poll getExport
    until it is `succeeded` (with `row_count`, `bytes` and a download URL) or `failed`
    (`error.code` `too_many_rows` past 1,000,000 rows). At most 5 exports queued or running per
    organization (429). The same `idempotencyKey` returns the export it created."""
    return await service.create(ctx.session, ctx.tenant, ctx.identity.subject, data)


@router.get("listExports", "/v1/analytics/exports", access=Access.member)
async def list_exports(ctx: Context, data: schemas.ListExportsInput) -> schemas.ExportPage:
    """List export jobs.

    Newest first; `mine` keeps the caller's own. `download_url` is null here: getExport signs
    one."""
    return await service.page(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get(
    "getExport", "/v1/analytics/exports/{id}", access=Access.member, errors=[ExportNotFound]
)
async def get_export(ctx: Context, data: schemas.ExportIdInput) -> schemas.ExportJob:
    """Get an export job; includes a fresh download URL when succeeded.

    `download_url` is signed, valid 1 hour (never past the file's expiry) and made afresh by
    each call; it needs no other credential. Files are deleted 7 days after they were written:
    the export is then `expired` and a download URL given before answers 410."""
    return await service.get(
        ctx.session, ctx.runtime.store, ctx.tenant.tenant_id, data.id, base_url=ctx.base_url
    )


@router.delete(
    "deleteExport",
    "/v1/analytics/exports/{id}",
    access=Access.member,
    errors=[ExportNotFound, NotYourExport],
)
async def delete_export(ctx: Context, data: schemas.ExportIdInput) -> schemas.DeletedExport:
    """Cancel a running export or delete its file.

    A queued or running export is cancelled (`status: cancelled`; it stops before its next
    batch of rows and keeps no file); any other is deleted with its file (`status: deleted`).
    Members may delete only their own exports (403), admins any."""
    return await service.delete(
        ctx.session, ctx.runtime.store, ctx.tenant, ctx.identity.subject, data.id
    )
