"""The Website Scan operations that turn a snapshot into knowledge: importing its pages as
documents and the site profile. Declarations only; the rules live in imports.py and profiles.py.

Every member reads the site profile; editors import pages and refresh the profile.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents.errors import StoragePathTaken
from contentplatform.website_scan import import_schemas as schemas
from contentplatform.website_scan import imports, profiles
from contentplatform.website_scan.errors import (
    ContentPurged,
    CrawlConfigNotFound,
    ImportKeyReused,
    NoSnapshotToProfile,
    PageNotFound,
    SiteProfileGenerating,
    SnapshotNotFound,
)

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


@router.get(
    "getSiteProfile",
    "/v1/website-scan/configs/{id}/profile",
    access=Access.member,
    errors=[CrawlConfigNotFound],
)
async def get_site_profile(ctx: Context, data: schemas.ProfileConfigInput) -> schemas.SiteProfile:
    """Inferred site profile: business, products, audience, tone.

    A read-only suggestion (applying it to the brand voice is a Team and Settings action).
    Status `none`, with empty fields, until the first refresh; `generating`, then `ready` with
    the profile and `generated_at`, or `failed` with the reason in `error`."""
    return await profiles.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "refreshSiteProfile",
    "/v1/website-scan/configs/{id}/profile/refresh",
    access=Access.editor,
    errors=[
        CrawlConfigNotFound,
        SnapshotNotFound,
        ContentPurged,
        NoSnapshotToProfile,
        SiteProfileGenerating,
        InsufficientCredits,
    ],
)
async def refresh_site_profile(
    ctx: Context, data: schemas.RefreshProfileInput
) -> schemas.SiteProfile:
    """Re-infer the site profile from a snapshot.

    Reads up to 20 pages of the snapshot (nearest the start URL first, then the wordiest),
    in the background: the answer is the profile `generating`; poll getSiteProfile. Without
    `snapshotId`, the configuration's latest finished, non-partial snapshot (400 when it has
    none); a snapshot named must be a finished one of this configuration (404) whose content
    is kept (410). Holds `website_scan.profile` credits (10; 402 when short) and commits what
    the model's tokens cost, 1 per started 1,000, at least 1; a failed refresh costs nothing.
    409 while the profile is generating. With the default offline model the profile is read
    extractively from the pages (structured data, titles, descriptions, headings, the text's
    sentences)."""
    return await profiles.refresh(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data)
