"""The Website Scan operation that turns a snapshot's pages into knowledge documents: a
declaration only; the rules live in imports/service.py. Editors import pages."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.documents.errors import StoragePathTaken
from contentplatform.website_scan.errors import (
    ImportKeyReused,
    PageNotFound,
    SnapshotNotFound,
)
from contentplatform.website_scan.imports import schemas
from contentplatform.website_scan.imports import service as imports

router = ProcedureRouter("websiteScan", tag="Website Scan")


@router.post(
    "importPages",
    "/v1/website-scan/snapshots/{id}/import",
    access=Access.editor,
    errors=[SnapshotNotFound, PageNotFound, StoragePathTaken, ImportKeyReused],
)
async def import_pages(ctx: Context, data: schemas.ImportPagesInput) -> schemas.ImportResult:
    """Import selected pages as knowledge documents.

    Each page becomes a document (`source` website_scan, `file_type` url, named after the
    page's title, else its URL; its main content as markdown at
    `<org_id>/website-scan/<snapshot_id>/<page_id>.md`), ingested in the background like an
    upload and holding `documents.ingest` credits (1 per started megabyte). A page whose URL
    was imported before makes a new version of that document when its content changed, and is
    `unchanged` when it did not. A page is skipped, saying why, when it did not answer 2xx,
    has no main text, lost its content to retention, or when the plan's documents or storage
    limit or the credits left do not allow it (`quota`); the other pages go on. Every page
    named must be one of the snapshot's (404 otherwise); the snapshot must be finished. The
    same `idempotencyKey` within 24 hours answers what the import under it did and imports
    nothing more; with pages that leave out one that import made (another snapshot, other
    pages), it is 409."""
    return await imports.import_pages(ctx.session, ctx.runtime, ctx.tenant, data)
